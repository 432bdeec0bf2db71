"""PostgreSQL ``interval`` text → Debezium's ``MicroDuration`` (INT64) or ``Interval`` (STRING).

Input is PostgreSQL's output with ``IntervalStyle=postgres`` (what Headwater's sessions set):
``1 year 2 mons 3 days 04:05:06.78``, ``-1 years -2 mons +3 days -04:05:06.78``, ``-3 days
+04:00:00``, ``00:00:00``, ``2562047788:00:54.775807``.  Each field carries its own sign; the
time part's sign applies to its hours, minutes and seconds.  The ``postgres_verbose`` style
(``@ 1 year 2 mons -3 days 4 hours 5 mins 6.78 secs ago``, ``ago`` negating every field) is read
as well; ``sql_standard`` and ``iso_8601`` are not (ValueError).

``interval.handling.mode``:

* ``numeric``: INT64 ``io.debezium.time.MicroDuration``, Debezium's approximation with a month of
  365.25 / 12 = 30.4375 days, computed *exactly as Debezium computes it*:
  ``MicroDuration.durationMicros(years, months, days, hours, minutes, seconds, 30.4375)`` evaluates
  ``(((((years*12 + months) * 30.4375 + days) * 24 + hours) * 60 + minutes) * 60 + seconds) * 1e6``
  in IEEE doubles (``seconds`` being pgjdbc's ``PGInterval.getSeconds()``, ``whole + micros/1e6``)
  and truncates to a ``long``.  Python floats are the same doubles and the operations are done in
  the same order, so the result is bit-identical to Debezium's, including its artefacts: a few
  percent of values with a fraction of a second come out one microsecond below the exact figure
  (``00:00:00.000249`` → ``248``).  Values beyond the INT64 range (about 292 000 years) saturate,
  as Java's ``(long)`` cast does.
* ``string``: STRING ``io.debezium.time.Interval``, ``P<y>Y<m>M<d>DT<h>H<m>M<s>S`` with each field
  as PostgreSQL printed it (``P1Y2M3DT4H5M6.78S``, ``P-1Y-2M3DT-4H-5M-6.78S``, ``P0Y0M0DT0H0M0S``).
  Seconds are printed exactly, trailing zeros stripped.  Debezium passes them through a double
  (``BigDecimal.valueOf(PGInterval.getSeconds())`` truncated to 9 places) and prints, for about 4%
  of microsecond values, e.g. ``6.005022999`` for PostgreSQL's ``6.005023``; Headwater prints
  ``6.005023``.

Hours beyond 2^31 - 1 (PostgreSQL allows up to 2562047788) are read correctly; Debezium's
``Integer.parseInt`` fails the connector on them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "DAYS_PER_MONTH_AVG",
    "IntervalParts",
    "interval_iso_string",
    "interval_micro_duration",
    "micro_duration",
    "parse_interval",
]

DAYS_PER_MONTH_AVG = 365.25 / 12.0  # Debezium's MicroDuration.DAYS_PER_MONTH_AVG, 30.4375
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_TWO_POW_63 = 9.223372036854775808e18


class IntervalParts(NamedTuple):
    """An interval's fields as PostgreSQL prints them, each with its sign.

    ``micros`` holds the seconds: ``6.78`` is 6 780 000, ``-00:00:00.5`` is -500 000.
    """

    years: int = 0
    months: int = 0
    days: int = 0
    hours: int = 0
    minutes: int = 0
    micros: int = 0


_Fields = tuple[int, int, int, int, int, int]

# IntervalStyle=postgres: "[N year[s]] [N mon[s]] [N day[s]] [[+-]H:MM:SS[.f]]", one space apart.
_POSTGRES = re.compile(
    r"(?:([+-]?\d+) years? ?)?(?:([+-]?\d+) mons? ?)?(?:([+-]?\d+) days? ?)?"
    r"(?:([+-]?)(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?)?"
)
_VERBOSE_UNITS = (
    ("year", 0),
    ("mon", 1),
    ("day", 2),
    ("hour", 3),
    ("min", 4),
    ("sec", 5),
)


def _fraction_micros(digits: str | None) -> int:
    return int((digits + "00000")[:6]) if digits else 0


def _seconds_micros(text: str) -> int:
    """``"6.78"`` → 6 780 000, ``"-0.5"`` → -500 000 (at most 6 fraction digits)."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    whole, _, frac = body.partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or len(frac) > 6:
        raise ValueError(f"invalid interval seconds {text!r}")
    return sign * (int(whole) * 1_000_000 + _fraction_micros(frac))


def _parse_verbose(text: str) -> _Fields:
    tokens = text[1:].split()
    ago = bool(tokens) and tokens[-1] == "ago"
    if ago:
        tokens = tokens[:-1]
    fields = [0, 0, 0, 0, 0, 0]
    if tokens == ["0"]:
        return 0, 0, 0, 0, 0, 0
    if len(tokens) % 2:
        raise ValueError(f"invalid interval {text!r}")
    for value, unit in zip(tokens[::2], tokens[1::2], strict=True):
        for prefix, index in _VERBOSE_UNITS:
            if unit.startswith(prefix):
                fields[index] = _seconds_micros(value) if index == 5 else int(value)
                break
        else:
            raise ValueError(f"invalid interval unit {unit!r} in {text!r}")
    if ago:
        fields = [-f for f in fields]
    y, mo, d, h, mi, us = fields
    return y, mo, d, h, mi, us


_match_postgres = _POSTGRES.fullmatch


def _fields(text: str) -> _Fields:
    """(years, months, days, hours, minutes, micros) of an interval's text: the hot path."""
    m = _match_postgres(text)
    if m is None or not text:
        if text.startswith("@"):
            return _parse_verbose(text)
        raise ValueError(f"invalid interval {text!r} (expected IntervalStyle=postgres output)")
    years, months, days, sign, hours, minutes, seconds, fraction = m.groups()
    y = int(years) if years else 0
    mo = int(months) if months else 0
    d = int(days) if days else 0
    if hours is None:
        if years is None and months is None and days is None:
            raise ValueError(f"invalid interval {text!r}")
        return y, mo, d, 0, 0, 0
    us = int(seconds) * 1_000_000
    if fraction:
        us += int((fraction + "00000")[:6])
    if sign == "-":
        return y, mo, d, -int(hours), -int(minutes), -us
    return y, mo, d, int(hours), int(minutes), us


def parse_interval(text: str) -> IntervalParts:
    """The fields of an interval's ``postgres`` (or ``postgres_verbose``) text output."""
    return IntervalParts(*_fields(text))


def _micro_duration(
    years: int, months: int, days: int, hours: int, minutes: int, micros: int
) -> int:
    # PGInterval keeps whole seconds and microseconds, both with the interval's sign.
    whole = micros // 1_000_000 if micros >= 0 else -(-micros // 1_000_000)
    seconds = whole + (micros - whole * 1_000_000) / 1_000_000  # PGInterval.getSeconds()
    number_of_days = (years * 12 + months) * DAYS_PER_MONTH_AVG + days
    number_of_seconds = ((number_of_days * 24 + hours) * 60 + minutes) * 60 + seconds
    value = number_of_seconds * 1e6
    if value >= _TWO_POW_63:
        return _INT64_MAX
    if value <= -_TWO_POW_63:
        return _INT64_MIN
    return int(value)  # truncation toward zero, as Java's (long) cast


def micro_duration(parts: IntervalParts) -> int:
    """Debezium's ``MicroDuration.durationMicros`` of the fields, bit for bit (see module doc)."""
    return _micro_duration(*parts)


def interval_micro_duration(text: str) -> int:
    """``MicroDuration`` of an interval's text: the hot-path converter of numeric mode."""
    return _micro_duration(*_fields(text))


def _format_seconds(micros: int) -> str:
    sign = "-" if micros < 0 else ""
    whole, frac = divmod(abs(micros), 1_000_000)
    if not frac:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:06d}".rstrip("0")


def interval_iso_string(text: str) -> str:
    """``io.debezium.time.Interval`` of an interval's text: ``P1Y2M3DT4H5M6.78S``."""
    y, mo, d, h, mi, us = _fields(text)
    return f"P{y}Y{mo}M{d}DT{h}H{mi}M{_format_seconds(us)}S"
