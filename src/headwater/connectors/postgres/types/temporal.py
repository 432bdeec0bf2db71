"""Date and time types: date, time, timetz, timestamp, timestamptz, interval.

Values arrive on sessions set to ``DateStyle=ISO`` and ``IntervalStyle=postgres``; the common
shapes go through the C-implemented ``fromisoformat`` parsers or plain slicing, and everything
else (BC, 5+ digit years, ``24:00:00``, ``infinity``) falls back to `headwater.convert.temporal`.
The infinity values are explained in the package docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta

from headwater.connectors.postgres.types.base import Factory, PgType, temporal_precision
from headwater.connectors.postgres.types.oids import (
    DATE_OID,
    INTERVAL_OID,
    TIME_OID,
    TIMESTAMP_OID,
    TIMESTAMPTZ_OID,
    TIMETZ_OID,
)
from headwater.convert import ColumnMapping, TypeModes
from headwater.convert.pg_interval import interval_iso_string, interval_micro_duration
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
from headwater.model.schema import INT64, STRING, ConnectSchema

MICRO_DURATION_NAME = "io.debezium.time.MicroDuration"
INTERVAL_NAME = "io.debezium.time.Interval"

# timestamp 'infinity' / '-infinity': pgjdbc's PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY taken
# as microseconds by Debezium (PostgresValueConverter.POSITIVE_INFINITY_LOCAL_DATE_TIME).
TIMESTAMP_POSITIVE_INFINITY_MICROS = 9_223_372_036_825_200_000
TIMESTAMP_NEGATIVE_INFINITY_MICROS = -9_223_372_036_832_400_000
TIMESTAMP_POSITIVE_INFINITY_MILLIS = TIMESTAMP_POSITIVE_INFINITY_MICROS // 1000
TIMESTAMP_NEGATIVE_INFINITY_MILLIS = TIMESTAMP_NEGATIVE_INFINITY_MICROS // 1000
# date 'infinity' / '-infinity': Headwater's choice (see the package docstring).
DATE_POSITIVE_INFINITY_DAYS = 2_147_483_647
DATE_NEGATIVE_INFINITY_DAYS = -2_147_483_648

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


def _date(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
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


def _time(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    precision = temporal_precision(t.typmod)
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


def _timestamp(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    precision = temporal_precision(t.typmod)
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


def _timestamptz(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    convert = zoned_timestamp_converter(temporal_precision(t.typmod))
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


def _timetz(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    return ColumnMapping(zoned_time_schema(optional), zoned_time, ZONED_TIME_FALLBACK)


def _interval(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    if modes.interval_handling_mode == "string":
        schema = ConnectSchema(STRING, optional, INTERVAL_NAME, 1)
        return ColumnMapping(schema, interval_iso_string, "P0Y0M0DT0H0M0S")
    schema = ConnectSchema(INT64, optional, MICRO_DURATION_NAME, 1)
    return ColumnMapping(schema, interval_micro_duration, 0)


BY_OID: dict[int, Factory] = {
    DATE_OID: _date,
    TIME_OID: _time,
    TIMESTAMP_OID: _timestamp,
    TIMESTAMPTZ_OID: _timestamptz,
    INTERVAL_OID: _interval,
    TIMETZ_OID: _timetz,
}

BY_NAME: dict[str, Factory] = {
    "date": _date,
    "time": _time,
    "time without time zone": _time,
    "timestamp": _timestamp,
    "timestamp without time zone": _timestamp,
    "timestamptz": _timestamptz,
    "timestamp with time zone": _timestamptz,
    "interval": _interval,
    "timetz": _timetz,
    "time with time zone": _timetz,
}
