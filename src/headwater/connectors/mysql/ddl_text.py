"""The statement text the schema history and the schema change topic carry.

Debezium 3.x records, in both places, ``event.statement()`` of its DDL parser listener: the
source text from the first to the last token of the statement rule (``AntlrDdlParser.getText``)
of ``QueryEventData.getSql().trim()``.  Comments and whitespace before the first token and
after the last are hidden-channel tokens and so not part of it; neither is the ``;`` that ends
the statement.  Comments inside the statement stay as written.  The history record is written
from the same schema change event, so both carry the same text.

One difference, on purpose: Debezium's lexer also hides MySQL executable comments
(``/*!50100 ... */``, ``/*M!100100 ... */``) and its parser ignores what they say.  Ours
applies them as the server does, so an executable comment at either end stays in the text:
replaying the history must rebuild the table the live stream built.
"""

from __future__ import annotations

__all__ = ["shorten", "statement_text"]


def _significant_span(sql: str) -> tuple[int, int, bool]:
    """(start, end) of the text between leading and trailing comments, whitespace and
    semicolons, and whether a ``;`` separates statements inside that span."""
    n = len(sql)
    i = 0
    first = -1
    last = 0  # end of the last significant piece
    inner_semicolon = False
    pending_semicolon = False
    while i < n:
        c = sql[i]
        piece = i
        if c in " \t\r\n\f\v":
            i += 1
            continue
        if c == "#" or (c == "-" and sql.startswith("--", i)
                        and (i + 2 == n or sql[i + 2] in " \t\r\n\f\v")):
            nl = sql.find("\n", i)
            i = n if nl < 0 else nl + 1
            continue
        if c == ";":
            pending_semicolon = True
            i += 1
            continue
        if c == "/" and sql.startswith("/*", i):
            close = sql.find("*/", i + 2)
            i = n if close < 0 else close + 2
            if not sql.startswith(("/*!", "/*M!"), piece):
                continue  # a plain comment; executable ones are statement text
        elif c in "'\"`":
            i = _after_quoted(sql, i, c)
        else:
            i += 1
        if first < 0:
            first = piece
        elif pending_semicolon:
            inner_semicolon = True
        pending_semicolon = False
        last = i
    return max(first, 0), last, inner_semicolon


def _after_quoted(sql: str, i: int, quote: str) -> int:
    """The position after the quoted string or identifier that starts at `i`."""
    n = len(sql)
    j = i + 1
    while j < n:
        if sql[j] == "\\" and quote != "`":
            j += 2
            continue
        if sql[j] == quote:
            if j + 1 < n and sql[j + 1] == quote:  # a doubled quote
                j += 2
                continue
            return j + 1
        j += 1
    return n


def statement_text(sql: str) -> str:
    """`sql` without the comments, whitespace and ``;`` around it (the whole text when that
    leaves nothing: a statement that is only a comment is recorded as written)."""
    start, end, _ = _significant_span(sql)
    text = sql[start:end]
    return text if text else sql.strip()


def is_single_statement(sql: str) -> bool:
    """No ``;`` between two statements (a trailing one does not count)."""
    return not _significant_span(sql)[2]


def shorten(sql: str, limit: int = 300) -> str:
    """A statement for a log or error message: whitespace runs collapsed, cut at `limit`."""
    text = " ".join(sql.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
