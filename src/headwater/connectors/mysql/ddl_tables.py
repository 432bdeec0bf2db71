"""CREATE TABLE, table options and partitioning.

Table options are open-ended (storage engines define their own, MariaDB accepts
`name=value` for any of them, the name quoted or not), so any `word = value` or
`` `name` = value`` is read as an option; the catalog keeps only the charset, collation and
comment, which are the server's own options and never quoted.  Partitioning never changes
columns, but it is read clause by clause rather than skipped, because a CREATE TABLE ... SELECT
may follow it.
"""

from __future__ import annotations

from headwater.connectors.mysql.ddl_keys import INDEX_WORDS, KeyParser
from headwater.connectors.mysql.ddl_lexer import NUMBER, OP, STRING, WORD
from headwater.connectors.mysql.ddl_model import (
    ColumnSpec,
    CreateTable,
    IndexSpec,
    TableOptions,
)
from headwater.connectors.mysql.ddl_types import normalize_collation

TABLE_OPTION_WORDS = frozenset({
    "ENGINE", "TYPE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "DEFAULT", "CHARACTER", "CHARSET",
    "CHAR", "CHECKSUM", "TABLE_CHECKSUM", "COLLATE", "COMMENT", "COMPRESSION", "CONNECTION",
    "DATA", "INDEX", "DELAY_KEY_WRITE", "ENCRYPTION", "ENCRYPTED", "ENCRYPTION_KEY_ID",
    "INSERT_METHOD", "KEY_BLOCK_SIZE", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "PASSWORD",
    "ROW_FORMAT", "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "TABLESPACE",
    "UNION", "START", "SECONDARY_ENGINE", "SECONDARY_ENGINE_ATTRIBUTE", "ENGINE_ATTRIBUTE",
    "AUTOEXTEND_SIZE", "PAGE_CHECKSUM", "TRANSACTIONAL", "PAGE_COMPRESSED",
    "PAGE_COMPRESSION_LEVEL", "IETF_QUOTES", "SEQUENCE", "WITH", "STORAGE",
})
# Words that start the query of CREATE TABLE ... [AS] SELECT.
QUERY_START = frozenset({"SELECT", "AS", "IGNORE", "REPLACE", "WITH", "VALUES", "TABLE"})
_INTERVAL_UNITS = frozenset({
    "MICROSECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR",
    "SECOND_MICROSECOND", "MINUTE_MICROSECOND", "MINUTE_SECOND", "HOUR_MICROSECOND",
    "HOUR_SECOND", "HOUR_MINUTE", "DAY_MICROSECOND", "DAY_SECOND", "DAY_MINUTE", "DAY_HOUR",
    "YEAR_MONTH",
})


class TableParser(KeyParser):
    """Reads CREATE TABLE, table options and partitioning clauses."""

    __slots__ = ()

    def create_table(self, or_replace: bool) -> CreateTable:
        if_not_exists = self.if_not_exists()
        name = self.table_name()
        if self.accept("LIKE"):
            return CreateTable(name, if_not_exists, (), (), TableOptions(),
                               like=self.table_name())
        if self.at_op("(") and self.peek(1).kind == WORD and self.peek(1).upper == "LIKE":
            self.i += 2
            like = self.table_name()
            self.expect_op(")")
            return CreateTable(name, if_not_exists, (), (), TableOptions(), like=like)
        columns: list[ColumnSpec] = []
        indexes: list[IndexSpec] = []
        if self.at_op("(") and not self.at_query(1):
            self.i += 1
            while True:
                self.create_definition(columns, indexes)
                if self.accept_op(")"):
                    break
                self.expect_op(",")
        options = self.table_options(in_alter=False)
        self.partition_options()
        with_select = False
        if not self.at_end() and (self.at(*QUERY_START) or self.at_op("(")):
            with_select = True
            self.skip_to_end()
        return CreateTable(name, if_not_exists, tuple(columns), tuple(indexes), options,
                           with_select=with_select)

    def at_query(self, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        if token.kind == OP and token.value == "(":
            return self.at_query(ahead + 1)
        return token.kind == WORD and token.upper in ("SELECT", "WITH", "VALUES", "TABLE")

    def create_definition(self, columns: list[ColumnSpec], indexes: list[IndexSpec]) -> None:
        period = self.period_definition()
        if period is not None:
            indexes.append(period)
            return
        if self.at(*INDEX_WORDS):  # all reserved: a column so named is quoted
            indexes.append(self.index_definition())
            return
        columns.append(self.column_definition())

    # -- table options -------------------------------------------------------------------------
    def table_options(self, in_alter: bool) -> TableOptions:
        charset: str | None = None
        collation: str | None = None
        comment: str | None = None
        while not self.at_end():
            comma = 0
            if self.at_op(",") and not in_alter and (
                    self.peek(1).kind == WORD or self.at_engine_option(1)):
                comma = 1
            if self.at_engine_option(comma):  # nothing for the catalog
                self.i += comma + 1
                self.option_value()
                continue
            token = self.peek(comma)
            if token.kind != WORD:
                break
            word = token.upper
            if word == "PARTITION" or (word in QUERY_START and not (
                    word == "WITH" and self.peek(comma + 1).upper == "SYSTEM")):
                break
            if in_alter and word not in TABLE_OPTION_WORDS and \
                    self.peek(comma + 1).value != "=":
                break
            self.i += comma + 1
            if word == "DEFAULT":
                continue
            if (word in ("CHARACTER", "CHAR") and self.accept("SET")) or word == "CHARSET":
                if self.accept("DEFAULT") or (self.accept_op("=") and self.accept("DEFAULT")):
                    charset = None
                else:
                    charset = self.charset_name()
            elif word == "COLLATE":
                if self.accept("DEFAULT") or (self.accept_op("=") and self.accept("DEFAULT")):
                    collation = None
                else:
                    collation = normalize_collation(self.option_value())
            elif word == "COMMENT":
                self.accept_op("=")
                comment = self.string("comment")
            elif word in ("DATA", "INDEX"):
                self.expect("DIRECTORY")
                self.option_value()
            elif word == "START":
                self.expect("TRANSACTION")
            elif word == "WITH":
                self.expect("SYSTEM", "VERSIONING")
            elif word == "TABLESPACE":
                self.option_value()
                if self.accept("STORAGE"):
                    self.identifier()
            elif word == "STORAGE":
                self.identifier()
            elif word == "UNION":
                self.accept_op("=")
                self.skip_parens()
            elif word in TABLE_OPTION_WORDS or self.at_op("="):
                self.option_value()
            else:
                self.i -= 1
                raise self.error(f"unknown table option {token.value!r}")
        return TableOptions(charset, collation, comment)

    # -- partitioning --------------------------------------------------------------------------
    def partition_options(self) -> bool:
        """PARTITION BY ... [PARTITIONS n] [SUBPARTITION BY ...] [(definitions)]."""
        if not self.accept("PARTITION", "BY"):
            return False
        self.partition_method(sub=False)
        if self.accept("PARTITIONS"):
            self.number()
        if self.accept("SUBPARTITION", "BY"):
            self.partition_method(sub=True)
            if self.accept("SUBPARTITIONS"):
                self.number()
        if self.at_op("(") and self.peek(1).kind == WORD and self.peek(1).upper == "PARTITION":
            self.skip_parens()
        return True

    def partition_method(self, sub: bool) -> None:
        self.accept("LINEAR")
        method = self.next().upper
        if method == "HASH":
            self.skip_parens()
        elif method == "KEY":
            if self.accept("ALGORITHM"):
                self.option_value()
            self.skip_parens()
        elif method in ("RANGE", "LIST") and not sub:
            self.accept("COLUMNS")
            self.skip_parens()
        elif method == "SYSTEM_TIME" and not sub:
            if self.accept("INTERVAL"):
                self.interval_value()
                if self.accept("STARTS"):
                    self.temporal_value()
            if self.accept("LIMIT"):  # a row count, possibly an expression
                self.skip_until("AUTO", "PARTITIONS", "SUBPARTITION", "STARTS")
            self.accept("AUTO")
        else:
            self.i -= 1
            raise self.error("expected a partitioning method")

    def interval_value(self) -> None:
        """INTERVAL's amount (any expression) and unit."""
        start = self.i
        while not self.at_end() and not self.at(*_INTERVAL_UNITS):
            if self.at_op("("):
                self.skip_parens()
            else:
                self.i += 1
        if self.i == start or not self.accept_any(*_INTERVAL_UNITS):
            raise self.error("expected an interval and its unit")

    def temporal_value(self) -> None:
        """A timestamp literal or expression (STARTS of SYSTEM_TIME partitioning)."""
        if self.accept("TIMESTAMP") or self.accept("DATE"):
            self.string("timestamp")
        elif self.peek().kind in (STRING, NUMBER):
            self.next()
        else:
            self.identifier("timestamp")
            if self.at_op("("):
                self.skip_parens()
