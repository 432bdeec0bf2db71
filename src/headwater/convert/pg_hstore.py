"""PostgreSQL ``hstore`` text → Debezium's ``hstore.handling.mode`` representations.

``hstore_out`` prints ``"key"=>"value", "k2"=>NULL``: keys and values always double-quoted,
``"`` and ``\\`` escaped with a backslash, a SQL NULL value as the bare word ``NULL`` (a quoted
``"NULL"`` is the string), pairs separated by ``, ``, the empty hstore as the empty string.
This is what pgjdbc's ``HStoreConverter.fromString`` (used by Debezium) reads.

* ``json`` (Debezium's default): STRING ``io.debezium.data.Json``, the map written by Jackson's
  ``JsonGenerator.writeStringField``: compact, ``{"a":"1","b":null}``.  The guide's example
  ``{"key" : "val"}`` has spaces current Debezium does not write.  Debezium iterates a Java
  ``HashMap``, so its key order is the hash order; Headwater keeps PostgreSQL's order (keys sorted
  by length, then bytes).  The objects are equal as JSON; only multi-key byte-for-byte comparisons
  can differ.
* ``map``: MAP<STRING, optional STRING>: a ``dict`` (JsonConverter writes it as a JSON object).
"""

from __future__ import annotations

import re

import orjson

__all__ = ["hstore_json", "parse_hstore"]

_PAIR = re.compile(r'"((?:[^"\\]|\\.)*)"=>(?:"((?:[^"\\]|\\.)*)"|(NULL))(?:, |\Z)', re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)


def _unescape(s: str) -> str:
    return _ESCAPE.sub(r"\1", s) if "\\" in s else s


def parse_hstore(text: str) -> dict[str, str | None]:
    """``"a"=>"1", "b"=>NULL`` → ``{"a": "1", "b": None}``."""
    out: dict[str, str | None] = {}
    pos = 0
    n = len(text)
    match = _PAIR.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            raise ValueError(f"malformed hstore at {pos}: {text[pos:pos + 40]!r}")
        key, value, null = m.groups()
        out[_unescape(key)] = None if null else _unescape(value)
        pos = m.end()
    return out


_dumps = orjson.dumps


def hstore_json(text: str) -> str:
    """``io.debezium.data.Json`` of an hstore's text: ``{"a":"1","b":null}``."""
    return _dumps(parse_hstore(text)).decode()
