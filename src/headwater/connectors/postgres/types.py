"""PostgreSQL type mapping: text output form → Debezium's Kafka Connect representation.

Values arrive in PostgreSQL's text output form (pgoutput in text mode, ``COPY ... TO STDOUT``),
produced on connections set to ``DateStyle=ISO``, ``IntervalStyle=postgres``,
``extra_float_digits=3`` and ``bytea_output=hex``.  `pg_column_mapping` is called once per
column (snapshot start, each Relation message); it returns a `ColumnMapping` whose ``convert``
is the per-value hot path.  Built-in types are chosen by OID, extension and user types by name
(`_BY_NAME`); adding a type is one entry in `_BY_OID` or `_BY_NAME`.  Domains must be resolved
to their base type by the caller (pgoutput sends the domain's OID).

Mapped here (``time.precision.mode`` A = adaptive, M = adaptive_time_microseconds, C = connect):

====================  ========================================================================
int2 / int4 / int8    INT16 / INT32 / INT64 (serial types are their base types)
oid                   INT64
float4 / float8       FLOAT32 / FLOAT64, including NaN, ±Infinity and -0 (Python ``float``
                      parsed from PostgreSQL's shortest round-trip text, so a float4 keeps
                      the digits PostgreSQL and Java's ``Float.toString`` print)
numeric               see `headwater.convert.decimal` (precise / double / string)
bool                  BOOLEAN (``t`` / ``f``)
text, varchar, bpchar STRING, as PostgreSQL prints it (bpchar keeps its padding spaces);
name, "char"          also STRING
bytea                 ``binary.handling.mode``: bytes → BYTES; base64, base64-url-safe, hex →
                      STRING (hex output ``\\x0102ff``; the escape format is read as well)
date                  INT32 ``io.debezium.time.Date`` days (C: Kafka ``Date``)
time(p)               A: p 0-3 INT32 ``Time`` ms, p 4-6 and no p INT64 ``MicroTime`` µs;
                      M: ``MicroTime``; C: INT32 Kafka ``Time`` ms. ``24:00:00`` is 86400 s.
timestamp(p)          A, M: p 0-3 INT64 ``Timestamp`` ms, p 4-6 and no p ``MicroTimestamp`` µs;
                      C: INT64 Kafka ``Timestamp`` ms. Read as UTC.
timestamptz(p)        STRING ``io.debezium.time.ZonedTimestamp``, UTC, with exactly p fraction
                      digits (6 without p; none at p = 0 for whole seconds), e.g.
                      ``2018-06-20T13:13:16.945104Z``, ``2016-11-04T11:51:30.000000Z``
timetz                STRING ``io.debezium.time.ZonedTime`` in UTC, trailing zeros stripped,
                      e.g. ``11:51:30.123789Z``; ``24:00:00+00`` stays ``24:00:00Z``
uuid                  STRING ``io.debezium.data.Uuid``
json, jsonb           STRING ``io.debezium.data.Json``, the text as is
====================  ========================================================================

Decisions, with the Debezium evidence (``PostgresValueConverter`` and its tests, 3.x main):

* ZonedTimestamp fraction: ``ZonedTimestamp.toIsoString(value, ..., fractionalWidth)`` is given
  the column scale, i.e. the timestamptz precision (6 without one), and pads to exactly that
  many digits (``AbstractRecordsProducerTest``: ``tz_zero TIMESTAMPTZ`` →
  ``"+21016-11-04T06:51:30.000000Z"``; arrays ``"2020-04-01T11:51:02.000000Z"``).  Precision 0
  uses ``ISO_OFFSET_DATE_TIME`` (no fraction for whole seconds).  The older guide's examples
  without padding predate DBZ-5996/DBZ-6163 (Debezium 2.2).
* Years: ``+21016-11-04T...Z`` above 9999; BC years are astronomical (``4714-12-31 ... BC`` →
  ``-4713-12-31T...Z``), as Debezium's streaming path and ``java.time`` print them.
* ``infinity`` / ``-infinity``: timestamptz emits the strings ``"infinity"`` / ``"-infinity"``;
  timestamp emits pgjdbc's ``PGStatement.DATE_POSITIVE_INFINITY`` /
  ``DATE_NEGATIVE_INFINITY`` read as microseconds, ``9223372036825200000`` /
  ``-9223372036832400000`` (``MicroTimestamp``; Debezium's documented values), and those
  divided by 1000 for millisecond types.  For ``date`` Debezium has no consistent value (the
  streaming constants ``POSITIVE_INFINITY_LOCAL_DATE = -5877611-06-21`` even put +infinity
  before -infinity, debezium/dbz#2524, and a snapshot wraps an int overflow); Headwater emits the
  INT32 extremes ``2147483647`` / ``-2147483648``.
* Timestamps beyond ``294247-01-10T04:00:54.775807`` (PostgreSQL allows up to 294276 AD) do
  not fit INT64 microseconds; they saturate to the INT64 bounds (Debezium would fail).
* numeric NaN / ±Infinity in precise mode raise `UnrepresentableValueError` (Debezium fails the
  connector with "...set decimal handling mode to 'string'"); see `headwater.convert.decimal`.
* ``NUMERIC(p, s)`` with a negative scale (PostgreSQL 15) is declared as scale 0 and precision
  ``p - s``: its values are integers, and Avro, Spark and most sinks reject negative decimal
  scales (Debezium reads the scale through pgjdbc's ``typmod & 0xFFFF`` and gets nonsense).
* ``time(0-3)`` and ``timestamp(0-3)`` hold whole milliseconds (PostgreSQL rounds on input), so
  the millisecond types lose nothing; ``connect`` mode floors finer values to milliseconds.

Unknown types (every type not listed above: arrays, interval, money, inet, hstore, geometry,
enums, ranges, ...; a later issue maps them): with ``include_unknown_datatypes`` the value is
Debezium's opaque representation, the UTF-8 bytes of the text under ``binary.handling.mode``
(BYTES, or base64/hex STRING), ``supported=True``.  Without it Debezium omits the field and
warns; the mapping says ``supported=False`` with an optional STRING schema and the identity
converter, and the caller warns once and passes the text through (it can also omit the field).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from headwater.convert import (
    ColumnMapping,
    TypeModes,
    UnrepresentableValueError,
    binary_encoder,
    binary_fallback,
    binary_schema,
)
from headwater.convert.decimal import decimal_mapping
from headwater.convert.temporal import (
    EPOCH_ORDINAL,
    MICROS_PER_SECOND,
    ZONED_TIME_FALLBACK,
    ZONED_TIMESTAMP_FALLBACK,
    date_schema,
    format_fraction,
    format_zoned_timestamp,
    parse_date,
    parse_time,
    parse_timestamp,
    parse_timestamp_tz,
    saturate_int64,
    time_is_micros,
    time_schema,
    timestamp_is_micros,
    timestamp_schema,
    zoned_time_from_text,
    zoned_time_schema,
    zoned_timestamp_schema,
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

__all__ = [
    "ColumnMapping",
    "TypeModes",
    "UnrepresentableValueError",
    "numeric_precision_scale",
    "pg_column_mapping",
    "temporal_precision",
]

# Built-in type OIDs (pg_type.h; stable across versions).
BOOL_OID = 16
BYTEA_OID = 17
CHAR_OID = 18
NAME_OID = 19
INT8_OID = 20
INT2_OID = 21
INT4_OID = 23
TEXT_OID = 25
OID_OID = 26
JSON_OID = 114
FLOAT4_OID = 700
FLOAT8_OID = 701
BPCHAR_OID = 1042
VARCHAR_OID = 1043
DATE_OID = 1082
TIME_OID = 1083
TIMESTAMP_OID = 1114
TIMESTAMPTZ_OID = 1184
TIMETZ_OID = 1266
NUMERIC_OID = 1700
UUID_OID = 2950
JSONB_OID = 3802

UUID_NAME = "io.debezium.data.Uuid"
JSON_NAME = "io.debezium.data.Json"

# timestamp 'infinity' / '-infinity': pgjdbc's PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY taken
# as microseconds by Debezium (PostgresValueConverter.POSITIVE_INFINITY_LOCAL_DATE_TIME).
TIMESTAMP_POSITIVE_INFINITY_MICROS = 9_223_372_036_825_200_000
TIMESTAMP_NEGATIVE_INFINITY_MICROS = -9_223_372_036_832_400_000
TIMESTAMP_POSITIVE_INFINITY_MILLIS = TIMESTAMP_POSITIVE_INFINITY_MICROS // 1000
TIMESTAMP_NEGATIVE_INFINITY_MILLIS = TIMESTAMP_NEGATIVE_INFINITY_MICROS // 1000
# date 'infinity' / '-infinity': Headwater's choice (see the module docstring).
DATE_POSITIVE_INFINITY_DAYS = 2_147_483_647
DATE_NEGATIVE_INFINITY_DAYS = -2_147_483_648

DEFAULT_TEMPORAL_PRECISION = 6  # pgjdbc's (and so Debezium's) scale of time/timestamp(tz)

_Factory = Callable[[int, bool, TypeModes], ColumnMapping]


# ---------------------------------------------------------------------------------------------
# Type modifiers
# ---------------------------------------------------------------------------------------------


def numeric_precision_scale(type_modifier: int) -> tuple[int, int] | None:
    """(precision, scale) of a numeric typmod, None for an unconstrained numeric.

    typmod = ((precision << 16) | (scale & 0x7ff)) + 4; the scale is an 11-bit signed field
    since PostgreSQL 15 (NUMERIC(p, -s)), which is backward compatible with scales 0-1000.
    """
    if type_modifier < 4:
        return None
    tm = type_modifier - 4
    return (tm >> 16) & 0xFFFF, ((tm & 0x7FF) ^ 1024) - 1024


def temporal_precision(type_modifier: int) -> int:
    """Fractional-second precision of time/timetz/timestamp/timestamptz: the typmod, 6 if none."""
    if type_modifier < 0:
        return DEFAULT_TEMPORAL_PRECISION
    return min(type_modifier, 6)


# ---------------------------------------------------------------------------------------------
# Simple types
# ---------------------------------------------------------------------------------------------


def _simple(literal: str, convert: Callable[[str], Any], fallback: Any) -> _Factory:
    def factory(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(ConnectSchema(literal, optional), convert, fallback)

    return factory


def _named_string(name: str) -> _Factory:
    def factory(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
        return ColumnMapping(ConnectSchema(STRING, optional, name, 1), str, "")

    return factory


_BOOLEANS = {"t": True, "f": False, "true": True, "false": False}


def _to_bool(text: str) -> bool:
    try:
        return _BOOLEANS[text]
    except KeyError:
        raise ValueError(f"invalid boolean {text!r}") from None


# ---------------------------------------------------------------------------------------------
# numeric
# ---------------------------------------------------------------------------------------------


def _numeric(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
    ps = numeric_precision_scale(type_modifier)
    if ps is None:
        precision: int | None = None
        scale: int | None = None
    else:
        precision, scale = ps
        if scale < 0:
            precision, scale = precision - scale, 0
    schema, convert, fallback = decimal_mapping(
        modes.decimal_handling_mode, precision, scale, optional
    )
    return ColumnMapping(schema, convert, fallback)


# ---------------------------------------------------------------------------------------------
# bytea
# ---------------------------------------------------------------------------------------------


def bytea_from_text(text: str) -> bytes:
    """bytea text output: hex (``\\x0102ff``) or the escape format (``ab\\000\\\\``)."""
    if text[:2] == "\\x":
        return bytes.fromhex(text[2:])
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
        elif text[i + 1 : i + 2] == "\\":
            out.append(0x5C)
            i += 2
        else:
            octal = text[i + 1 : i + 4]
            if len(octal) != 3 or not all(ch in "01234567" for ch in octal):
                raise ValueError(f"invalid bytea escape at {i} in {text!r}")
            out.append(int(octal, 8))
            i += 4
    return bytes(out)


def _bytea(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
    mode = modes.binary_handling_mode
    if mode == "bytes":
        convert: Callable[[str], Any] = bytea_from_text
    else:
        encode = binary_encoder(mode)

        def convert(text: str) -> Any:
            return encode(bytea_from_text(text))

    return ColumnMapping(binary_schema(mode, optional), convert, binary_fallback(mode))


# ---------------------------------------------------------------------------------------------
# date / time / timestamp / timestamptz / timetz
# ---------------------------------------------------------------------------------------------

_date_fromiso = date.fromisoformat
_time_fromiso = time.fromisoformat
_time_of_day = time
_datetime_fromiso = datetime.fromisoformat
_EPOCH = datetime(1970, 1, 1)
_ONE_MICRO = timedelta(microseconds=1)
_ONE_MILLI = timedelta(milliseconds=1)


def _date_days_slow(text: str) -> int:
    if text == "infinity":
        return DATE_POSITIVE_INFINITY_DAYS
    if text == "-infinity":
        return DATE_NEGATIVE_INFINITY_DAYS
    return parse_date(text)


def date_days(text: str) -> int:
    """Days since the epoch of a date's text (``infinity`` → INT32 max, see module doc)."""
    try:
        return _date_fromiso(text).toordinal() - EPOCH_ORDINAL
    except ValueError:
        return _date_days_slow(text)


def _date(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
    return ColumnMapping(date_schema(modes.time_precision_mode, optional), date_days, 0)


def time_micros(text: str) -> int:
    """Microseconds past midnight of a time's text (``24:00:00`` → 86 400 000 000)."""
    try:
        t = _time_fromiso(text)
        return ((t.hour * 60 + t.minute) * 60 + t.second) * MICROS_PER_SECOND + t.microsecond
    except ValueError:
        return parse_time(text)


def time_millis(text: str) -> int:
    """Milliseconds past midnight (floored) of a time's text."""
    try:
        t = _time_fromiso(text)
        return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000
    except ValueError:
        return parse_time(text) // 1000


def _time(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
    precision = temporal_precision(type_modifier)
    mode = modes.time_precision_mode
    convert = time_micros if time_is_micros(precision, mode) else time_millis
    return ColumnMapping(time_schema(precision, mode, optional), convert, 0)


def _timestamp_micros_slow(text: str) -> int:
    if text == "infinity":
        return TIMESTAMP_POSITIVE_INFINITY_MICROS
    if text == "-infinity":
        return TIMESTAMP_NEGATIVE_INFINITY_MICROS
    return saturate_int64(parse_timestamp(text))


def timestamp_micros(text: str) -> int:
    """Microseconds since the epoch of a timestamp's text, read as UTC."""
    try:
        return (_datetime_fromiso(text) - _EPOCH) // _ONE_MICRO
    except ValueError:
        return _timestamp_micros_slow(text)


def _timestamp_millis_slow(text: str) -> int:
    if text == "infinity":
        return TIMESTAMP_POSITIVE_INFINITY_MILLIS
    if text == "-infinity":
        return TIMESTAMP_NEGATIVE_INFINITY_MILLIS
    return parse_timestamp(text) // 1000


def timestamp_millis(text: str) -> int:
    """Milliseconds (floored) since the epoch of a timestamp's text, read as UTC."""
    try:
        return (_datetime_fromiso(text) - _EPOCH) // _ONE_MILLI
    except ValueError:
        return _timestamp_millis_slow(text)


def _timestamp(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
    precision = temporal_precision(type_modifier)
    mode = modes.time_precision_mode
    convert = timestamp_micros if timestamp_is_micros(precision, mode) else timestamp_millis
    return ColumnMapping(timestamp_schema(precision, mode, optional), convert, 0)


def _zoned_timestamp_slow(text: str, width: int) -> str:
    if text in {"infinity", "-infinity"}:
        return text
    try:  # any offset, years 1-9999 after conversion to UTC: C code
        dt = _datetime_fromiso(text)
        if dt.tzinfo is None:
            raise ValueError(f"timestamp with time zone {text!r} has no offset")
        dt = dt.astimezone(UTC)
    except (ValueError, OverflowError):  # BC, 5+ digit years, or leaving years 1-9999
        return format_zoned_timestamp(parse_timestamp_tz(text), width)
    iso = dt.isoformat()  # 2016-11-04T11:51:30[.123456]+00:00
    micros = dt.microsecond
    if micros and width == 6:
        return iso[:26] + "Z"
    return iso[:19] + format_fraction(micros, width) + "Z"


def zoned_timestamp_converter(precision: int) -> Callable[[str], str]:
    """timestamptz text → ``ZonedTimestamp`` with exactly `precision` fraction digits.

    The fast path handles PostgreSQL's UTC output (``2016-11-04 11:51:30.1+00``) by moving
    characters only; other offsets, BC and 5+ digit years are parsed and re-formatted.
    """
    width = precision
    if width > 0:
        zeros = "0" * width
        full = 23 + width  # "YYYY-MM-DD HH:MM:SS." + width digits + "+00"

        def convert(text: str) -> str:
            n = len(text)
            if 22 <= n <= full and text.endswith("+00") and text[4] == "-":
                if n == full:
                    return f"{text[:10]}T{text[11:-3]}Z"
                return f"{text[:10]}T{text[11:19]}.{(text[20:-3] + zeros)[:width]}Z"
            return _zoned_timestamp_slow(text, width)

        return convert

    def convert_iso(text: str) -> str:
        if len(text) >= 22 and text.endswith("+00") and text[4] == "-":
            return f"{text[:10]}T{text[11:-3]}Z"
        return _zoned_timestamp_slow(text, 0)

    return convert_iso


def _timestamptz(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
    convert = zoned_timestamp_converter(temporal_precision(type_modifier))
    return ColumnMapping(zoned_timestamp_schema(optional), convert, ZONED_TIMESTAMP_FALLBACK)


def zoned_time(text: str) -> str:
    """timetz text → ``ZonedTime`` in UTC (PostgreSQL's ``+00`` output only gains its ``Z``)."""
    if text.endswith("+00"):
        return text[:-3] + "Z"
    try:
        t = _time_fromiso(text)
        offset = t.utcoffset()
    except ValueError:  # 24:00:00
        return zoned_time_from_text(text)
    if offset is None:
        raise ValueError(f"time with time zone {text!r} has no offset")
    secs = (t.hour * 60 + t.minute) * 60 + t.second - offset.days * 86_400 - offset.seconds
    minutes, second = divmod(secs % 86_400, 60)
    iso = _time_of_day(minutes // 60, minutes % 60, second, t.microsecond).isoformat()
    return (iso.rstrip("0") if t.microsecond else iso) + "Z"


def _timetz(type_modifier: int, optional: bool, modes: TypeModes) -> ColumnMapping:
    return ColumnMapping(zoned_time_schema(optional), zoned_time, ZONED_TIME_FALLBACK)


# ---------------------------------------------------------------------------------------------
# Unknown types
# ---------------------------------------------------------------------------------------------


def _identity(text: str) -> str:
    return text


def unknown_mapping(optional: bool, modes: TypeModes) -> ColumnMapping:
    """The mapping of a type Headwater does not map (see the module docstring)."""
    if not modes.include_unknown_datatypes:
        return ColumnMapping(ConnectSchema(STRING, optional), _identity, "", supported=False)
    mode = modes.binary_handling_mode
    encode = binary_encoder(mode)

    def opaque(text: str) -> Any:
        return encode(text.encode("utf-8"))

    return ColumnMapping(binary_schema(mode, optional), opaque, binary_fallback(mode))


# ---------------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------------

_int16 = _simple(INT16, int, 0)
_int32 = _simple(INT32, int, 0)
_int64 = _simple(INT64, int, 0)
_float32 = _simple(FLOAT32, float, 0.0)
_float64 = _simple(FLOAT64, float, 0.0)
_bool = _simple(BOOLEAN, _to_bool, False)
_string = _simple(STRING, str, "")
_uuid = _named_string(UUID_NAME)
_json = _named_string(JSON_NAME)

_BY_OID: dict[int, _Factory] = {
    BOOL_OID: _bool,
    BYTEA_OID: _bytea,
    CHAR_OID: _string,
    NAME_OID: _string,
    INT8_OID: _int64,
    INT2_OID: _int16,
    INT4_OID: _int32,
    TEXT_OID: _string,
    OID_OID: _int64,
    JSON_OID: _json,
    FLOAT4_OID: _float32,
    FLOAT8_OID: _float64,
    BPCHAR_OID: _string,
    VARCHAR_OID: _string,
    DATE_OID: _date,
    TIME_OID: _time,
    TIMESTAMP_OID: _timestamp,
    TIMESTAMPTZ_OID: _timestamptz,
    TIMETZ_OID: _timetz,
    NUMERIC_OID: _numeric,
    UUID_OID: _uuid,
    JSONB_OID: _json,
}

# Types without a fixed OID (extensions, user types) by pg_type.typname, and the built-in
# types under their typname and SQL spellings for callers that only know a name.
_BY_NAME: dict[str, _Factory] = {
    "bool": _bool,
    "boolean": _bool,
    "bytea": _bytea,
    "char": _string,  # typname of "char" (OID 18)
    "name": _string,
    "int8": _int64,
    "bigint": _int64,
    "bigserial": _int64,
    "int2": _int16,
    "smallint": _int16,
    "smallserial": _int16,
    "int4": _int32,
    "int": _int32,
    "integer": _int32,
    "serial": _int32,
    "text": _string,
    "oid": _int64,
    "json": _json,
    "jsonb": _json,
    "float4": _float32,
    "real": _float32,
    "float8": _float64,
    "double precision": _float64,
    "bpchar": _string,
    "character": _string,
    "varchar": _string,
    "character varying": _string,
    "date": _date,
    "time": _time,
    "time without time zone": _time,
    "timestamp": _timestamp,
    "timestamp without time zone": _timestamp,
    "timestamptz": _timestamptz,
    "timestamp with time zone": _timestamptz,
    "timetz": _timetz,
    "time with time zone": _timetz,
    "numeric": _numeric,
    "decimal": _numeric,
    "uuid": _uuid,
}


def pg_column_mapping(
    type_oid: int, type_name: str, type_modifier: int, optional: bool, modes: TypeModes
) -> ColumnMapping:
    """The Connect schema, converter and NOT NULL fallback of one PostgreSQL column.

    `type_oid` decides for built-in types; otherwise `type_name` (pg_type.typname, optionally
    schema-qualified or quoted) is looked up.  `type_modifier` is atttypmod (-1 for none).
    """
    factory = _BY_OID.get(type_oid)
    if factory is None and type_name:
        name = type_name.rsplit(".", 1)[-1].strip('"').lower()
        factory = _BY_NAME.get(name)
    if factory is None:
        return unknown_mapping(optional, modes)
    return factory(type_modifier, optional, modes)
