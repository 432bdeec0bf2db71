"""Tokenizer for MySQL/MariaDB DDL, kept apart from the parser so that statement splitting,
quoting and comment rules live in one place.

One compiled regular expression does the scanning (a hand-written character loop is several
times slower in CPython).  Executable comments (`/*!40101 ... */`, `/*M!100100 ... */`) are the
way mysqldump and the server itself hide version-specific clauses; their content is real DDL,
so the lexer drops only the comment markers and keeps the tokens between them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Token kinds.
WORD = "word"  # unquoted identifier or keyword
QUOTED = "quoted"  # backtick identifier (or double-quoted under ANSI_QUOTES)
STRING = "string"  # '...' or "..." string literal, value unescaped
NUMBER = "number"
HEX = "hex"  # X'0A' / 0x0A, value is the source text
BITS = "bits"  # b'01' / 0b01, value is the source text
OP = "op"  # punctuation and operators
EOF = "eof"


class Token(NamedTuple):
    kind: str
    value: str  # identifier / unescaped string / source text
    upper: str  # value.upper() for WORD tokens, else value
    start: int  # offset of the token's first character in the source
    end: int  # offset just past the token


class LexError(ValueError):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


_PATTERN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line>(?:--(?=[\s]|$)|\#)[^\n]*)
  | (?P<exec>/\*M?!\d*)
  | (?P<block>/\*.*?\*/)
  | (?P<close>\*/)
  | (?P<bq>`(?:[^`]|``)*`)
  | (?P<sq>'(?:[^'\\]|\\.|'')*')
  | (?P<dq>"(?:[^"\\]|\\.|"")*")
  | (?P<hex>[xX]'[0-9a-fA-F]*'|0x[0-9a-fA-F]+(?![\w$]))
  | (?P<bits>[bB]'[01]*'|0b[01]+(?![\w$]))
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w$]))
  | (?P<word>[\w$]+)
  | (?P<op>:=|<=>|<=|>=|<>|!=|<<|>>|&&|\|\||->>|->|[-+*/%(),.;=<>!~^&|@?:{}\[\]])
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {
    "0": "\0",
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
    "%": "\\%",
    "_": "\\_",
}
# A backslash escape or a doubled quote, read in one left-to-right pass: two passes would take
# the quote an escape yields for half of a doubled one (the body \'\' is two quotes, not one).
_UNESCAPE_RE = {quote: re.compile(r"\\(.)|" + quote * 2, re.DOTALL) for quote in "'\""}


def _unescaped(match: re.Match[str]) -> str:
    escaped = match.group(1)
    if escaped is None:
        return match.group()[0]  # a doubled quote
    return _ESCAPES.get(escaped, escaped)


def unescape_string(body: str, quote: str) -> str:
    """The value of a string literal's body (without its quotes), as MySQL reads it."""
    if "\\" not in body and quote * 2 not in body:
        return body
    return _UNESCAPE_RE[quote].sub(_unescaped, body)


def tokenize(sql: str, ansi_quotes: bool = False) -> list[Token]:
    """All tokens of `sql`, ending with an EOF token; comments and whitespace dropped."""
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    length = len(sql)
    match = _PATTERN.match
    in_exec = 0
    while pos < length:
        m = match(sql, pos)
        if m is None:
            char = sql[pos]
            if char in "'\"`":
                raise LexError(f"unterminated quoted text starting at {pos}", pos)
            if sql.startswith("/*", pos):
                raise LexError(f"unterminated comment starting at {pos}", pos)
            raise LexError(f"unexpected character {char!r} at {pos}", pos)
        kind = m.lastgroup
        end = m.end()
        text = m.group()
        if kind == "word":
            append(Token(WORD, text, text.upper(), pos, end))
        elif kind == "op":
            append(Token(OP, text, text, pos, end))
        elif kind == "bq":
            name = text[1:-1].replace("``", "`")
            append(Token(QUOTED, name, name, pos, end))
        elif kind == "sq":
            value = unescape_string(text[1:-1], "'")
            append(Token(STRING, value, value, pos, end))
        elif kind == "dq":
            if ansi_quotes:
                name = text[1:-1].replace('""', '"')
                append(Token(QUOTED, name, name, pos, end))
            else:
                value = unescape_string(text[1:-1], '"')
                append(Token(STRING, value, value, pos, end))
        elif kind == "num":
            append(Token(NUMBER, text, text, pos, end))
        elif kind == "hex":
            append(Token(HEX, text, text, pos, end))
        elif kind == "bits":
            append(Token(BITS, text, text, pos, end))
        elif kind == "exec":
            in_exec += 1
        elif kind == "close":
            if not in_exec:
                raise LexError(f"'*/' without an opening comment at {pos}", pos)
            in_exec -= 1
        # ws, line, block: skipped
        pos = end
    append(Token(EOF, "", "", length, length))
    return tokens
