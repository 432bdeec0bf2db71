"""A recursive-descent parser for the MySQL/MariaDB DDL a binlog or a snapshot carries.

Binlog row events hold only values; decoding them needs the table definitions as they were at
that point of the log, and the only record of those is the DDL text in QUERY events.  sqlglot
covers MySQL's ALTER TABLE poorly and an ANTLR grammar is heavy in Python, so this is a small
hand-written parser for exactly the subset that changes table structure: CREATE / ALTER / DROP /
RENAME / TRUNCATE TABLE, CREATE / DROP INDEX, CREATE / ALTER / DROP DATABASE and USE.  Anything
else (DML in statement-format logs, routines, grants, transaction control) parses to None.

Parsing is purely syntactic: `parse` returns statement values whose column definitions still
hold only what the statement says.  `resolve_column` finishes a column once the catalog knows
the table's defaults (charset inheritance column -> table -> database -> server), and the
catalog (`schema_history.MySqlSchema`) applies statements to its tables.

Known limits: the columns a `CREATE TABLE ... SELECT` derives from its query are not known
(only the explicitly declared ones are kept); `CREATE TABLE ... PARTITION BY` and ALTER TABLE
partition operations are skipped to the end of the statement (they never change columns);
a CREATE PROCEDURE/FUNCTION/TRIGGER/EVENT with a BEGIN ... END body swallows the rest of the
input it is given (a binlog QUERY event holds one such statement).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable
from headwater.connectors.mysql.ddl_lexer import (
    BITS,
    EOF,
    HEX,
    NUMBER,
    OP,
    QUOTED,
    STRING,
    WORD,
    LexError,
    Token,
    tokenize,
)


class DdlParseError(ValueError):
    """A DDL statement this parser cannot read; names the statement and where reading stopped."""

    def __init__(self, reason: str, statement: str, position: int | None = None,
                 token: str | None = None) -> None:
        self.reason = reason
        self.statement = statement
        self.position = position
        self.token = token
        excerpt = statement if len(statement) <= 300 else statement[:297] + "..."
        where = ""
        if position is not None:
            near = "end of statement" if not token else repr(token)
            where = f" at offset {position} near {near}"
        super().__init__(f"cannot parse DDL{where}: {reason}; statement: {excerpt}")


@dataclass(frozen=True)
class SchemaChange:
    """One effect of one DDL statement on the catalog.

    kind: "CREATE" | "ALTER" | "DROP" (tables), "CREATE_DATABASE" | "DROP_DATABASE" |
    "ALTER_DATABASE", "TRUNCATE".  A rename (RENAME TABLE or ALTER TABLE ... RENAME) is an
    ALTER of the new name whose `previous` is the old table (with its old name), as Debezium
    reports renames as ALTER of the new id.  A DROP DATABASE yields a DROP per table, then
    the DROP_DATABASE.
    """

    kind: str
    database: str
    table: str | None
    ddl: str
    previous: MySqlTable | None
    table_after: MySqlTable | None


# -- statement values ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TableName:
    database: str | None
    name: str


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """A column definition as written: `column.charset`/`collation` hold only explicit values."""

    column: MySqlColumn
    primary_key: bool = False  # column-level PRIMARY KEY
    unique: bool = False  # column-level UNIQUE [KEY] (or SERIAL)
    binary_collation: bool = False  # CHAR(n) BINARY: the charset's _bin collation
    declared_length: int | None = None  # TEXT(M) / BLOB(M): picks the smallest fitting type


@dataclass(frozen=True, slots=True)
class IndexSpec:
    kind: str  # "PRIMARY", "UNIQUE", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK"
    name: str | None
    columns: tuple[str, ...]  # functional key parts are left out


@dataclass(frozen=True, slots=True)
class TableOptions:
    charset: str | None = None
    collation: str | None = None
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class Position:
    """FIRST (after None) or AFTER column."""

    after: str | None


@dataclass(frozen=True, slots=True)
class CreateTable:
    name: TableName
    if_not_exists: bool
    columns: tuple[ColumnSpec, ...]
    indexes: tuple[IndexSpec, ...]
    options: TableOptions
    like: TableName | None = None
    with_select: bool = False


@dataclass(frozen=True, slots=True)
class AddColumns:
    columns: tuple[ColumnSpec, ...]
    position: Position | None
    if_not_exists: bool


@dataclass(frozen=True, slots=True)
class ChangeColumn:
    """MODIFY (old_name None) or CHANGE old new."""

    old_name: str | None
    column: ColumnSpec
    position: Position | None
    if_exists: bool


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str
    if_exists: bool


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old_name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class SetColumnDefault:
    name: str
    default: str | None  # None: DROP DEFAULT (or SET DEFAULT NULL)


@dataclass(frozen=True, slots=True)
class AddIndex:
    """Adding an index whose name exists is a no-op (the server logs it only with IF NOT
    EXISTS)."""

    index: IndexSpec


@dataclass(frozen=True, slots=True)
class DropIndex:
    name: str  # "PRIMARY" for DROP PRIMARY KEY
    if_exists: bool


@dataclass(frozen=True, slots=True)
class RenameIndex:
    old_name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class RenameTo:
    name: TableName


@dataclass(frozen=True, slots=True)
class ConvertCharset:
    charset: str
    collation: str | None


@dataclass(frozen=True, slots=True)
class SetTableOptions:
    options: TableOptions


AlterAction = (
    AddColumns | ChangeColumn | DropColumn | RenameColumn | SetColumnDefault | AddIndex
    | DropIndex | RenameIndex | RenameTo | ConvertCharset | SetTableOptions
)


@dataclass(frozen=True, slots=True)
class AlterTable:
    name: TableName
    actions: tuple[AlterAction, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropTables:
    names: tuple[TableName, ...]
    if_exists: bool


@dataclass(frozen=True, slots=True)
class RenameTables:
    pairs: tuple[tuple[TableName, TableName], ...]


@dataclass(frozen=True, slots=True)
class TruncateTable:
    name: TableName


@dataclass(frozen=True, slots=True)
class CreateDatabase:
    name: str
    if_not_exists: bool
    charset: str | None
    collation: str | None


@dataclass(frozen=True, slots=True)
class AlterDatabase:
    name: str | None  # None: the default database
    charset: str | None
    collation: str | None


@dataclass(frozen=True, slots=True)
class DropDatabase:
    name: str
    if_exists: bool


@dataclass(frozen=True, slots=True)
class UseDatabase:
    name: str


Statement = (
    CreateTable | AlterTable | DropTables | RenameTables | TruncateTable | CreateDatabase
    | AlterDatabase | DropDatabase | UseDatabase
)


# -- types -----------------------------------------------------------------------------------

_INTEGER_TYPES = {
    "TINYINT": "TINYINT", "INT1": "TINYINT",
    "SMALLINT": "SMALLINT", "INT2": "SMALLINT",
    "MEDIUMINT": "MEDIUMINT", "INT3": "MEDIUMINT", "MIDDLEINT": "MEDIUMINT",
    "INT": "INT", "INTEGER": "INT", "INT4": "INT",
    "BIGINT": "BIGINT", "INT8": "BIGINT",
}
_DECIMAL_TYPES = frozenset({"DECIMAL", "DEC", "FIXED", "NUMERIC"})
# Types that take no arguments (or whose optional argument is a length/fsp/dimension).
_SIMPLE_TYPES = {
    "DATE": "DATE", "TIME": "TIME", "DATETIME": "DATETIME", "TIMESTAMP": "TIMESTAMP",
    "YEAR": "YEAR", "BIT": "BIT", "BINARY": "BINARY", "VARBINARY": "VARBINARY",
    "TINYBLOB": "TINYBLOB", "BLOB": "BLOB", "MEDIUMBLOB": "MEDIUMBLOB", "LONGBLOB": "LONGBLOB",
    "TINYTEXT": "TINYTEXT", "TEXT": "TEXT", "MEDIUMTEXT": "MEDIUMTEXT", "LONGTEXT": "LONGTEXT",
    "VARCHAR": "VARCHAR", "VARCHARACTER": "VARCHAR", "NVARCHAR": "VARCHAR",
    "JSON": "JSON", "GEOMETRY": "GEOMETRY", "POINT": "POINT", "LINESTRING": "LINESTRING",
    "POLYGON": "POLYGON", "MULTIPOINT": "MULTIPOINT", "MULTILINESTRING": "MULTILINESTRING",
    "MULTIPOLYGON": "MULTIPOLYGON", "GEOMETRYCOLLECTION": "GEOMETRYCOLLECTION",
    "GEOMCOLLECTION": "GEOMETRYCOLLECTION", "UUID": "UUID", "INET4": "INET4",
    "INET6": "INET6", "VECTOR": "VECTOR", "BOOL": "BOOLEAN", "BOOLEAN": "BOOLEAN",
    "FLOAT4": "FLOAT", "FLOAT8": "DOUBLE", "REAL": "DOUBLE",
}
STRING_TYPES = frozenset(
    {"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET"})
_DEFAULT_LENGTH = {"CHAR": 1, "BINARY": 1, "BIT": 1}
_TO_BINARY = {"CHAR": "BINARY", "VARCHAR": "VARBINARY", "TINYTEXT": "TINYBLOB",
              "TEXT": "BLOB", "MEDIUMTEXT": "MEDIUMBLOB", "LONGTEXT": "LONGBLOB"}
_TEXT_SIZES = (("TINY", 255), ("", 65535), ("MEDIUM", 16777215), ("LONG", 4294967295))
# Bytes per character, for TEXT(M): the smallest TEXT type that holds M characters.
_MAX_BYTES_PER_CHAR = {
    "latin1": 1, "ascii": 1, "binary": 1, "latin2": 1, "cp1250": 1, "cp1251": 1,
    "cp1252": 1, "utf8mb3": 3, "utf8mb4": 4, "ucs2": 2, "utf16": 4, "utf16le": 4,
    "utf32": 4, "gbk": 2, "big5": 2, "sjis": 2, "cp932": 2, "euckr": 2, "gb2312": 2,
    "ujis": 3, "eucjpms": 3, "gb18030": 4,
}


def normalize_charset(name: str) -> str:
    """Lower case; `utf8` is `utf8mb3` (as MySQL 8 and MariaDB 10.6+ print it)."""
    name = name.lower()
    return "utf8mb3" if name == "utf8" else name


def normalize_collation(name: str) -> str:
    name = name.lower()
    return "utf8mb3" + name[4:] if name.startswith("utf8_") else name


def charset_of_collation(collation: str) -> str:
    """The charset a collation belongs to: its name up to the first underscore."""
    collation = normalize_collation(collation)
    return "binary" if collation == "binary" else collation.split("_", 1)[0]


def _text_type(type_name: str, length_bytes: int) -> str:
    family = "BLOB" if type_name.endswith("BLOB") else "TEXT"
    for prefix, size in _TEXT_SIZES:
        if length_bytes <= size:
            return prefix + family
    return "LONG" + family


def resolve_column(spec: ColumnSpec, table_charset: str | None,
                   table_collation: str | None) -> MySqlColumn:
    """The column with charset inheritance applied and binary charsets turned into binary types.

    String columns without a charset of their own take the table's default charset (which the
    catalog has already resolved from the database and server defaults).
    """
    column = spec.column
    type_name = column.type_name
    if type_name not in STRING_TYPES:
        if spec.declared_length is not None and type_name == "BLOB":
            return replace(column, type_name=_text_type("BLOB", spec.declared_length))
        return column
    charset = column.charset
    collation = column.collation
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)
    if charset is None:
        charset = table_charset
        if collation is None and table_collation is not None and (
                charset is None or charset_of_collation(table_collation) == charset):
            collation = table_collation
    if spec.binary_collation and collation is None and charset is not None:
        collation = charset + "_bin"
    if spec.declared_length is not None and type_name == "TEXT":
        per_char = _MAX_BYTES_PER_CHAR.get(charset or "", 4)
        type_name = _text_type("TEXT", spec.declared_length * per_char)
    if charset == "binary" and type_name in _TO_BINARY:
        return replace(column, type_name=_TO_BINARY[type_name], charset=None, collation=None)
    return replace(column, type_name=type_name, charset=charset, collation=collation)


# -- statement splitting ---------------------------------------------------------------------

_ROUTINES = frozenset({"PROCEDURE", "FUNCTION", "TRIGGER", "EVENT"})
_DDL_LEADERS = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "USE"})


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
    if tokens[start].upper != "CREATE":
        return False
    routine = False
    for token in tokens[start + 1:min(end, start + 16)]:
        if token.kind == OP and token.value == "(":
            break
        if token.kind == WORD and token.upper in _ROUTINES:
            routine = True
            break
    return routine and any(
        t.kind == WORD and t.upper == "BEGIN" for t in tokens[start:end])


def parse(sql: str, ansi_quotes: bool = False) -> list[tuple[str, Statement | None]]:
    """Every statement of `sql` with its parsed value (None for statements of no interest)."""
    return [(text, _Parser(text, tokens).statement())
            for text, tokens in split_statements(sql, ansi_quotes)]


# -- the parser ------------------------------------------------------------------------------

_INDEX_WORDS = frozenset({"INDEX", "KEY", "UNIQUE", "PRIMARY", "FULLTEXT", "SPATIAL",
                          "FOREIGN", "CONSTRAINT", "CHECK"})
_PARTITION_OPS = frozenset({"COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK",
                            "OPTIMIZE", "REBUILD", "REPAIR", "TRUNCATE", "REMOVE", "UPGRADE",
                            "DISCARD", "IMPORT"})
_QUERY_START = frozenset({"SELECT", "AS", "IGNORE", "REPLACE", "WITH", "VALUES", "TABLE"})
_VALUE_KINDS = frozenset({WORD, QUOTED, STRING, NUMBER})


class _Parser:
    __slots__ = ("i", "text", "tokens")

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    # -- primitives ----------------------------------------------------------------------------
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

    def at_op(self, op: str) -> bool:
        token = self.tokens[self.i]
        return token.kind == OP and token.value == op

    def at_end(self) -> bool:
        return self.tokens[self.i].kind == EOF

    def accept(self, *words: str) -> bool:
        """Consumes the given keywords in sequence if all are next."""
        for k, word in enumerate(words):
            token = self.peek(k)
            if token.kind != WORD or token.upper != word:
                return False
        self.i += len(words)
        return True

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
        if token.kind in (WORD, QUOTED):
            self.i += 1
            return token.value
        raise self.error(f"expected {what}")

    def table_name(self) -> TableName:
        first = self.identifier("table name")
        if self.at_op(".") and self.peek(1).kind in (WORD, QUOTED):
            self.i += 1
            return TableName(first, self.identifier("table name"))
        return TableName(None, first)

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

    def source(self, first: Token, last: Token) -> str:
        base = self.tokens[0].start
        return self.text[first.start - base:last.end - base]

    def skip_to_end(self) -> None:
        self.i = len(self.tokens) - 1

    def option_value(self) -> str:
        """An option's value after an optional '=': a word, name, string or number."""
        self.accept_op("=")
        token = self.tokens[self.i]
        if token.kind == WORD and token.value.startswith("_") and self.peek(1).kind == STRING:
            return self.string()
        if token.kind in _VALUE_KINDS or token.kind in (HEX, BITS):
            self.i += 1
            return token.value
        if token.kind == OP and token.value == "(":
            return self.skip_parens()
        raise self.error("expected an option value")

    def charset_name(self) -> str:
        self.accept_op("=")
        if self.at("BINARY"):
            self.i += 1
            return "binary"
        return normalize_charset(self.option_value())

    # -- statements ----------------------------------------------------------------------------
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
        else:
            result = UseDatabase(self.identifier("database name"))
        if result is not None and not self.at_end():
            raise self.error("unexpected text after the statement")
        return result

    def create(self) -> Statement | None:
        self.accept("OR", "REPLACE")
        if self.accept("TEMPORARY"):
            return None
        if self.at("TABLE"):
            self.i += 1
            return self.create_table()
        if self.at("DATABASE", "SCHEMA"):
            self.i += 1
            return self.create_database()
        self.accept("ONLINE") or self.accept("OFFLINE")
        kind = "INDEX"
        if self.at("UNIQUE", "FULLTEXT", "SPATIAL"):
            kind = self.next().upper
        if self.accept("INDEX"):
            return self.create_index(kind)
        return None

    def create_database(self) -> CreateDatabase:
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        name = self.identifier("database name")
        charset, collation = self.database_options()
        return CreateDatabase(name, if_not_exists, charset, collation)

    def database_options(self) -> tuple[str | None, str | None]:
        charset: str | None = None
        collation: str | None = None
        while not self.at_end():
            self.accept("DEFAULT")
            if self.accept("CHARACTER", "SET") or self.accept("CHARSET") or \
                    self.accept("CHAR", "SET"):
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

    def create_index(self, kind: str) -> AlterTable:
        self.accept("IF", "NOT", "EXISTS")
        name = self.identifier("index name")
        self.index_type()
        self.expect("ON")
        table = self.table_name()
        columns = self.key_parts()
        self.index_options()
        return AlterTable(table, (AddIndex(IndexSpec(kind, name, columns)),))

    def create_table(self) -> CreateTable:
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
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
        with_select = False
        if self.at_op("(") and not (self.peek(1).kind == WORD and self.peek(1).upper in
                                    ("SELECT", "WITH", "VALUES", "TABLE")):
            self.i += 1
            while True:
                self.create_definition(columns, indexes)
                if self.accept_op(")"):
                    break
                self.expect_op(",")
        options = self.table_options(in_alter=False)
        if self.at("PARTITION"):
            self.skip_to_end()  # partitioning never changes columns
        if not self.at_end() and (self.at(*_QUERY_START) or self.at_op("(")):
            with_select = True
            self.skip_to_end()
        return CreateTable(name, if_not_exists, tuple(columns), tuple(indexes), options,
                           with_select=with_select)

    def create_definition(self, columns: list[ColumnSpec], indexes: list[IndexSpec]) -> None:
        if self.at("PERIOD") and self.peek(1).upper == "FOR":
            self.i += 2
            self.identifier()
            self.skip_parens()
            return
        index = self.index_definition() if self.at(*_INDEX_WORDS) else None
        if index is not None:
            indexes.append(index)
            return
        columns.append(self.column_definition())

    # -- columns -------------------------------------------------------------------------------
    def column_definition(self) -> ColumnSpec:
        name = self.identifier("column name")
        return self.column_body(name)

    def column_body(self, name: str) -> ColumnSpec:
        token = self.peek()
        if token.kind != WORD:
            raise self.error(f"expected a data type for column {name!r}")
        self.i += 1
        word = token.upper
        members: tuple[str, ...] = ()
        length: int | None = None
        scale: int | None = None
        charset: str | None = None
        declared: int | None = None
        serial = False
        if word in _INTEGER_TYPES:
            type_name = _INTEGER_TYPES[word]
            length, _ = self.type_args()
        elif word in _DECIMAL_TYPES:
            type_name = "DECIMAL"
            length, scale = self.type_args()
            if length is None:
                length, scale = 10, 0
            elif scale is None:
                scale = 0
        elif word == "FLOAT":
            type_name = "FLOAT"
            length, scale = self.type_args()
            if length is not None and scale is None:  # FLOAT(p): precision in bits
                type_name = "DOUBLE" if length > 24 else "FLOAT"
                length = None
        elif word == "DOUBLE":
            self.accept("PRECISION")
            type_name = "DOUBLE"
            length, scale = self.type_args()
        elif word in ("CHAR", "CHARACTER", "NCHAR", "NATIONAL"):
            national = word in ("NCHAR", "NATIONAL")
            if word == "NATIONAL" and not self.accept("CHAR") and not self.accept("CHARACTER") \
                    and not self.at("VARCHAR"):
                raise self.error("expected CHAR or VARCHAR after NATIONAL")
            varying = self.accept("VARYING") or self.accept("VARCHAR")
            type_name = "VARCHAR" if varying else "CHAR"
            length, _ = self.type_args()
            if national:
                charset = "utf8mb3"
            if not varying and self.accept("BYTE"):
                type_name = "BINARY"
        elif word == "LONG":
            if self.accept("VARBINARY"):
                type_name = "MEDIUMBLOB"
            else:
                self.accept("VARCHAR") or self.accept("CHAR", "VARYING")
                type_name = "MEDIUMTEXT"
        elif word in ("ENUM", "SET"):
            type_name = word
            members = self.members()
        elif word == "SERIAL":
            type_name = "BIGINT"
            serial = True
        elif word in _SIMPLE_TYPES:
            type_name = _SIMPLE_TYPES[word]
            if word == "NVARCHAR":
                charset = "utf8mb3"
            length, scale = self.type_args()
            if type_name in ("TEXT", "BLOB") and length is not None:
                declared, length = length, None
        else:
            self.i -= 1
            raise self.error(f"unknown data type {token.value!r} for column {name!r}")
        if length is None and type_name in _DEFAULT_LENGTH:
            length = _DEFAULT_LENGTH[type_name]
        column = MySqlColumn(name, type_name, length=length, scale=scale, charset=charset,
                             members=members)
        spec = ColumnSpec(column, declared_length=declared)
        if serial:
            spec = replace(spec, unique=True, column=replace(
                column, unsigned=True, nullable=False, auto_increment=True))
        return self.column_attributes(spec)

    def type_args(self) -> tuple[int | None, int | None]:
        if not self.at_op("("):
            return None, None
        self.i += 1
        length = self.number()
        scale = None
        if self.accept_op(","):
            scale = self.number()
        self.expect_op(")")
        return length, scale

    def members(self) -> tuple[str, ...]:
        self.expect_op("(")
        out = [self.string("ENUM/SET member")]
        while self.accept_op(","):
            out.append(self.string("ENUM/SET member"))
        self.expect_op(")")
        return tuple(out)

    def column_attributes(self, spec: ColumnSpec) -> ColumnSpec:
        column = spec.column
        changes: dict[str, object] = {}
        primary = spec.primary_key
        unique = spec.unique
        binary = False
        while True:
            token = self.peek()
            if token.kind != WORD:
                break
            word = token.upper
            if word in ("FIRST", "AFTER"):
                break
            self.i += 1
            if word == "NOT":
                if self.accept("NULL"):
                    changes["nullable"] = False
                else:
                    raise self.error("expected NULL after NOT")
            elif word == "NULL":
                changes["nullable"] = True
            elif word == "DEFAULT":
                changes["default"] = self.default_value()
            elif word == "ON":
                self.expect("UPDATE")
                self.default_value()
            elif word == "AUTO_INCREMENT":
                changes["auto_increment"] = True
            elif word == "UNIQUE":
                self.accept("KEY")
                unique = True
            elif word == "PRIMARY":
                self.expect("KEY")
                primary = True
            elif word == "KEY":
                primary = True
            elif word == "COMMENT":
                self.accept_op("=")
                changes["comment"] = self.string("comment")
            elif word == "COLLATE":
                changes["collation"] = normalize_collation(self.option_value())
            elif (word in ("CHARACTER", "CHAR") and self.accept("SET")) or word == "CHARSET":
                changes["charset"] = self.charset_name()
            elif word == "ASCII":
                changes["charset"] = "latin1"
            elif word == "UNICODE":
                changes["charset"] = "ucs2"
            elif word == "BINARY":
                binary = True
            elif word == "UNSIGNED":
                changes["unsigned"] = True
            elif word == "SIGNED":
                changes["unsigned"] = False
            elif word == "ZEROFILL":
                changes["zerofill"] = True
                changes["unsigned"] = True
            elif word in ("GENERATED", "AS"):
                if word == "GENERATED":
                    self.expect("ALWAYS")
                    self.expect("AS")
                self.skip_parens()
                changes["generated"] = True
            elif word in ("VIRTUAL", "STORED", "PERSISTENT", "VISIBLE", "INVISIBLE"):
                pass
            elif word == "CONSTRAINT":
                if not self.at("CHECK"):
                    self.identifier()
                self.expect("CHECK")
                self.check_body()
            elif word == "CHECK":
                self.check_body()
            elif word == "REFERENCES":
                self.references_body()
            elif word in ("COLUMN_FORMAT", "STORAGE", "SRID", "COMPRESSED", "ENGINE_ATTRIBUTE",
                          "SECONDARY_ENGINE_ATTRIBUTE", "REF_SYSTEM_ID"):
                if word != "COMPRESSED" or self.at_op("="):
                    self.option_value()
            elif word == "SERIAL":
                self.expect("DEFAULT", "VALUE")
                changes.update(nullable=False, auto_increment=True)
                unique = True
            elif word in ("WITH", "WITHOUT"):
                self.expect("SYSTEM", "VERSIONING")
            else:
                self.i -= 1
                raise self.error(f"unexpected {token.value!r} in the definition of column "
                                 f"{column.name!r}")
        if primary:
            changes["nullable"] = False
        if changes:
            column = replace(column, **changes)  # type: ignore[arg-type]
        return replace(spec, column=column, primary_key=primary, unique=unique,
                       binary_collation=spec.binary_collation or binary)

    def default_value(self) -> str | None:
        token = self.peek()
        if token.kind == OP and token.value == "(":
            return self.skip_parens()
        if token.kind == OP and token.value in ("-", "+") and self.peek(1).kind == NUMBER:
            self.i += 2
            digits = self.tokens[self.i - 1].value
            return "-" + digits if token.value == "-" else digits
        if token.kind == STRING or (token.kind == WORD and self.peek(1).kind == STRING and (
                token.value.startswith("_") or token.upper == "N")):
            return self.string()
        if token.kind in (NUMBER, HEX, BITS):
            self.i += 1
            return token.value
        if token.kind == WORD:
            self.i += 1
            if token.upper == "NULL":
                return None
            if self.at_op("("):
                self.skip_parens()
            return self.source(token, self.tokens[self.i - 1])
        raise self.error("expected a default value")

    def check_body(self) -> None:
        self.skip_parens()
        if self.accept("NOT", "ENFORCED"):
            return
        self.accept("ENFORCED")

    def references_body(self) -> None:
        self.table_name()
        if self.at_op("("):
            self.skip_parens()
        while True:
            if self.accept("MATCH"):
                self.identifier()
            elif self.accept("ON"):
                if not self.accept("DELETE"):
                    self.expect("UPDATE")
                if self.accept("SET"):
                    if not self.accept("NULL"):
                        self.expect("DEFAULT")
                elif self.accept("NO"):
                    self.expect("ACTION")
                elif not (self.accept("RESTRICT") or self.accept("CASCADE")):
                    raise self.error("expected a referential action")
            else:
                return

    # -- indexes -------------------------------------------------------------------------------
    def index_definition(self) -> IndexSpec:
        """PRIMARY KEY / UNIQUE / INDEX / FULLTEXT / SPATIAL / FOREIGN KEY / CHECK definition."""
        symbol: str | None = None
        if self.accept("CONSTRAINT") and not self.at("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
            symbol = self.identifier("constraint name")
        word = self.next().upper
        if word == "CHECK":
            self.check_body()
            return IndexSpec("CHECK", symbol, ())
        if word == "PRIMARY":
            self.expect("KEY")
            self.index_type()
            columns = self.key_parts()
            self.index_options()
            return IndexSpec("PRIMARY", "PRIMARY", columns)
        if word == "FOREIGN":
            self.expect("KEY")
            self.accept("IF", "NOT", "EXISTS")
            name = symbol
            if not self.at_op("("):
                name = self.identifier("index name")
            columns = self.key_parts()
            self.expect("REFERENCES")
            self.references_body()
            return IndexSpec("FOREIGN", name, columns)
        kind = {"UNIQUE": "UNIQUE", "FULLTEXT": "FULLTEXT", "SPATIAL": "SPATIAL"}.get(
            word, "INDEX")
        if kind != "INDEX":
            self.accept("INDEX") or self.accept("KEY")
        self.accept("IF", "NOT", "EXISTS")
        name = None
        if not self.at_op("(") and not self.at("USING", "TYPE"):
            name = self.identifier("index name")
        self.index_type()
        columns = self.key_parts()
        self.index_options()
        return IndexSpec(kind, name or symbol, columns)

    def index_type(self) -> None:
        if self.accept("USING") or self.accept("TYPE"):
            self.identifier("index type")

    def key_parts(self) -> tuple[str, ...]:
        self.expect_op("(")
        columns: list[str] = []
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
            if self.accept_op(")"):
                return tuple(columns)
            self.expect_op(",")

    def index_options(self) -> None:
        while True:
            if self.accept("USING") or self.accept("TYPE"):
                self.identifier("index type")
            elif self.at("KEY_BLOCK_SIZE", "COMMENT", "CLUSTERING", "ENGINE_ATTRIBUTE",
                         "SECONDARY_ENGINE_ATTRIBUTE", "ALGORITHM", "LOCK"):
                self.i += 1
                self.option_value()
            elif self.accept("WITH", "PARSER"):
                self.identifier("parser name")
            elif self.accept("NOT", "IGNORED") or self.accept("VISIBLE") or \
                    self.accept("INVISIBLE") or self.accept("IGNORED"):
                pass
            else:
                return

    # -- table options -------------------------------------------------------------------------
    def table_options(self, in_alter: bool) -> TableOptions:
        charset: str | None = None
        collation: str | None = None
        comment: str | None = None
        while not self.at_end():
            if not in_alter:
                self.accept_op(",")
            token = self.peek()
            if token.kind != WORD:
                break
            word = token.upper
            if (word in ("PARTITION", *_QUERY_START) and word != "WITH") or (
                    word == "WITH" and self.peek(1).upper != "SYSTEM"):
                break
            if in_alter and word not in _TABLE_OPTION_WORDS and self.peek(1).value != "=":
                break
            self.i += 1
            if word == "DEFAULT":
                continue
            if (word in ("CHARACTER", "CHAR") and self.accept("SET")) or word == "CHARSET":
                charset = self.charset_name()
            elif word == "COLLATE":
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
            elif word in _TABLE_OPTION_WORDS or self.at_op("="):
                self.option_value()
            else:
                self.i -= 1
                raise self.error(f"unknown table option {token.value!r}")
        return TableOptions(charset, collation, comment)

    # -- ALTER ---------------------------------------------------------------------------------
    def alter(self) -> Statement | None:
        self.accept("ONLINE") or self.accept("OFFLINE")
        self.accept("IGNORE")
        if self.accept("TABLE"):
            return self.alter_table()
        if self.at("DATABASE", "SCHEMA"):
            self.i += 1
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

    def alter_table(self) -> AlterTable:
        if_exists = self.accept("IF", "EXISTS")
        name = self.table_name()
        if self.accept("WAIT"):
            self.number()
        else:
            self.accept("NOWAIT")
        actions: list[AlterAction] = []
        while not self.at_end():
            if self.at("PARTITION") or (self.at(*_PARTITION_OPS) and (
                    self.peek(1).upper in ("PARTITION", "PARTITIONING"))):
                self.skip_to_end()
                break
            action = self.alter_spec()
            if action is not None:
                actions.append(action)
            if not self.accept_op(","):
                if self.at("PARTITION"):
                    self.skip_to_end()
                break
        return AlterTable(name, tuple(actions), if_exists)

    def position(self) -> Position | None:
        if self.accept("FIRST"):
            return Position(None)
        if self.accept("AFTER"):
            return Position(self.identifier("column name"))
        return None

    def alter_spec(self) -> AlterAction | None:
        word = self.peek().upper if self.peek().kind == WORD else ""
        if word == "ADD":
            self.i += 1
            return self.alter_add()
        if word == "DROP":
            self.i += 1
            return self.alter_drop()
        if word in ("MODIFY", "CHANGE"):
            self.i += 1
            self.accept("COLUMN")
            if_exists = self.accept("IF", "EXISTS")
            old = self.identifier("column name") if word == "CHANGE" else None
            spec = self.column_definition()
            return ChangeColumn(old, spec, self.position(), if_exists)
        if word == "ALTER":
            self.i += 1
            return self.alter_alter()
        if word == "RENAME":
            self.i += 1
            if self.accept("COLUMN"):
                old = self.identifier("column name")
                self.expect("TO")
                return RenameColumn(old, self.identifier("column name"))
            if self.accept("INDEX") or self.accept("KEY"):
                old = self.identifier("index name")
                self.expect("TO")
                return RenameIndex(old, self.identifier("index name"))
            self.accept("TO") or self.accept("AS")
            return RenameTo(self.table_name())
        if word == "CONVERT":
            self.i += 1
            self.expect("TO")
            if not (self.accept("CHARACTER", "SET") or self.accept("CHARSET")
                    or self.accept("CHAR", "SET")):
                raise self.error("expected CHARACTER SET")
            charset = self.charset_name()
            collation = None
            if self.accept("COLLATE"):
                collation = normalize_collation(self.option_value())
            return ConvertCharset(charset, collation)
        if word in ("ENABLE", "DISABLE"):
            self.i += 1
            self.expect("KEYS")
            return None
        if word in ("DISCARD", "IMPORT"):
            self.i += 1
            self.expect("TABLESPACE")
            return None
        if word == "FORCE":
            self.i += 1
            return None
        if word == "ORDER":
            self.i += 1
            self.expect("BY")
            while True:
                self.identifier("column name")
                self.accept("ASC") or self.accept("DESC")
                if not (self.at_op(",") and self.peek(1).kind in (WORD, QUOTED)
                        and self.peek(1).upper not in _ALTER_WORDS):
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

    def alter_add(self) -> AlterAction | None:
        if self.at("PARTITION"):
            self.skip_to_end()
            return None
        if self.accept("SYSTEM", "VERSIONING"):
            return None
        if self.at("PERIOD") and self.peek(1).upper == "FOR":
            self.i += 2
            self.identifier()
            self.skip_parens()
            return None
        if self.at(*_INDEX_WORDS):
            return AddIndex(self.index_definition())
        self.accept("COLUMN")
        if_not_exists = self.accept("IF", "NOT", "EXISTS")
        if self.accept_op("("):
            specs: list[ColumnSpec] = []
            indexes: list[IndexSpec] = []
            while True:
                self.create_definition(specs, indexes)
                if self.accept_op(")"):
                    break
                self.expect_op(",")
            return AddColumns(tuple(specs), None, if_not_exists)
        spec = self.column_definition()
        return AddColumns((spec,), self.position(), if_not_exists)

    def alter_drop(self) -> AlterAction | None:
        if self.at("PARTITION"):
            self.skip_to_end()
            return None
        if self.accept("PRIMARY", "KEY"):
            return DropIndex("PRIMARY", False)
        if self.accept("INDEX") or self.accept("KEY"):
            if_exists = self.accept("IF", "EXISTS")
            return DropIndex(self.identifier("index name"), if_exists)
        if self.accept("FOREIGN", "KEY") or self.accept("CHECK"):
            self.accept("IF", "EXISTS")
            self.identifier("constraint name")
            return None  # the index a foreign key uses stays
        if self.accept("CONSTRAINT"):  # may name a unique key (MySQL 8.0.19+, MariaDB)
            self.accept("IF", "EXISTS")
            return DropIndex(self.identifier("constraint name"), True)
        if self.accept("SYSTEM", "VERSIONING"):
            return None
        if self.at("PERIOD") and self.peek(1).upper == "FOR":
            self.i += 2
            self.identifier()
            return None
        self.accept("COLUMN")
        if_exists = self.accept("IF", "EXISTS")
        name = self.identifier("column name")
        self.accept("RESTRICT") or self.accept("CASCADE")
        return DropColumn(name, if_exists)

    def alter_alter(self) -> AlterAction | None:
        if self.at("INDEX", "KEY") and self.peek(1).kind in (WORD, QUOTED) and \
                self.peek(2).upper in ("VISIBLE", "INVISIBLE", "IGNORED", "NOT"):
            self.i += 2
            self.accept("NOT")
            self.next()
            return None
        if self.at("CHECK", "CONSTRAINT") and self.peek(2).upper in ("ENFORCED", "NOT"):
            self.i += 2
            self.accept("NOT")
            self.expect("ENFORCED")
            return None
        self.accept("COLUMN")
        self.accept("IF", "EXISTS")
        name = self.identifier("column name")
        if self.accept("SET", "DEFAULT"):
            return SetColumnDefault(name, self.default_value())
        if self.accept("DROP", "DEFAULT"):
            return SetColumnDefault(name, None)
        if self.accept("SET", "VISIBLE") or self.accept("SET", "INVISIBLE"):
            return None
        raise self.error("expected SET DEFAULT, DROP DEFAULT or SET VISIBLE/INVISIBLE")

    # -- DROP / RENAME -------------------------------------------------------------------------
    def drop(self) -> Statement | None:
        if self.accept("TEMPORARY"):
            return None
        if self.accept("TABLE") or self.accept("TABLES"):
            if_exists = self.accept("IF", "EXISTS")
            names = [self.table_name()]
            while self.accept_op(","):
                names.append(self.table_name())
            if self.accept("WAIT"):
                self.number()
            else:
                self.accept("NOWAIT")
            self.accept("RESTRICT") or self.accept("CASCADE")
            return DropTables(tuple(names), if_exists)
        if self.accept("DATABASE") or self.accept("SCHEMA"):
            if_exists = self.accept("IF", "EXISTS")
            return DropDatabase(self.identifier("database name"), if_exists)
        self.accept("ONLINE") or self.accept("OFFLINE")
        if self.accept("INDEX"):
            if_exists = self.accept("IF", "EXISTS")
            index = self.identifier("index name")
            self.expect("ON")
            table = self.table_name()
            self.index_options()
            return AlterTable(table, (DropIndex(index, if_exists),))
        return None

    def rename(self) -> RenameTables | None:
        if not (self.accept("TABLE") or self.accept("TABLES")):
            return None
        self.accept("IF", "EXISTS")
        pairs = []
        while True:
            old = self.table_name()
            self.expect("TO")
            pairs.append((old, self.table_name()))
            if not self.accept_op(","):
                break
        if self.accept("WAIT"):
            self.number()
        else:
            self.accept("NOWAIT")
        return RenameTables(tuple(pairs))


_TABLE_OPTION_WORDS = frozenset({
    "ENGINE", "TYPE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "DEFAULT", "CHARACTER", "CHARSET",
    "CHAR", "CHECKSUM", "TABLE_CHECKSUM", "COLLATE", "COMMENT", "COMPRESSION", "CONNECTION",
    "DATA", "INDEX", "DELAY_KEY_WRITE", "ENCRYPTION", "ENCRYPTED", "ENCRYPTION_KEY_ID",
    "INSERT_METHOD", "KEY_BLOCK_SIZE", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "PASSWORD",
    "ROW_FORMAT", "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "TABLESPACE",
    "UNION", "START", "SECONDARY_ENGINE", "SECONDARY_ENGINE_ATTRIBUTE", "ENGINE_ATTRIBUTE",
    "AUTOEXTEND_SIZE", "PAGE_CHECKSUM", "TRANSACTIONAL", "PAGE_COMPRESSED",
    "PAGE_COMPRESSION_LEVEL", "IETF_QUOTES", "SEQUENCE", "WITH", "STORAGE",
})
_ALTER_WORDS = frozenset({
    "ADD", "DROP", "MODIFY", "CHANGE", "ALTER", "RENAME", "CONVERT", "ENABLE", "DISABLE",
    "DISCARD", "IMPORT", "FORCE", "ORDER", "ALGORITHM", "LOCK", "WITH", "WITHOUT",
}) | _TABLE_OPTION_WORDS
