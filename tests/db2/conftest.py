"""A throwaway PostgreSQL holding the Db2 ASN EMULATION (not a live Db2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.db2_emulation import dbapi
from headwater.testing.localpg import LocalPostgres, local_postgres


@pytest.fixture(scope="module")
def emulated_pg() -> Iterator[LocalPostgres]:
    with local_postgres() as pg:
        yield pg


@pytest.fixture
def db2_db(emulated_pg: LocalPostgres, request: Any,
           tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A fresh emulated database: what the connector configuration and `sql` need (and,
    under "history", a schema history file of the test's own)."""
    name = "testdb_" + str(abs(hash(request.node.name)) % 10**8)
    emulated_pg.create_database(name)
    raw = emulated_pg.connect(name)
    dbapi.install(raw)
    raw.close()
    yield {"host": "127.0.0.1", "port": emulated_pg.port, "user": emulated_pg.user,
           "database": name, "history": str(tmp_path / "history.jsonl")}


def sql(db: dict[str, Any], *statements: str) -> None:
    """Runs statements through the emulation's adapter, one transaction each."""
    conn = dbapi.connect(f"DATABASE={db['database']};HOSTNAME={db['host']};PORT={db['port']};"
                         f"UID={db['user']};")
    try:
        for statement in statements:
            cur = conn.cursor()
            cur.execute(statement)
            cur.close()
    finally:
        conn.close()


def add_table(db: dict[str, Any], schema: str, table: str) -> None:
    """ASNCDC.ADDTABLE, as the emulation provides it (a PostgreSQL function)."""
    sql(db, f"SELECT asncdc.addtable('{schema}', '{table}')")
