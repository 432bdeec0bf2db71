"""The service's connectors in SQLite: configurations, target states and what each worker
last reported, in the streams catalog's file (`<data dir>/catalog.sqlite`).

Why the catalog's file: `headwater serve` runs connectors and streams from one data
directory; one SQLite file means one backup, one lock discipline, and the worker processes
(which report their own state, see `worker.py`) write where the service reads.  Why a
*target* state apart from the reported one: after a restart (clean or kill -9) the service
must know what the user asked for (RUNNING, PAUSED, STOPPED), not what a dead worker last
said; Kafka Connect keeps the same distinction (its config topic holds target states).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

import orjson

from headwater.streams.catalog import CATALOG_FILE, CatalogConnection

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS connectors (
  name TEXT PRIMARY KEY, config TEXT NOT NULL, target TEXT NOT NULL,
  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
  worker_state TEXT NOT NULL, trace TEXT, pid INTEGER, heartbeat_ms INTEGER, status TEXT);
CREATE TABLE IF NOT EXISTS pipelines (
  name TEXT PRIMARY KEY, config TEXT NOT NULL, target TEXT NOT NULL,
  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
  worker_state TEXT NOT NULL, trace TEXT, pid INTEGER, heartbeat_ms INTEGER, status TEXT);
CREATE TABLE IF NOT EXISTS service_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

_TABLES: Final = ("connectors", "pipelines")


class Target(StrEnum):
    """What the user asked a connector to be (Kafka Connect's target states)."""

    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


class Reported(StrEnum):
    """What the connector's worker process last reported (or the service saw of it)."""

    UNASSIGNED = "UNASSIGNED"  # no worker yet (spawned, not yet connected)
    RUNNING = "RUNNING"  # snapshotting or streaming
    FAILED = "FAILED"  # stopped with an error (`trace` says which)
    STOPPED = "STOPPED"  # ended gracefully (a pause, a stop or the service's shutdown)


class StoreError(LookupError):
    """A missing or duplicate connector name."""


@dataclass(frozen=True, slots=True)
class ConnectorRow:
    name: str
    config: dict[str, str]
    target: Target
    created_ms: int
    updated_ms: int
    reported: Reported
    trace: str | None
    pid: int | None
    heartbeat_ms: int | None
    status: dict[str, Any] | None  # the worker's last metrics document


def now_ms() -> int:
    return int(time.time() * 1000)


class ConnectorStore(CatalogConnection):
    """One connection per process (the service, each worker); thread-safe within it.

    `table` "pipelines" keeps the service's pipelines the same way (`PipelineStore`): the
    same target and reported states, the same worker discipline."""

    def __init__(self, root: Path, table: str = "connectors", noun: str = "Connector") -> None:
        if table not in _TABLES:
            raise ValueError(f"no table {table!r} (one of {', '.join(_TABLES)})")
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.table = table
        self.noun = noun
        super().__init__(root / CATALOG_FILE)
        self.path.chmod(0o600)  # configurations may hold passwords
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def service_id(self) -> str:
        """A stable id of this data directory (Kafka Connect's `kafka_cluster_id` slot)."""
        with self._tx() as db:
            row = db.execute("SELECT value FROM service_meta WHERE key='id'").fetchone()
            if row is not None:
                return str(row[0])
            value = uuid.uuid4().hex[:22]
            db.execute("INSERT INTO service_meta VALUES ('id', ?)", (value,))
            return value

    def meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM service_meta WHERE key=?",
                                   (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO service_meta VALUES (?, ?)", (key, value))

    # -- configurations --------------------------------------------------------------------
    def create(self, name: str, config: Mapping[str, str], target: Target) -> ConnectorRow:
        t = now_ms()
        with self._tx() as db:
            if db.execute(f"SELECT 1 FROM {self.table} WHERE name=?", (name,)).fetchone():
                raise StoreError(f"{self.noun} {name} already exists")
            db.execute(f"INSERT INTO {self.table} (name, config, target, created_ms, updated_ms, "
                       "worker_state) VALUES (?,?,?,?,?,?)",
                       (name, orjson.dumps(dict(config)).decode(), target.value, t, t,
                        Reported.UNASSIGNED.value))
        return self.get(name)

    def update_config(self, name: str, config: Mapping[str, str]) -> ConnectorRow:
        with self._tx() as db:
            if db.execute(f"UPDATE {self.table} SET config=?, updated_ms=? WHERE name=?",
                          (orjson.dumps(dict(config)).decode(), now_ms(), name)).rowcount == 0:
                raise StoreError(f"{self.noun} {name} not found")
        return self.get(name)

    def set_target(self, name: str, target: Target) -> None:
        with self._tx() as db:
            if db.execute(f"UPDATE {self.table} SET target=?, updated_ms=? WHERE name=?",
                          (target.value, now_ms(), name)).rowcount == 0:
                raise StoreError(f"{self.noun} {name} not found")

    def delete(self, name: str) -> None:
        with self._tx() as db:
            if db.execute(f"DELETE FROM {self.table} WHERE name=?", (name,)).rowcount == 0:
                raise StoreError(f"{self.noun} {name} not found")

    def get(self, name: str) -> ConnectorRow:
        with self._lock:
            row = self._db.execute(f"SELECT * FROM {self.table} WHERE name=?", (name,)).fetchone()
        if row is None:
            raise StoreError(f"{self.noun} {name} not found")
        return _row(row)

    def all(self) -> list[ConnectorRow]:
        with self._lock:
            rows = self._db.execute(f"SELECT * FROM {self.table} ORDER BY name").fetchall()
        return [_row(r) for r in rows]

    # -- what the worker reports -------------------------------------------------------------
    def report(self, name: str, state: Reported, *, trace: str | None = None,
               pid: int | None = None, status: Mapping[str, Any] | None = None) -> None:
        """Record the worker's state; `trace` is kept only with FAILED (cleared otherwise)."""
        with self._tx() as db:
            db.execute(f"UPDATE {self.table} SET worker_state=?, trace=?, pid=COALESCE(?, pid), "
                       "heartbeat_ms=?, status=COALESCE(?, status) WHERE name=?",
                       (state.value, trace if state is Reported.FAILED else None, pid,
                        now_ms(), None if status is None else orjson.dumps(status).decode(),
                        name))

    def clear_pid(self, name: str) -> None:
        with self._tx() as db:
            db.execute(f"UPDATE {self.table} SET pid=NULL WHERE name=?", (name,))


def pipeline_store(root: Path) -> ConnectorStore:
    """The service's pipelines: rows like a connector's (config, target, reported state,
    trace, the worker's last status document) in their own table."""
    return ConnectorStore(root, "pipelines", "Pipeline")


def _row(r: tuple[Any, ...]) -> ConnectorRow:
    return ConnectorRow(r[0], {str(k): str(v) for k, v in orjson.loads(r[1]).items()},
                        Target(r[2]), r[3], r[4], Reported(r[5]), r[6], r[7], r[8],
                        orjson.loads(r[9]) if r[9] else None)
