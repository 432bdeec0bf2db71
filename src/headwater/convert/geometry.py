"""Debezium's geometry semantic types: ``Point``, ``Geometry``, ``Geography``.

* ``io.debezium.data.geometry.Point`` (version 1), for PostgreSQL's built-in ``point``: STRUCT
  ``{x FLOAT64, y FLOAT64, wkb optional BYTES, srid optional INT32}``.  ``Point.createValue``
  fills ``wkb`` with the 21-byte OGC WKB of the point (byte order mark 1, then little-endian type
  1 and the two doubles) and leaves ``srid`` null.
* ``io.debezium.data.geometry.Geometry`` version 2 (Debezium 3.7, dbz#2135), for PostGIS, MySQL
  and PostgreSQL's box / lseg / path / polygon: STRUCT ``{wkb BYTES, srid optional INT32,
  extensions optional MAP<STRING, STRING>}``, and the schema is always optional
  (``Geometry.builder()`` calls ``.optional()``, and Debezium's ``TableSchemaBuilder`` only ever
  adds ``optional()``, so a NOT NULL column's field is optional too).  ``extensions`` is null
  for genuine geometries; `headwater.convert.pg_geometric` fills it for PostgreSQL's own types.
  ``io.debezium.data.geometry.Geography`` stays version 1 ``{wkb BYTES, srid optional INT32}``,
  optional only for nullable columns.  For both, PostGIS prints values as hex EWKB; Debezium
  (``PostgisGeometry.fromHexEwkb``) puts the EWKB bytes *as they are* into ``wkb`` and the SRID
  read from the EWKB header into ``srid`` (null when the header has no SRID flag).  The guide
  calls ``wkb`` "OGC WKB"; current Debezium emits EWKB (``Geometry``'s own doc: "strict OGC WKB,
  and EWKB (PostGIS) are both ok"), and Headwater does the same so events are byte-identical.
  `ewkb_to_wkb` converts such EWKB to ISO/OGC WKB for consumers that need it.

EWKB: a byte order byte (0 big-endian, 1 little-endian), a uint32 type whose high bits are flags
(``0x80000000`` Z, ``0x40000000`` M, ``0x20000000`` SRID follows), then the SRID (uint32) if
flagged, then the body.  ISO WKB encodes Z/M as type + 1000 / 2000 / 3000 and has no SRID.
"""

from __future__ import annotations

import struct
from typing import Any

from headwater.convert.decimal import connect_float
from headwater.model.schema import (
    BYTES,
    FLOAT64,
    INT32,
    MAP,
    STRING,
    STRUCT,
    ConnectField,
    ConnectSchema,
)

__all__ = [
    "GEOGRAPHY",
    "GEOMETRY",
    "GEOMETRY_VERSION",
    "POINT",
    "ewkb_srid",
    "ewkb_to_wkb",
    "geography_fallback",
    "geography_value",
    "geometry_fallback",
    "geometry_schema",
    "geometry_value",
    "point_fallback",
    "point_schema",
    "point_value",
    "point_wkb",
]

POINT = "io.debezium.data.geometry.Point"
GEOMETRY = "io.debezium.data.geometry.Geometry"
GEOGRAPHY = "io.debezium.data.geometry.Geography"

_EWKB_Z = 0x80000000
_EWKB_M = 0x40000000
_EWKB_SRID = 0x20000000
# PostgisGeometry.createEmpty(): GEOMETRYCOLLECTION EMPTY
_EMPTY_COLLECTION = bytes.fromhex("010700000000000000")

_POINT_FIELDS = (
    ConnectField("x", ConnectSchema(FLOAT64, False)),
    ConnectField("y", ConnectSchema(FLOAT64, False)),
    ConnectField("wkb", ConnectSchema(BYTES, True)),
    ConnectField("srid", ConnectSchema(INT32, True)),
)
_GEOGRAPHY_FIELDS = (
    ConnectField("wkb", ConnectSchema(BYTES, False)),
    ConnectField("srid", ConnectSchema(INT32, True)),
)
_EXTENSIONS = ConnectSchema(MAP, True, keys=ConnectSchema(STRING, False),
                            values=ConnectSchema(STRING, False))
_GEOMETRY_FIELDS = (*_GEOGRAPHY_FIELDS, ConnectField("extensions", _EXTENSIONS))
GEOMETRY_VERSION = 2


def point_schema(optional: bool) -> ConnectSchema:
    """``Point``, with Debezium's schema doc."""
    return ConnectSchema(STRUCT, optional, POINT, 1, fields=_POINT_FIELDS,
                         doc="Geometry (POINT)")


def geometry_schema(name: str, optional: bool) -> ConnectSchema:
    """``Geometry`` (version 2, always optional: `optional` is ignored) or ``Geography``
    (version 1, no ``extensions``), by semantic `name`; Debezium's docs are "Geometry" and
    "Geography"."""
    if name == GEOGRAPHY:
        return ConnectSchema(STRUCT, optional, name, 1, fields=_GEOGRAPHY_FIELDS, doc="Geography")
    return ConnectSchema(STRUCT, True, name, GEOMETRY_VERSION, fields=_GEOMETRY_FIELDS,
                         doc="Geometry")


_pack_point = struct.Struct("<BIdd").pack


def point_wkb(x: float, y: float) -> bytes:
    """``Point.buildWKBPoint``: ``01`` + LE uint32 1 + LE x + LE y (21 bytes)."""
    return _pack_point(1, 1, x, y)


def point_value(text: str) -> dict[str, Any]:
    """A ``point``'s text ``(1.5,-2.25)`` → the ``Point`` struct."""
    if text[:1] != "(" or text[-1:] != ")":
        raise ValueError(f"invalid point {text!r}")
    xs, sep, ys = text[1:-1].partition(",")
    if not sep:
        raise ValueError(f"invalid point {text!r}")
    x = float(xs)
    y = float(ys)
    return {"x": connect_float(xs), "y": connect_float(ys), "wkb": _pack_point(1, 1, x, y),
            "srid": None}


def point_fallback() -> dict[str, Any]:
    """``Point.createValue(schema, 0, 0)``: Debezium's value for a missing NOT NULL point."""
    return point_value("(0,0)")


def ewkb_srid(ewkb: bytes) -> int | None:
    """The SRID in an EWKB header, None without the SRID flag (``PostgisGeometry.parseSrid``)."""
    if len(ewkb) < 9:
        raise ValueError(f"invalid EWKB: {len(ewkb)} bytes")
    order = "<" if ewkb[0] else ">"
    (geom_type,) = struct.unpack_from(order + "I", ewkb, 1)
    if geom_type & _EWKB_SRID:
        (srid,) = struct.unpack_from(order + "i", ewkb, 5)
        return int(srid)
    return None


def geometry_value(text: str) -> dict[str, Any]:
    """PostGIS hex EWKB text → ``{"wkb": EWKB bytes, "srid": SRID or None, "extensions":
    None}`` (a ``Geography`` value has no ``extensions``: `geography_value`)."""
    ewkb = bytes.fromhex(text)
    return {"wkb": ewkb, "srid": ewkb_srid(ewkb), "extensions": None}


def geography_value(text: str) -> dict[str, Any]:
    """PostGIS hex EWKB text → ``{"wkb": EWKB bytes, "srid": SRID or None}``."""
    ewkb = bytes.fromhex(text)
    return {"wkb": ewkb, "srid": ewkb_srid(ewkb)}


def geometry_fallback() -> dict[str, Any]:
    """``PostgisGeometry.createEmpty()``: GEOMETRYCOLLECTION EMPTY, no SRID, no extensions."""
    return {"wkb": _EMPTY_COLLECTION, "srid": None, "extensions": None}


def geography_fallback() -> dict[str, Any]:
    """``PostgisGeometry.createEmpty()`` as a ``Geography``."""
    return {"wkb": _EMPTY_COLLECTION, "srid": None}


# ---------------------------------------------------------------------------------------------
# EWKB → ISO WKB
# ---------------------------------------------------------------------------------------------

_POINT, _LINE, _POLYGON = 1, 2, 3
_CIRCULAR_STRING, _TRIANGLE = 8, 17
_COLLECTIONS = {4, 5, 6, 7, 9, 10, 11, 12, 15, 16}  # multi*, collection, curves, surfaces


def _convert(ewkb: bytes, pos: int, out: bytearray) -> int:
    """Appends the ISO WKB of the geometry at `pos`; returns the position after it."""
    if pos + 5 > len(ewkb):
        raise ValueError("truncated EWKB")
    order_byte = ewkb[pos]
    order = "<" if order_byte else ">"
    (raw,) = struct.unpack_from(order + "I", ewkb, pos + 1)
    pos += 5
    if raw & _EWKB_SRID:
        pos += 4
    has_z = bool(raw & _EWKB_Z)
    has_m = bool(raw & _EWKB_M)
    base = raw & 0x0FFFFFFF
    if base >= 1000:  # already ISO-coded
        has_z = has_z or base // 1000 in (1, 3)
        has_m = has_m or base // 1000 in (2, 3)
        base %= 1000
    iso = base + (1000 if has_z else 0) + (2000 if has_m else 0)
    out.append(order_byte)
    out += struct.pack(order + "I", iso)
    dims = 2 + has_z + has_m
    point_size = 8 * dims
    start = pos
    if base == _POINT:
        pos += point_size
    elif base in (_LINE, _CIRCULAR_STRING):
        (count,) = struct.unpack_from(order + "I", ewkb, pos)
        pos += 4 + count * point_size
    elif base in (_POLYGON, _TRIANGLE):
        (rings,) = struct.unpack_from(order + "I", ewkb, pos)
        pos += 4
        for _ in range(rings):
            (count,) = struct.unpack_from(order + "I", ewkb, pos)
            pos += 4 + count * point_size
    elif base in _COLLECTIONS:
        (count,) = struct.unpack_from(order + "I", ewkb, pos)
        out += ewkb[pos : pos + 4]
        pos += 4
        for _ in range(count):
            pos = _convert(ewkb, pos, out)
        return pos
    else:
        raise ValueError(f"unsupported EWKB geometry type {base}")
    if pos > len(ewkb):
        raise ValueError("truncated EWKB")
    out += ewkb[start:pos]
    return pos


def ewkb_to_wkb(ewkb: bytes) -> tuple[bytes, int | None]:
    """(ISO/OGC WKB, SRID or None) of PostGIS EWKB: flags and SRID removed, Z/M as +1000s.

    This is what PostGIS's ``ST_AsBinary`` returns for the same geometry.
    """
    out = bytearray()
    end = _convert(ewkb, 0, out)
    if end != len(ewkb):
        raise ValueError(f"trailing bytes after EWKB geometry ({len(ewkb) - end})")
    return bytes(out), ewkb_srid(ewkb)
