"""SQL Server column types to Connect schemas and converters, as Debezium's
SqlServerValueConverters maps them (the reference's type table).

Values arrive as the DB-API driver returns them (pymssql, or the emulation's psycopg2 through
its adapter): int, bool, Decimal, str, bytes, date, time, datetime.  Each column gets a schema
and a converter chosen once, by type name, precision, scale and the configured
`time.precision.mode`, `decimal.handling.mode` and `binary.handling.mode`:

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

from collections.abc import Callable
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any, Final

from headwater.convert import binary_encoder, binary_schema
from headwater.convert.decimal import decimal_mapping
from headwater.convert.temporal import (
    CONNECT,
    ZONED_TIMESTAMP,
    date_schema,
    time_schema,
    timestamp_schema,
)
from headwater.model.schema import (
    BOOLEAN,
    FLOAT32,
    FLOAT64,
    INT16,
    INT32,
    INT64,
    STRING,
    ConnectSchema,
)

NANO_TIME: Final = "io.debezium.time.NanoTime"
NANO_TIMESTAMP: Final = "io.debezium.time.NanoTimestamp"
_EPOCH: Final = datetime(1970, 1, 1)
_EPOCH_DATE_ORDINAL: Final = date(1970, 1, 1).toordinal()

Mapping = tuple[ConnectSchema, Callable[[Any], Any], Any]

XML: Final = "io.debezium.data.Xml"
_STRINGS: Final = frozenset({"char", "varchar", "text", "nchar", "nvarchar", "ntext", "sysname",
                             "hierarchyid"})
_BINARIES: Final = frozenset({"binary", "varbinary", "image", "timestamp", "rowversion"})
_INTS: Final = {"tinyint": INT16, "smallint": INT16, "int": INT32, "bigint": INT64}
_MONEY: Final = {"money": (19, 4), "smallmoney": (10, 4)}


def _micros_of_day(value: time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _epoch_micros(value: datetime) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _zoned(value: datetime) -> str:
    """ZonedTimestamp: ISO-8601 with the value's own offset (Debezium keeps the offset)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    text = value.isoformat()
    return text.replace("+00:00", "Z")


def _time_mapping(precision: int, mode: str, optional: bool) -> Mapping:
    if mode != CONNECT and precision > 6 and mode == "adaptive":
        return (ConnectSchema(INT64, optional, NANO_TIME, 1),
                lambda v: _micros_of_day(v) * 1000, 0)
    schema = time_schema(precision, mode, optional)
    if schema.type == INT64:
        return schema, _micros_of_day, 0
    return schema, lambda v: _micros_of_day(v) // 1000, 0


def _timestamp_mapping(precision: int, mode: str, optional: bool) -> Mapping:
    if mode != CONNECT and precision > 6:
        return (ConnectSchema(INT64, optional, NANO_TIMESTAMP, 1),
                lambda v: _epoch_micros(v) * 1000, 0)
    schema = timestamp_schema(precision, mode, optional)
    if schema.name and "Micro" in schema.name:
        return schema, _epoch_micros, 0
    return schema, lambda v: _epoch_micros(v) // 1000, 0


def _decimal(mode: str, precision: int, scale: int, optional: bool, column: str) -> Mapping:
    schema, convert, fallback = decimal_mapping(mode, precision, scale, optional, column)

    def from_value(value: Any) -> Any:
        return convert(str(value) if isinstance(value, Decimal) else str(Decimal(value)))

    return schema, from_value, fallback


def column_mapping(type_name: str, precision: int | None, scale: int | None, optional: bool,
                   *, time_mode: str = "adaptive", decimal_mode: str = "precise",
                   binary_mode: str = "bytes", column: str = "?") -> Mapping | None:
    """(schema, convert, NOT NULL fallback) of an SQL Server column; None: not mapped."""
    name = type_name.lower()
    if name == "bit":
        return ConnectSchema(BOOLEAN, optional), bool, False
    if name in _INTS:
        return ConnectSchema(_INTS[name], optional), int, 0
    if name == "real" or (name == "float" and precision is not None and precision <= 24):
        return ConnectSchema(FLOAT32, optional), float, 0.0
    if name == "float":
        return ConnectSchema(FLOAT64, optional), float, 0.0
    if name in ("decimal", "numeric"):
        return _decimal(decimal_mode, precision or 18, scale or 0, optional, column)
    if name in _MONEY:
        money_precision, money_scale = _MONEY[name]
        return _decimal(decimal_mode, money_precision, money_scale, optional, column)
    if name in _STRINGS:
        return ConnectSchema(STRING, optional), str, ""
    if name == "xml":
        return ConnectSchema(STRING, optional, XML, 1), str, ""
    if name == "uniqueidentifier":
        return ConnectSchema(STRING, optional), lambda v: str(v).upper(), ""
    if name in _BINARIES:
        encode = binary_encoder(binary_mode)
        return binary_schema(binary_mode, optional), lambda v: encode(bytes(v)), b""
    if name == "date":
        return (date_schema(time_mode, optional),
                lambda v: v.toordinal() - _EPOCH_DATE_ORDINAL, 0)
    if name == "time":
        return _time_mapping(7 if precision is None else precision, time_mode, optional)
    if name in ("datetime", "smalldatetime"):
        return _timestamp_mapping(3, time_mode, optional)
    if name == "datetime2":
        return _timestamp_mapping(7 if precision is None else precision, time_mode, optional)
    if name == "datetimeoffset":
        return ConnectSchema(STRING, optional, ZONED_TIMESTAMP, 1), _zoned, \
            "1970-01-01T00:00:00Z"
    return None


