"""Fixtures: one real PostgreSQL per test session, a fresh database and slot per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.capture_thread import Capture
from headwater.testing.localpg import LocalPostgres, wait_for

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


class Env:
    """One test's database, slot, config file and data directories."""

    def __init__(self, pg: LocalPostgres, tmp: Path) -> None:
        n = next(_counter)
        self.pg = pg
        self.db = f"hw_test_{n}"
        self.slot = f"hw_slot_{n}"
        self.prefix = "inv"
        self.tmp = tmp
        self.topics = tmp / "topics"
        self.offsets = tmp / "offsets.json"
        pg.create_database(self.db)
        self.conn = pg.connect(self.db)

    def config(self, extra: dict[str, Any] | None = None) -> Path:
        props = {
            "name": "test-connector",
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.pg.port),
            "database.user": self.pg.user,
            "database.password": "unused",
            "database.dbname": self.db,
            "topic.prefix": self.prefix,
            "plugin.name": "pgoutput",
            "slot.name": self.slot,
            "publication.name": f"pub_{self.slot}",
            "offset.storage.file.filename": str(self.offsets),
            "headwater.topics.dir": str(self.topics),
            "headwater.topics.segment.ms": "200",
            "poll.interval.ms": "100",
        }
        props.update({k: str(v) for k, v in (extra or {}).items()})
        path = self.tmp / "connector.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(statement, params)
            return cur.fetchall() if cur.description else []

    def drop_slot(self, slot: str | None = None) -> None:
        """Drop a slot (this environment's by default) once a stopped capture's walsender has
        let it go: the server counts it active for a moment after the client disconnects."""
        name = slot or self.slot
        wait_for(lambda: not self.sql("SELECT active FROM pg_replication_slots "
                                      "WHERE slot_name = %s", (name,))[0][0],
                 what=f"slot {name} inactive")
        self.sql("SELECT pg_drop_replication_slot(%s)", (name,))

    def capture(self, extra: dict[str, Any] | None = None) -> Capture:
        return Capture(self.config(extra)).start()

    def close(self) -> None:
        self.conn.close()
        c = self.pg.connect()
        with c.cursor() as cur:
            cur.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s AND NOT active", (self.slot,))
        c.close()


@pytest.fixture()
def env(pg: LocalPostgres, tmp_path: Path) -> Iterator[Env]:
    e = Env(pg, tmp_path)
    try:
        yield e
    finally:
        e.close()


__all__ = ["Capture", "Env", "wait_for"]
