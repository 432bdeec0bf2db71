"""MongoDB query filters as operators write them in signals: shell-style JSON.

Why: Debezium's MongoDB connector reads an `execute-snapshot` signal's ``additional-conditions``
filter with ``Document.parse``, which accepts the mongo shell's relaxed syntax: unquoted keys
(``{ aa: { $lt: 250 } }``, Debezium's own tests write them so), single-quoted strings and
Extended JSON (``{"$oid": ...}``, ``{"$date": ...}``).  Python's JSON parser accepts none of the
first two, so the text is first rewritten into strict JSON (keys quoted, single-quoted strings
double-quoted) and then read with `bson.json_util`, which maps Extended JSON to BSON values.
A filter in parentheses (how Debezium stores conditions) is accepted too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bson import json_util

_BARE = re.compile(r"[A-Za-z_$][\w$.]*")


class FilterError(ValueError):
    """A filter that is no MongoDB query document."""


def _string(text: str, i: int, quote: str) -> tuple[str, int]:
    """The string literal starting at text[i] (a quote) as strict JSON, and the index after."""
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text):
            nxt = text[j + 1]
            out.append("'" if nxt == "'" else ch + nxt)
            j += 2
            continue
        if ch == quote:
            return '"' + "".join(out) + '"', j + 1
        out.append('\\"' if ch == '"' else ch)
        j += 1
    raise FilterError("unterminated string")


def strict_json(text: str) -> str:
    """Shell-style JSON rewritten as strict JSON: bare keys and single quotes."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            literal, i = _string(text, i, ch)
            out.append(literal)
            continue
        m = _BARE.match(text, i)
        if m is not None and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_$")):
            word = m.group()
            rest = text[m.end():].lstrip()
            if rest.startswith(":"):
                out.append(json.dumps(word))
            else:
                out.append(word)  # true, false, null, NaN...
            i = m.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_filter(text: str) -> dict[str, Any]:
    """A filter text (strict, Extended or shell-style JSON) as a query document."""
    body = text.strip()
    while body.startswith("(") and body.endswith(")"):
        body = body[1:-1].strip()
    if not body:
        return {}
    try:
        doc = json_util.loads(strict_json(body))
    except (ValueError, TypeError) as exc:
        raise FilterError(f"filter {text!r} is not a JSON query document ({exc})") from None
    if not isinstance(doc, dict):
        raise FilterError(f"filter {text!r} is not a JSON object")
    return doc


__all__ = ["FilterError", "parse_filter", "strict_json"]
