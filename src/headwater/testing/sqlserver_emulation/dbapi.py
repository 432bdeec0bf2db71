"""A pymssql-shaped DB-API module over PostgreSQL, for the SQL Server EMULATION.

`connect(server=..., port=..., user=..., password=..., database=...)` opens a psycopg2
connection to the PostgreSQL database named `database`; cursors translate each T-SQL statement
(translate.py) and return values as pymssql would (bytes for binary, not memoryview).
`CREATE TABLE` and `ALTER TABLE` statements also record the declared T-SQL column types
(emu.declared_types), which PostgreSQL's catalog cannot hold (nvarchar, datetime2(3), money).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg2
import sqlglot
from sqlglot import exp

from headwater.relational.changetables.paramstyle import blank_quoted
from headwater.testing.changetable_emulation.dbapi import (
    EmulatedConnection,
    EmulatedCursor,
    install_schema,
)
from headwater.testing.sqlserver_emulation.translate import REAL_WORD, to_postgres

# pymssql's: `%s` placeholders, the statement formatted with Python's `%` (so a literal `%` is
# `%%`) when parameters are given; a `?` is sent to the server as written.
paramstyle = "pyformat"
Error = psycopg2.Error
OperationalError = psycopg2.OperationalError
InterfaceError = psycopg2.InterfaceError
DatabaseError = psycopg2.DatabaseError


# Types sqlglot's T-SQL output renames (INT is written INTEGER; REAL, NTEXT lose their name).
_TSQL_NAMES: dict[Any, str] = {exp.DataType.Type.INT: "int"}


def from_pyformat(operation: str) -> str:
    """pymssql's formatting undone into the emulation's `?` form: `%s` placeholders become
    `?`, `%%` a `%`; a lone `%` or a `?` outside quotes is an error, as pymssql would fail on
    the first and SQL Server on the second."""
    out: list[str] = []
    i = 0
    bare = blank_quoted(operation)
    while i < len(operation):
        char = operation[i]
        if char == "%":
            following = operation[i + 1:i + 2]
            if following == "%":
                out.append("%")
            elif following == "s":
                out.append("?")
            else:
                raise psycopg2.ProgrammingError(
                    f"unescaped '%' at {i} in a statement with parameters: {operation[:200]}")
            i += 2
            continue
        if char == "?" and bare[i] == "?":
            raise psycopg2.ProgrammingError(
                f"a '?' placeholder sent to a pyformat driver (pymssql): {operation[:200]}")
        out.append(char)
        i += 1
    return "".join(out)


class Cursor(EmulatedCursor):
    """Translates each statement (the rest: EmulatedCursor)."""

    def execute(self, operation: str, params: Sequence[Any] | None = None) -> None:
        if operation.lstrip().upper().startswith(("CREATE TABLE", "ALTER TABLE")):
            self._record_types(REAL_WORD.sub("FLOAT(24)", operation))
        if params is not None:
            operation = from_pyformat(operation)
        elif "?" in blank_quoted(operation):
            # pymssql sends it as written: SQL Server would refuse the statement
            raise psycopg2.ProgrammingError(
                f"a '?' placeholder sent to a pyformat driver (pymssql): {operation[:200]}")
        sql, count = to_postgres(operation)
        values = {f"hwp{i}": v for i, v in enumerate(params or ())}
        if len(values) != count:
            raise psycopg2.ProgrammingError(f"{count} parameters expected, {len(values)} given")
        self._inner.execute(sql, values if count else None)

    def _record_types(self, ddl: str) -> None:
        tree = sqlglot.parse_one(ddl, read="tsql")
        table = tree.find(exp.Table)
        if table is None:
            return
        schema = table.db or "dbo"
        for column in tree.find_all(exp.ColumnDef):
            kind = column.args.get("kind")
            if not isinstance(kind, exp.DataType):
                continue
            name = kind.sql(dialect="tsql").split("(")[0].lower()
            name = _TSQL_NAMES.get(kind.this, name)
            params = [int(p.name) for p in kind.expressions if p.name.isdigit()]
            precision = params[0] if params else None
            if name == "float":  # SQL Server's catalog: float(1-24) is real (24), else 53
                name, precision = ("real", 24) if precision and precision <= 24 else ("float", 53)
            scale = params[1] if len(params) > 1 else None
            dt_precision = precision if name in ("datetime2", "time", "datetimeoffset") else None
            if name in ("datetime2", "time", "datetimeoffset"):
                precision = None
            self._inner.execute(
                "INSERT INTO emu.declared_types VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (schema, table.name, column.name, name, precision, scale, dt_precision))


class Connection(EmulatedConnection):
    CURSOR = Cursor

    @property
    def autocommit(self) -> bool:
        return bool(self._inner.autocommit)

    def autocommit_set(self, value: bool) -> None:
        self._inner.autocommit = value


def connect(server: str = "127.0.0.1", user: str = "postgres", password: str | None = None,
            database: str = "postgres", port: str | int = 5432, autocommit: bool = False,
            **_ignored: Any) -> Connection:
    """pymssql.connect's signature; `server` may be a host or a socket directory."""
    host = server.split("\\", maxsplit=1)[0]
    kwargs: dict[str, Any] = {"host": host, "port": int(port), "user": user, "dbname": database}
    if password:
        kwargs["password"] = password
    inner = psycopg2.connect(**kwargs)
    inner.autocommit = autocommit
    return Connection(inner)


def install(connection: Any) -> None:
    """Create the emulated CDC surface in the database of a psycopg2 connection."""
    install_schema(connection, "headwater.testing.sqlserver_emulation")
