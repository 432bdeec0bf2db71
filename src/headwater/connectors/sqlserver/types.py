"""SQL Server column types to Connect schemas and converters, as Debezium's
SqlServerValueConverters maps them (the reference's type table), by type name, precision and
scale.  The values the driver hands over, and the mappings of `_NAMES` below and of the
temporal, decimal, binary, string and XML columns, are the change-table connectors' shared
ones (relational.changetables.types):

| SQL Server | Connect |
|---|---|
| bit | BOOLEAN |
| tinyint, smallint / int / bigint | INT16 / INT32 / INT64 |
| real, float(1-24) / float(25-53) | FLOAT32 / FLOAT64 |
| decimal, numeric, money (19,4), smallmoney (10,4) | Decimal; FLOAT64 (double); STRING |
| char, varchar, text, nchar, nvarchar, ntext | STRING |
| xml | STRING io.debezium.data.Xml |
| uniqueidentifier | STRING, upper case (mssql-jdbc's text of a GUID, which Debezium emits; |
|  | pymssql gives a uuid.UUID, the emulation lower-case text) |
| binary, varbinary, image, timestamp/rowversion | BYTES (binary.handling.mode) |
| date | io.debezium.time.Date (connect: Kafka Date) |
| time(p) | adaptive: Time (p <= 3), MicroTime (4-6), NanoTime (7); connect: Kafka Time |
| datetime, smalldatetime, datetime2(p) | adaptive: Timestamp (p <= 3), MicroTimestamp |
|  | (4-6), NanoTimestamp (7); connect: Kafka Timestamp |
| datetimeoffset | io.debezium.time.ZonedTimestamp |
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from headwater.convert.temporal import ZONED_TIMESTAMP
from headwater.model.schema import FLOAT32, FLOAT64, INT16, INT32, INT64, STRING, ConnectSchema
from headwater.relational.changetables.codecs import ColumnMapping, configured_mapping
from headwater.relational.changetables.types import (
    Mapping,
    TypeNames,
    decimal_value_mapping,
    plain_mapping,
    time_mapping,
    timestamp_mapping,
)
from headwater.relational.table_definition import ColumnDefinition

# float(n) is FLOAT32 up to n = 24 (column_mapping)
_NAMES: Final = TypeNames(
    booleans=frozenset({"bit"}),
    ints={"tinyint": INT16, "smallint": INT16, "int": INT32, "bigint": INT64},
    float32=frozenset({"real"}),
    float64=frozenset(),
    strings=frozenset({"char", "varchar", "text", "nchar", "nvarchar", "ntext", "sysname",
                       "hierarchyid"}),
    xml=frozenset({"xml"}),
    binaries=frozenset({"binary", "varbinary", "image", "timestamp", "rowversion"}),
    dates=frozenset({"date"}),
)
_MONEY: Final = {"money": (19, 4), "smallmoney": (10, 4)}


def _zoned(value: datetime) -> str:
    """ZonedTimestamp: ISO-8601 with the value's own offset (Debezium keeps the offset)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    text = value.isoformat()
    return text.replace("+00:00", "Z")


def column_mapping(type_name: str, precision: int | None, scale: int | None, optional: bool,
                   *, time_mode: str = "adaptive", decimal_mode: str = "precise",
                   binary_mode: str = "bytes", column: str = "?") -> Mapping | None:
    """(schema, convert, NOT NULL fallback) of an SQL Server column; None: not mapped."""
    name = type_name.lower()
    plain = plain_mapping(_NAMES, name, optional, time_mode=time_mode, binary_mode=binary_mode)
    if plain is not None:
        return plain
    if name == "float":
        return ConnectSchema(FLOAT32 if precision is not None and precision <= 24 else FLOAT64,
                             optional), float, 0.0
    if name in ("decimal", "numeric"):
        return decimal_value_mapping(decimal_mode, precision or 18, scale or 0, optional, column)
    if name in _MONEY:
        money_precision, money_scale = _MONEY[name]
        return decimal_value_mapping(decimal_mode, money_precision, money_scale, optional, column)
    if name == "uniqueidentifier":
        return ConnectSchema(STRING, optional), lambda v: str(v).upper(), ""
    if name == "time":
        return time_mapping(7 if precision is None else precision, time_mode, optional,
                            nano=True)
    if name in ("datetime", "smalldatetime"):
        return timestamp_mapping(3, time_mode, optional)
    if name == "datetime2":
        return timestamp_mapping(7 if precision is None else precision, time_mode, optional)
    if name == "datetimeoffset":
        return ConnectSchema(STRING, optional, ZONED_TIMESTAMP, 1), _zoned, \
            "1970-01-01T00:00:00Z"
    return None


_FRACTIONAL: Final = frozenset({"time", "datetime2", "datetimeoffset"})


def definition_mapping(cfg: Any) -> ColumnMapping:
    """`column_mapping` of a column definition (definitions.py) under the configured modes:
    the precision is the column size, for fractional-second types the decimal digits; an
    identity column's type name (`int identity`) maps as its base type."""
    return configured_mapping(cfg, column_mapping, _type_and_precision)


def _type_and_precision(column: ColumnDefinition) -> tuple[str, int | None]:
    base = column.type_name.split(" ")[0].lower()
    return base, column.scale if base in _FRACTIONAL else column.length
