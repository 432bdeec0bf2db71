"""Db2 column types to Connect schemas and converters, as Debezium's Db2ValueConverters (on
JdbcValueConverters) maps them, by SYSCAT.COLUMNS' TYPENAME, LENGTH and SCALE.  The values the
driver hands over, and the mappings of `_NAMES` below and of the temporal, decimal, binary,
string and XML columns, are the change-table connectors' shared ones
(relational.changetables.types):

| Db2 | Connect |
|---|---|
| BOOLEAN | BOOLEAN |
| SMALLINT / INTEGER / BIGINT | INT16 / INT32 / INT64 |
| REAL / DOUBLE (FLOAT) | FLOAT32 / FLOAT64 |
| DECIMAL, NUMERIC | Decimal (precise), FLOAT64 (double), STRING |
| DECFLOAT | VariableScaleDecimal (precise), FLOAT64, STRING |
| CHARACTER, VARCHAR, LONG VARCHAR, CLOB, GRAPHIC, VARGRAPHIC, DBCLOB | STRING |
| XML | STRING io.debezium.data.Xml |
| BINARY, VARBINARY, BLOB | BYTES (binary.handling.mode) |
| DATE | io.debezium.time.Date (connect: Kafka Date) |
| TIME | Time (Db2 TIME has scale 0; adaptive_time_microseconds: MicroTime) |
| TIMESTAMP(p) (p = SCALE, default 6) | adaptive: Timestamp (p <= 3), MicroTimestamp |
|  | (4-6), NanoTimestamp (7-12); connect: Kafka Timestamp |

Db2 stores TIME without fractions; JdbcValueConverters takes a TIME column's precision from
its scale (Db2ValueConverters.getTimePrecision), so TIME is `io.debezium.time.Time`.
"""

from __future__ import annotations

from typing import Any, Final

from headwater.model.schema import INT16, INT32, INT64
from headwater.relational.changetables.codecs import ColumnMapping, configured_mapping
from headwater.relational.changetables.types import (
    Mapping,
    TypeNames,
    decimal_value_mapping,
    plain_mapping,
    time_mapping,
    timestamp_mapping,
)

_NAMES: Final = TypeNames(
    booleans=frozenset({"BOOLEAN"}),
    ints={"SMALLINT": INT16, "INTEGER": INT32, "INT": INT32, "BIGINT": INT64},
    float32=frozenset({"REAL"}),
    float64=frozenset({"DOUBLE", "FLOAT"}),
    strings=frozenset({"CHARACTER", "CHAR", "VARCHAR", "LONG VARCHAR", "CLOB", "GRAPHIC",
                       "VARGRAPHIC", "LONG VARGRAPHIC", "DBCLOB", "NCHAR", "NVARCHAR", "NCLOB"}),
    xml=frozenset({"XML"}),
    binaries=frozenset({"BINARY", "VARBINARY", "BLOB"}),
    dates=frozenset({"DATE"}),
)


def column_mapping(type_name: str, length: int | None, scale: int | None, optional: bool,
                   *, time_mode: str = "adaptive", decimal_mode: str = "precise",
                   binary_mode: str = "bytes", column: str = "?") -> Mapping | None:
    """(schema, convert, NOT NULL fallback) of a Db2 column; None: not mapped."""
    name = " ".join(type_name.upper().split())
    plain = plain_mapping(_NAMES, name, optional, time_mode=time_mode, binary_mode=binary_mode)
    if plain is not None:
        return plain
    if name in ("DECIMAL", "NUMERIC"):
        return decimal_value_mapping(decimal_mode, length or 5, scale or 0, optional, column)
    if name == "DECFLOAT":
        return decimal_value_mapping(decimal_mode, None, None, optional, column)
    if name == "TIME":
        return time_mapping(scale or 0, time_mode, optional)
    if name == "TIMESTAMP":
        return timestamp_mapping(6 if scale is None else scale, time_mode, optional)
    return None


def definition_mapping(cfg: Any) -> ColumnMapping:
    """`column_mapping` of a column definition (definitions.py) under the configured modes:
    a DECIMAL's precision is its column size, a TIME's or TIMESTAMP's precision its decimal
    digits."""
    return configured_mapping(cfg, column_mapping)
