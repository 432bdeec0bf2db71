"""Debezium's schema and field name adjusters (`schema.name.adjustment.mode`,
`field.name.adjustment.mode`: none, avro, avro_unicode), as its transforms apply them.

Transforms that derive schema names from topic names (ByLogicalTableRouter) or field names
from document keys (ExtractNewDocumentState, the outbox router's JSON expansion) run them
through these adjusters so that an Avro converter accepts the result; the names must come out
exactly as Debezium's, since consumers and schema registries key on them.  Java works on UTF-16
code units, so do these functions.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import TransformError

MODES = ("none", "avro", "avro_unicode")
Adjuster = Callable[[str], str]


def _letter(c: str) -> bool:
    return "a" <= c <= "z" or "A" <= c <= "Z"


def _digit(c: str) -> bool:
    return "0" <= c <= "9"


def _units(text: str) -> list[str]:
    """The UTF-16 code units of `text`, one str each (surrogates stay separate)."""
    raw = text.encode("utf-16-le", "surrogatepass")
    return [raw[i:i + 2].decode("utf-16-le", "surrogatepass") for i in range(0, len(raw), 2)]


def _unicode(c: str) -> str:
    """`UnicodeReplacementFunction.replace`: `_u` and the code unit in hex, at least 4 digits
    only when Java's `Integer.toHexString` gives 2 or fewer (`_u002d`, but `_u100`)."""
    hex_ = format(ord(c), "x")
    return "_u" + ("00" + hex_ if len(hex_) <= 2 else hex_)


def _make(first_ok: Callable[[str], bool], rest_ok: Callable[[str], bool],
          replace: Callable[[str], str], keep_leading_digit: bool) -> Adjuster:
    """Debezium's `SchemaNameAdjuster.validFullname` with one replacement function, plus the
    conflict check of its stateful adjusters (two names mapping to one is an error)."""
    seen: dict[str, str] = {}

    def adjust(name: str) -> str:
        if not name:
            return name
        units = _units(name)
        out: list[str] = []
        changed = False
        for i, c in enumerate(units):
            if (first_ok if i == 0 else rest_ok)(c):
                out.append(c)
                continue
            out.append(replace(c))
            if i == 0 and keep_leading_digit and unicodedata.category(c) == "Nd":
                out.append(c)  # "1abc" -> "_1abc": Debezium keeps a leading digit
            changed = True
        if not changed:
            return name
        result = "".join(out).encode("utf-16-le", "surrogatepass").decode(
            "utf-16-le", "surrogatepass")
        previous = seen.setdefault(result, name)
        if previous != name:
            raise TransformError(
                f"The Kafka Connect schema name '{name}' is not a valid Avro schema name and its "
                f"replacement '{result}' conflicts with another different schema '{previous}'")
        return result

    return adjust


def _identity(name: str) -> str:
    return name


def schema_name_adjuster(mode: str) -> Adjuster:
    """`SchemaNameAdjustmentMode.createAdjuster`: dots allowed (they separate namespaces)."""
    if mode == "avro":
        return _make(lambda c: _letter(c) or c == "_",
                     lambda c: _letter(c) or c in "_." or _digit(c),
                     lambda c: "_", True)
    if mode == "avro_unicode":
        return _make(_letter, lambda c: _letter(c) or c == "." or _digit(c), _unicode, False)
    return _identity


def field_name_adjuster(mode: str) -> Adjuster:
    """`FieldNameAdjustmentMode.createAdjuster`: as the schema adjuster, but a dot is invalid."""
    if mode == "avro":
        return _make(lambda c: _letter(c) or c == "_",
                     lambda c: _letter(c) or c == "_" or _digit(c), lambda c: "_", True)
    if mode == "avro_unicode":
        return _make(_letter, lambda c: _letter(c) or _digit(c), _unicode, False)
    return _identity


def read_mode(p: PluginProps, name: str) -> str:
    """A `*.name.adjustment.mode` property (default none)."""
    mode = p.choice(name, MODES, "none")
    if mode is None:  # pragma: no cover - has a default
        raise PluginConfigError(f"{p.key(name)}: missing")
    return mode
