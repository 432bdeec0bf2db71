"""Db2 column types to Connect schemas and converters, as Debezium's Db2ValueConverters (on
JdbcValueConverters) maps them.

Values arrive as the DB-API driver returns them (ibm_db_dbi, or the emulation's psycopg2
through its adapter): int, bool, Decimal, str, bytes, date, time, datetime.  Each column gets
a schema and converter chosen once, by SYSCAT.COLUMNS' TYPENAME, LENGTH and SCALE and the
configured `time.precision.mode`, `decimal.handling.mode` and `binary.handling.mode`:

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

from collections.abc import Callable
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any, Final

from headwater.convert import binary_encoder, binary_schema
from headwater.convert.decimal import decimal_mapping
from headwater.convert.temporal import CONNECT, date_schema, time_schema, timestamp_schema
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

NANO_TIMESTAMP: Final = "io.debezium.time.NanoTimestamp"
XML: Final = "io.debezium.data.Xml"
_EPOCH: Final = datetime(1970, 1, 1)
_EPOCH_DATE_ORDINAL: Final = date(1970, 1, 1).toordinal()

Mapping = tuple[ConnectSchema, Callable[[Any], Any], Any]

_STRINGS: Final = frozenset({"CHARACTER", "CHAR", "VARCHAR", "LONG VARCHAR", "CLOB", "GRAPHIC",
                             "VARGRAPHIC", "LONG VARGRAPHIC", "DBCLOB", "NCHAR", "NVARCHAR",
                             "NCLOB"})
_BINARIES: Final = frozenset({"BINARY", "VARBINARY", "BLOB"})
_INTS: Final = {"SMALLINT": INT16, "INTEGER": INT32, "INT": INT32, "BIGINT": INT64}


def _micros_of_day(value: time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def _epoch_micros(value: datetime) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _time_mapping(precision: int, mode: str, optional: bool) -> Mapping:
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


def _decimal(mode: str, precision: int | None, scale: int | None, optional: bool,
             column: str) -> Mapping:
    schema, convert, fallback = decimal_mapping(mode, precision, scale, optional, column)

    def from_value(value: Any) -> Any:
        return convert(str(value) if isinstance(value, Decimal) else str(Decimal(value)))

    return schema, from_value, fallback


def column_mapping(type_name: str, length: int | None, scale: int | None, optional: bool,
                   *, time_mode: str = "adaptive", decimal_mode: str = "precise",
                   binary_mode: str = "bytes", column: str = "?") -> Mapping | None:
    """(schema, convert, NOT NULL fallback) of a Db2 column; None: not mapped."""
    name = " ".join(type_name.upper().split())
    if name == "BOOLEAN":
        return ConnectSchema(BOOLEAN, optional), bool, False
    if name in _INTS:
        return ConnectSchema(_INTS[name], optional), int, 0
    if name == "REAL":
        return ConnectSchema(FLOAT32, optional), float, 0.0
    if name in ("DOUBLE", "FLOAT"):
        return ConnectSchema(FLOAT64, optional), float, 0.0
    if name in ("DECIMAL", "NUMERIC"):
        return _decimal(decimal_mode, length or 5, scale or 0, optional, column)
    if name == "DECFLOAT":
        return _decimal(decimal_mode, None, None, optional, column)
    if name in _STRINGS:
        return ConnectSchema(STRING, optional), str, ""
    if name == "XML":
        return ConnectSchema(STRING, optional, XML, 1), str, ""
    if name in _BINARIES:
        encode = binary_encoder(binary_mode)
        return binary_schema(binary_mode, optional), lambda v: encode(bytes(v)), b""
    if name == "DATE":
        return (date_schema(time_mode, optional),
                lambda v: v.toordinal() - _EPOCH_DATE_ORDINAL, 0)
    if name == "TIME":
        return _time_mapping(scale or 0, time_mode, optional)
    if name == "TIMESTAMP":
        return _timestamp_mapping(6 if scale is None else scale, time_mode, optional)
    return None
