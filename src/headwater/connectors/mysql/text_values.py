"""PyMySQL (text protocol) result decoding that yields the MySQL natural values, for every
SELECT of rows: the snapshot, its workers, incremental snapshot chunks.

Those reads and the binlog decoder must hand the type mapping the same Python values
(`headwater.connectors.mysql.columns`), or a row would change representation between its
snapshot read and its first streamed update.  PyMySQL's default decoders differ from that
contract in a few places, fixed here:

=================  ===============================  =========================================
type               PyMySQL default                  here
=================  ===============================  =========================================
DATE               ``'0000-00-00'`` and partly      ``ZERO_TEMPORAL`` (also for dates the
                   zero or invalid dates stay str   server accepted under ALLOW_INVALID_DATES)
DATETIME,          zero / partly zero values stay   ``ZERO_TEMPORAL``; fractional seconds of
TIMESTAMP          str; regex parse                 any width; ``fromisoformat`` fast path
TIME               regex parse                      slicing; ``-838:59:59.000000`` to
                                                    ``838:59:59.000000``, fractions of 1-6
                                                    digits, ``-00:00:00.5`` stays negative
YEAR               ``int``: YEAR(2) ``'69'`` → 69   the full year MySQL means (2069), which
                                                    is what the binlog carries; ``'0000'``
                                                    → 0 (the zero year)
=================  ===============================  =========================================

Unchanged because they already match: integers (``int``, unsigned included), FLOAT/DOUBLE
(``float``), DECIMAL (``Decimal``), BIT / BINARY / VARBINARY / BLOB / GEOMETRY and any string
in the ``binary`` charset (``bytes``: PyMySQL leaves charset-63 values undecoded), CHAR /
VARCHAR / TEXT / ENUM / SET (``str``, decoded with the connection charset, to which the server
converts every column charset), JSON (``str``: MySQL's JSON type is decoded with the
connection charset, MariaDB's JSON is a LONGTEXT).

TIMESTAMP values are read as UTC: the connection runs in UTC (connection.SESSION_STATEMENTS).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any

from headwater.connectors.mysql.columns import ZERO_TEMPORAL, JdbcTimestamp, MySqlTable

__all__ = [
    "parse_date",
    "parse_datetime",
    "parse_time",
    "parse_timestamp",
    "parse_year",
    "snapshot_conversions",
]

_date_fromiso = date.fromisoformat
_datetime_fromiso = datetime.fromisoformat
_timestamp_fromiso = JdbcTimestamp.fromisoformat
_FRACTION_SCALE = (1, 100_000, 10_000, 1_000, 100, 10, 1)  # µs per unit of n fraction digits


def parse_date(text: str) -> Any:
    """``YYYY-MM-DD`` → `date`; a zero, partly zero or impossible date → ``ZERO_TEMPORAL``."""
    try:
        return _date_fromiso(text)
    except ValueError:
        return ZERO_TEMPORAL


def parse_datetime(text: str) -> Any:
    """``YYYY-MM-DD HH:MM:SS[.f]`` → naive `datetime`; zero or invalid → ``ZERO_TEMPORAL``."""
    try:
        return _datetime_fromiso(text)
    except ValueError:
        return ZERO_TEMPORAL


def parse_timestamp(text: str) -> Any:
    """TIMESTAMP text → `JdbcTimestamp` (naive, UTC); the zero timestamp → ``ZERO_TEMPORAL``."""
    try:
        return _timestamp_fromiso(text)
    except ValueError:
        return ZERO_TEMPORAL


def parse_time(text: str) -> timedelta:
    """``[-]H..H:MM:SS[.f]`` (MySQL's TIME text, up to 838 hours) → `timedelta`."""
    negative = text[0] == "-"
    if negative:
        text = text[1:]
    first = text.index(":")
    seconds = int(text[:first]) * 3600 + int(text[first + 1 : first + 3]) * 60
    seconds += int(text[first + 4 : first + 6])
    micros = seconds * 1_000_000
    if len(text) > first + 6:  # ".f" follows
        fraction = text[first + 7 :]
        micros += int(fraction) * _FRACTION_SCALE[len(fraction)]
    return timedelta(microseconds=-micros if negative else micros)


def parse_year(text: str) -> int:
    """YEAR text → the year; YEAR(2) ``00``-``69`` → 2000-2069, ``70``-``99`` → 1970-1999."""
    year = int(text)
    if len(text) == 2:
        return year + (2000 if year < 70 else 1900)
    return year


def snapshot_conversions() -> dict[Any, Any]:
    """A PyMySQL ``conv`` mapping (``pymysql.connect(conv=...)``) that decodes natural values.

    It is PyMySQL's default mapping (encoders included, so query parameters still work) with
    the temporal decoders replaced.
    """
    from pymysql import converters  # type: ignore[import-untyped]
    from pymysql.constants import FIELD_TYPE  # type: ignore[import-untyped]

    conv: dict[Any, Any] = dict(converters.conversions)
    conv.update(
        {
            FIELD_TYPE.DATE: parse_date,
            FIELD_TYPE.NEWDATE: parse_date,
            FIELD_TYPE.DATETIME: parse_datetime,
            FIELD_TYPE.TIMESTAMP: parse_timestamp,
            FIELD_TYPE.TIME: parse_time,
            FIELD_TYPE.YEAR: parse_year,
        }
    )
    return conv


def select_list(table: MySqlTable) -> str:
    """Every column in table order for a snapshot SELECT; FLOAT read as DOUBLE, since the text
    protocol prints a FLOAT with 6 significant digits only (the binlog carries all of the
    stored float)."""
    from headwater.connectors.mysql.connection import quote_ident

    return ", ".join(
        f"CAST({quote_ident(c.name)} AS DOUBLE)" if c.type_name == "FLOAT"
        else quote_ident(c.name)
        for c in table.columns
    )
