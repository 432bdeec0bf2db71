"""box, lseg, path, polygon, circle, line and PostGIS geometry as Debezium 3.7.0 encodes them.

Expected WKB is built here with struct.pack from ``WkbWriter``'s layout (little-endian byte
order byte, uint32 type, counts, doubles), not from Headwater's code.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from headwater.connectors.postgres.types import PgType, TypeModes, pg_column_mapping
from headwater.model.schema import FLOAT64, MAP, STRING, STRUCT

DEFAULT = TypeModes()
G = "io.debezium.data.geometry."


def line_wkb(*points: tuple[float, float]) -> bytes:
    return struct.pack("<BII", 1, 2, len(points)) + b"".join(struct.pack("<dd", *p)
                                                            for p in points)


def poly_wkb(*ring: tuple[float, float]) -> bytes:
    return struct.pack("<BIII", 1, 3, 1, len(ring)) + b"".join(struct.pack("<dd", *p)
                                                               for p in ring)


def geo(wkb: bytes, **extensions: str) -> dict[str, Any]:
    return {"wkb": wkb, "srid": None, "extensions": extensions}


def point(x: float, y: float) -> dict[str, Any]:
    return {"x": x, "y": y, "wkb": struct.pack("<BIdd", 1, 1, x, y), "srid": None}


def convert(oid: int, text: str) -> Any:
    return pg_column_mapping(PgType(oid), True, DEFAULT).convert(text)


@pytest.mark.parametrize(
    ("oid", "text", "expected"),
    [
        # box: PostgreSQL prints the upper-right corner first; the ring starts there
        (603, "(3,4),(1,2)", geo(poly_wkb((3, 4), (3, 2), (1, 2), (1, 4), (3, 4)), type="box")),
        (601, "[(1,2),(3,4)]", geo(line_wkb((1, 2), (3, 4)), type="lseg")),
        (601, "[(-1e+300,5e-324),(1,-0)]",
         geo(line_wkb((-1e300, 5e-324), (1, -0.0)), type="lseg")),
        (602, "[(0,0),(1,1),(2,0)]",
         geo(line_wkb((0, 0), (1, 1), (2, 0)), type="path", closed="false")),
        # a closed path is not closed by a repeated point (only the extension says it)
        (602, "((0,0),(1,1),(2,0))",
         geo(line_wkb((0, 0), (1, 1), (2, 0)), type="path", closed="true")),
        (604, "((0,0),(1,1),(1,0))",
         geo(poly_wkb((0, 0), (1, 1), (1, 0), (0, 0)), type="polygon")),
        # already closed (-0 == 0, as Java's != on doubles): no extra point
        (604, "((0,0),(2,0),(-0,0))", geo(poly_wkb((0, 0), (2, 0), (-0.0, 0)), type="polygon")),
        (604, "((7,8))", geo(poly_wkb((7, 8)), type="polygon")),
        (718, "<(1,2),3>", {"center": point(1, 2), "radius": 3.0}),
        (718, "<(1.5,-2.5),Infinity>", {"center": point(1.5, -2.5), "radius": "Infinity"}),
        (628, "{1,-1,0}", {"a": 1.0, "b": -1.0, "c": 0.0}),
        (628, "{NaN,-Infinity,-0}", {"a": "NaN", "b": "-Infinity", "c": -0.0}),
    ],
)
def test_values(oid: int, text: str, expected: Any) -> None:
    got = convert(oid, text)
    assert got == expected
    if "extensions" in expected:  # path's "type" then "closed", as Debezium's LinkedHashMap
        assert list(got["extensions"]) == list(expected["extensions"])


def test_polygon_with_nan_vertices_is_closed_again() -> None:
    # NaN != NaN in Java's closeRing as in Python: the first point is appended
    got = convert(604, "((NaN,0),(1,1),(NaN,0))")
    (count,) = struct.unpack_from("<I", got["wkb"], 9)
    assert count == 4


@pytest.mark.parametrize("optional", [True, False])
@pytest.mark.parametrize("oid", [603, 601, 602, 604])
def test_geometry_v2_schema_is_always_optional(oid: int, optional: bool) -> None:
    schema = pg_column_mapping(PgType(oid), optional, DEFAULT).schema
    assert (schema.type, schema.name, schema.version, schema.optional, schema.doc) == (
        STRUCT, G + "Geometry", 2, True, "Geometry")
    ext = schema.fields[2].schema
    assert [f.name for f in schema.fields] == ["wkb", "srid", "extensions"]
    assert (ext.type, ext.optional, ext.keys, ext.values) == (MAP, True, ext.keys, ext.values)
    assert ext.keys is not None and (ext.keys.type, ext.keys.optional) == (STRING, False)
    assert ext.values is not None and (ext.values.type, ext.values.optional) == (STRING, False)


@pytest.mark.parametrize("optional", [True, False])
def test_circle_and_line_schemas(optional: bool) -> None:
    circle = pg_column_mapping(PgType(718), optional, DEFAULT).schema
    assert (circle.name, circle.version, circle.optional, circle.doc) == (
        G + "Circle", 1, True, "Geometry (CIRCLE)")
    center, radius = circle.fields
    assert (center.name, center.schema.name, center.schema.optional) == (
        "center", G + "Point", False)
    assert (radius.name, radius.schema.type, radius.schema.optional) == ("radius", FLOAT64, False)
    line = pg_column_mapping(PgType(628), optional, DEFAULT).schema
    assert (line.name, line.version, line.optional, line.doc) == (
        G + "Line", 1, True, "Geometry (LINE)")
    assert [(f.name, f.schema.type, f.schema.optional) for f in line.fields] == [
        ("a", FLOAT64, False), ("b", FLOAT64, False), ("c", FLOAT64, False)]


def test_postgis_geometry_is_v2_and_always_optional_geography_is_not() -> None:
    geometry = pg_column_mapping(PgType(17000, "geometry"), False, DEFAULT)
    assert (geometry.schema.version, geometry.schema.optional) == (2, True)
    assert geometry.fallback == {"wkb": bytes.fromhex("010700000000000000"), "srid": None,
                                 "extensions": None}
    geography = pg_column_mapping(PgType(17100, "geography"), False, DEFAULT)
    assert (geography.schema.version, geography.schema.optional) == (1, False)
    assert [f.name for f in geography.schema.fields] == ["wkb", "srid"]


@pytest.mark.parametrize(
    ("oid", "fallback"),
    [
        (603, geo(poly_wkb((0, 0), (0, 1), (1, 1), (1, 0), (0, 0)), type="box")),
        (601, geo(line_wkb((0, 0), (1, 0)), type="lseg")),
        (602, geo(line_wkb((0, 0), (1, 0)), type="path")),  # no "closed" key
        (604, geo(poly_wkb((0, 0), (1, 0), (0, 1), (0, 0)), type="polygon")),
        (718, {"center": point(0, 0), "radius": 0.0}),
        (628, {"a": 0.0, "b": 1.0, "c": 0.0}),
    ],
)
def test_not_null_fallbacks(oid: int, fallback: Any) -> None:
    assert pg_column_mapping(PgType(oid), False, DEFAULT).fallback == fallback


@pytest.mark.parametrize(
    ("oid", "text"),
    [(603, "(1,2)"), (603, "(1,2),(3,4),(5,6)"), (601, "[(1,2)]"), (604, "((1,2),x)"),
     (602, ""), (718, "<(1,2)>"), (628, "{1,2}"), (628, "{1,2,x}"), (603, "(a,b),(c,d)")],
)
def test_bad_text_raises_naming_the_type(oid: int, text: str) -> None:
    with pytest.raises(ValueError):
        convert(oid, text)


@pytest.mark.parametrize(
    ("array_oid", "text", "expected"),
    [
        (1020, "{(3,4),(1,2);(1,1),(0,0)}",  # box's typdelim is ';'
         [geo(poly_wkb((3, 4), (3, 2), (1, 2), (1, 4), (3, 4)), type="box"),
          geo(poly_wkb((1, 1), (1, 0), (0, 0), (0, 1), (1, 1)), type="box")]),
        (1027, '{"((0,0),(1,1),(1,0))",NULL}',
         [geo(poly_wkb((0, 0), (1, 1), (1, 0), (0, 0)), type="polygon"), None]),
        (1019, '{"[(0,0),(1,1)]"}', [geo(line_wkb((0, 0), (1, 1)), type="path", closed="false")]),
        (1018, '{"[(0,0),(1,1)]"}', [geo(line_wkb((0, 0), (1, 1)), type="lseg")]),
        (719, '{"<(1,2),3>"}', [{"center": point(1, 2), "radius": 3.0}]),
        (629, '{"{1,-1,0}",NULL}', [{"a": 1.0, "b": -1.0, "c": 0.0}, None]),
    ],
)
def test_arrays(array_oid: int, text: str, expected: list[Any]) -> None:
    assert convert(array_oid, text) == expected
