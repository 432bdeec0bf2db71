"""MySQL / MariaDB type mapping: natural values → Debezium's Kafka Connect representation.

The binlog decoder and the snapshot reader both hand this module the *natural values* defined in
`headwater.connectors.mysql.columns` (ints, floats, `Decimal`, str, bytes, `date`, naive UTC
`datetime`, `timedelta`, ``ZERO_TEMPORAL``), so one converter per column serves both paths and
the two cannot drift apart.  `mysql_column_mapping` is called once per column (snapshot start,
each table map after DDL); the returned ``convert`` is the per-value hot path and never sees
None.  The shape (`ColumnMapping`) and the shared converters (`headwater.convert`) are the
PostgreSQL connector's, so formats treat both sources alike.

Mapped here ("optional" = the column is nullable; modes: ``time.precision.mode`` M =
adaptive_time_microseconds (default), A = adaptive, C = connect):

=========================  ===================================================================
BOOLEAN / BOOL             BOOLEAN
BIT(1), BIT                BOOLEAN (the lowest bit)
BIT(n>1)                   BYTES ``io.debezium.data.Bits`` v1, parameter ``length`` = n: the
                           big-endian natural bytes reversed to little-endian and right-padded
                           to ceil(n/8) bytes (``JdbcValueConverters.convertBits`` with
                           ``byteOrderOfBitType() == BIG_ENDIAN``): ``b'\\x01\\x02'`` →
                           ``02 01``
TINYINT, SMALLINT          INT16 (TINYINT(1) too; only a column declared BOOLEAN is BOOLEAN)
MEDIUMINT, INT             INT32
BIGINT                     INT64
TINYINT UNSIGNED           INT16
SMALLINT/MEDIUMINT UNS.    INT32
INT UNSIGNED               INT64
BIGINT UNSIGNED            ``bigint.unsigned.handling.mode`` long: INT64, values >= 2^63 wrap
                           as Java's ``longValue()`` (2^64-1 → -1); precise: BYTES Connect
                           ``Decimal`` scale 0, ``connect.decimal.precision`` 20
FLOAT, FLOAT(p<=24)        FLOAT32 (current Debezium; the 1.0 guide's FLOAT → FLOAT64 is old)
FLOAT(M,D), FLOAT(p>24)    FLOAT64 (``BinlogValueConverters``: FLOAT32 only without a scale
                           and with length <= 24); FLOAT(M,D) values are 4-byte floats,
                           widened to double as Debezium does (``Float.doubleValue()``):
                           the stored 99.999 is 99.9990005493164
DOUBLE (REAL)              FLOAT64
DECIMAL(M,D)               ``decimal.handling.mode`` precise: BYTES Connect ``Decimal`` with
                           ``scale`` D and ``connect.decimal.precision`` M (DECIMAL = (10,0),
                           DECIMAL(M) = (M,0)); double: FLOAT64; string: STRING
                           (``BigDecimal.toString()``, e.g. ``0E-10``)
CHAR, VARCHAR, TEXT        STRING (a column whose charset is ``binary`` is a binary string)
family
ENUM                       STRING ``io.debezium.data.Enum`` v1, parameter ``allowed`` = the
                           members joined by ``,``
SET                        STRING ``io.debezium.data.EnumSet`` v1, ``allowed`` likewise
JSON                       STRING ``io.debezium.data.Json`` v1, the text as the source gives it
BINARY(n), VARBINARY,      ``binary.handling.mode``: bytes → BYTES; base64, base64-url-safe,
BLOB family                hex → STRING.  BINARY(n) values are right-padded with ``00`` to n
                           bytes (DBZ-254: the binlog drops trailing zero bytes)
YEAR                       INT32 ``io.debezium.time.Year`` v1 (see the time adjuster below)
DATE                       INT32 ``io.debezium.time.Date`` days (C: Kafka ``Date``)
TIME(p)                    M: INT64 ``MicroTime`` µs; A: p 0-3 INT32 ``Time`` ms, p 4-6 INT64
                           ``MicroTime``; C: INT32 Kafka ``Time`` ms.  Negative and > 24 h
                           values are kept (-838:59:59 → -3020399000000 µs)
DATETIME(p)                A, M: p 0-3 INT64 ``Timestamp`` ms, p 4-6 INT64 ``MicroTimestamp``
                           µs; C: INT64 Kafka ``Timestamp`` ms
TIMESTAMP(p)               STRING ``io.debezium.time.ZonedTimestamp`` v1, UTC with ``Z``:
                           binlog values exactly p fraction digits for p 1-6 (``.000``
                           kept), none for p = 0 (a ``ZonedDateTime``:
                           ``ZonedTimestamp.getDateTimeFormatter(column.length())``), the
                           zero timestamp being the epoch; values a SELECT read (snapshots)
                           as few digits as needed, ``...30.1Z``, ``...01Z`` (JDBC's
                           ``java.sql.Timestamp``: ``ISO_OFFSET_DATE_TIME``)
POINT                      STRUCT ``io.debezium.data.geometry.Point`` {x, y FLOAT64, wkb
                           optional BYTES, srid optional INT32}
GEOMETRY, LINESTRING,      STRUCT ``io.debezium.data.geometry.Geometry`` {wkb BYTES, srid
POLYGON, MULTI*,           optional INT32}: the natural value minus its 4-byte SRID prefix, and
GEOMETRYCOLLECTION         the SRID (null for SRID 0, ``BinlogGeometry.fromBytes``)
UUID (MariaDB)             STRING ``io.debezium.data.Uuid`` v1 (``MariaDbValueConverters``)
INET4, INET6 (MariaDB)     STRING, the address text
=========================  ===================================================================

Decisions, with the Debezium evidence (``BinlogValueConverters``, ``JdbcValueConverters``,
``RowDeserializers``, ``MariaDbValueConverters``; 3.x main), where the 1.0 guide differs or is
silent:

* POINT is ``io.debezium.data.geometry.Point`` in current Debezium (``schemaBuilder`` matches
  POINT before GEOMETRY; the guide's spatial list omits POINT).  ``x``/``y`` are read from the
  21-byte WKB, ``wkb`` is the WKB as stored, ``srid`` null for 0.  A POINT column holding a
  non-point fails, as in Debezium.  A missing NOT NULL POINT is POINT(0 0) (Debezium's own
  fallback, a Geometry struct without x/y, would not validate against the Point schema).
* Zero dates (reference 1.7): ``ZERO_TEMPORAL`` in DATE, DATETIME and TIMESTAMP is null for a
  nullable column and the epoch for a NOT NULL one (0, 0, ``1970-01-01T00:00:00Z``).  The
  contract makes every partly zero date (``2020-00-15``, ``0000-01-01``) ``ZERO_TEMPORAL``, as
  Debezium's binlog deserializer does (year, month or day 0 → null).
* ``enable.time.adjuster`` (default true): years 0-69 → 2000-2069 and 70-99 → 1970-1999 in
  YEAR, DATE and DATETIME values (``BinlogValueConverters.adjustTemporal`` is applied to every
  temporal value, so DATE ``0015-03-04`` is emitted as 2015-03-04).  TIMESTAMP cannot hold such
  years.  The zero YEAR (natural 0) is emitted as 1900, which is what Debezium's binlog path
  emits for it (``Year.of(1900 + 0)``), with or without the adjuster.
* TIME in milliseconds (A for p 0-3, C) is floored (``Duration.toMillis``) and narrowed to
  INT32 as Java's ``intValue()`` does, so beyond +-596:31:23.647 it wraps.  Debezium rejects
  negative and >= 24 h values in C mode (Kafka's ``Time`` cannot hold them); Headwater emits
  the wrapped milliseconds there too rather than dropping the value.
* DATETIME milliseconds are floored (``Instant.toEpochMilli``), as in `headwater.convert
  .temporal`; MySQL's DATETIME(0-3) values are whole milliseconds anyway.
* FLOAT32 values are emitted as the shortest decimal that round-trips through a 32-bit float
  (Java's ``Float.toString``, which Kafka's JsonConverter writes): the binlog's 4-byte 1.1 is
  ``1.1``, not ``1.100000023841858``.  MySQL has no NaN or infinities.
* DECIMAL values are quantized to the column scale if a source hands a different exponent
  (MySQL never does); the ``string`` mode prints ``BigDecimal.toString()`` of that value.
* UUID: the binlog carries 16 bytes, a snapshot the text; both become the canonical lower-case
  text.  INET4/INET6: Debezium has no converter of its own (the JDBC string); bytes from the
  binlog are printed as the server prints them (``inet_ntop``'s dotted quad for IPv4-mapped
  and IPv4-compatible addresses).
* The fallback (missing NOT NULL value) is Debezium's per type: 0, 0.0, False, "", ``b""``
  (``""`` in the string binary modes), "{}" for JSON, the epoch for temporals, GEOMETRYCOLLECTION
  EMPTY for geometries.

Not mapped: VECTOR (MySQL 9 / MariaDB 11.7) and any type not listed; `mysql_column_mapping`
raises `UnsupportedMySqlTypeError` naming the column and its type.
"""

from __future__ import annotations

import ipaddress
import math
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from headwater.connectors.mysql.columns import ZERO_TEMPORAL, JdbcTimestamp, MySqlColumn
from headwater.connectors.mysql.ddl_types import base_type
from headwater.convert import (
    BINARY_HANDLING_MODES,
    ColumnMapping,
    binary_encoder,
    binary_fallback,
    binary_schema,
)
from headwater.convert.decimal import (
    DECIMAL_HANDLING_MODES,
    DOUBLE,
    EXACT,
    PRECISE,
    ConnectDecimal,
    decimal_schema,
    java_decimal_string,
)
from headwater.convert.geometry import (
    GEOMETRY,
    geometry_fallback,
    geometry_schema,
    point_fallback,
    point_schema,
)
from headwater.convert.temporal import (
    ADAPTIVE_TIME_MICROSECONDS,
    EPOCH_ORDINAL,
    TIME_PRECISION_MODES,
    ZONED_TIMESTAMP_FALLBACK,
    date_schema,
    format_fraction,
    time_is_micros,
    time_schema,
    timestamp_is_micros,
    timestamp_schema,
    zoned_timestamp_schema,
)
from headwater.model import schema as connect
from headwater.model.schema import ConnectSchema

__all__ = [
    "BIGINT_UNSIGNED_HANDLING_MODES",
    "MySqlTypeModes",
    "UnsupportedMySqlTypeError",
    "float32_value",
    "float32_value_by_search",
    "float32_widened",
    "mysql_column_mapping",
]

BITS_NAME = "io.debezium.data.Bits"
ENUM_NAME = "io.debezium.data.Enum"
ENUM_SET_NAME = "io.debezium.data.EnumSet"
JSON_NAME = "io.debezium.data.Json"
UUID_NAME = "io.debezium.data.Uuid"
YEAR_NAME = "io.debezium.time.Year"

BIGINT_UNSIGNED_HANDLING_MODES = frozenset({"long", "precise"})
BIGINT_UNSIGNED_PRECISION = 20  # SpecialValueDecimal.builder(PRECISE, 20, 0)
DEFAULT_DECIMAL_PRECISION = 10  # DECIMAL without (M) is DECIMAL(10, 0)
ZERO_YEAR = 1900  # what Debezium's binlog path emits for YEAR 0000 (Year.of(1900 + 0))

_TWO_64 = 1 << 64
_TWO_63 = 1 << 63
_TWO_32 = 1 << 32
_TWO_31 = 1 << 31


@dataclass(frozen=True, slots=True)
class MySqlTypeModes:
    """The MySQL connector options that decide how values are represented (Debezium defaults).

    There is no time zone option: TIMESTAMP natural values are UTC already (the binlog stores
    UTC; the snapshot session runs with ``time_zone='+00:00'``).
    """

    time_precision_mode: str = ADAPTIVE_TIME_MICROSECONDS  # 'adaptive' | 'connect'
    decimal_handling_mode: str = PRECISE  # 'double' | 'string'
    bigint_unsigned_handling_mode: str = "long"  # 'precise'
    binary_handling_mode: str = "bytes"  # 'base64' | 'base64-url-safe' | 'hex'
    enable_time_adjuster: bool = True
    # what binlog_row_image=NOBLOB's left-out BLOB/TEXT columns carry ('hex:' = bytes)
    unavailable_value_placeholder: str = "__debezium_unavailable_value"

    def __post_init__(self) -> None:
        for value, allowed, option in (
            (self.time_precision_mode, TIME_PRECISION_MODES, "time.precision.mode"),
            (self.decimal_handling_mode, DECIMAL_HANDLING_MODES, "decimal.handling.mode"),
            (
                self.bigint_unsigned_handling_mode,
                BIGINT_UNSIGNED_HANDLING_MODES,
                "bigint.unsigned.handling.mode",
            ),
            (self.binary_handling_mode, BINARY_HANDLING_MODES, "binary.handling.mode"),
        ):
            if value not in allowed:
                raise ValueError(
                    f"invalid {option} {value!r}; expected one of {', '.join(sorted(allowed))}"
                )


class UnsupportedMySqlTypeError(ValueError):
    """A column type Headwater does not map (the caller adds the table to the message)."""


_Factory = Callable[[MySqlColumn, MySqlTypeModes], ColumnMapping]


def _mapping(schema: ConnectSchema, convert: Callable[[Any], Any], fallback: Any) -> ColumnMapping:
    # `ColumnMapping.convert` is typed for the PostgreSQL text form; MySQL converters take
    # natural values (int, Decimal, bytes, datetime, ...).
    return ColumnMapping(schema, convert, fallback)


# ---------------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------------


def _simple(literal: str, convert: Callable[[Any], Any], fallback: Any) -> _Factory:
    def factory(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
        return _mapping(ConnectSchema(literal, column.nullable), convert, fallback)

    return factory


def _to_bool(value: Any) -> bool:
    return bool(value)


def _bigint_wrapped(value: int) -> int:
    """BIGINT UNSIGNED in ``long`` mode: Java's ``longValue()`` of the unsigned value."""
    return value - _TWO_64 if value >= _TWO_63 else value


def _bigint_precise(value: int) -> ConnectDecimal:
    return ConnectDecimal.of(value, 0)


def _integer(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    optional = column.nullable
    name = column.type_name.upper()
    if name == "BIGINT":
        if not column.unsigned:
            return _mapping(ConnectSchema(connect.INT64, optional), int, 0)
        if modes.bigint_unsigned_handling_mode == "precise":
            schema = decimal_schema(BIGINT_UNSIGNED_PRECISION, 0, optional)
            return _mapping(schema, _bigint_precise, ConnectDecimal.of(0, 0))
        return _mapping(ConnectSchema(connect.INT64, optional), _bigint_wrapped, 0)
    literal = (_UNSIGNED_INTEGERS if column.unsigned else _SIGNED_INTEGERS)[name]
    return _mapping(ConnectSchema(literal, optional), int, 0)


_SIGNED_INTEGERS = {"TINYINT": connect.INT16, "SMALLINT": connect.INT16,
                    "MEDIUMINT": connect.INT32, "INT": connect.INT32}
_UNSIGNED_INTEGERS = {"TINYINT": connect.INT16, "SMALLINT": connect.INT32,
                      "MEDIUMINT": connect.INT32, "INT": connect.INT64}

_f32 = struct.Struct("<f")


_G = ("", *(f"%.{digits}g" for digits in range(1, 10)))  # %-formats of 1-9 digits


def float32_value(value: float) -> float:
    """The double a FLOAT32 value is written as: the shortest decimal that round-trips float32.

    Kafka's JsonConverter writes a Java ``float`` with ``Float.toString``; Python holds floats
    as doubles, so the 32-bit value 1.1 (1.100000023841858 as a double) must become 1.1.

    The answer is `float32_value_by_search`'s (the fewest ``%g`` digits whose double packs to
    the same float32), found with two or three round trips instead of up to nine.  Why that is
    exact: for a float32 x that is not a power of two, not subnormal and not in the top binade,
    the values rounding to x form an interval symmetric around x (the double grid is symmetric
    there too), and the d+1 digit rounding of x is never farther from x than the d digit one;
    so once d digits round-trip, so do d+1: the digits that round-trip are exactly n..9.  Then
    "n round-trips and n-1 does not" proves n the fewest.  ``%.8g`` with its trailing zeros
    cut gives the guess for n; a failed check, and every other float32, takes the search.
    """
    packed = _f32.pack(value)
    single: float = _f32.unpack(packed)[0]
    if single == 0.0 or math.isnan(single):
        return single
    bits = int.from_bytes(packed, "little")
    if not bits & 0x7FFFFF or not 0 < (bits >> 23) & 0xFF < 254:
        return float32_value_by_search(single)
    pack = _f32.pack
    text = _G[8] % single
    eight = float(text)
    if pack(eight) != packed:  # then no fewer digits round-trip either: 9 is the fewest
        nine = float(_G[9] % single)
        return nine if pack(nine) == packed else float32_value_by_search(single)
    digits = len(text.partition("e")[0].replace("-", "").replace(".", "").strip("0"))
    if digits == 8:
        fewer = float(_G[7] % single)
        return eight if pack(fewer) != packed else float32_value_by_search(single)
    guess = float(_G[digits] % single)
    if pack(guess) == packed and (digits == 1 or pack(float(_G[digits - 1] % single)) != packed):
        return guess
    return float32_value_by_search(single)


def float32_widened(value: float) -> float:
    """The 32-bit float nearest `value`, as a double (Java's ``Float.doubleValue()``)."""
    single: float = _f32.unpack(_f32.pack(value))[0]
    return single


def float32_value_by_search(value: float) -> float:
    """`float32_value` by trying 1, 2, ... 9 significant digits (the definition; the slow path
    of the fast one and the reference its tests compare with)."""
    packed = _f32.pack(value)
    single: float = _f32.unpack(packed)[0]
    if single == 0.0 or math.isnan(single):
        return single
    for digits in range(1, 10):
        candidate = float(_G[digits] % single)
        try:
            if _f32.pack(candidate) == packed:
                return candidate
        except OverflowError:  # rounded beyond FLT_MAX (4e+38 for 3.4028235e+38)
            continue
    return single  # unreachable: 9 significant digits always round-trip a float32


def _float(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    single = column.scale is None and (column.length is None or column.length <= 24)
    if single:
        return _mapping(ConnectSchema(connect.FLOAT32, column.nullable), float32_value, 0.0)
    if column.scale is not None:
        # FLOAT(M,D) is still a 4-byte float, written as Debezium's BinlogValueConverters
        # writes it (JdbcValueConverters.convertDouble: `Float.doubleValue()`): the float
        # widened to a double, 99.999 → 99.9990005493164 (snapshot and binlog alike)
        return _mapping(ConnectSchema(connect.FLOAT64, column.nullable), float32_widened, 0.0)
    return _mapping(ConnectSchema(connect.FLOAT64, column.nullable), float, 0.0)


def _decimal_double(value: Decimal) -> float:
    return float(value) + 0.0  # BigDecimal has no negative zero: -0.00 is 0.0, not -0.0


def _decimal(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    precision = column.length if column.length is not None else DEFAULT_DECIMAL_PRECISION
    scale = column.scale if column.scale is not None else 0
    optional = column.nullable
    mode = modes.decimal_handling_mode
    quantum = Decimal(1).scaleb(-scale)

    def scaled(value: Decimal) -> Decimal:
        exponent = value.as_tuple().exponent
        return value if exponent == -scale else value.quantize(quantum, context=EXACT)

    if mode == DOUBLE:
        return _mapping(ConnectSchema(connect.FLOAT64, optional), _decimal_double, 0.0)
    if mode != PRECISE:  # string

        def to_string(value: Decimal) -> str:
            return java_decimal_string(scaled(value))

        return _mapping(ConnectSchema(connect.STRING, optional), to_string, str(quantum * 0))

    encode = ConnectDecimal.of

    def to_decimal(value: Decimal) -> ConnectDecimal:
        shifted = value.scaleb(scale, context=EXACT)
        unscaled = int(shifted)
        if unscaled != shifted:  # more fraction digits than the column has
            unscaled = int(value.quantize(quantum, context=EXACT).scaleb(scale, context=EXACT))
        return encode(unscaled, scale)

    schema = decimal_schema(precision, scale, optional)
    return _mapping(schema, to_decimal, ConnectDecimal.of(0, scale))


# ---------------------------------------------------------------------------------------------
# Bits, strings, binary strings
# ---------------------------------------------------------------------------------------------


def _bit_as_bool(value: bytes) -> bool:
    return bool(value) and bool(value[-1] & 1)


def _bit(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    length = column.length if column.length is not None else 1
    if length <= 1:
        return _mapping(ConnectSchema(connect.BOOLEAN, column.nullable), _bit_as_bool, False)
    width = (length + 7) // 8

    def to_bits(value: bytes) -> bytes:
        return value[::-1].ljust(width, b"\x00")

    schema = ConnectSchema(connect.BYTES, column.nullable, BITS_NAME, 1, {"length": str(length)})
    return _mapping(schema, to_bits, b"")


def _binary(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    mode = modes.binary_handling_mode
    encode = binary_encoder(mode)
    pad_to = column.length if column.type_name == "BINARY" and column.length else 0
    convert: Callable[[bytes], Any] = encode
    if pad_to:

        def convert(value: bytes) -> Any:
            return encode(value.ljust(pad_to, b"\x00"))

    return _mapping(binary_schema(mode, column.nullable), convert, binary_fallback(mode))


def _string(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    if (column.charset or "").lower() == "binary":
        return _binary(column, modes)
    return _mapping(ConnectSchema(connect.STRING, column.nullable), str, "")


def _named_string(name: str, fallback: str = "") -> _Factory:
    def factory(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
        return _mapping(ConnectSchema(connect.STRING, column.nullable, name, 1), str, fallback)

    return factory


def _enumerated(name: str) -> _Factory:
    def factory(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
        parameters = {"allowed": ",".join(column.members)}
        schema = ConnectSchema(connect.STRING, column.nullable, name, 1, parameters)
        return _mapping(schema, str, "")

    return factory


def _uuid_text(value: str | bytes) -> str:
    if isinstance(value, bytes):
        return str(uuid.UUID(bytes=value))
    return value


_WORDS = struct.Struct(">8H")


def _inet_text(value: str | bytes) -> str:
    if isinstance(value, bytes):
        if len(value) == 16:
            return _inet6_text(value)
        return str(ipaddress.ip_address(value))
    return value


def _inet6_text(packed: bytes) -> str:
    """The server's text of an INET6 (``inet_ntop``'s rules): IPv4-mapped and IPv4-compatible
    addresses end in a dotted quad (``::ffff:1.2.3.4``, ``::1.2.3.4``), which Python < 3.13
    prints as hex words."""
    words = _WORDS.unpack(packed)
    if not any(words[:5]) and (words[5] == 0xFFFF or (words[5] == 0 and words[6] != 0)):
        prefix = "::ffff:" if words[5] else "::"
        return prefix + str(ipaddress.IPv4Address(packed[12:]))
    return str(ipaddress.IPv6Address(packed))


# ---------------------------------------------------------------------------------------------
# Temporal types
# ---------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1)
_ONE_MICRO = timedelta(microseconds=1)
_ONE_MILLI = timedelta(milliseconds=1)


def adjusted_year(year: int) -> int:
    """``BinlogValueConverters.adjustTemporal``: 0-69 → 2000-2069, 70-99 → 1970-1999."""
    if 0 <= year <= 69:
        return year + 2000
    if 70 <= year <= 99:
        return year + 1900
    return year


def _adjust(value: date) -> Any:
    """`value` with its year adjusted (Feb 29 clamps to Feb 28 as ``plus(YEARS)`` does)."""
    year = adjusted_year(value.year)
    try:
        return value.replace(year=year)
    except ValueError:
        return value.replace(year=year, day=28)


def _year(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    adjust = modes.enable_time_adjuster

    def to_year(value: int) -> int:
        if value == 0:
            return ZERO_YEAR
        return adjusted_year(value) if adjust and value < 100 else value

    return _mapping(ConnectSchema(connect.INT32, column.nullable, YEAR_NAME, 1), to_year, 0)


def _zero_value(column: MySqlColumn, fallback: Any) -> Any:
    """What a zero date becomes: null in a nullable column, else the epoch (reference 1.7)."""
    return None if column.nullable else fallback


def _date(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    zero = _zero_value(column, 0)
    adjust = modes.enable_time_adjuster

    def to_days(value: date) -> int | None:
        if value is ZERO_TEMPORAL:
            return zero  # type: ignore[no-any-return]
        if adjust and value.year < 100:
            value = _adjust(value)
        return value.toordinal() - EPOCH_ORDINAL

    return _mapping(date_schema(modes.time_precision_mode, column.nullable), to_days, 0)


def _fsp(column: MySqlColumn) -> int:
    """Fractional-second precision of TIME/DATETIME/TIMESTAMP (0 when DDL gives none)."""
    return min(column.length, 6) if column.length is not None else 0


def _datetime(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    precision = _fsp(column)
    mode = modes.time_precision_mode
    unit = _ONE_MICRO if timestamp_is_micros(precision, mode) else _ONE_MILLI
    zero = _zero_value(column, 0)
    adjust = modes.enable_time_adjuster
    epoch = _EPOCH

    def to_epoch(value: datetime) -> int | None:
        if value is ZERO_TEMPORAL:
            return zero  # type: ignore[no-any-return]
        if adjust and value.year < 100:
            value = _adjust(value)
        return (value - epoch) // unit

    return _mapping(timestamp_schema(precision, mode, column.nullable), to_epoch, 0)


def _timestamp(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    width = _fsp(column)
    zero = _zero_value(column, ZONED_TIMESTAMP_FALLBACK)

    def to_zoned(value: datetime) -> str | None:
        if value is ZERO_TEMPORAL:
            return zero  # type: ignore[no-any-return]
        if type(value) is JdbcTimestamp:  # read by a SELECT: as few digits as needed
            micros = value.microsecond
            fraction = f".{micros:06d}".rstrip("0") if micros else ""
            return f"{value.isoformat(timespec='seconds')}{fraction}Z"
        if cut:  # TIMESTAMP(1-6): the first `width` of isoformat's six digits, as format_fraction
            return value.isoformat(timespec="microseconds")[:cut] + "Z"
        return f"{value.isoformat(timespec='seconds')}{format_fraction(value.microsecond, width)}Z"

    # 'YYYY-MM-DDTHH:MM:SS.' is 20 characters (datetime pads the year to 4 digits)
    cut = 20 + width if 1 <= width <= 6 else 0

    schema = zoned_timestamp_schema(column.nullable)
    return _mapping(schema, to_zoned, ZONED_TIMESTAMP_FALLBACK)


def time_millis(value: timedelta) -> int:
    """Floored milliseconds of a TIME, narrowed to INT32 as Java's ``intValue()`` does."""
    millis = value // _ONE_MILLI
    return (millis + _TWO_31) % _TWO_32 - _TWO_31


def time_micros(value: timedelta) -> int:
    return value // _ONE_MICRO


def _time(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    precision = _fsp(column)
    mode = modes.time_precision_mode
    convert = time_micros if time_is_micros(precision, mode) else time_millis
    return _mapping(time_schema(precision, mode, column.nullable), convert, 0)


# ---------------------------------------------------------------------------------------------
# Spatial types
# ---------------------------------------------------------------------------------------------

_srid_of = struct.Struct("<I").unpack_from
_POINT_LE = struct.Struct("<Idd")
_POINT_BE = struct.Struct(">Idd")
_POINT_WKB_SIZE = 21


def _split_geometry(value: bytes) -> tuple[bytes, int | None]:
    if len(value) < 4 + 5:
        raise ValueError(f"invalid MySQL geometry value: {len(value)} bytes")
    (srid,) = _srid_of(value)
    return value[4:], (srid or None)


def _geometry_value(value: bytes) -> dict[str, Any]:
    wkb, srid = _split_geometry(value)
    return {"wkb": wkb, "srid": srid, "extensions": None}  # Geometry v2 (Debezium 3.7)


def _point_value(value: bytes) -> dict[str, Any]:
    wkb, srid = _split_geometry(value)
    if len(wkb) != _POINT_WKB_SIZE:
        raise ValueError(f"a POINT column holds a non-point geometry ({len(wkb)}-byte WKB)")
    kind, x, y = (_POINT_LE if wkb[0] else _POINT_BE).unpack_from(wkb, 1)
    if kind != 1:
        raise ValueError(f"a POINT column holds WKB geometry type {kind}")
    return {"x": x, "y": y, "wkb": wkb, "srid": srid}


def _geometry(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    schema = geometry_schema(GEOMETRY, column.nullable)
    return _mapping(schema, _geometry_value, geometry_fallback())


def _point(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    return _mapping(point_schema(column.nullable), _point_value, point_fallback())


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

_BY_TYPE: dict[str, _Factory] = {
    "BOOLEAN": _simple(connect.BOOLEAN, _to_bool, False),
    "BIT": _bit,
    "TINYINT": _integer,
    "SMALLINT": _integer,
    "MEDIUMINT": _integer,
    "INT": _integer,
    "BIGINT": _integer,
    "FLOAT": _float,
    "DOUBLE": _simple(connect.FLOAT64, float, 0.0),
    "DECIMAL": _decimal,
    "CHAR": _string,
    "VARCHAR": _string,
    "TINYTEXT": _string,
    "TEXT": _string,
    "MEDIUMTEXT": _string,
    "LONGTEXT": _string,
    "ENUM": _enumerated(ENUM_NAME),
    "SET": _enumerated(ENUM_SET_NAME),
    "JSON": _named_string(JSON_NAME, "{}"),
    "BINARY": _binary,
    "VARBINARY": _binary,
    "TINYBLOB": _binary,
    "BLOB": _binary,
    "MEDIUMBLOB": _binary,
    "LONGBLOB": _binary,
    "YEAR": _year,
    "DATE": _date,
    "TIME": _time,
    "DATETIME": _datetime,
    "TIMESTAMP": _timestamp,
    "POINT": _point,
    "GEOMETRY": _geometry,
    "LINESTRING": _geometry,
    "POLYGON": _geometry,
    "MULTIPOINT": _geometry,
    "MULTILINESTRING": _geometry,
    "MULTIPOLYGON": _geometry,
    "GEOMETRYCOLLECTION": _geometry,
    "GEOMCOLLECTION": _geometry,
}


def _uuid(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    schema = ConnectSchema(connect.STRING, column.nullable, UUID_NAME, 1)
    return _mapping(schema, _uuid_text, "")


def _inet(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    return _mapping(ConnectSchema(connect.STRING, column.nullable), _inet_text, "")


_BY_TYPE.update({"UUID": _uuid, "INET4": _inet, "INET6": _inet})


def mysql_column_mapping(column: MySqlColumn, modes: MySqlTypeModes) -> ColumnMapping:
    """The Connect schema, converter and NOT NULL fallback of one MySQL / MariaDB column.

    The schema is optional when the column is nullable.  ``convert`` takes the column's natural
    value (never None) and may return None only for a zero date in a nullable column.
    Raises `UnsupportedMySqlTypeError` for a type not in the module's table.
    """
    factory = _BY_TYPE.get(base_type(column.type_name.upper()))
    if factory is None:
        raise UnsupportedMySqlTypeError(
            f"column {column.name!r} has type {column.qualified_type}, which Headwater cannot "
            "map to a Kafka Connect schema"
        )
    return factory(column, modes)
