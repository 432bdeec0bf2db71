"""PostgreSQL's built-in geometric types other than point, as Debezium 3.7 encodes them.

Debezium 3.7.0 (dbz#2135, ``PostgresValueConverter.convertBox`` ... ``convertLine``) maps:

=========  ===================================================================================
box        ``Geometry`` v2: WKB Polygon, one closed 5-point ring ``(x1,y1) (x1,y2) (x2,y2)
           (x2,y1) (x1,y1)`` from the two corners in PostgreSQL's order (upper right first);
           extensions ``{"type": "box"}``
lseg       ``Geometry`` v2: WKB LineString of its two points; ``{"type": "lseg"}``
path       ``Geometry`` v2: WKB LineString of its points (a closed path is not closed by a
           repeated point); ``{"type": "path", "closed": "true" | "false"}``
polygon    ``Geometry`` v2: WKB Polygon, one ring, closed by repeating the first point unless
           the last equals it; ``{"type": "polygon"}``
circle     ``io.debezium.data.geometry.Circle`` v1 {center ``Point`` (required), radius FLOAT64}
line       ``io.debezium.data.geometry.Line`` v1 {a, b, c FLOAT64}: ``Ax + By + C = 0``
=========  ===================================================================================

The WKB is ``WkbWriter``'s: little-endian (byte order byte 1), 2-D, no SRID (``srid`` is null).
All three schemas are optional whatever the column's nullability (their builders call
``.optional()``).  A missing NOT NULL value gets Debezium's fallback: a unit square (box), the
segment (0,0)-(1,0) (lseg, path, with no ``closed`` key), the triangle (0,0) (1,0) (0,1)
(polygon), the circle at (0,0) of radius 0 and the line ``{0,1,0}``.

Values arrive in PostgreSQL's text output (``(3,4),(1,2)``, ``[(0,0),(1,1)]``, ``((0,0),(1,0))``,
``<(1,2),3>``, ``{1,-1,0}``), which pgjdbc's ``PGbox`` ... ``PGline`` parse with
``Double.parseDouble``; the same digits go through Python's ``float`` here.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from headwater.convert.decimal import connect_float
from headwater.convert.geometry import point_schema, point_value
from headwater.model.schema import FLOAT64, STRUCT, ConnectField, ConnectSchema

__all__ = [
    "CIRCLE",
    "LINE",
    "box_value",
    "circle_schema",
    "circle_value",
    "geometric_fallback",
    "line_schema",
    "line_value",
    "lseg_value",
    "path_value",
    "polygon_value",
]

CIRCLE = "io.debezium.data.geometry.Circle"
LINE = "io.debezium.data.geometry.Line"

_WKB_LINE_STRING = 2
_WKB_POLYGON = 3
_NUMBER = r"\s*([^(),<>{}\[\]\s]+)\s*"
_POINT_RE = re.compile(r"\(" + _NUMBER + "," + _NUMBER + r"\)")
_CIRCLE_RE = re.compile(r"\s*<\s*\(" + _NUMBER + "," + _NUMBER + r"\)\s*," + _NUMBER + r">\s*")
_LINE_RE = re.compile(r"\s*\{" + _NUMBER + "," + _NUMBER + "," + _NUMBER + r"\}\s*")

Points = list[tuple[float, float]]


def _points(text: str, kind: str) -> Points:
    """The ``(x,y)`` pairs of a geometric value's text, checked to cover all of it."""
    pairs = _POINT_RE.findall(text)
    rest = _POINT_RE.sub("", text).replace(",", "").strip("[]() ")
    if not pairs or rest:
        raise ValueError(f"invalid {kind} {text!r}")
    return [(float(x), float(y)) for x, y in pairs]


def _line_string(points: Points) -> bytes:
    out = bytearray(struct.pack("<BII", 1, _WKB_LINE_STRING, len(points)))
    for x, y in points:
        out += struct.pack("<dd", x, y)
    return bytes(out)


def _polygon(ring: Points) -> bytes:
    out = bytearray(struct.pack("<BIII", 1, _WKB_POLYGON, 1, len(ring)))
    for x, y in ring:
        out += struct.pack("<dd", x, y)
    return bytes(out)


def _geometry(wkb: bytes, extensions: dict[str, str]) -> dict[str, Any]:
    return {"wkb": wkb, "srid": None, "extensions": extensions}


def box_value(text: str) -> dict[str, Any]:
    """``(x1,y1),(x2,y2)`` → the closed 5-point Polygon ``convertBox`` builds."""
    points = _points(text, "box")
    if len(points) != 2:
        raise ValueError(f"invalid box {text!r}")
    (x1, y1), (x2, y2) = points
    ring = [(x1, y1), (x1, y2), (x2, y2), (x2, y1), (x1, y1)]
    return _geometry(_polygon(ring), {"type": "box"})


def lseg_value(text: str) -> dict[str, Any]:
    """``[(x1,y1),(x2,y2)]`` → a two-point LineString."""
    points = _points(text, "lseg")
    if len(points) != 2:
        raise ValueError(f"invalid lseg {text!r}")
    return _geometry(_line_string(points), {"type": "lseg"})


def path_value(text: str) -> dict[str, Any]:
    """``[(..),..]`` (open) or ``((..),..)`` (closed) → a LineString, ``closed`` in the
    extensions (``PGpath.open`` is true when the text starts with ``[``)."""
    points = _points(text, "path")
    closed = "false" if text.lstrip()[:1] == "[" else "true"
    return _geometry(_line_string(points), {"type": "path", "closed": closed})


def polygon_value(text: str) -> dict[str, Any]:
    """``((x,y),..)`` → a one-ring Polygon, closed as ``closeRing`` closes it (Java's ``!=``
    on doubles: NaN differs from itself, -0.0 equals 0.0, as in Python)."""
    ring = _points(text, "polygon")
    first, last = ring[0], ring[-1]
    if len(ring) >= 2 and (first[0] != last[0] or first[1] != last[1]):
        ring.append(first)
    return _geometry(_polygon(ring), {"type": "polygon"})


_CIRCLE_FIELDS = (
    ConnectField("center", point_schema(False)),
    ConnectField("radius", ConnectSchema(FLOAT64, False)),
)
_LINE_FIELDS = tuple(ConnectField(n, ConnectSchema(FLOAT64, False)) for n in ("a", "b", "c"))


def circle_schema() -> ConnectSchema:
    """``Circle.builder()``: version 1, doc "Geometry (CIRCLE)", always optional."""
    return ConnectSchema(STRUCT, True, CIRCLE, 1, fields=_CIRCLE_FIELDS, doc="Geometry (CIRCLE)")


def line_schema() -> ConnectSchema:
    """``Line.builder()``: version 1, doc "Geometry (LINE)", always optional."""
    return ConnectSchema(STRUCT, True, LINE, 1, fields=_LINE_FIELDS, doc="Geometry (LINE)")


def circle_value(text: str) -> dict[str, Any]:
    """``<(x,y),r>`` → ``{"center": Point struct, "radius": r}`` (``Circle.createValue``)."""
    m = _CIRCLE_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"invalid circle {text!r}")
    x, y, r = m.groups()
    return {"center": point_value(f"({x},{y})"), "radius": connect_float(r)}


def line_value(text: str) -> dict[str, Any]:
    """``{A,B,C}`` → ``{"a": A, "b": B, "c": C}`` (``Line.createValue``)."""
    m = _LINE_RE.fullmatch(text)
    if m is None:
        raise ValueError(f"invalid line {text!r}")
    a, b, c = m.groups()
    return {"a": connect_float(a), "b": connect_float(b), "c": connect_float(c)}


_FALLBACKS: dict[str, Callable[[], dict[str, Any]]] = {
    "box": lambda: _geometry(_polygon([(0, 0), (0, 1), (1, 1), (1, 0), (0, 0)]), {"type": "box"}),
    "lseg": lambda: _geometry(_line_string([(0, 0), (1, 0)]), {"type": "lseg"}),
    "polygon": lambda: _geometry(_polygon([(0, 0), (1, 0), (0, 1), (0, 0)]),
                                 {"type": "polygon"}),
    "path": lambda: _geometry(_line_string([(0, 0), (1, 0)]), {"type": "path"}),
    "circle": lambda: {"center": point_value("(0,0)"), "radius": 0.0},
    "line": lambda: {"a": 0.0, "b": 1.0, "c": 0.0},
}


def geometric_fallback(type_name: str) -> dict[str, Any]:
    """Debezium's value for a missing NOT NULL `type_name` column (``geometryFallback``,
    ``Circle.createValue(schema, 0, 0, 0)``, ``Line.createValue(schema, 0, 1, 0)``)."""
    try:
        return _FALLBACKS[type_name]()
    except KeyError:
        raise ValueError(f"not a geometric type: {type_name!r}") from None
