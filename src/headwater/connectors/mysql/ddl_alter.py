"""ALTER TABLE: the list of actions after the table name.

Actions that change columns, keys, the table's name or its defaults become values for the
catalog; the rest (partition maintenance, index visibility, storage operations, ALGORITHM and
LOCK) are read and yield nothing.  MariaDB's CONVERT PARTITION / CONVERT TABLE move a
partition to or from a table of its own, so they create and drop tables.
"""

from __future__ import annotations

from headwater.connectors.mysql.ddl_keys import INDEX_WORDS
from headwater.connectors.mysql.ddl_lexer import QUOTED, WORD
from headwater.connectors.mysql.ddl_model import (
    AddColumns,
    AddIndex,
    AlterAction,
    AlterTable,
    ChangeColumn,
    ColumnSpec,
    ConvertCharset,
    DropColumn,
    DropIndex,
    IndexSpec,
    PartitionToTable,
    Position,
    RenameColumn,
    RenameIndex,
    RenameTo,
    SetColumnDefault,
    SetTableOptions,
    TableToPartition,
)
from headwater.connectors.mysql.ddl_tables import TABLE_OPTION_WORDS, TableParser
from headwater.connectors.mysql.ddl_types import normalize_collation

# Partition maintenance: PARTITION {names | ALL} after the verb, nothing for the catalog.
_PARTITION_VERBS = frozenset({"ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR", "TRUNCATE",
                              "DISCARD", "IMPORT", "COALESCE", "REORGANIZE", "EXCHANGE"})
ALTER_WORDS = frozenset({
    "ADD", "DROP", "MODIFY", "CHANGE", "ALTER", "RENAME", "CONVERT", "ENABLE", "DISABLE",
    "DISCARD", "IMPORT", "FORCE", "ORDER", "ALGORITHM", "LOCK", "WITH", "WITHOUT",
    "PARTITION", "REMOVE", "UPGRADE", "SECONDARY_LOAD", "SECONDARY_UNLOAD",
}) | TABLE_OPTION_WORDS | _PARTITION_VERBS


class AlterParser(TableParser):
    """Reads ALTER TABLE."""

    __slots__ = ()

    def alter_table(self) -> AlterTable:
        if_exists = self.if_exists()
        name = self.table_name()
        self.wait_clause()
        actions: list[AlterAction] = []
        while not self.at_end():
            if self.partition_options():
                continue
            action = self.alter_spec()
            if action is not None:
                actions.append(action)
            self.accept_op(",")
        return AlterTable(name, tuple(actions), if_exists)

    def position(self) -> Position | None:
        if self.accept("FIRST"):
            return Position(None)
        if self.accept("AFTER"):
            return Position(self.identifier("column name"))
        return None

    def alter_spec(self) -> AlterAction | None:
        word = self.peek().upper if self.peek().kind == WORD else ""
        if word in _PARTITION_VERBS and self.peek(1).upper == "PARTITION":
            self.partition_maintenance()
            return None
        if word == "ADD":
            self.i += 1
            return self.alter_add()
        if word == "DROP":
            self.i += 1
            return self.alter_drop()
        if word in ("MODIFY", "CHANGE"):
            self.i += 1
            self.accept("COLUMN")
            if_exists = self.if_exists()
            old = self.identifier("column name") if word == "CHANGE" else None
            spec = self.column_definition()
            return ChangeColumn(old, spec, self.position(), if_exists)
        if word == "ALTER":
            self.i += 1
            return self.alter_alter()
        if word == "RENAME":
            self.i += 1
            return self.alter_rename()
        if word == "CONVERT":
            self.i += 1
            return self.alter_convert()
        if word in ("ENABLE", "DISABLE"):
            self.i += 1
            self.expect("KEYS")
            return None
        if word in ("DISCARD", "IMPORT"):
            self.i += 1
            self.expect("TABLESPACE")
            return None
        if word in ("FORCE", "SECONDARY_LOAD", "SECONDARY_UNLOAD"):
            self.i += 1
            return None
        if word in ("REMOVE", "UPGRADE") and self.peek(1).upper == "PARTITIONING":
            self.i += 2
            return None
        if word == "ORDER":
            self.i += 1
            self.expect("BY")
            while True:
                self.qualified_name("column name")
                self.accept("ASC") or self.accept("DESC")
                if not (self.at_op(",") and self.peek(1).kind in (WORD, QUOTED)
                        and self.peek(1).upper not in ALTER_WORDS):
                    return None
                self.i += 1
        if word in ("WITH", "WITHOUT") and self.peek(1).upper == "VALIDATION":
            self.i += 2
            return None
        if word in ("ALGORITHM", "LOCK"):
            self.i += 1
            self.option_value()
            return None
        start = self.i
        options = self.table_options(in_alter=True)
        if self.i == start:
            raise self.error("unknown ALTER TABLE clause")
        return SetTableOptions(options)

    def partition_names(self) -> None:
        """{ALL | name [, name]...}: a ',' followed by another action ends the list."""
        if self.accept("ALL"):
            return
        while True:
            self.identifier("partition name")
            if not (self.at_op(",") and self.peek(1).kind in (WORD, QUOTED)
                    and self.peek(1).upper not in ALTER_WORDS):
                return
            self.i += 1

    def partition_maintenance(self) -> None:
        verb = self.next().upper
        self.expect("PARTITION")
        if verb == "COALESCE":
            self.number()
        elif verb == "EXCHANGE":
            self.identifier("partition name")
            self.expect("WITH", "TABLE")
            self.table_name()
            if self.accept("WITH") or self.accept("WITHOUT"):
                self.expect("VALIDATION")
        elif verb == "REORGANIZE":
            if self.peek().kind in (WORD, QUOTED) and not self.at("INTO"):
                self.partition_names()
            if self.accept("INTO"):
                self.skip_parens()
        else:
            self.partition_names()
            if verb in ("DISCARD", "IMPORT"):
                self.expect("TABLESPACE")
            elif verb in ("CHECK", "REPAIR"):
                while self.accept("FOR", "UPGRADE") or self.accept_any(
                        "QUICK", "FAST", "MEDIUM", "EXTENDED", "CHANGED", "USE_FRM"):
                    pass
            elif verb == "ANALYZE" and self.accept("PERSISTENT", "FOR"):
                self.skip_until()  # ALL | COLUMNS (...) INDEXES (...)

    def alter_add(self) -> AlterAction | None:
        if self.accept("PARTITION"):
            self.if_not_exists()
            if self.accept("PARTITIONS"):
                self.number()
            else:
                self.skip_parens()
            return None
        if self.accept("SYSTEM", "VERSIONING"):
            return None
        period = self.period_definition()
        if period is not None:
            return AddIndex(period)
        if self.at(*INDEX_WORDS):
            return AddIndex(self.index_definition())
        self.accept("COLUMN")
        if_not_exists = self.if_not_exists()
        if self.accept_op("("):
            specs: list[ColumnSpec] = []
            indexes: list[IndexSpec] = []
            while True:
                self.create_definition(specs, indexes)
                if self.accept_op(")"):
                    break
                self.expect_op(",")
            return AddColumns(tuple(specs), None, if_not_exists, tuple(indexes))
        spec = self.column_definition()
        return AddColumns((spec,), self.position(), if_not_exists)

    def alter_drop(self) -> AlterAction | None:
        if self.accept("PARTITION"):
            self.if_exists()
            self.partition_names()
            return None
        if self.accept("PRIMARY", "KEY"):
            return DropIndex("PRIMARY", False)
        if self.accept("INDEX") or self.accept("KEY"):
            if_exists = self.if_exists()
            return DropIndex(self.identifier("index name"), if_exists)
        if self.accept("FOREIGN", "KEY") or self.accept("CHECK"):
            self.if_exists()
            self.qualified_name("constraint name")
            return None  # the index a foreign key uses stays
        if self.accept("CONSTRAINT"):  # may name a unique key (MySQL 8.0.19+, MariaDB)
            self.if_exists()
            if self.accept("PRIMARY", "KEY"):
                return DropIndex("PRIMARY", False)
            return DropIndex(self.qualified_name("constraint name"), True)
        if self.accept("SYSTEM", "VERSIONING"):
            return None  # the server insists explicit ROW START/END columns be dropped too
        if self.accept("PERIOD"):
            self.if_exists()
            self.expect("FOR")
            self.if_exists()
            self.identifier("period name")
            return None
        self.accept("COLUMN")
        if_exists = self.if_exists()
        name = self.identifier("column name")
        self.accept("RESTRICT") or self.accept("CASCADE")
        return DropColumn(name, if_exists)

    def alter_alter(self) -> AlterAction | None:
        if self.at("INDEX", "KEY"):
            self.i += 1
            self.if_exists()  # MariaDB: a missing index is a warning, not an error
            self.identifier("index name")
            if not (self.accept("NOT", "IGNORED") or self.accept_any(
                    "IGNORED", "VISIBLE", "INVISIBLE")):
                raise self.error("expected [NOT] IGNORED, VISIBLE or INVISIBLE")
            return None
        if self.at("CHECK", "CONSTRAINT"):
            self.i += 1
            self.identifier("constraint name")
            self.accept("NOT")
            self.expect("ENFORCED")
            return None
        self.accept("COLUMN")
        if_exists = self.if_exists()
        name = self.identifier("column name")
        if self.accept("SET", "DEFAULT"):
            return SetColumnDefault(name, self.default_value(), if_exists)
        if self.accept("DROP", "DEFAULT"):
            return SetColumnDefault(name, None, if_exists)
        if self.accept("SET", "VISIBLE") or self.accept("SET", "INVISIBLE"):
            return None
        raise self.error("expected SET DEFAULT, DROP DEFAULT or SET VISIBLE/INVISIBLE")

    def alter_rename(self) -> AlterAction:
        if self.accept("COLUMN"):
            if_exists = self.if_exists()
            old = self.identifier("column name")
            self.expect("TO")
            return RenameColumn(old, self.identifier("column name"), if_exists)
        if self.accept("INDEX") or self.accept("KEY"):
            self.if_exists()
            old = self.identifier("index name")
            self.expect("TO")
            return RenameIndex(old, self.identifier("index name"))
        self.accept("TO") or self.accept("AS")
        return RenameTo(self.table_name())

    def alter_convert(self) -> AlterAction:
        if self.accept("PARTITION"):
            self.identifier("partition name")
            self.expect("TO", "TABLE")
            return PartitionToTable(self.table_name())
        if self.accept("TABLE"):
            table = self.table_name()
            self.expect("TO", "PARTITION")
            self.identifier("partition name")
            self.expect("VALUES")
            if self.accept("LESS", "THAN"):
                if not self.accept("MAXVALUE"):
                    self.skip_parens()
            else:
                self.expect("IN")
                self.skip_parens()
            self.skip_until(*ALTER_WORDS)  # partition options (ENGINE=..., COMMENT=...)
            return TableToPartition(table)
        self.expect("TO")
        if not self.accept_charset_keyword():
            raise self.error("expected CHARACTER SET")
        charset: str | None = None
        if not self.accept("DEFAULT"):
            charset = self.charset_name()
        collation = None
        if self.accept("COLLATE") and not self.accept("DEFAULT"):
            collation = normalize_collation(self.option_value())
        return ConvertCharset(charset, collation)
