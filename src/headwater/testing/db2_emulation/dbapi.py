"""An ibm_db_dbi-shaped DB-API module over PostgreSQL, for the Db2 EMULATION.

`connect(dsn="DATABASE=..;HOSTNAME=..;PORT=..;UID=..;PWD=..;")` opens a psycopg2 connection
to the PostgreSQL database named DATABASE; cursors translate each Db2 statement (`translate`)
and return values as ibm_db_dbi would (bytes for FOR BIT DATA, not memoryview).

sqlglot has no Db2 dialect, so the translation is by hand and covers only what the connector
sends (queries.py): `?` markers, X'..' binary literals, CURRENT TIMESTAMP / CURRENT SERVER,
the infix CONCAT operator, trailing isolation clauses (WITH CS, FOR READ ONLY WITH UR),
SET CURRENT ISOLATION and SAVEPOINT .. ON ROLLBACK RETAIN CURSORS; then Db2's name folding
(names.fold: an unquoted name is its upper-case form).  Anything else passes through
unchanged, so a statement this does not know fails loudly on PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final

import psycopg2

from headwater.relational.changetables.paramstyle import to_paramstyle
from headwater.testing.changetable_emulation.dbapi import (
    EmulatedConnection,
    EmulatedCursor,
    install_schema,
)
from headwater.testing.db2_emulation.names import fold

paramstyle = "qmark"
Error = psycopg2.Error
OperationalError = psycopg2.OperationalError
InterfaceError = psycopg2.InterfaceError
DatabaseError = psycopg2.DatabaseError

_LEVELS: Final = {"UR": "READ UNCOMMITTED", "CS": "READ COMMITTED", "RS": "REPEATABLE READ",
                  "RR": "SERIALIZABLE"}
_ISOLATION: Final = re.compile(r"^\s*SET\s+CURRENT\s+ISOLATION\s*=?\s*(UR|CS|RS|RR)\s*$", re.I)
_REWRITES: Final = (
    (re.compile(r"\bCURRENT\s+TIMESTAMP\b", re.I), "CURRENT_TIMESTAMP"),
    (re.compile(r"\bCURRENT\s+SERVER\b", re.I), "upper(current_database())"),
    (re.compile(r"\bCONCAT\b", re.I), "||"),
    (re.compile(r"\s+for\s+read\s+only(\s+with\s+(ur|cs|rs|rr))?\s*$", re.I), ""),
    (re.compile(r"\s+WITH\s+(UR|CS|RS|RR)\s*$", re.I), ""),
    (re.compile(r"\s+ON\s+ROLLBACK\s+RETAIN\s+CURSORS\s*$", re.I), ""),
    (re.compile(r"\bX'([0-9A-Fa-f]*)'"), r"'\\x\1'::bytea"),
)


@lru_cache(maxsize=256)
def translate(db2: str) -> str:
    """PostgreSQL text (with `%s` parameters) of one Db2 statement."""
    level = _ISOLATION.match(db2)
    if level:
        return f"SET TRANSACTION ISOLATION LEVEL {_LEVELS[level.group(1).upper()]}"
    sql = db2
    for pattern, replacement in _REWRITES:
        sql = pattern.sub(replacement, sql)
    # `?` markers outside quotes -> `%s`, a literal `%` -> `%%`: psycopg2's format style, as
    # the change-table connectors convert them for a `format` driver.
    return to_paramstyle(fold(sql), "format")


class Cursor(EmulatedCursor):
    """Translates each statement (the rest: EmulatedCursor)."""

    def execute(self, operation: str, params: Sequence[Any] | None = None) -> None:
        self._inner.execute(translate(operation), tuple(params) if params else None)


class Connection(EmulatedConnection):
    CURSOR = Cursor

    def set_autocommit(self, value: bool) -> None:
        self._inner.autocommit = value


def _dsn(text: str) -> dict[str, str]:
    return {k.strip().upper(): v for k, _, v in
            (part.partition("=") for part in text.split(";") if "=" in part)}


def connect(dsn: str = "", user: str = "", password: str = "", host: str = "",
            database: str = "", conn_options: Any = None) -> Connection:
    """ibm_db_dbi.connect's signature; HOSTNAME may be a host or a socket directory.
    ibm_db_dbi connections start in autocommit; so do these."""
    parts = _dsn(dsn)
    kwargs: dict[str, Any] = {"host": parts.get("HOSTNAME", host or "127.0.0.1"),
                              "port": int(parts.get("PORT", "5432")),
                              "user": parts.get("UID", user) or None,
                              "dbname": parts.get("DATABASE", database)}
    pwd = parts.get("PWD", password)
    if pwd:
        kwargs["password"] = pwd
    inner = psycopg2.connect(**kwargs)
    inner.autocommit = True
    return Connection(inner)


def install(connection: Any) -> None:
    """Create the emulated ASN surface in the database of a psycopg2 connection."""
    install_schema(connection, "headwater.testing.db2_emulation")
