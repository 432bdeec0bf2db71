"""Geometry: PostgreSQL's geometric types (point, line, lseg, box, path, polygon, circle) and
PostGIS's geometry and geography (extension types, so registered by name only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.connectors.postgres.types.base import Factory, PgType
from headwater.connectors.postgres.types.oids import (
    BOX_OID,
    CIRCLE_OID,
    LINE_OID,
    LSEG_OID,
    PATH_OID,
    POINT_OID,
    POLYGON_OID,
)
from headwater.convert import ColumnMapping, TypeModes
from headwater.convert.geometry import (
    GEOGRAPHY,
    GEOMETRY,
    geography_fallback,
    geography_value,
    geometry_fallback,
    geometry_schema,
    geometry_value,
    point_fallback,
    point_schema,
    point_value,
)
from headwater.convert.pg_geometric import (
    box_value,
    circle_schema,
    circle_value,
    geometric_fallback,
    line_schema,
    line_value,
    lseg_value,
    path_value,
    polygon_value,
)


def _point(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    return ColumnMapping(point_schema(optional), point_value, point_fallback())


def _postgis(name: str) -> Factory:
    value, fallback = ((geography_value, geography_fallback) if name == GEOGRAPHY
                       else (geometry_value, geometry_fallback))

    def factory(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(geometry_schema(name, optional), value, fallback())

    return factory


def _geometric(type_name: str, convert: Callable[[str], dict[str, Any]]) -> Factory:
    """box / lseg / path / polygon (``Geometry`` v2), circle, line: always-optional schemas."""
    if type_name == "circle":
        schema = circle_schema()
    elif type_name == "line":
        schema = line_schema()
    else:
        schema = geometry_schema(GEOMETRY, True)

    def factory(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(schema, convert, geometric_fallback(type_name))

    return factory


_geometry = _postgis(GEOMETRY)
_geography = _postgis(GEOGRAPHY)
_box = _geometric("box", box_value)
_lseg = _geometric("lseg", lseg_value)
_path = _geometric("path", path_value)
_polygon = _geometric("polygon", polygon_value)
_circle = _geometric("circle", circle_value)
_line = _geometric("line", line_value)

BY_OID: dict[int, Factory] = {
    POINT_OID: _point,
    LSEG_OID: _lseg,
    PATH_OID: _path,
    BOX_OID: _box,
    POLYGON_OID: _polygon,
    LINE_OID: _line,
    CIRCLE_OID: _circle,
}

BY_NAME: dict[str, Factory] = {
    # PostGIS (Debezium's TypeRegistry looks these up by name as well)
    "geometry": _geometry,
    "geography": _geography,
    "point": _point,
    "lseg": _lseg,
    "path": _path,
    "box": _box,
    "polygon": _polygon,
    "line": _line,
    "circle": _circle,
}
