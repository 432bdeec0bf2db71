"""What the SQL Server and Db2 drivers share: both run against an EMULATION on a PostgreSQL of
their own, a fresh database per test with the emulation installed, and write through
PostgreSQL directly (the emulation's capture triggers turn the writes into change rows).
A subclass names its database prefix, the emulation's `install`, the schema the suite's
tables live in and what is connector-specific (properties, DDL, topics, types)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, ClassVar

from headwater.testing.localpg import LocalPostgres

from ..driver import Statement

_counter = itertools.count()


def quote(name: str) -> str:
    """A double-quoted identifier (the suite's statements are run by PostgreSQL)."""
    return '"' + name.replace('"', '""') + '"'


class EmulatedDriver:
    prefix = "conf"
    DATABASE_PREFIX: ClassVar[str] = ""
    SCHEMA: ClassVar[str] = ""  # where unqualified names resolve

    def __init__(self, server: LocalPostgres, install: Callable[[Any], None]) -> None:
        self.server = server
        self.db = f"{self.DATABASE_PREFIX}{next(_counter)}"
        server.create_database(self.db)
        raw = server.connect(self.db)
        try:
            install(raw)
            with raw.cursor() as cur:
                cur.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(self.SCHEMA)}")
        finally:
            raw.close()
        self.conn = self._connect(autocommit=True)

    def _connect(self, autocommit: bool) -> Any:
        """A PostgreSQL connection whose unqualified names resolve in SCHEMA."""
        import psycopg2

        conn = psycopg2.connect(**self.server.dsn(self.db),
                                options=f"-c search_path={quote(self.SCHEMA)},public")
        conn.autocommit = autocommit
        return conn

    def execute(self, *statements: Statement) -> None:
        with self.conn.cursor() as cur:
            cur.execute("BEGIN")
            try:
                for s in statements:
                    sql, params = (s, None) if isinstance(s, str) else s
                    cur.execute(sql, params)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def connect(self) -> Any:
        return self._connect(autocommit=False)

    def quote(self, name: str) -> str:
        return quote(name)

    def rows(self, table: str) -> list[dict[str, Any]]:
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT * FROM {self.quote(table)}")
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def restart_server(self) -> None:
        """Restarts the PostgreSQL behind the emulation."""
        self.conn.close()
        self.server.restart()
        self.conn = self._connect(autocommit=True)

    def close(self) -> None:
        self.conn.close()
        conn = self.server.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
        finally:
            conn.close()
