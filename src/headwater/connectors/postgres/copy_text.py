"""PostgreSQL's COPY text format: field texts out of `COPY ... TO STDOUT` lines, and the
file-like sinks psycopg2's `copy_expert` writes into.

Why a module of its own: COPY text is one format read in three places - the snapshot's tables
(row-wise and column-wise), the parallel snapshot's chunks and the incremental snapshot's
chunks - with the same escapes pgoutput's text values have, so one set of converters serves
them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_COPY_ESCAPE = re.compile(r"\\(.)")
_COPY_UNESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape_match(m: re.Match[str]) -> str:
    ch = m.group(1)
    return _COPY_UNESCAPES.get(ch, ch)


def unescape(field: str) -> str:
    """A COPY text field's value: its backslash escapes resolved."""
    return _COPY_ESCAPE.sub(_unescape_match, field)


def parse_copy_line(line: str) -> list[str | None]:
    """One line of COPY text format (without its newline) into field texts (None for \\N)."""
    return [None if f == "\\N" else unescape(f) if "\\" in f else f for f in line.split("\t")]


class CopySink:
    """File-like target of psycopg2's copy_expert: parses rows and emits batches."""

    def __init__(self, on_row: Callable[[list[str | None]], None]) -> None:
        self._on_row = on_row
        self._partial = ""

    def write(self, data: str | bytes) -> int:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        if self._partial:
            text = self._partial + text
            self._partial = ""
        start = 0
        while True:
            nl = text.find("\n", start)
            if nl < 0:
                self._partial = text[start:]
                break
            self._on_row(parse_copy_line(text[start:nl]))
            start = nl + 1
        return len(data)


class ChunkedCopySink:
    """File-like target of psycopg2's copy_expert: hands on whole lines, about `rows` at a
    time (COPY text has no newline inside a field, so a chunk ends at any newline)."""

    def __init__(self, on_chunk: Callable[[bytes], None], rows: int) -> None:
        self._on_chunk = on_chunk
        self._rows = max(1, rows)
        self._buffer = bytearray()
        self._lines = 0

    def write(self, data: str | bytes) -> int:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self._buffer += raw
        self._lines += raw.count(b"\n")
        if self._lines >= self._rows:
            self._flush()
        return len(data)

    def _flush(self) -> None:
        cut = self._buffer.rfind(b"\n") + 1
        if cut:
            chunk = bytes(self._buffer[:cut])
            del self._buffer[:cut]
            self._lines = 0
            self._on_chunk(chunk)

    def close(self) -> None:
        """Hands on the rest (called once COPY is done); a partial line is an error."""
        self._flush()
        if self._buffer:
            raise ValueError("COPY output ended inside a line")
