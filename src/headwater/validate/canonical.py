"""One canonical text per value, computed the same way on both sides of a comparison.

The target holds Debezium-converted values in Arrow types (`pipeline/connect_types.py`); the
source holds database values.  Both are reduced to the same text, chosen by the *target*
column's Arrow type (it says what the conversion kept):

| target type            | canonical text                                  |
|------------------------|-------------------------------------------------|
| integers               | decimal digits                                   |
| string                 | the string                                       |
| bool                   | `true` / `false`                                 |
| decimal128             | the number without trailing fractional zeros (`12.5`, `100`) |
| float64 / float32      | PostgreSQL's shortest round-trip text (`0.1`, `100`, `1e+20`) |
| date32                 | ISO `YYYY-MM-DD`                                 |
| timestamp (any unit, with or without zone) | microseconds since 1970-01-01 UTC |

Other types (binary, time of day, intervals, JSON, arrays, ...) are not compared; they are
listed as such in the result, never skipped silently.  NULL is `\\N`.  A row is its key
columns and compared columns joined with U+001F, hashed with MD5.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from collections.abc import Callable
from typing import Any, Final

import pyarrow as pa

NULL: Final = "\\N"
SEP: Final = "\x1f"
_EPOCH: Final = dt.datetime(1970, 1, 1)


# The module docstring's table as data: (is this Arrow type, its kind); the type groups are
# disjoint, so the order does not matter.
_KINDS: Final[tuple[tuple[Callable[[pa.DataType], bool], str], ...]] = (
    (pa.types.is_integer, "int"),
    (pa.types.is_string, "text"),
    (pa.types.is_large_string, "text"),
    (pa.types.is_boolean, "bool"),
    (pa.types.is_decimal, "decimal"),
    (pa.types.is_floating, "float"),
    (pa.types.is_date32, "date"),
    (pa.types.is_timestamp, "timestamp"),
)


def kind(arrow: pa.DataType) -> str | None:
    """The canonical kind of a target column, or None when it is not compared."""
    return next((name for is_kind, name in _KINDS if is_kind(arrow)), None)


def _decimal(v: decimal.Decimal) -> str:
    text = format(v.normalize(), "f")
    return "0" if text == "-0" else text


def _float(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    text = repr(v)
    if text.endswith(".0"):
        text = text[:-2]
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').zfill(2)}"
    return text


def _timestamp(v: dt.datetime) -> str:
    if v.tzinfo is not None:
        v = v.astimezone(dt.UTC).replace(tzinfo=None)
    delta = v - _EPOCH
    return str((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)


_PYTHON: Final[dict[str, Callable[[Any], str]]] = {
    "int": str,
    "text": str,
    "bool": lambda v: "true" if v else "false",
    "decimal": _decimal,
    "float": _float,
    "date": lambda v: v.isoformat(),
    "timestamp": _timestamp,
}


def python_text(kind_: str, value: Any) -> str:
    """The canonical text of a target (Arrow -> Python) value."""
    return NULL if value is None else _PYTHON[kind_](value)


def sql_text(dialect: str, kind_: str, column: str) -> str:
    """A SQL expression giving the canonical text of source column `column` (quoted)."""
    if dialect == "postgres":
        expr = {
            "int": f"{column}::text",
            "text": f"{column}::text",
            "bool": f"{column}::text",
            "decimal": f"trim_scale({column})::text",
            "float": f"{column}::float8::text",
            "date": f"{column}::text",
            "timestamp": f"(extract(epoch from {column}) * 1000000)::numeric(30,0)::text",
        }[kind_]
        return f"coalesce({expr}, '{NULL}')"
    text = f"CAST({column} AS CHAR)"
    mysql = {
        "int": text,
        "text": text,
        "bool": f"IF({column}, 'true', 'false')",
        "decimal": (f"IF(LOCATE('.', {text}) > 0, TRIM(TRAILING '.' FROM "
                    f"TRIM(TRAILING '0' FROM {text})), {text})"),
        "date": text,
        "timestamp": (f"CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {column}) "
                      "AS CHAR)"),
    }
    # MariaDB's string literals take backslash escapes (PostgreSQL's standard ones do not).
    return f"COALESCE({mysql[kind_]}, '{NULL.replace(chr(92), chr(92) * 2)}')"


def supported(dialect: str, kind_: str) -> bool:
    # MariaDB's text of a DOUBLE is not PostgreSQL's shortest round-trip form.
    return not (dialect == "mysql" and kind_ == "float")


_SQL_KINDS: Final = {  # a JDBC target column's declared type name -> kind
    "timestamp": "timestamp", "timestamp without time zone": "timestamp",
    "timestamp with time zone": "timestamp", "datetime": "timestamp", "date": "date",
    "boolean": "bool", "bool": "bool", "smallint": "int", "integer": "int", "int": "int",
    "bigint": "int",
    "tinyint": "int", "mediumint": "int", "numeric": "decimal", "decimal": "decimal",
    "double precision": "float", "double": "float", "real": "float", "float": "float",
    "text": "text", "longtext": "text", "varchar": "text", "character varying": "text",
}


# Source types (information_schema data_type) whose values a target holds as strings
# unchanged.  Targets also hold times of day, JSON, intervals, ... as strings, in forms of the
# pipeline's own (`connect_types`): a string target column is compared only when its source is
# one of these.  PostgreSQL's char(n) is not: its text drops the padding Debezium sends.
SOURCE_TEXT_TYPES: Final = frozenset({
    "text", "character varying", "varchar", "char", "tinytext", "mediumtext", "longtext",
    "enum", "set", "uuid"})


def sql_kind(declared: str) -> str | None:
    """The canonical kind of a JDBC target column from its declared type (PostgreSQL's
    `format_type`, MariaDB's COLUMN_TYPE), or None when it is not compared."""
    t = declared.lower().strip()
    if t.startswith("tinyint(1)"):  # MariaDB's BOOLEAN
        return "bool"
    t = re.sub(r"\([^)]*\)", "", t)  # length, precision
    t = re.sub(r"\s+(collate|character set|charset)\s+\S+", "", t)
    t = re.sub(r"\s+(unsigned|signed|zerofill)\b", "", t)
    return _SQL_KINDS.get(" ".join(t.split()))
