"""A throwaway PostgreSQL holding the Db2 ASN EMULATION (not a live Db2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.db2_emulation import dbapi
from headwater.testing.localpg import LocalPostgres
from tests.changetables.emulation import emulated_pg, fresh_database

__all__ = ["add_table", "db2_db", "emulated_pg", "sql"]


@pytest.fixture
def db2_db(emulated_pg: LocalPostgres, request: Any,
           tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A fresh emulated database: what the connector configuration and `sql` need (and,
    under "history", a schema history file of the test's own)."""
    name = fresh_database(emulated_pg, request, dbapi.install)
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
    """ASNCDC.ADDTABLE, as the emulation provides it (a PostgreSQL function); like Debezium's
    procedure it takes the names as the catalog holds them (DB2INST1, not db2inst1)."""
    sql(db, "SELECT ASNCDC.ADDTABLE('{}', '{}')".format(schema.replace("'", "''"),
                                                         table.replace("'", "''")))
