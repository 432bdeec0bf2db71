"""A throwaway PostgreSQL holding the SQL Server CDC EMULATION (database testDB)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.localpg import LocalPostgres
from headwater.testing.sqlserver_emulation import dbapi
from tests.changetables.emulation import emulated_pg, fresh_database

__all__ = ["emulated_pg", "enable_cdc", "sqlserver_db", "tsql"]


@pytest.fixture
def sqlserver_db(emulated_pg: LocalPostgres, request: Any,
                 tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A fresh emulated database: connect kwargs for dbapi.connect / the connector config
    (and, under "history", a schema history file of the test's own)."""
    name = fresh_database(emulated_pg, request, dbapi.install)
    yield {"server": "127.0.0.1", "port": emulated_pg.port, "user": emulated_pg.user,
           "database": name, "history": str(tmp_path / "history.jsonl")}


def tsql(db: dict[str, Any], *statements: str) -> None:
    """Run T-SQL through the emulation's adapter, committing each statement."""
    conn = dbapi.connect(**db)
    try:
        for statement in statements:
            cur = conn.cursor()
            cur.execute(statement)
            conn.commit()
    finally:
        conn.close()


def enable_cdc(db: dict[str, Any], schema: str, table: str, ci: str | None = None) -> None:
    """sys.sp_cdc_enable_table, as the emulation provides it (a PostgreSQL function)."""
    conn = dbapi.connect(**db)
    try:
        cur = conn._inner.cursor()
        cur.execute("SELECT sys.sp_cdc_enable_table(%s, %s, %s)", (schema, table, ci))
        conn.commit()
    finally:
        conn.close()
