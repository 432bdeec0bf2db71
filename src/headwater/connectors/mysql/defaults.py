"""Column defaults in MySQL / MariaDB schemas, as Debezium's binlog connectors resolve them.

Debezium's DDL parser (DefaultValueParserListener) keeps a column's ``DEFAULT`` when it is a
literal (a string, unquoted; a number with its sign; a boolean), turns ``CURRENT_TIMESTAMP`` and
``NOW()`` into ``1970-01-01 00:00:00`` and drops a computed default (``(expr)``, a function
call, ``NULL``).  BinlogDefaultValueConverter then parses the text by the column's JDBC type and
the column's own converter gives the field schema's ``default``:

* numbers: ``true``/``false`` are 1/0; DECIMAL is rounded HALF_UP to the column's scale; FLOAT
  and DOUBLE are parsed as doubles; integers as written;
* DATE, DATETIME: a zero value (``0000-00-00...``, ``0``) is no default in a nullable column, the
  epoch in a NOT NULL one;
* TIMESTAMP: a zero value, ``0`` or ``1970-01-01 00:00:00`` (so ``CURRENT_TIMESTAMP``) is no
  default in a nullable column and the epoch as a ``java.sql.Timestamp`` in a NOT NULL one
  (``1970-01-01T00:00:00Z``, no fraction digits); any other value a ``ZonedDateTime``, with the
  column's fraction digits (the worker's zone taken as UTC);
* TIME: the duration; YEAR: the number; character types, ENUM and SET: the text.

A default that cannot be parsed is no default (Debezium logs a warning and, for a NOT NULL
temporal column, uses the epoch; Headwater leaves those out).  Types not listed here (BIT,
binary, JSON, spatial, UUID, INET) get no default: see docs/compatibility.md.
"""

from __future__ import annotations

import logging
import re
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from headwater.connectors.mysql.columns import JdbcTimestamp, MySqlColumn
from headwater.connectors.mysql.ddl_types import base_type
from headwater.model.schema import NO_DEFAULT

__all__ = ["column_default"]

log = logging.getLogger(__name__)

_INTEGERS = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT"})
_NUMBERS = _INTEGERS | {"DECIMAL", "FLOAT", "DOUBLE", "BOOLEAN"}
_STRINGS = frozenset({"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM",
                      "SET"})
_TEMPORAL = frozenset({"DATE", "DATETIME", "TIMESTAMP", "TIME", "YEAR"})
_EPOCH_TEXT = "1970-01-01 00:00:00"
# CURRENT_TIMESTAMP[(n)] / NOW([n]): Debezium's parser writes the epoch for them
_NOW = re.compile(r"(?i)(CURRENT_TIMESTAMP|NOW)\s*(\(\s*\d*\s*\))?")
# a computed default as Headwater's DDL parser keeps its text: (expr), f(...), a.f(...)
_COMPUTED = re.compile(r"(?s)\(.*|[A-Za-z_][\w$]*(\.[A-Za-z_][\w$]*)?\s*\(.*\)|"
                       r"(?i:NEXT|PREVIOUS)\s+VALUE\s+FOR\b.*|(?i:CASE)\b.*")
_ZERO_DATE = re.compile(r"0{4}-0{2}-0{2}")
_ZERO_TIMESTAMP = re.compile(r"0{4}-0{2}-0{2} 00:00:00(\.0*)?")
_DATE_TIME = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6})\d*)?)?)?")
_DURATION = re.compile(r"(-)?(\d+):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,6})\d*)?)?")


def column_default(column: MySqlColumn, convert: Any) -> Any:
    """The field schema default of `column` (its converter is `convert`), or NO_DEFAULT."""
    text = column.default
    if text is None:
        return NO_DEFAULT
    kind = base_type(column.type_name.upper())
    if _NOW.fullmatch(text.strip()):
        text = _EPOCH_TEXT
    elif kind not in _STRINGS and _COMPUTED.fullmatch(text.strip()):
        return NO_DEFAULT
    try:
        natural = _natural(column, kind, text)
    except (ValueError, InvalidOperation, OverflowError) as exc:
        log.debug("column %s: default %r not resolved: %s", column.name, text, exc)
        return NO_DEFAULT
    if natural is NO_DEFAULT:
        return NO_DEFAULT
    try:
        value = convert(natural)
    except Exception as exc:  # a value the column cannot hold: no default, as Debezium
        log.debug("column %s: default %r not converted: %s", column.name, text, exc)
        return NO_DEFAULT
    return NO_DEFAULT if value is None else value


def _natural(column: MySqlColumn, kind: str, text: str) -> Any:
    if kind in _STRINGS:
        return text
    if kind not in _NUMBERS and kind not in _TEMPORAL:
        return NO_DEFAULT
    text = text.strip()
    if kind in _NUMBERS and text.lower() in ("true", "false"):
        text = "1" if text.lower() == "true" else "0"
    if kind in _INTEGERS or kind == "YEAR":
        return int(text)
    if kind == "BOOLEAN":
        return int(text) != 0
    if kind == "DECIMAL":
        value = Decimal(text)
        if column.scale is not None:
            value = value.quantize(Decimal(1).scaleb(-column.scale), rounding=ROUND_HALF_UP)
        return value
    if kind in ("FLOAT", "DOUBLE"):
        return float(text)
    if kind == "TIME":
        return _duration(text)
    if kind == "TIMESTAMP":
        if _ZERO_TIMESTAMP.fullmatch(text) or text in ("0", _EPOCH_TEXT):
            if column.nullable:
                return NO_DEFAULT
            return JdbcTimestamp(1970, 1, 1)  # Timestamp.from(Instant.EPOCH): no fraction digits
        return _date_time(text)
    zero = text == "0" or _ZERO_TIMESTAMP.fullmatch(text) is not None or (
        kind == "DATE" and _ZERO_DATE.fullmatch(text) is not None)
    if zero:
        if column.nullable:
            return NO_DEFAULT
        text = _EPOCH_TEXT
    moment = _date_time(text)
    return moment.date() if kind == "DATE" else moment


def _date_time(text: str) -> datetime:
    match = _DATE_TIME.fullmatch(text)
    if match is None:
        raise ValueError(f"not a date/time: {text!r}")
    y, mo, d, h, mi, s, frac = match.groups()
    micros = int((frac or "0").ljust(6, "0"))
    return datetime.combine(date(int(y), int(mo), int(d)), datetime.min.time()) + timedelta(
        hours=int(h or 0), minutes=int(mi or 0), seconds=int(s or 0), microseconds=micros)


def _duration(text: str) -> timedelta:
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ValueError(f"not a time: {text!r}")
    sign, h, mi, s, frac = match.groups()
    value = timedelta(hours=int(h), minutes=int(mi), seconds=int(s or 0),
                      microseconds=int((frac or "0").ljust(6, "0")))
    return -value if sign else value
