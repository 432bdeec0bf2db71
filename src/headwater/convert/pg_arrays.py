"""PostgreSQL array text output (``array_out``) → a Python list of the elements' text.

PostgreSQL prints an array as ``{e1,e2,...}``: an element is quoted (``"a b"``) when it is empty,
contains the delimiter, braces, quotes, backslashes or white space, or equals ``NULL`` in any
case; inside quotes ``\\"`` and ``\\\\`` are escapes; an unquoted ``NULL`` is SQL NULL
(``array_in`` also reads ``null``, but ``array_out`` only prints ``NULL``, which is what is
recognised here).  The delimiter is the element type's ``pg_type.typdelim``: ``,`` for every
built-in type except ``box``, which uses ``;`` (``{(3,4),(1,2);(1,1),(0,0)}``), and PostGIS's
``geometry`` uses ``:``.  Multi-dimensional arrays nest braces (``{{1,2},{3,4}}``) and arrays
whose lower bound is not 1 carry a dimension prefix (``[0:1]={7,8}``).

Kafka Connect has one element schema per ARRAY, and a PostgreSQL array column does not fix its
number of dimensions, so a multi-dimensional value is *flattened* in storage (row-major) order,
the order of ``unnest()``: ``{{1,2},{3,4}}`` → ``[1, 2, 3, 4]``.  Debezium (pgjdbc's ``PgArray``)
hands each sub-array to the element converter, which cannot convert it, so it emits ``null`` per
sub-array (``[null, null]``) and loses the values; see `headwater.connectors.postgres.types`.

The common case (one dimension, no quoting) is a ``str.split``; one dimension with quoting is one
regular-expression pass (verified, then ``findall``); anything else (nesting, dimension
prefixes, white space or escapes outside quotes) goes through a scanner.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["array_converter", "parse_array"]


def _plain(inner: str) -> bool:
    """One dimension, no quoting, no spaces: what array_out prints for most values.

    (array_out quotes any element with white space, so other white space never appears
    unquoted in its output; the scanner handles it in hand-written input.)
    """
    return (
        '"' not in inner
        and "\\" not in inner
        and "{" not in inner
        and "}" not in inner
        and " " not in inner
    )


_QUOTED = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"', re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)
_WHITE = " \t\n\r\v\f"
_unquoted_cache: dict[str, re.Pattern[str]] = {}
_OneDim = tuple[
    Callable[[str], "re.Match[str] | None"], Callable[[str], list[tuple[str, str]]]
]
_one_dim_cache: dict[str, _OneDim] = {}


def _one_dim(delimiter: str) -> _OneDim:
    """(verify, findall) for a one-dimensional array body of quoted and bare elements."""
    cached = _one_dim_cache.get(delimiter)
    if cached is None:
        d = re.escape(delimiter)
        quoted = r'"([^"\\]*(?:\\.[^"\\]*)*)"'
        bare = rf'([^{d}"\\{{}}\s]+)'
        element = rf'"[^"\\]*(?:\\.[^"\\]*)*"|[^{d}"\\{{}}\s]+'
        verify = re.compile(rf"(?:{element})(?:{d}(?:{element}))*", re.S)
        find = re.compile(rf"{quoted}|{bare}", re.S)
        cached = (verify.fullmatch, find.findall)
        _one_dim_cache[delimiter] = cached
    return cached


def _elements(text: str, inner: str, delimiter: str) -> list[str | None]:
    """Any array text but the plain case: one C-level pass for one dimension, else `_scan`."""
    if inner[:1] != "{" and text[:1] == "{":
        verify, findall = _one_dim(delimiter)
        if verify(inner) is not None:
            sub = _ESCAPE.sub
            return [
                (None if bare == "NULL" else bare)
                if bare
                else (sub(r"\1", quoted) if "\\" in quoted else quoted)
                for quoted, bare in findall(inner)
            ]
    return _scan(text, delimiter)


def _unquoted(delimiter: str) -> re.Pattern[str]:
    """An unquoted element: up to the delimiter or a brace (backslash escapes allowed)."""
    pattern = _unquoted_cache.get(delimiter)
    if pattern is None:
        d = re.escape(delimiter)
        pattern = re.compile(rf'(?:[^{d}{{}}"\\]|\\.)+', re.S)
        _unquoted_cache[delimiter] = pattern
    return pattern


def _scan(text: str, delimiter: str) -> list[str | None]:
    """The general parser: quoting, escapes, nesting, dimension prefixes."""
    n = len(text)
    i = 0
    if text.startswith("["):  # "[1:2][0:1]={...}": bounds decoration
        eq = text.find("=")
        if eq < 0:
            raise ValueError(f"malformed array {text!r}: dimensions without '='")
        i = eq + 1
    if i >= n or text[i] != "{":
        raise ValueError(f"malformed array {text!r}: expected '{{'")
    out: list[str | None] = []
    depth = 0
    expect_element = True
    quoted = _QUOTED.match
    unquoted = _unquoted(delimiter).match
    while i < n:
        c = text[i]
        if c == "{":
            depth += 1
            i += 1
            expect_element = True
            continue
        if c == "}":
            depth -= 1
            i += 1
            if depth == 0:
                if i != n:
                    raise ValueError(f"malformed array {text!r}: text after the closing brace")
                return out
            expect_element = False
            continue
        if c == delimiter:
            i += 1
            expect_element = True
            continue
        if c in _WHITE:  # array_in allows white space around elements
            i += 1
            continue
        if not expect_element:
            raise ValueError(f"malformed array {text!r} at {i}")
        if c == '"':
            m = quoted(text, i)
            if m is None:
                raise ValueError(f"malformed array {text!r}: unterminated quote")
            element = m.group(1)
            out.append(_ESCAPE.sub(r"\1", element) if "\\" in element else element)
        else:
            m = unquoted(text, i)
            if m is None:
                raise ValueError(f"malformed array {text!r} at {i}")
            element = m.group()
            if "\\" in element:
                out.append(_ESCAPE.sub(r"\1", element))
            else:
                element = element.rstrip(_WHITE)  # array_in trims unquoted elements
                out.append(None if element == "NULL" else element)
        i = m.end()
        expect_element = False
    raise ValueError(f"malformed array {text!r}: unbalanced braces")


def parse_array(text: str, delimiter: str = ",") -> list[str | None]:
    """The elements (text, or None for NULL) of an array's text output, flattened.

    >>> parse_array('{1,NULL,"a b","NULL"}')
    ['1', None, 'a b', 'NULL']
    >>> parse_array('{{1,2},{3,4}}')
    ['1', '2', '3', '4']
    """
    if text[:1] == "{" and text[-1:] == "}":
        inner = text[1:-1]
        if not inner:
            return []
        if _plain(inner):
            return [None if x == "NULL" else x for x in inner.split(delimiter)]
        return _elements(text, inner, delimiter)
    return _scan(text, delimiter)


def array_converter(
    element: Callable[[str], Any], delimiter: str = ","
) -> Callable[[str], list[Any]]:
    """Array text → list of converted elements (None stays None), flattened."""

    plain = _plain

    def convert(text: str) -> list[Any]:
        if text[:1] == "{" and text[-1:] == "}":
            inner = text[1:-1]
            if not inner:
                return []
            if plain(inner):
                if "NULL" not in inner:
                    return list(map(element, inner.split(delimiter)))
                return [None if x == "NULL" else element(x) for x in inner.split(delimiter)]
            return [None if x is None else element(x) for x in _elements(text, inner, delimiter)]
        return [None if x is None else element(x) for x in _scan(text, delimiter)]

    return convert
