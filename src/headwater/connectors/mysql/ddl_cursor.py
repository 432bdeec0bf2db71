"""Token-level reading shared by every part of the DDL grammar.

The grammar is split by subject (columns, tables, ALTER, dispatch) into classes that extend one
another; this base holds only what all of them need to walk a statement's tokens: keyword
matching, identifiers, literals, balanced skipping, and the clauses that appear in many
statements alike (IF [NOT] EXISTS, WAIT n / NOWAIT, option values).
"""

from __future__ import annotations

from headwater.connectors.mysql.ddl_lexer import (
    BITS,
    EOF,
    HEX,
    NUMBER,
    OP,
    QUOTED,
    STRING,
    WORD,
    Token,
)
from headwater.connectors.mysql.ddl_model import DdlParseError, TableName
from headwater.connectors.mysql.ddl_types import normalize_charset

_VALUE_KINDS = frozenset({WORD, QUOTED, STRING, NUMBER, HEX, BITS})
_NAME_KINDS = frozenset({WORD, QUOTED})


class Cursor:
    """A position in one statement's tokens (the last token is always EOF)."""

    __slots__ = ("i", "text", "tokens")

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    def error(self, reason: str) -> DdlParseError:
        token = self.tokens[self.i]
        base = self.tokens[0].start
        return DdlParseError(reason, self.text, token.start - base, token.value or None)

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.tokens[self.i]
        if token.kind != EOF:
            self.i += 1
        return token

    def at(self, *words: str) -> bool:
        token = self.tokens[self.i]
        return token.kind == WORD and token.upper in words

    def at_seq(self, *words: str) -> bool:
        """The next tokens are exactly these keywords, in order."""
        for k, word in enumerate(words):
            token = self.peek(k)
            if token.kind != WORD or token.upper != word:
                return False
        return True

    def at_op(self, op: str) -> bool:
        token = self.tokens[self.i]
        return token.kind == OP and token.value == op

    def at_end(self) -> bool:
        return self.tokens[self.i].kind == EOF

    def accept(self, *words: str) -> bool:
        """Consumes the given keywords in sequence if all are next."""
        if not self.at_seq(*words):
            return False
        self.i += len(words)
        return True

    def accept_any(self, *words: str) -> str | None:
        """Consumes one of the keywords if it is next; returns it."""
        if self.at(*words):
            return self.next().upper
        return None

    def accept_op(self, op: str) -> bool:
        if self.at_op(op):
            self.i += 1
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error(f"expected {' '.join(words)}")

    def expect_op(self, op: str) -> None:
        if not self.accept_op(op):
            raise self.error(f"expected {op!r}")

    def identifier(self, what: str = "identifier") -> str:
        token = self.tokens[self.i]
        if token.kind in _NAME_KINDS:
            self.i += 1
            return token.value
        raise self.error(f"expected {what}")

    def table_name(self) -> TableName:
        first = self.identifier("table name")
        if self.at_op(".") and self.peek(1).kind in _NAME_KINDS:
            self.i += 1
            return TableName(first, self.identifier("table name"))
        return TableName(None, first)

    def qualified_name(self, what: str = "name") -> str:
        """A name with optional qualifiers (db.name); the last part is what counts."""
        name = self.identifier(what)
        while self.at_op(".") and self.peek(1).kind in _NAME_KINDS:
            self.i += 1
            name = self.identifier(what)
        return name

    def user_name(self) -> None:
        """An account: 'user'@'host', CURRENT_USER[()], CURRENT_ROLE, or a bare name."""
        if self.accept("CURRENT_USER") or self.accept("CURRENT_ROLE"):
            if self.at_op("(") and self.peek(1).value == ")":
                self.i += 2
            return
        token = self.next()
        if token.kind not in (*_NAME_KINDS, STRING):
            raise self.error("expected a user name")
        if self.accept_op("@"):
            self.next()

    def string(self, what: str = "string literal") -> str:
        """A string literal, allowing a charset introducer and adjacent literals."""
        token = self.tokens[self.i]
        if token.kind == WORD and (token.value.startswith("_") or token.upper == "N") and \
                self.peek(1).kind == STRING:
            self.i += 1
            token = self.tokens[self.i]
        if token.kind != STRING:
            raise self.error(f"expected {what}")
        self.i += 1
        parts = [token.value]
        while self.tokens[self.i].kind == STRING:
            parts.append(self.next().value)
        return "".join(parts)

    def number(self) -> int:
        token = self.tokens[self.i]
        if token.kind != NUMBER or not token.value.isdigit():
            raise self.error("expected a whole number")
        self.i += 1
        return int(token.value)

    def skip_parens(self) -> str:
        """Skips a balanced '(' ... ')' group; returns its source text (with the parens)."""
        first = self.tokens[self.i]
        self.expect_op("(")
        depth = 1
        while depth:
            token = self.next()
            if token.kind == EOF:
                raise self.error("unbalanced parentheses")
            if token.kind == OP:
                if token.value == "(":
                    depth += 1
                elif token.value == ")":
                    depth -= 1
        return self.source(first, self.tokens[self.i - 1])

    def skip_until(self, *words: str) -> None:
        """Skips tokens (balancing parentheses) up to one of `words`, a ',' or ')' at depth 0,
        or the end: an expression whose value does not matter to the catalog."""
        while not self.at_end():
            token = self.peek()
            if token.kind == OP and token.value in (",", ")"):
                return
            if token.kind == WORD and token.upper in words:
                return
            if token.kind == OP and token.value == "(":
                self.skip_parens()
            else:
                self.i += 1

    def source(self, first: Token, last: Token) -> str:
        base = self.tokens[0].start
        return self.text[first.start - base:last.end - base]

    def skip_to_end(self) -> None:
        self.i = len(self.tokens) - 1

    def option_value(self) -> str:
        """An option's value after an optional '=': a word, name, string, number or group."""
        self.accept_op("=")
        token = self.tokens[self.i]
        if token.kind == WORD and token.value.startswith("_") and self.peek(1).kind == STRING:
            return self.string()
        if token.kind == OP and token.value in ("-", "+") and self.peek(1).kind == NUMBER:
            self.i += 2
            return token.value + self.tokens[self.i - 1].value
        if token.kind in _VALUE_KINDS:
            self.i += 1
            return token.value
        if token.kind == OP and token.value == "(":
            return self.skip_parens()
        raise self.error("expected an option value")

    def at_engine_option(self, ahead: int = 0) -> bool:
        """A quoted name and '=' ahead: a storage engine's own option (MariaDB's
        `IDENT_sys = value`).  The server's built-in options are keywords and cannot be
        quoted, so a quoted name before '=' is always an engine's; SHOW CREATE TABLE prints
        them that way (`PAGE_COMPRESSED`='ON'), which is how mysqldump and replicas write
        them."""
        token = self.peek(ahead + 1)
        return self.peek(ahead).kind == QUOTED and token.kind == OP and token.value == "="

    def charset_name(self) -> str:
        self.accept_op("=")
        if self.at("BINARY"):
            self.i += 1
            return "binary"
        return normalize_charset(self.option_value())

    def accept_charset_keyword(self) -> bool:
        """CHARACTER SET, CHAR SET or CHARSET."""
        return bool(self.accept("CHARACTER", "SET") or self.accept("CHAR", "SET")
                    or self.accept("CHARSET"))

    def if_exists(self) -> bool:
        return self.accept("IF", "EXISTS")

    def if_not_exists(self) -> bool:
        return self.accept("IF", "NOT", "EXISTS")

    def wait_clause(self) -> None:
        """MariaDB's lock wait limit, allowed after the table name of most DDL."""
        if self.accept("WAIT"):
            self.number()
        else:
            self.accept("NOWAIT")
