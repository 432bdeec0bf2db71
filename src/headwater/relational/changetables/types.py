"""Column mappings the SQL Server and Db2 connectors share: the temporal modes
(`time.precision.mode`), `decimal.handling.mode`, `binary.handling.mode` and the plain string,
XML and date columns.

Why here: both Debezium connectors map these through the same JdbcValueConverters rules and
both drivers (pymssql, ibm_db_dbi, or the emulations' psycopg2 through their adapters) hand
over the same Python values (int, bool, Decimal, str, bytes, date, time, datetime), so one
implementation keeps the two byte-identical.  Each column gets its schema and converter once,
by type name, length or precision and scale under the configured modes.  The type tables
(which type name is which) stay in each connector's types.py: a `TypeNames` of the kinds whose
mapping takes no precision or scale (`plain_mapping`), and the connector's own code for the
rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any, Final

from headwater.convert import binary_encoder, binary_fallback, binary_schema
from headwater.convert.decimal import (
    SPECIAL_VALUE_STRINGS,
    STRING_MODE,
    decimal_mapping,
    fixed_scale_decimal,
)
from headwater.convert.temporal import CONNECT, date_schema, time_schema, timestamp_schema
from headwater.model.schema import BOOLEAN, FLOAT32, FLOAT64, INT64, STRING, ConnectSchema

NANO_TIME: Final = "io.debezium.time.NanoTime"
NANO_TIMESTAMP: Final = "io.debezium.time.NanoTimestamp"
XML: Final = "io.debezium.data.Xml"
_EPOCH: Final = datetime(1970, 1, 1)
_EPOCH_DATE_ORDINAL: Final = date(1970, 1, 1).toordinal()

# (schema, convert, NOT NULL fallback) of one column.
Mapping = tuple[ConnectSchema, Callable[[Any], Any], Any]


def micros_of_day(value: time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def epoch_micros(value: datetime) -> int:
    """Microseconds since the epoch; a naive value is taken as UTC."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def time_mapping(precision: int, mode: str, optional: bool, *, nano: bool = False) -> Mapping:
    """A time column; `nano`: precision 7 and up is NanoTime in adaptive mode (SQL Server's
    time(7); Db2's TIME has no fractions)."""
    if nano and mode != CONNECT and precision > 6 and mode == "adaptive":
        return (ConnectSchema(INT64, optional, NANO_TIME, 1),
                lambda v: micros_of_day(v) * 1000, 0)
    schema = time_schema(precision, mode, optional)
    if schema.type == INT64:
        return schema, micros_of_day, 0
    return schema, lambda v: micros_of_day(v) // 1000, 0


def timestamp_mapping(precision: int, mode: str, optional: bool) -> Mapping:
    if mode != CONNECT and precision > 6:
        return (ConnectSchema(INT64, optional, NANO_TIMESTAMP, 1),
                lambda v: epoch_micros(v) * 1000, 0)
    schema = timestamp_schema(precision, mode, optional)
    if schema.name and "Micro" in schema.name:
        return schema, epoch_micros, 0
    return schema, lambda v: epoch_micros(v) // 1000, 0


def date_mapping(mode: str, optional: bool) -> Mapping:
    return date_schema(mode, optional), lambda v: v.toordinal() - _EPOCH_DATE_ORDINAL, 0


def decimal_value_mapping(mode: str, precision: int | None, scale: int | None, optional: bool,
                          column: str) -> Mapping:
    """`decimal.handling.mode` for a driver value (Decimal, or anything Decimal() reads)."""
    schema, convert, fallback = decimal_mapping(mode, precision, scale, optional, column)
    if mode == STRING_MODE:
        plain = PlainDecimalString(scale)
        return schema, plain, plain(Decimal(0))

    def from_value(value: Any) -> Any:
        return convert(str(value) if isinstance(value, Decimal) else str(Decimal(value)))

    return schema, from_value, fallback


class PlainDecimalString:
    """`decimal.handling.mode=string` as JdbcValueConverters writes it: BigDecimal
    .toPlainString() of the driver's value, never scientific notation (`1E+10` is
    "10000000000"; PostgreSQL's connector writes toString() instead), at the column's scale
    (the driver hands a DECIMAL(p,s) over with scale s); NaN and infinities (DECFLOAT) as
    SpecialValueDecimal names them."""

    __slots__ = ("scale",)

    def __init__(self, scale: int | None) -> None:
        self.scale = scale

    def __call__(self, value: Any) -> str:
        d = value if isinstance(value, Decimal) else Decimal(value)
        if not d.is_finite():
            return SPECIAL_VALUE_STRINGS[str(d).lstrip("+")]
        if self.scale is not None:
            d = fixed_scale_decimal(str(d), self.scale)
        text = format(d, "f")
        return text[1:] if d.is_zero() and text.startswith("-") else text  # no -0 in Java


def string_mapping(optional: bool) -> Mapping:
    return ConnectSchema(STRING, optional), str, ""


def xml_mapping(optional: bool) -> Mapping:
    return ConnectSchema(STRING, optional, XML, 1), str, ""


def binary_mapping(mode: str, optional: bool) -> Mapping:
    """`binary.handling.mode`; a NOT NULL column's fallback is the mode's empty value."""
    encode = binary_encoder(mode)
    return binary_schema(mode, optional), lambda v: encode(bytes(v)), binary_fallback(mode)


@dataclass(frozen=True, slots=True)
class TypeNames:
    """A connector's type names (as its `column_mapping` spells them) of the kinds that map
    alike in both connectors and take no precision or scale."""

    booleans: frozenset[str]
    ints: dict[str, str]  # name -> INT16 / INT32 / INT64
    float32: frozenset[str]
    float64: frozenset[str]
    strings: frozenset[str]
    xml: frozenset[str]
    binaries: frozenset[str]
    dates: frozenset[str]


def plain_mapping(names: TypeNames, name: str, optional: bool, *, time_mode: str,
                  binary_mode: str) -> Mapping | None:
    """(schema, convert, NOT NULL fallback) of a column whose type is one of `names`' kinds;
    None: the type is none of them (the connector maps it, or it is not mapped)."""
    if name in names.booleans:
        return ConnectSchema(BOOLEAN, optional), bool, False
    if name in names.ints:
        return ConnectSchema(names.ints[name], optional), int, 0
    if name in names.float32:
        return ConnectSchema(FLOAT32, optional), float, 0.0
    if name in names.float64:
        return ConnectSchema(FLOAT64, optional), float, 0.0
    if name in names.strings:
        return string_mapping(optional)
    if name in names.xml:
        return xml_mapping(optional)
    if name in names.binaries:
        return binary_mapping(binary_mode, optional)
    if name in names.dates:
        return date_mapping(time_mode, optional)
    return None
