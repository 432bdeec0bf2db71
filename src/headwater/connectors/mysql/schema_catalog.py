"""The connector's catalog of table definitions (`MySqlSchema`).

Row events in the binlog carry values only; their meaning depends on the table definition in
force at that point of the log.  `MySqlSchema` is that definition set, moved forward by
applying each DDL statement the log (or the snapshot) shows; the durable history it is rebuilt
from after a restart is `schema_history`.

Invariant: `MySqlSchema.apply` is atomic per call (a statement that cannot be parsed or applied
leaves every table as it was, including those earlier statements of the same call touched).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable
from headwater.connectors.mysql.connection import show_create_table
from headwater.connectors.mysql.ddl import (
    STRING_TYPES,
    AddColumns,
    AddIndex,
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
    Parser,
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
    TableToPartition,
    TruncateTable,
    UseDatabase,
    charset_of_collation,
    normalize_charset,
    resolve_column,
    split_statements,
)
from headwater.connectors.mysql.ddl_types import binary_type, converted_text_type

__all__ = ["MySqlSchema"]

log = logging.getLogger(__name__)

_KEY_KINDS = frozenset({"PRIMARY", "UNIQUE", "INDEX", "FULLTEXT", "SPATIAL"})


@dataclass(frozen=True, slots=True)
class _Index:
    kind: str  # "PRIMARY", "UNIQUE", "INDEX", "FULLTEXT", "SPATIAL"
    name: str
    columns: tuple[str, ...]
    # During an ALTER: the key existed before it, so its columns are the old names.
    original: bool = field(default=False, compare=False)
    period: str | None = None  # (..., period WITHOUT OVERLAPS): its end and start close the key


@dataclass(frozen=True, slots=True)
class _Entry:
    """A table plus what the shared model does not keep: index names, default collation."""

    table: MySqlTable
    indexes: tuple[_Index, ...]
    collation: str | None
    # The GENERATED ALWAYS AS ROW END column of a system-versioned table: the server makes it
    # part of every unique key (history rows share the current row's key otherwise).
    row_end: str | None = None
    periods: tuple[tuple[str, str, str], ...] = ()  # (name, start, end) of PERIOD FOR


@dataclass(frozen=True, slots=True)
class _Database:
    name: str
    charset: str | None
    collation: str | None


@dataclass(eq=False, slots=True)
class _Draft:
    """A table being edited by one statement; turned back into an immutable `_Entry`."""

    database: str
    name: str
    charset: str | None
    collation: str | None
    comment: str | None
    columns: list[MySqlColumn] = field(default_factory=list)
    # The name each column had before the ALTER (None: added by it).  The server resolves
    # the column names of CHANGE/MODIFY/DROP/RENAME/ALTER COLUMN against the table as it
    # was, so `CHANGE a b INT, CHANGE b a INT` swaps two columns.
    origins: list[str | None] = field(default_factory=list)
    indexes: list[_Index] = field(default_factory=list)
    row_end: str | None = None
    periods: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, entry: _Entry) -> _Draft:
        table = entry.table
        return cls(table.database, table.name, table.default_charset, entry.collation,
                   table.comment, columns=list(table.columns),
                   origins=[c.name for c in table.columns],
                   indexes=[replace(i, original=True) for i in entry.indexes],
                   row_end=entry.row_end, periods={p[0].lower(): p for p in entry.periods})

    def find_original(self, name: str) -> int:
        """A column by its name before the ALTER, else one the ALTER added by its name."""
        lowered = name.lower()
        for i, origin in enumerate(self.origins):
            if origin is not None and origin.lower() == lowered:
                return i
        for i, origin in enumerate(self.origins):
            if origin is None and self.columns[i].name.lower() == lowered:
                return i
        return -1

    def remove(self, at: int) -> str | None:
        del self.columns[at]
        return self.origins.pop(at)

    def finish_alter(self) -> None:
        """Keys as the ALTER leaves them.  The keys the table had name its columns as they
        were (the server renames them all at once, so CHANGE a b, CHANGE b a swaps them);
        keys the ALTER added name them as they are.  A key part whose column is gone leaves
        its key (a column dropped and added again under the same name keeps it), and primary
        key columns are NOT NULL."""
        renamed = {origin.lower(): c.name for origin, c in zip(self.origins, self.columns,
                                                                strict=True) if origin}
        present = {c.name.lower(): c.name for c in self.columns}
        kept = []
        for index in self.indexes:
            names = renamed if index.original else present
            columns = tuple(names[c.lower()] for c in index.columns if c.lower() in names)
            if columns:
                kept.append(replace(index, columns=columns, original=False))
        self.indexes = kept
        for index in self.indexes:
            if index.kind == "PRIMARY":
                for name in index.columns:
                    k = self.find(name)
                    self.columns[k] = replace(self.columns[k], nullable=False)

    def find(self, name: str) -> int:
        lowered = name.lower()
        for i, column in enumerate(self.columns):
            if column.name.lower() == lowered:
                return i
        return -1

    def find_index(self, name: str) -> int:
        lowered = name.lower()
        for i, index in enumerate(self.indexes):
            if index.name.lower() == lowered:
                return i
        return -1

    def resolve(self, spec: ColumnSpec) -> MySqlColumn:
        return resolve_column(spec, self.charset, self.collation)

    def place(self, column: MySqlColumn, position: Position | None, at: int | None,
              origin: str | None = None) -> None:
        """Inserts at FIRST / AFTER x, else at `at` (the old place), else at the end."""
        if position is not None:
            if position.after is None:
                index = 0
            else:
                after = self.find(position.after)
                if after < 0:
                    raise KeyError(position.after)
                index = after + 1
        else:
            index = len(self.columns) if at is None else at
        self.columns.insert(index, column)
        self.origins.insert(index, origin)

    def add_index(self, spec: IndexSpec) -> None:
        if spec.kind == "PERIOD":  # the server makes a period's columns NOT NULL
            if spec.name is not None:
                start, end = spec.columns[:2]
                self.periods[spec.name.lower()] = (spec.name, start, end)
            for name in spec.columns:
                k = self.find(name)
                if k >= 0:
                    self.columns[k] = replace(self.columns[k], nullable=False)
            return
        if spec.kind not in _KEY_KINDS or (not spec.columns and spec.kind != "PRIMARY"):
            return  # foreign keys and checks do not key a table
        if spec.kind == "PRIMARY":
            if spec.if_not_exists and any(i.kind == "PRIMARY" for i in self.indexes):
                return
            self.indexes = [i for i in self.indexes if i.kind != "PRIMARY"]
            self.indexes.insert(0, _Index("PRIMARY", "PRIMARY", spec.columns,
                                          period=spec.period))
            for name in spec.columns:
                k = self.find(name)
                if k >= 0:
                    self.columns[k] = replace(self.columns[k], nullable=False)
            return
        if spec.name is None:  # MySQL names an unnamed index after its first column
            base = spec.columns[0]
            name, n = base, 2
            while self.find_index(name) >= 0:
                name, n = f"{base}_{n}", n + 1
        elif self.find_index(spec.name) >= 0:
            return
        else:
            name = spec.name
        self.indexes.append(_Index(spec.kind, name, spec.columns, period=spec.period))

    def column_keys(self, spec: ColumnSpec, name: str) -> None:
        if spec.row_end:
            self.row_end = name
        if spec.primary_key:
            self.add_index(IndexSpec("PRIMARY", "PRIMARY", (name,)))
        if spec.unique and not spec.primary_key:  # the server drops the redundant key
            self.add_index(IndexSpec("UNIQUE", None, (name,)))

    def entry(self) -> _Entry:
        primary: tuple[str, ...] = ()
        unique: list[tuple[str, ...]] = []
        row_end = self.row_end if self.row_end is not None and self.find(self.row_end) >= 0 \
            else None
        for index in self.indexes:
            columns = tuple(self.columns[self.find(c)].name if self.find(c) >= 0 else c
                            for c in index.columns)
            if row_end is not None and index.kind in ("PRIMARY", "UNIQUE") and \
                    row_end.lower() not in (c.lower() for c in columns):
                columns = (*columns, row_end)
            if index.period is not None and index.period.lower() in self.periods:
                _, start, end = self.periods[index.period.lower()]
                columns = (*columns, end, start)
            if index.kind == "PRIMARY":
                primary = columns
            elif index.kind == "UNIQUE":
                unique.append(columns)
        table = MySqlTable(self.database, self.name, tuple(self.columns), primary,
                           tuple(unique), self.charset, self.comment)
        return _Entry(table, tuple(self.indexes), self.collation, row_end,
                      tuple(self.periods.values()))


class MySqlSchema:
    """Every known database and table definition, moved forward by DDL.

    lower_case_table_names follows the server variable: 0 compares names case-sensitively;
    1 stores table and database names in lower case and compares them so; 2 keeps names as
    given and compares them case-insensitively.  `ansi_quotes` makes "x" an identifier.
    """

    def __init__(self, default_charset: str = "utf8mb4", lower_case_table_names: int = 0,
                 ansi_quotes: bool = False) -> None:
        self.default_charset = normalize_charset(default_charset)
        self.lower_case_table_names = lower_case_table_names
        self.ansi_quotes = ansi_quotes
        self._tables: dict[tuple[str, str], _Entry] = {}
        self._databases: dict[str, _Database] = {}
        self._undo: list[tuple[bool, Any, Any]] | None = None

    # -- queries -------------------------------------------------------------------------------
    def _key(self, name: str) -> str:
        return name.lower() if self.lower_case_table_names else name

    def _stored(self, name: str) -> str:
        return name.lower() if self.lower_case_table_names == 1 else name

    def table(self, database: str, name: str) -> MySqlTable | None:
        entry = self._tables.get((self._key(database), self._key(name)))
        return entry.table if entry is not None else None

    def tables(self) -> list[MySqlTable]:
        return [entry.table for entry in self._tables.values()]

    def databases(self) -> list[str]:
        names = {key: db.name for key, db in self._databases.items()}
        for entry in self._tables.values():
            names.setdefault(self._key(entry.table.database), entry.table.database)
        return sorted(names.values())

    def copy(self) -> MySqlSchema:
        other = MySqlSchema(self.default_charset, self.lower_case_table_names, self.ansi_quotes)
        other._tables = dict(self._tables)
        other._databases = dict(self._databases)
        return other

    # -- applying DDL --------------------------------------------------------------------------
    def apply(self, sql: str, default_database: str | None,
              ansi_quotes: bool | None = None) -> list[SchemaChange]:
        """Applies every statement of `sql`; returns their effects in order.

        `ansi_quotes` is the sql_mode the statement ran under (a binlog QUERY event carries
        it), which decides whether "x" is an identifier or a string; None: the catalog's own.

        Statements of no interest (DML, transaction control, routines, grants, temporary
        tables, ...) yield nothing.  USE changes the default database for the statements
        after it.  On any error the catalog is left exactly as before the call.
        """
        self._undo = []
        changes: list[SchemaChange] = []
        database = default_database
        try:
            quotes = self.ansi_quotes if ansi_quotes is None else ansi_quotes
            for text, tokens in split_statements(sql, quotes):
                statement = Parser(text, tokens).statement()
                if statement is None:
                    continue
                if isinstance(statement, UseDatabase):
                    database = statement.name
                    continue
                changes.extend(self._apply(statement, text, database))
        except BaseException:
            for is_table, key, old in reversed(self._undo):
                store: dict[Any, Any] = self._tables if is_table else self._databases
                if old is None:
                    store.pop(key, None)
                else:
                    store[key] = old
            raise
        finally:
            self._undo = None
        return changes

    def _put(self, database: str, name: str, entry: _Entry | None) -> None:
        key = (self._key(database), self._key(name))
        if self._undo is not None:
            self._undo.append((True, key, self._tables.get(key)))
        if entry is None:
            self._tables.pop(key, None)
        else:
            self._tables[key] = entry

    def _put_database(self, name: str, value: _Database | None) -> None:
        key = self._key(name)
        if self._undo is not None:
            self._undo.append((False, key, self._databases.get(key)))
        if value is None:
            self._databases.pop(key, None)
        else:
            self._databases[key] = value

    def _entry(self, database: str, name: str) -> _Entry | None:
        return self._tables.get((self._key(database), self._key(name)))

    def _database_of(self, name: TableName, default: str | None, text: str) -> str:
        database = name.database or default
        if database is None:
            raise DdlParseError(f"no database selected for table {name.name!r}", text)
        return self._stored(database)

    def _apply(self, statement: Statement, text: str, default: str | None) -> list[SchemaChange]:
        if isinstance(statement, CreateTable):
            return self._create_table(statement, text, default)
        if isinstance(statement, AlterTable):
            return self._alter_table(statement, text, default)
        if isinstance(statement, DropTables):
            changes = []
            for name in statement.names:
                database = self._database_of(name, default, text)
                entry = self._entry(database, name.name)
                if entry is None:
                    continue
                self._put(database, name.name, None)
                changes.append(SchemaChange("DROP", entry.table.database, entry.table.name,
                                            text, entry.table, None))
            return changes
        if isinstance(statement, RenameTables):
            changes = []
            for old, new in statement.pairs:
                changes.extend(self._rename(old, new, text, default))
            return changes
        if isinstance(statement, TruncateTable):
            database = self._database_of(statement.name, default, text)
            entry = self._entry(database, statement.name.name)
            if entry is None:
                return []
            return [SchemaChange("TRUNCATE", entry.table.database, entry.table.name, text,
                                 None, entry.table)]
        if isinstance(statement, CreateDatabase):
            return self._create_database(statement, text)
        if isinstance(statement, AlterDatabase):
            db_name = statement.name or default
            if db_name is None:
                raise DdlParseError("no database selected", text)
            existing = self._databases.get(self._key(db_name))
            charset, collation = _charset_pair(statement.charset, statement.collation)
            value = _Database(existing.name if existing else self._stored(db_name),
                              charset or (existing.charset if existing else None),
                              collation if charset or collation else
                              (existing.collation if existing else None))
            self._put_database(db_name, value)
            return [SchemaChange("ALTER_DATABASE", value.name, None, text, None, None)]
        if isinstance(statement, DropDatabase):
            return self._drop_database(statement, text)
        raise AssertionError(f"unhandled statement {statement!r}")  # pragma: no cover

    def _create_database(self, statement: CreateDatabase, text: str) -> list[SchemaChange]:
        existing = self._databases.get(self._key(statement.name))
        if existing is not None and statement.if_not_exists:
            return []
        charset, collation = _charset_pair(statement.charset, statement.collation)
        value = _Database(self._stored(statement.name), charset, collation)
        self._put_database(statement.name, value)
        return [SchemaChange("CREATE_DATABASE", value.name, None, text, None, None)]

    def _drop_database(self, statement: DropDatabase, text: str) -> list[SchemaChange]:
        key = self._key(statement.name)
        changes = []
        for (db_key, _), entry in list(self._tables.items()):
            if db_key == key:
                self._put(entry.table.database, entry.table.name, None)
                changes.append(SchemaChange("DROP", entry.table.database, entry.table.name,
                                            text, entry.table, None))
        existing = self._databases.get(key)
        self._put_database(statement.name, None)
        name = existing.name if existing is not None else statement.name
        changes.append(SchemaChange("DROP_DATABASE", name, None, text, None, None))
        return changes

    def _table_defaults(self, database: str, charset: str | None,
                        collation: str | None) -> tuple[str, str | None]:
        charset, collation = _charset_pair(charset, collation)
        if charset is None:
            db = self._databases.get(self._key(database))
            if db is not None and db.charset is not None:
                return db.charset, collation or db.collation
            return self.default_charset, collation
        return charset, collation

    def _create_table(self, statement: CreateTable, text: str,
                      default: str | None) -> list[SchemaChange]:
        database = self._database_of(statement.name, default, text)
        name = self._stored(statement.name.name)
        if statement.if_not_exists and self._entry(database, name) is not None:
            return []
        if statement.like is not None:
            source_db = self._database_of(statement.like, default, text)
            source = self._entry(source_db, statement.like.name)
            if source is None:
                log.warning("CREATE TABLE %s.%s LIKE an unknown table %s.%s: ignored",
                            database, name, source_db, statement.like.name)
                return []
            table = replace(source.table, database=database, name=name)
            entry = _Entry(table, source.indexes, source.collation)
        else:
            options = statement.options
            charset, collation = self._table_defaults(database, options.charset,
                                                      options.collation)
            draft = _Draft(database, name, charset, collation, options.comment)
            for spec in statement.columns:
                if draft.find(spec.column.name) >= 0:
                    raise DdlParseError(f"duplicate column {spec.column.name!r}", text)
                draft.columns.append(draft.resolve(spec))
            for spec in statement.columns:
                draft.column_keys(spec, spec.column.name)
            for index in statement.indexes:
                draft.add_index(index)
            if statement.with_select:
                log.info("CREATE TABLE %s.%s ... SELECT: only the declared columns are known",
                         database, name)
            entry = draft.entry()
        self._put(database, name, entry)
        return [SchemaChange("CREATE", database, name, text, None, entry.table)]

    def _rename(self, old: TableName, new: TableName, text: str,
                default: str | None) -> list[SchemaChange]:
        old_db = self._database_of(old, default, text)
        entry = self._entry(old_db, old.name)
        if entry is None:
            log.warning("RENAME of an unknown table %s.%s: ignored", old_db, old.name)
            return []
        new_db = self._database_of(new, default, text)
        new_name = self._stored(new.name)
        table = replace(entry.table, database=new_db, name=new_name)
        self._put(old_db, old.name, None)
        self._put(new_db, new_name, replace(entry, table=table))
        return [SchemaChange("ALTER", new_db, new_name, text, entry.table, table)]

    def _alter_table(self, statement: AlterTable, text: str,
                     default: str | None) -> list[SchemaChange]:
        database = self._database_of(statement.name, default, text)
        entry = self._entry(database, statement.name.name)
        if entry is None:
            log.warning("ALTER of an unknown table %s.%s: ignored", database,
                        statement.name.name)
            return []
        draft = _Draft.of(entry)
        extra: list[SchemaChange] = []
        # The server drops keys and columns (named as they were) before it adds any,
        # whatever the order of the clauses.
        actions = sorted(statement.actions,
                         key=lambda a: not isinstance(a, (DropIndex, DropColumn)))
        for action in actions:
            if isinstance(action, (PartitionToTable, TableToPartition)):
                extra.extend(self._convert_partition(action, entry, text, default))
                continue
            try:
                self._alter(draft, action, default, text)
            except KeyError as exc:
                raise DdlParseError(f"table {database}.{entry.table.name} has no column "
                                    f"{exc.args[0]!r}", text) from None
        draft.finish_alter()
        new_entry = draft.entry()
        old = entry.table
        if (self._key(draft.database), self._key(draft.name)) != \
                (self._key(old.database), self._key(old.name)):
            self._put(old.database, old.name, None)
        self._put(draft.database, draft.name, new_entry)
        return [SchemaChange("ALTER", draft.database, draft.name, text, old, new_entry.table),
                *extra]

    def _convert_partition(self, action: PartitionToTable | TableToPartition, entry: _Entry,
                           text: str, default: str | None) -> list[SchemaChange]:
        """A partition leaves for a table of its own (CONVERT PARTITION ... TO TABLE, shaped
        like the partitioned table) or a table joins as a partition and stops existing."""
        database = self._database_of(action.name, default or entry.table.database, text)
        if isinstance(action, TableToPartition):
            gone = self._entry(database, action.name.name)
            if gone is None:
                return []
            self._put(database, action.name.name, None)
            return [SchemaChange("DROP", gone.table.database, gone.table.name, text,
                                 gone.table, None)]
        name = self._stored(action.name.name)
        table = replace(entry.table, database=database, name=name)
        self._put(database, name, replace(entry, table=table))
        return [SchemaChange("CREATE", database, name, text, None, table)]

    def _alter(self, draft: _Draft, action: object, default: str | None, text: str) -> None:
        if isinstance(action, AddColumns):
            position = action.position
            for spec in action.columns:
                if draft.find(spec.column.name) >= 0:
                    if action.if_not_exists:
                        continue
                    raise DdlParseError(f"duplicate column {spec.column.name!r}", text)
                draft.place(draft.resolve(spec), position, None)
                if position is not None:
                    position = Position(spec.column.name)
                draft.column_keys(spec, spec.column.name)
            for index in action.indexes:
                draft.add_index(index)
        elif isinstance(action, ChangeColumn):
            old_name = action.old_name or action.column.column.name
            at = draft.find_original(old_name)
            if at < 0:
                if action.if_exists:
                    return
                raise KeyError(old_name)
            if draft.row_end is not None and \
                    draft.columns[at].name.lower() == draft.row_end.lower():
                draft.row_end = action.column.column.name
            origin = draft.remove(at)
            draft.place(draft.resolve(action.column), action.position, at, origin)
            draft.column_keys(action.column, action.column.column.name)
        elif isinstance(action, DropColumn):
            at = draft.find_original(action.name)
            if at < 0:
                if action.if_exists:
                    return
                raise KeyError(action.name)
            draft.remove(at)
        elif isinstance(action, RenameColumn):
            at = draft.find_original(action.old_name)
            if at < 0:
                if action.if_exists:
                    return
                raise KeyError(action.old_name)
            if draft.row_end is not None and \
                    draft.columns[at].name.lower() == draft.row_end.lower():
                draft.row_end = action.new_name
            draft.columns[at] = replace(draft.columns[at], name=action.new_name)
        elif isinstance(action, SetColumnDefault):
            at = draft.find_original(action.name)
            if at < 0:
                if action.if_exists:
                    return
                raise KeyError(action.name)
            draft.columns[at] = replace(draft.columns[at], default=action.default)
        elif isinstance(action, AddIndex):
            draft.add_index(action.index)
        elif isinstance(action, DropIndex):
            at = draft.find_index(action.name)
            if at >= 0:
                del draft.indexes[at]
        elif isinstance(action, RenameIndex):
            at = draft.find_index(action.old_name)
            if at >= 0:
                draft.indexes[at] = replace(draft.indexes[at], name=action.new_name)
        elif isinstance(action, RenameTo):
            # An unqualified new name lands in the default database, else stays in place.
            draft.database = self._database_of(action.name, default or draft.database, text)
            draft.name = self._stored(action.name.name)
        elif isinstance(action, ConvertCharset):
            charset, collation = _charset_pair(action.charset, action.collation)
            if charset is None:  # CONVERT TO CHARACTER SET DEFAULT: the database's
                charset, collation = self._table_defaults(draft.database, None, collation)
            draft.charset, draft.collation = charset, collation
            draft.columns = [
                _converted(c, charset, collation)
                if c.type_name in STRING_TYPES and c.charset is not None else c
                for c in draft.columns]
        elif isinstance(action, SetTableOptions):
            options = action.options
            if options.charset is not None or options.collation is not None:
                draft.charset, draft.collation = _charset_pair(options.charset,
                                                               options.collation)
            if options.comment is not None:
                draft.comment = options.comment


def read_definition(cur: Any, database: str, table: str) -> MySqlTable | None:
    """A table's definition as the server states it now (`SHOW CREATE TABLE`), parsed apart
    from the captured schema: the signal table of a database the connector does not capture."""
    ddl, ansi_quotes = show_create_table(cur, database, table)
    schema = MySqlSchema()
    schema.apply(ddl, database, ansi_quotes)
    return schema.table(database, table)


def _converted(column: MySqlColumn, charset: str, collation: str | None) -> MySqlColumn:
    """A string column after CONVERT TO CHARACTER SET (binary makes it a binary type)."""
    if charset == "binary":
        return replace(column, type_name=binary_type(column.type_name), charset=None,
                       collation=None)
    return replace(column, charset=charset, collation=collation,
                   type_name=converted_text_type(column.type_name, column.charset, charset))


def _charset_pair(charset: str | None, collation: str | None) -> tuple[str | None, str | None]:
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)
    return charset, collation
