"""The length and scale a PostgreSQL column reports: pgjdbc's DatabaseMetaData.getColumns
(COLUMN_SIZE, DECIMAL_DIGITS), which Debezium puts in ``__debezium.source.column.length`` and
``__debezium.source.column.scale`` with ``column.propagate.source.type``.

Expected values are pgjdbc TypeInfoCache's (getPrecision, 0 replaced by getDisplaySize, and
getScale), worked out here by hand per type.
"""

from __future__ import annotations

import pytest

from headwater.connectors.postgres.catalog import ColumnInfo, TableInfo
from headwater.connectors.postgres.tables import (
    _length_scale,
    build_codec,
    incoming_from_catalog,
)
from headwater.connectors.postgres.types import PgType, TypeModes
from headwater.relational.column_mappers import ColumnMappers


def numeric(p: int, s: int) -> int:
    return ((p << 16) | s) + 4


@pytest.mark.parametrize(
    ("oid", "typmod", "expected"),
    [
        (21, -1, (5, 0)),  # int2
        (23, -1, (10, 0)),  # int4
        (20, -1, (19, 0)),  # int8
        (26, -1, (10, 0)),  # oid
        (700, -1, (8, 8)),  # float4: scale 8
        (701, -1, (17, 17)),  # float8: scale 17
        (1700, numeric(5, 2), (5, 2)),
        (1700, numeric(38, 0), (38, 0)),
        (1700, -1, (131089, 0)),  # unconstrained numeric: precision 0 -> display size
        (16, -1, (1, 0)),  # bool
        (18, -1, (1, 0)),  # "char"
        (1043, 14, (10, 0)),  # varchar(10)
        (1043, -1, (2147483647, 0)),
        (1042, 5, (1, 0)),  # bpchar(1)
        (25, -1, (2147483647, 0)),  # text
        (17, -1, (2147483647, 0)),  # bytea
        (1082, -1, (13, 0)),  # date
        (1083, -1, (15, 6)),  # time: 8 + 7
        (1083, 0, (8, 0)),  # time(0)
        (1083, 1, (11, 1)),  # time(1): pgjdbc's "bizarre" 2 digits
        (1083, 3, (12, 3)),  # time(3)
        (1266, -1, (21, 6)),  # timetz
        (1114, -1, (29, 6)),  # timestamp: 13 + 1 + 8 + 7
        (1114, 3, (26, 3)),
        (1184, -1, (35, 6)),  # timestamptz
        (1184, 0, (28, 0)),
        (1186, -1, (49, 6)),  # interval
        (1186, 3, (49, 3)),  # interval(3): the modifier's low 16 bits
        (1186, (0x7FFF << 16) | 0xFFFF, (49, 0xFFFF)),  # interval day to second, no precision
        (1560, 1, (1, 0)),  # bit(1)
        (1560, 10, (10, 0)),
        (1562, -1, (2147483647, 0)),  # varbit
        (1562, 5, (5, 0)),
        (2950, -1, (2147483647, 0)),  # uuid
        (603, -1, (2147483647, 0)),  # box
        (1231, numeric(10, 2), (10, 2)),  # numeric[]: the element's
        (1115, 3, (26, 3)),  # timestamp(3)[]
        (1007, -1, (10, 0)),  # int4[]
    ],
)
def test_pgjdbc_length_and_scale(
    oid: int, typmod: int, expected: tuple[int, int | None]
) -> None:
    assert _length_scale(oid, typmod) == expected


def test_propagated_scale_parameters() -> None:
    columns = tuple(
        ColumnInfo(name, i + 1, oid, tname, tname, typmod, False, oid, tname,
                   PgType(oid, tname, typmod))
        for i, (name, oid, tname, typmod) in enumerate([
            ("ts", 1114, "timestamp", 3), ("f", 701, "float8", -1), ("i", 23, "int4", -1),
            ("iv", 1186, "interval", -1), ("n", 1700, "numeric", numeric(8, 3))]))
    info = TableInfo(1, "public", "t", columns, (), "d", ())
    mappers = ColumnMappers.from_config({"column.propagate.source.type": r"public\.t\..*"})
    codec = build_codec("db", info, incoming_from_catalog(info), TypeModes(), lambda *_: True,
                        column_mappers=mappers)
    params = {c.name: dict(c.schema.parameters or {}) for c in codec.schema.columns}
    got = {n: (p.get("__debezium.source.column.length"), p.get("__debezium.source.column.scale"))
           for n, p in params.items()}
    assert got == {"ts": ("26", "3"), "f": ("17", "17"), "i": ("10", "0"), "iv": ("49", "6"),
                   "n": ("8", "3")}
    assert params["ts"]["__debezium.source.column.type"] == "TIMESTAMP"


def test_propagated_type_is_the_columns_own_name() -> None:
    """Debezium's Column.typeName(): pgjdbc's TYPE_NAME, serial for int4 with nextval, and a
    domain's own name (the differential test checks domains against Debezium)."""
    columns = (
        ColumnInfo("id", 1, 23, "int4", "integer", -1, True, 23, "int4", PgType(23, "int4"),
                   "nextval('t_id_seq'::regclass)"),
        ColumnInfo("p", 2, 16400, "price", "price", numeric(10, 2), False, 1700, "numeric",
                   PgType(1700, "numeric", numeric(10, 2))),
    )
    info = TableInfo(1, "public", "t", columns, (), "d", ())
    mappers = ColumnMappers.from_config({"column.propagate.source.type": r"public\.t\..*"})
    codec = build_codec("db", info, incoming_from_catalog(info), TypeModes(), lambda *_: True,
                        column_mappers=mappers)
    types = {c.name: (c.schema.parameters or {})["__debezium.source.column.type"]
             for c in codec.schema.columns}
    assert types == {"id": "SERIAL", "p": "PRICE"}
