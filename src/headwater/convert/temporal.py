"""Debezium's temporal semantic types, independent of any database.

Every conversion uses integer arithmetic on the proleptic Gregorian calendar (the calendar of
PostgreSQL, MySQL and Java's `java.time`), so there is no float rounding anywhere:

* ``io.debezium.time.Date`` (INT32): days since 1970-01-01
* ``io.debezium.time.Time`` (INT32): milliseconds past midnight
* ``io.debezium.time.MicroTime`` (INT64): microseconds past midnight
* ``io.debezium.time.Timestamp`` (INT64): milliseconds since the epoch, no time zone
* ``io.debezium.time.MicroTimestamp`` (INT64): microseconds since the epoch, no time zone
* ``io.debezium.time.ZonedTimestamp`` (STRING): ISO-8601 instant in UTC, ``...Z``
* ``io.debezium.time.ZonedTime`` (STRING): ISO-8601 time in UTC, ``HH:MM:SS[.f]Z``
* ``org.apache.kafka.connect.data.Date`` / ``Time`` / ``Timestamp`` (``connect`` mode): INT32
  days, INT32 milliseconds past midnight, INT64 milliseconds since the epoch

Millisecond values are *floored* microsecond values, as Java's ``Instant.toEpochMilli()`` does
(so ``1969-12-31 23:59:59.9995`` is ``-1`` ms, not ``0``).

Parsing accepts the ISO text both PostgreSQL (``DateStyle=ISO``) and MySQL print:
``YYYY-MM-DD`` (years of 4 or more digits, optional PostgreSQL `` BC`` suffix),
``HH:MM:SS[.ffffff]`` and ``YYYY-MM-DD HH:MM:SS[.ffffff][+HH[:MM[:SS]]][ BC]``.  A year
``N BC`` is the astronomical year ``1 - N`` (``0044-03-15 BC`` is ``-0043-03-15``), as in
``java.time``.  The common forms go through the C-implemented ``datetime.fromisoformat`` (about
0.5 µs); the rest (BC, years beyond 9999, hour 24) through a regular expression.

Formatting follows Java's ``DateTimeFormatter.ISO_OFFSET_DATE_TIME``: a four-digit year,
``+`` before years above 9999 and ``-`` before years below 0 (``+21016-11-04T06:51:30Z``,
``-0043-03-15T00:00:00Z``).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from headwater.model.schema import INT32, INT64, STRING, ConnectSchema

# ---------------------------------------------------------------------------------------------
# Semantic type names and the time.precision.mode values
# ---------------------------------------------------------------------------------------------

DATE = "io.debezium.time.Date"
TIME = "io.debezium.time.Time"
MICRO_TIME = "io.debezium.time.MicroTime"
TIMESTAMP = "io.debezium.time.Timestamp"
MICRO_TIMESTAMP = "io.debezium.time.MicroTimestamp"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
ZONED_TIME = "io.debezium.time.ZonedTime"
CONNECT_DATE = "org.apache.kafka.connect.data.Date"
CONNECT_TIME = "org.apache.kafka.connect.data.Time"
CONNECT_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"

ADAPTIVE = "adaptive"
ADAPTIVE_TIME_MICROSECONDS = "adaptive_time_microseconds"
CONNECT = "connect"
TIME_PRECISION_MODES = frozenset({ADAPTIVE, ADAPTIVE_TIME_MICROSECONDS, CONNECT})

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND
EPOCH_ORDINAL = 719_163  # date(1970, 1, 1).toordinal()
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# ---------------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------------


def _check_mode(mode: str) -> None:
    if mode not in TIME_PRECISION_MODES:
        raise ValueError(f"unknown time.precision.mode {mode!r}")


def date_schema(mode: str, optional: bool) -> ConnectSchema:
    """DATE: ``io.debezium.time.Date``, or Kafka's ``Date`` in ``connect`` mode (both INT32)."""
    _check_mode(mode)
    return ConnectSchema(INT32, optional, CONNECT_DATE if mode == CONNECT else DATE, 1)


def time_is_micros(precision: int, mode: str) -> bool:
    """Whether TIME(precision) is carried in microseconds (else milliseconds).

    adaptive: precision 0-3 → ms (``Time``), 4-6 → µs (``MicroTime``);
    adaptive_time_microseconds: always µs; connect: always ms (Kafka ``Time``).
    """
    _check_mode(mode)
    if mode == ADAPTIVE:
        return precision > 3
    return mode == ADAPTIVE_TIME_MICROSECONDS


def time_schema(precision: int, mode: str, optional: bool) -> ConnectSchema:
    """TIME(precision): INT32 ``Time``, INT64 ``MicroTime`` or INT32 Kafka ``Time``."""
    if mode == CONNECT:
        return ConnectSchema(INT32, optional, CONNECT_TIME, 1)
    if time_is_micros(precision, mode):
        return ConnectSchema(INT64, optional, MICRO_TIME, 1)
    return ConnectSchema(INT32, optional, TIME, 1)


def timestamp_is_micros(precision: int, mode: str) -> bool:
    """Whether TIMESTAMP(precision) is carried in microseconds (else milliseconds).

    adaptive and adaptive_time_microseconds: precision 0-3 → ms (``Timestamp``), 4-6 → µs
    (``MicroTimestamp``); connect: always ms (Kafka ``Timestamp``).
    """
    _check_mode(mode)
    return mode != CONNECT and precision > 3


def timestamp_schema(precision: int, mode: str, optional: bool) -> ConnectSchema:
    """TIMESTAMP(precision): INT64 ``Timestamp``, ``MicroTimestamp`` or Kafka ``Timestamp``."""
    if mode == CONNECT:
        return ConnectSchema(INT64, optional, CONNECT_TIMESTAMP, 1)
    if timestamp_is_micros(precision, mode):
        return ConnectSchema(INT64, optional, MICRO_TIMESTAMP, 1)
    return ConnectSchema(INT64, optional, TIMESTAMP, 1)


def zoned_timestamp_schema(optional: bool) -> ConnectSchema:
    return ConnectSchema(STRING, optional, ZONED_TIMESTAMP, 1)


def zoned_time_schema(optional: bool) -> ConnectSchema:
    return ConnectSchema(STRING, optional, ZONED_TIME, 1)


# Debezium's values for a missing NOT NULL value: the epoch (JdbcValueConverters).
ZONED_TIMESTAMP_FALLBACK = "1970-01-01T00:00:00Z"
ZONED_TIME_FALLBACK = "00:00:00Z"

# ---------------------------------------------------------------------------------------------
# Calendar arithmetic (proleptic Gregorian, astronomical years: 1 BC is year 0)
# ---------------------------------------------------------------------------------------------


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y = year - (month <= 2)
    era = y // 400  # floor division (Hinnant's C code emulates it)
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01 (inverse of `days_from_civil`)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _days_checked(year: int, month: int, day: int) -> int:
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} out of range")
    dim = _DAYS_IN_MONTH[month]
    if month == 2 and (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)):
        dim = 29
    if not 1 <= day <= dim:
        raise ValueError(f"day {day} out of range for month {month} of year {year}")
    return days_from_civil(year, month, day)


_DAYS_IN_MONTH = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

_FRACTION_SCALE = (1, 100_000, 10_000, 1_000, 100, 10, 1)  # µs per unit of an n-digit fraction

_DATE_RE = re.compile(r"(\d{4,})-(\d\d)-(\d\d)( BC)?\Z")
_TIME_RE = re.compile(r"(-)?(\d{2,}):(\d\d):(\d\d)(?:\.(\d{1,6}))?\Z")
_OFFSET = r"(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)"
_TS_RE = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?" + _OFFSET + r"?( BC)?\Z"
)
_TIMETZ_RE = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?" + _OFFSET + r"\Z")

_date_fromiso = date.fromisoformat
_datetime_fromiso = datetime.fromisoformat
_time_fromiso = time.fromisoformat
_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICRO = timedelta(microseconds=1)
_ONE_MILLI = timedelta(milliseconds=1)


def _fraction_micros(fraction: str | None) -> int:
    if not fraction:
        return 0
    return int(fraction) * _FRACTION_SCALE[len(fraction)]


def _offset_seconds(sign: str | None, hh: str | None, mm: str | None, ss: str | None) -> int:
    if sign is None or hh is None:
        return 0
    secs = int(hh) * 3600 + (int(mm) if mm else 0) * 60 + (int(ss) if ss else 0)
    return -secs if sign == "-" else secs


def _year(text: str, bc: str | None) -> int:
    year = int(text)
    if bc:
        if year == 0:
            raise ValueError("year 0 BC does not exist")
        return 1 - year
    return year


def parse_date(text: str) -> int:
    """Days since the epoch of ``YYYY-MM-DD`` (or ``YYYYY...-MM-DD``, optional `` BC``)."""
    try:
        return _date_fromiso(text).toordinal() - EPOCH_ORDINAL
    except ValueError:
        pass
    m = _DATE_RE.match(text)
    if m is None:
        raise ValueError(f"invalid date {text!r}")
    return _days_checked(_year(m[1], m[4]), int(m[2]), int(m[3]))


def parse_time(text: str) -> int:
    """Microseconds of ``HH:MM:SS[.ffffff]``; allows ``24:00:00`` and (MySQL) ``-838:59:59``."""
    try:
        t = _time_fromiso(text)
        return ((t.hour * 60 + t.minute) * 60 + t.second) * MICROS_PER_SECOND + t.microsecond
    except ValueError:
        pass
    m = _TIME_RE.match(text)
    if m is None:
        raise ValueError(f"invalid time {text!r}")
    minutes, seconds = int(m[3]), int(m[4])
    if minutes > 59 or seconds > 59:
        raise ValueError(f"invalid time {text!r}")
    us = (int(m[2]) * 3600 + minutes * 60 + seconds) * MICROS_PER_SECOND + _fraction_micros(m[5])
    return -us if m[1] else us


def _parse_timestamp_slow(text: str, with_offset: bool) -> int:
    m = _TS_RE.match(text)
    if m is None or (m[8] is not None) != with_offset:
        raise ValueError(f"invalid timestamp {text!r}")
    days = _days_checked(_year(m[1], m[12]), int(m[2]), int(m[3]))
    hour, minute, second = int(m[4]), int(m[5]), int(m[6])
    if hour > 24 or minute > 59 or second > 60:  # 60: a leap second some sources print
        raise ValueError(f"invalid timestamp {text!r}")
    secs = days * 86_400 + hour * 3600 + minute * 60 + second
    secs -= _offset_seconds(m[8], m[9], m[10], m[11])
    return secs * MICROS_PER_SECOND + _fraction_micros(m[7])


def parse_timestamp(text: str) -> int:
    """Microseconds since the epoch of ``YYYY-MM-DD HH:MM:SS[.ffffff][ BC]`` read as UTC."""
    try:
        return (_datetime_fromiso(text) - _EPOCH) // _ONE_MICRO
    except (ValueError, TypeError):
        return _parse_timestamp_slow(text, False)


def parse_timestamp_millis(text: str) -> int:
    """Milliseconds (floored) since the epoch of a timestamp without time zone."""
    try:
        return (_datetime_fromiso(text) - _EPOCH) // _ONE_MILLI
    except (ValueError, TypeError):
        return _parse_timestamp_slow(text, False) // 1000


def parse_timestamp_tz(text: str) -> int:
    """Microseconds since the epoch of ``YYYY-MM-DD HH:MM:SS[.f]±HH[:MM[:SS]][ BC]``."""
    try:
        return (_datetime_fromiso(text) - _EPOCH_UTC) // _ONE_MICRO
    except (ValueError, TypeError):
        return _parse_timestamp_slow(text, True)


def parse_time_tz(text: str) -> tuple[int, int]:
    """(microseconds past midnight as written, offset in seconds) of ``HH:MM:SS[.f]±HH[:MM]``."""
    m = _TIMETZ_RE.match(text)
    if m is None:
        raise ValueError(f"invalid time with time zone {text!r}")
    hour, minute, second = int(m[1]), int(m[2]), int(m[3])
    if hour > 24 or minute > 59 or second > 59:
        raise ValueError(f"invalid time with time zone {text!r}")
    us = (hour * 3600 + minute * 60 + second) * MICROS_PER_SECOND + _fraction_micros(m[4])
    return us, _offset_seconds(m[5], m[6], m[7], m[8])


def saturate_int64(value: int) -> int:
    """Clamps to the INT64 range (Java's ``TimeUnit`` conversions saturate the same way)."""
    if value > INT64_MAX:
        return INT64_MAX
    if value < INT64_MIN:
        return INT64_MIN
    return value


# ---------------------------------------------------------------------------------------------
# Formatting (ZonedTimestamp / ZonedTime)
# ---------------------------------------------------------------------------------------------


def format_iso_year(year: int) -> str:
    """A year as ``java.time`` ISO formatters print it.

    Four digits, ``+`` before years above 9999, ``-`` before years below 0.
    """
    if 0 <= year <= 9999:
        return f"{year:04d}"
    if year > 9999:
        return f"+{year}"
    return f"-{-year:04d}"


def format_fraction(micros: int, width: int) -> str:
    """The fractional-second part (with its dot) of `micros` (0-999999).

    ``width`` 1-9 prints exactly that many digits (Debezium's ``ZonedTimestamp`` formatter for
    a column of that precision); ``width <= 0`` prints as few as needed, none for a whole second
    (``DateTimeFormatter.ISO_*``: trailing zeros stripped).
    """
    if width > 0:
        return "." + f"{micros:06d}000"[:width]
    if micros == 0:
        return ""
    return "." + f"{micros:06d}".rstrip("0")


def format_zoned_timestamp(epoch_micros: int, width: int) -> str:
    """``io.debezium.time.ZonedTimestamp`` text (UTC, ``Z``) of an instant in epoch µs."""
    days, micros_of_day = divmod(epoch_micros, MICROS_PER_DAY)
    year, month, day = civil_from_days(days)
    secs, micros = divmod(micros_of_day, MICROS_PER_SECOND)
    hours, rem = divmod(secs, 3600)
    minutes, seconds = divmod(rem, 60)
    return (
        f"{format_iso_year(year)}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}"
        f"{format_fraction(micros, width)}Z"
    )


def format_zoned_time(micros_of_day: int) -> str:
    """``io.debezium.time.ZonedTime`` text (``HH:MM:SS[.f]Z``, trailing zeros stripped)."""
    secs, micros = divmod(micros_of_day, MICROS_PER_SECOND)
    hours, rem = divmod(secs, 3600)
    minutes, seconds = divmod(rem, 60)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{format_fraction(micros, 0)}Z"


def zoned_time_from_text(text: str) -> str:
    """``ZonedTime`` text of a ``HH:MM:SS[.f]±HH[:MM[:SS]]`` value, normalized to UTC.

    The end-of-day ``24:00:00`` at UTC stays ``24:00:00Z`` (Debezium's
    ``PostgresTimeBoundary``); with any other offset the instant wraps within the day, as
    ``OffsetTime.withOffsetSameInstant(UTC)`` does.
    """
    us, offset = parse_time_tz(text)
    if offset == 0:
        if us == MICROS_PER_DAY:
            return "24:00:00Z"
        return format_zoned_time(us)
    return format_zoned_time((us - offset * MICROS_PER_SECOND) % MICROS_PER_DAY)
