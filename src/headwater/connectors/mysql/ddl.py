"""A recursive-descent parser for the MySQL/MariaDB DDL a binlog or a snapshot carries.

Binlog row events hold only values; decoding them needs the table definitions as they were at
that point of the log, and the only record of those is the DDL text in QUERY events.  sqlglot
covers MySQL's ALTER TABLE poorly and an ANTLR grammar is heavy in Python, so this is a
hand-written parser for the statements that shape tables and databases: CREATE / ALTER / DROP /
RENAME / TRUNCATE TABLE, CREATE / DROP INDEX, CREATE / ALTER / DROP DATABASE (or SCHEMA) and
USE, in the MySQL 8.0/8.4 and MariaDB 10.11/11.x dialects.  Views, sequences, triggers,
routines and events are recognised and parse to None, like anything else (DML in
statement-format logs, grants, transaction control).

The grammar lives in modules with one subject each, each class extending the previous one:
`ddl_cursor` (token reading), `ddl_columns` (column definitions), `ddl_keys` (key
definitions), `ddl_tables`
(CREATE TABLE, table options, partitioning), `ddl_alter` (ALTER TABLE actions); this module
splits statements and dispatches on their first words.  Statement values are in `ddl_model`,
type rules in `ddl_types`; both are re-exported here for the catalog.

Parsing is purely syntactic: `parse` returns statement values whose column definitions still
hold only what the statement says.  `resolve_column` finishes a column once the catalog knows
the table's defaults (charset inheritance column -> table -> database -> server), and the
catalog (`schema_catalog.MySqlSchema`) applies statements to its tables.

Known limits: the columns a `CREATE TABLE ... SELECT` derives from its query are not known
(only the explicitly declared ones are kept); a CREATE PROCEDURE/FUNCTION/TRIGGER/EVENT with a
BEGIN ... END body swallows the rest of the input it is given (a binlog QUERY event holds one
such statement).
"""

from __future__ import annotations

from headwater.connectors.mysql.ddl_alter import AlterParser
from headwater.connectors.mysql.ddl_lexer import EOF, OP, WORD, LexError, Token, tokenize
from headwater.connectors.mysql.ddl_model import (
    AddColumns,
    AddIndex,
    AlterAction,
    AlterDatabase,
    AlterTable,
    ChangeColumn,
    ColumnSpec,
    ConvertCharset,
    CreateDatabase,
    CreateTable,
    DdlParseError,
    DropColumn,
    DropDatabase,
    DropIndex,
    DropTables,
    IndexSpec,
    PartitionToTable,
    Position,
    RenameColumn,
    RenameIndex,
    RenameTables,
    RenameTo,
    SchemaChange,
    SetColumnDefault,
    SetTableOptions,
    Statement,
    TableName,
    TableOptions,
    TableToPartition,
    TruncateTable,
    UseDatabase,
)
from headwater.connectors.mysql.ddl_types import (
    NATIONAL_TYPES,
    STRING_TYPES,
    base_type,
    charset_of_collation,
    normalize_charset,
    normalize_collation,
    resolve_column,
)

__all__ = [
    "NATIONAL_TYPES", "STRING_TYPES", "AddColumns", "AddIndex", "AlterAction", "AlterDatabase",
    "AlterTable", "ChangeColumn", "ColumnSpec", "ConvertCharset", "CreateDatabase",
    "CreateTable", "DdlParseError", "DropColumn", "DropDatabase", "DropIndex",
    "DropTables", "IndexSpec", "Parser", "PartitionToTable",
    "Position", "RenameColumn", "RenameIndex", "RenameTables", "RenameTo", "SchemaChange",
    "SetColumnDefault", "SetTableOptions", "Statement", "TableName", "TableOptions",
    "TableToPartition", "TruncateTable", "UseDatabase", "base_type", "charset_of_collation",
    "normalize_charset", "normalize_collation", "parse", "resolve_column", "split_statements",
]

_ROUTINES = frozenset({"PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"})
_DDL_LEADERS = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "USE"})
_VIEW_PREFIXES = frozenset({"ALGORITHM", "DEFINER", "SQL"})


# -- statement splitting ---------------------------------------------------------------------

def split_statements(sql: str, ansi_quotes: bool = False) -> list[tuple[str, list[Token]]]:
    """(statement text, its tokens ending with EOF) for each ';'-separated statement.

    A lexing error (say an unterminated quote) is raised as DdlParseError only if the text
    starts like DDL; anything else is not ours to judge and yields no statements.
    """
    try:
        tokens = tokenize(sql, ansi_quotes)
    except LexError as exc:
        head = sql.lstrip().split(None, 1)
        if head and head[0].upper().lstrip("/*!0123456789M") in _DDL_LEADERS:
            raise DdlParseError(str(exc), sql.strip(), exc.position) from None
        return []
    out: list[tuple[str, list[Token]]] = []
    start = 0
    n = len(tokens) - 1  # the last token is EOF
    while start < n:
        if tokens[start].kind == OP and tokens[start].value == ";":
            start += 1
            continue
        end = start
        while end < n and not (tokens[end].kind == OP and tokens[end].value == ";"):
            end += 1
        if _is_compound_routine(tokens, start, end):
            end = n
        part = tokens[start:end]
        text = sql[part[0].start:part[-1].end]
        eof = Token(EOF, "", "", part[-1].end, part[-1].end)
        out.append((text, [*part, eof]))
        start = end + 1
    return out


def _is_compound_routine(tokens: list[Token], start: int, end: int) -> bool:
    """CREATE [OR REPLACE] [DEFINER = account] [AGGREGATE] {PROCEDURE|FUNCTION|...} with a
    BEGIN ... END body, whose inner ';' do not end the statement."""
    if tokens[start].upper != "CREATE":
        return False
    routine = False
    for token in tokens[start + 1:min(end, start + 24)]:
        if token.kind == WORD and token.upper in _ROUTINES:
            routine = True
            break
        if token.kind == WORD and token.upper in ("TABLE", "VIEW", "INDEX", "DATABASE",
                                                  "SCHEMA", "SEQUENCE"):
            break
    return routine and any(
        t.kind == WORD and t.upper == "BEGIN" for t in tokens[start:end])


def parse(sql: str, ansi_quotes: bool = False) -> list[tuple[str, Statement | None]]:
    """Every statement of `sql` with its parsed value (None for statements of no interest)."""
    return [(text, Parser(text, tokens).statement())
            for text, tokens in split_statements(sql, ansi_quotes)]


# -- dispatch --------------------------------------------------------------------------------

class Parser(AlterParser):
    """One statement: dispatches on its leading words."""

    __slots__ = ()

    def statement(self) -> Statement | None:
        token = self.peek()
        if token.kind != WORD or token.upper not in _DDL_LEADERS:
            return None
        self.i += 1
        word = token.upper
        result: Statement | None
        if word == "CREATE":
            result = self.create()
        elif word == "ALTER":
            result = self.alter()
        elif word == "DROP":
            result = self.drop()
        elif word == "RENAME":
            result = self.rename()
        elif word == "TRUNCATE":
            self.accept("TABLE")
            result = TruncateTable(self.table_name())
            self.wait_clause()
        else:
            result = UseDatabase(self.identifier("database name"))
        if result is not None and not self.at_end():
            raise self.error("unexpected text after the statement")
        return result

    def create(self) -> Statement | None:
        or_replace = self.accept("OR", "REPLACE")
        if self.accept("TEMPORARY"):
            return None
        if self.accept("TABLE"):
            return self.create_table(or_replace)
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            return self.create_database()
        self.accept("ONLINE") or self.accept("OFFLINE")
        kind = "INDEX"
        if self.at("UNIQUE", "FULLTEXT", "SPATIAL"):
            kind = self.next().upper
        if self.accept("INDEX"):
            return self.create_index(kind, or_replace)
        return None  # views, sequences, routines, triggers, events, users, servers, ...

    def create_database(self) -> CreateDatabase:
        if_not_exists = self.if_not_exists()
        name = self.identifier("database name")
        charset, collation = self.database_options()
        return CreateDatabase(name, if_not_exists, charset, collation)

    def database_options(self) -> tuple[str | None, str | None]:
        charset: str | None = None
        collation: str | None = None
        while not self.at_end():
            self.accept("DEFAULT")
            if self.accept_charset_keyword():
                charset = self.charset_name()
            elif self.accept("COLLATE"):
                collation = normalize_collation(self.option_value())
            elif self.at("ENCRYPTION", "COMMENT", "READ"):
                self.next()
                self.accept("ONLY")
                self.option_value()
            else:
                raise self.error("unexpected database option")
        return charset, collation

    def create_index(self, kind: str, or_replace: bool) -> AlterTable:
        if_not_exists = self.if_not_exists()
        name = self.identifier("index name")
        self.index_type()
        self.expect("ON")
        table = self.table_name()
        columns, period = self.key_parts()
        self.wait_clause()
        self.index_tail()
        actions: list[AlterAction] = []
        if or_replace:
            actions.append(DropIndex(name, True))
        actions.append(AddIndex(IndexSpec(kind, name, columns, if_not_exists, period)))
        return AlterTable(table, tuple(actions))

    def index_tail(self) -> None:
        """Index options, then ALGORITHM / LOCK clauses (CREATE and DROP INDEX)."""
        while True:
            self.index_options()
            if self.at("ALGORITHM", "LOCK"):
                self.next()
                self.option_value()
            else:
                return

    def alter(self) -> Statement | None:
        self.accept("ONLINE") or self.accept("OFFLINE")
        self.accept("IGNORE")
        if self.accept("TABLE"):
            return self.alter_table()
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            name = None
            if not self.at("DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "CHAR", "ENCRYPTION",
                           "READ", "COMMENT"):
                name = self.identifier("database name")
                if self.accept("UPGRADE"):
                    self.skip_to_end()
                    return None
            charset, collation = self.database_options()
            return AlterDatabase(name, charset, collation)
        return None

    def drop(self) -> Statement | None:
        if self.accept("TEMPORARY"):
            return None
        if self.accept("TABLE") or self.accept("TABLES"):
            if_exists = self.if_exists()
            names = [self.table_name()]
            while self.accept_op(","):
                names.append(self.table_name())
            self.wait_clause()
            self.accept("RESTRICT") or self.accept("CASCADE")
            return DropTables(tuple(names), if_exists)
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            if_exists = self.if_exists()
            return DropDatabase(self.identifier("database name"), if_exists)
        self.accept("ONLINE") or self.accept("OFFLINE")
        if self.accept("INDEX"):
            if_exists = self.if_exists()
            index = self.identifier("index name")
            self.expect("ON")
            table = self.table_name()
            self.wait_clause()
            self.index_tail()
            return AlterTable(table, (DropIndex(index, if_exists),))
        return None

    def rename(self) -> RenameTables | None:
        if not (self.accept("TABLE") or self.accept("TABLES")):
            return None
        self.if_exists()
        pairs = []
        while True:
            old = self.table_name()
            self.wait_clause()
            self.expect("TO")
            pairs.append((old, self.table_name()))
            if not self.accept_op(","):
                break
        return RenameTables(tuple(pairs))


_Parser = Parser  # the name the catalog used before the grammar was split
