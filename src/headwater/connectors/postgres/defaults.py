"""Column defaults in schemas: which SQL defaults Debezium resolves, as PostgreSQL text.

Debezium 3.7.0's ``PostgresDefaultValueConverter`` turns a column's default expression
(``pg_get_expr(adbin, adrelid)``, pgjdbc's ``COLUMN_DEF``) into the field schema's ``default``
for the types it has a mapper for, by the column's type name as pgjdbc reports it (``int4``
with a ``nextval(...)`` default is ``serial``, ``int8`` ``bigserial``; a domain keeps its own
name, so domains get no default; arrays neither):

* a literal: the text between the first pair of single quotes (``'abc'::character varying`` →
  ``abc``; 3.7.0.Alpha2's non-greedy ``'(.*?)'`` stops at a doubled quote, so ``'it''s'`` gives
  ``it``: Debezium's main unescapes it, the release does not, and the release is followed), or
  the expression itself when it has no quote (``123``, ``true``); ``NULL::type`` → no default;
* a function call (``nextval('s'::regclass)``, ``now()``, ``gen_random_uuid()``) or
  ``CURRENT_TIMESTAMP`` / ``CURRENT_DATE`` / ``CURRENT_TIME`` / ``LOCALTIME`` /
  ``LOCALTIMESTAMP``: a per-type placeholder (``0`` for integers and serials, ``0.0``, ``false``,
  ``""``, ``{}`` for json, the zero UUID, the epoch for dates and timestamps, midnight for time),
  so a serial column's field has ``"default": 0``;
* the value then goes through the column's own converter (Debezium's ``convertDefaultValue``),
  and a default that cannot be parsed, or that is a STRUCT (``VariableScaleDecimal``: Kafka's
  KAFKA-12694), is dropped.

Types Debezium has no mapper for (bytea, interval function defaults aside: see below, money,
geometric, network, range, hstore, ...) get no default.  ``interval`` literals are resolved
(``'1 day'::interval``); Debezium maps an interval function default through
``new PGInterval("epoch")``, which Headwater does not reproduce: no default there.

`default_text` returns the PostgreSQL text the column's converter is then given.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

__all__ = ["default_text", "jdbc_type_name"]

_LITERAL = re.compile(r"'(.*?)'")
_FUNCTION = re.compile(r"[(]?[A-Za-z0-9_.]+\((?:.+(?:, ?.+)*)?\)")
_CURRENT = frozenset({"current_timestamp", "current_time", "current_date", "localtime",
                      "localtimestamp"})
_TRIM = frozenset({"bit", "varbit", "bool", "numeric", "float4", "float8", "int2", "int4",
                   "serial", "int8", "bigserial", "smallserial", "uuid", "date", "time",
                   "timestamp", "timestamptz", "interval"})

# pgjdbc type name -> the placeholder Debezium maps a generated default to
_PLACEHOLDERS: dict[str, str] = {
    "bit": "00", "varbit": "0", "bool": "false", "bpchar": "", "varchar": "", "text": "",
    "numeric": "0.0", "float4": "0.0", "float8": "0.0", "int2": "0", "int4": "0",
    "serial": "0", "int8": "0", "bigserial": "0", "smallserial": "0", "json": "{}",
    "jsonb": "{}", "xml": "", "uuid": "00000000-0000-0000-0000-000000000000",
    "date": "1970-01-01", "time": "00:00", "timestamp": "1970-01-01",
    "timestamptz": "1970-01-01",
}
_NULL_AWARE = frozenset({"bool", "numeric", "float4", "float8", "int2", "int4", "serial",
                         "int8", "bigserial", "smallserial"})
_INTEGERS = frozenset({"int2", "int4", "serial", "int8", "bigserial", "smallserial"})


def jdbc_type_name(type_name: str, expression: str | None) -> str:
    """pgjdbc's ``TYPE_NAME`` of a column: ``serial`` / ``bigserial`` for int4 / int8 with a
    ``nextval(`` default, else the type's name."""
    if expression is not None and "nextval(" in expression:
        return {"int4": "serial", "int8": "bigserial"}.get(type_name, type_name)
    return type_name


def _literal(expression: str) -> str | None:
    """``extractDefault(String)``: the first quoted literal, else the bare expression."""
    if "'" not in expression:
        return None if expression.startswith("NULL::") else expression
    m = _LITERAL.search(expression)
    return m.group(1) if m else None


def _generated(expression: str) -> bool:
    return _FUNCTION.match(expression) is not None or expression.lower() in _CURRENT


def default_text(
    type_name: str, expression: str, enum_type: bool = False, scale: int | None = None
) -> str | None:
    """The PostgreSQL text form of the default Debezium resolves for a column of pgjdbc type
    name `type_name` (see `jdbc_type_name`) and default `expression`, or None for no default.
    `enum_type`: the type is an enum; `scale`: a numeric column's declared scale."""
    if enum_type:
        return _enum_default(type_name, expression)
    if type_name == "interval":  # literals only (see the module docstring)
        expression = expression.strip()
        return None if _generated(expression) else _literal(expression)
    placeholder = _PLACEHOLDERS.get(type_name)
    if placeholder is None:
        return None
    if type_name in _TRIM:
        expression = expression.strip()
    if type_name in _NULL_AWARE and expression.startswith("NULL::"):
        return None
    if _generated(expression):
        text: str | None = placeholder
        generated = True
    else:
        text = _literal(expression)
        generated = False
    if text is None:
        return None
    return _as_pg_text(type_name, text, generated, scale)


def _as_pg_text(type_name: str, text: str, generated: bool, scale: int | None) -> str | None:
    """The value the Java mapper parses, as the text PostgreSQL would print (what Headwater's
    converters read); None where the mapper's parse fails."""
    if type_name == "bool":
        return "t" if text.lower() == "true" else "f"  # Boolean.parseBoolean
    if type_name in _INTEGERS:
        try:
            return str(int(text, 10))
        except ValueError:
            return None
    if type_name == "numeric":
        try:
            value = Decimal(text)
        except InvalidOperation:
            return None
        exponent = value.as_tuple().exponent
        if scale is not None and isinstance(exponent, int) and scale > -exponent:
            value = value.quantize(Decimal(1).scaleb(-scale))  # BigDecimal.setScale
        return format(value, "f")
    if type_name in ("float4", "float8"):
        try:
            float(text)
        except ValueError:
            return None
        return text
    if type_name == "uuid":
        return text.lower()  # UUID.fromString(...).toString()
    if generated and type_name == "time":
        return "00:00:00"
    if generated and type_name == "timestamp":
        return "1970-01-01 00:00:00"
    if generated and type_name == "timestamptz":
        return "1970-01-01 00:00:00+00"
    return text


def _enum_default(type_name: str, expression: str) -> str | None:
    """``extractEnumDefault``: ``'label'::type`` (the cast naming the enum) → ``label``."""
    at = expression.rfind("::")
    if at < 0:
        return None
    cast = expression[at + 2:].rsplit(".", maxsplit=1)[-1].strip('"')
    if cast != type_name.rsplit(".", maxsplit=1)[-1].strip('"'):
        return None
    value = expression[:at]
    if len(value) >= 2 and value[0] == "'" and value[-1] == "'":
        return value[1:-1]
    return None
