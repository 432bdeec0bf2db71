"""The values the DDL parser produces and the catalog consumes.

Kept apart from the parser so that the catalog, the tableChanges serializer and the tests can
name statements without importing the grammar, and so that the grammar modules share one
vocabulary.  Values are purely syntactic: what a statement says, not what it does to a table
(that is `schema_catalog.MySqlSchema`'s job, which knows the tables it applies to).
"""

from __future__ import annotations

from dataclasses import dataclass

from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable


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
    """A table as named: `database` is None when the statement leaves it to the default."""

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
    row_end: bool = False  # GENERATED ALWAYS AS ROW END: the server adds it to unique keys


@dataclass(frozen=True, slots=True)
class IndexSpec:
    # "PRIMARY", "UNIQUE", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", or "PERIOD"
    # (PERIOD FOR name (start, end): not a key, but its columns become NOT NULL)
    kind: str
    name: str | None
    columns: tuple[str, ...]  # functional key parts are left out
    if_not_exists: bool = False
    period: str | None = None  # UNIQUE (..., p WITHOUT OVERLAPS): the application period


@dataclass(frozen=True, slots=True)
class TableOptions:
    """The table options the catalog keeps (the others are read and dropped)."""

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
    indexes: tuple[IndexSpec, ...] = ()  # keys of ADD (column, ..., key, ...)


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
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class SetColumnDefault:
    name: str
    default: str | None  # None: DROP DEFAULT (or SET DEFAULT NULL)
    if_exists: bool = False


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
    charset: str | None  # None: CONVERT TO CHARACTER SET DEFAULT (the database's)
    collation: str | None


@dataclass(frozen=True, slots=True)
class SetTableOptions:
    options: TableOptions


@dataclass(frozen=True, slots=True)
class PartitionToTable:
    """MariaDB's CONVERT PARTITION p TO TABLE t: a new table shaped like the partitioned one."""

    name: TableName


@dataclass(frozen=True, slots=True)
class TableToPartition:
    """MariaDB's CONVERT TABLE t TO PARTITION p: table t stops existing."""

    name: TableName


AlterAction = (
    AddColumns | ChangeColumn | DropColumn | RenameColumn | SetColumnDefault | AddIndex
    | DropIndex | RenameIndex | RenameTo | ConvertCharset | SetTableOptions | PartitionToTable
    | TableToPartition
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
