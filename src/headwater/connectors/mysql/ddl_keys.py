"""Key definitions: PRIMARY KEY, UNIQUE, INDEX/KEY, FULLTEXT, SPATIAL, FOREIGN KEY, CHECK
and PERIOD FOR, in CREATE TABLE, ALTER TABLE ADD and CREATE INDEX.

Only what keys a table (primary and unique keys, by column) and what constrains its columns
(a period's columns are NOT NULL) reaches the catalog; index options, foreign key actions and
check expressions are read and dropped.
"""

from __future__ import annotations

from headwater.connectors.mysql.ddl_columns import ColumnParser
from headwater.connectors.mysql.ddl_lexer import OP, WORD
from headwater.connectors.mysql.ddl_model import IndexSpec

INDEX_WORDS = frozenset({"INDEX", "KEY", "UNIQUE", "PRIMARY", "FULLTEXT", "SPATIAL",
                         "FOREIGN", "CONSTRAINT", "CHECK"})
_INDEX_OPTION_WORDS = frozenset({
    "KEY_BLOCK_SIZE", "COMMENT", "CLUSTERING", "ENGINE_ATTRIBUTE",
    "SECONDARY_ENGINE_ATTRIBUTE",
})


class KeyParser(ColumnParser):
    """Reads key definitions."""

    __slots__ = ()

    def index_definition(self) -> IndexSpec:
        """PRIMARY KEY / UNIQUE / INDEX / FULLTEXT / SPATIAL / FOREIGN KEY / CHECK, optionally
        after CONSTRAINT [IF NOT EXISTS] [symbol]."""
        symbol: str | None = None
        if_not_exists = False
        if self.accept("CONSTRAINT"):
            if_not_exists = self.if_not_exists()
            if not self.at("PRIMARY", "UNIQUE", "FOREIGN", "CHECK") or (
                    self.peek(1).kind == WORD
                    and self.peek(1).upper in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK")):
                symbol = self.identifier("constraint name")
        word = self.next().upper
        if word == "CHECK":
            self.check_body()
            return IndexSpec("CHECK", symbol, (), if_not_exists)
        if word == "PRIMARY":
            self.expect("KEY")
            if_not_exists = self.if_not_exists() or if_not_exists
            if not self.at_op("(") and not self.at("USING", "TYPE"):
                self.identifier("index name")  # MariaDB takes (and ignores) a name
            self.index_type()
            columns, period = self.key_parts()
            self.index_options()
            return IndexSpec("PRIMARY", "PRIMARY", columns, if_not_exists, period)
        if word == "FOREIGN":
            self.expect("KEY")
            if_not_exists = self.if_not_exists() or if_not_exists
            name = symbol
            if not self.at_op("("):
                name = self.identifier("index name")
            columns, _ = self.key_parts()
            self.expect("REFERENCES")
            self.references_body()
            return IndexSpec("FOREIGN", name, columns, if_not_exists)
        kind = {"UNIQUE": "UNIQUE", "FULLTEXT": "FULLTEXT", "SPATIAL": "SPATIAL"}.get(
            word, "INDEX")
        if kind != "INDEX":
            self.accept("INDEX") or self.accept("KEY")
        elif word not in ("INDEX", "KEY"):
            self.i -= 1
            raise self.error("expected a key definition")
        if_not_exists = self.if_not_exists() or if_not_exists
        name = None
        if not self.at_op("(") and not self.at("USING", "TYPE"):
            name = self.identifier("index name")
        self.index_type()
        columns, period = self.key_parts()
        self.index_options()
        return IndexSpec(kind, name or symbol, columns, if_not_exists, period)

    def index_type(self) -> None:
        if self.accept("USING") or self.accept("TYPE"):
            self.identifier("index type")

    def key_parts(self) -> tuple[tuple[str, ...], str | None]:
        """The key's columns, and the period of a trailing `p WITHOUT OVERLAPS`."""
        self.expect_op("(")
        columns: list[str] = []
        period = None
        while True:
            if self.at_op("("):
                self.skip_parens()  # a functional key part
            else:
                columns.append(self.identifier("key column"))
                if self.at_op("("):
                    self.i += 1
                    self.number()
                    self.expect_op(")")
            self.accept("ASC") or self.accept("DESC")
            if self.accept("WITHOUT", "OVERLAPS"):
                period = columns.pop()  # an application-time period, not a column
            if self.accept_op(")"):
                return tuple(columns), period
            self.expect_op(",")

    def index_options(self) -> None:
        while True:
            if self.accept("USING") or self.accept("TYPE"):
                self.identifier("index type")
            elif self.at(*_INDEX_OPTION_WORDS):
                self.i += 1
                self.option_value()
            elif self.accept("WITH", "PARSER"):
                self.identifier("parser name")
            elif self.accept("NOT", "IGNORED") or self.accept("VISIBLE") or \
                    self.accept("INVISIBLE") or self.accept("IGNORED"):
                pass
            elif self.at_engine_option() or (
                    self.peek().kind == WORD and self.peek(1).kind == OP
                    and self.peek(1).value == "=" and not self.at("ALGORITHM", "LOCK")):
                self.i += 1  # a storage engine's index option, `name`=value or name=value
                self.option_value()
            else:
                return

    def period_definition(self) -> IndexSpec | None:
        """PERIOD [IF NOT EXISTS] FOR SYSTEM_TIME (start, end) or an application period."""
        if not (self.at_seq("PERIOD", "FOR") or self.at_seq("PERIOD", "IF", "NOT", "EXISTS",
                                                            "FOR")):
            return None
        self.i += 1
        if_not_exists = self.if_not_exists()
        self.expect("FOR")
        if_not_exists = self.if_not_exists() or if_not_exists
        name = self.identifier("period name")
        self.expect_op("(")
        start = self.identifier("period start column")
        self.expect_op(",")
        end = self.identifier("period end column")
        self.expect_op(")")
        return IndexSpec("PERIOD", name, (start, end), if_not_exists)
