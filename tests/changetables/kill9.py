"""The kill -9 -> Delta scenario the SQL Server and Db2 pipeline tests share, on their
EMULATIONS: a random workload on an `orders` table, the capture (`headwater run`, a subprocess)
killed with SIGKILL and restarted while it writes, a sentinel row to know the capture caught
up, then the Spark pipeline (`headwater pipeline --once`, SCD1 into Delta): the Delta table
must equal the emulated source table row by row.

Each connector's test supplies an `Orders` (its table's DDL, the statements that change it
through PostgreSQL, the Delta table's path) and the connector properties.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from headwater.testing.localpg import wait_for
from headwater.testing.replay import events
from headwater.testing.stored_offsets import snapshot_completed
from tests.conformance.driver import properties_text

INITIAL = 400
SENTINEL = 10**6
EPOCH = datetime(2020, 1, 1)
COLUMNS = ("id", "ver", "name", "amount", "placed", "paid")


@dataclass(frozen=True)
class Orders:
    """One server's orders table: `columns` are its names of COLUMNS (as PostgreSQL, the
    events and Delta spell them), `table` its PostgreSQL name (quoted where needed), `topic`
    and `delta` (a path under the pipeline's Delta root) where its events and rows go."""

    dsn: dict[str, Any]  # psycopg2.connect keyword arguments of the emulated database
    table: str
    columns: tuple[str, ...]
    topic: str
    delta: tuple[str, ...]

    def quoted(self) -> list[str]:
        return ['"' + c + '"' for c in self.columns]

    def insert(self) -> str:
        return f"INSERT INTO {self.table} VALUES (%s, %s, %s, %s, %s, %s)"

    def update(self) -> str:
        _id, ver, name, amount, placed, paid = self.quoted()
        return (f"UPDATE {self.table} SET {ver} = %s, {name} = %s, {amount} = %s, "
                f"{placed} = %s, {paid} = %s WHERE {_id} = %s")

    def delete(self) -> str:
        return f"DELETE FROM {self.table} WHERE {self.quoted()[0]} = %s"

    def connect(self) -> Any:
        import psycopg2

        return psycopg2.connect(**self.dsn)

    def source(self) -> dict[int, tuple[Any, ...]]:
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"SELECT {', '.join(self.quoted())} FROM {self.table}")
                return {r[0]: tuple(r) for r in cur.fetchall()}
        finally:
            conn.close()


def row(rng: random.Random, key: int, ver: int) -> tuple[Any, ...]:
    name = rng.choice([None, "ann", "bö", f"k{key}", "😀"])
    amount = None if rng.random() < 0.1 else Decimal(rng.randint(-10**6, 10**6)) / 100
    placed = EPOCH + timedelta(milliseconds=rng.randint(0, 10**10))
    return key, ver, name, amount, placed, rng.random() < 0.5


def seed(orders: Orders) -> None:
    """Keys 1..INITIAL at version 0."""
    rng = random.Random(0)
    conn = orders.connect()
    try:
        with conn, conn.cursor() as cur:
            for key in range(1, INITIAL + 1):
                cur.execute(orders.insert(), (key, 0, "seed", row(rng, key, 0)[3],
                                              datetime(2021, 2, 3, 4, 5, 6, 789000), True))
    finally:
        conn.close()


class Workload(threading.Thread):
    """Transactions of 1-6 inserts, updates and deletes (a deleted key never comes back)."""

    def __init__(self, orders: Orders, seed: int) -> None:
        super().__init__(daemon=True)
        self.orders, self.rng = orders, random.Random(seed)
        self.live, self.next_key, self.ver = set(range(1, INITIAL + 1)), INITIAL + 1, 0
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = self.orders.connect()
            with conn, conn.cursor() as cur:
                while not self.stop.is_set():
                    for _ in range(self.rng.randint(1, 6)):
                        self._change(cur)
                    conn.commit()
                    self.transactions += 1
                    time.sleep(0.003)
            conn.close()
        except BaseException as exc:
            self.error = exc

    def _change(self, cur: Any) -> None:
        self.ver += 1
        r = self.rng.random()
        if r < 0.3 or not self.live:
            key, self.next_key = self.next_key, self.next_key + 1
            cur.execute(self.orders.insert(), row(self.rng, key, self.ver))
            self.live.add(key)
        elif r < 0.85:
            key = self.rng.choice(tuple(self.live))
            _, ver, name, amount, placed, paid = row(self.rng, key, self.ver)
            cur.execute(self.orders.update(), (ver, name, amount, placed, paid, key))
        else:
            key = self.rng.choice(tuple(self.live))
            cur.execute(self.orders.delete(), (key,))
            self.live.discard(key)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "headwater.cli", *args]


def _start(config: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(_cli("run", str(config), "--log-level", "WARNING"),
                            stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True, env=dict(os.environ))


def _kill(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
    proc.wait(timeout=60)


def _target_value(value: Any) -> Any:
    """A Delta value as the source holds it: timestamps are UTC instants of naive times."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def kill9_then_pipeline(orders: Orders, connector: dict[str, str], tmp: Path,
                        kills: int) -> int:
    """The scenario (module docstring) with `kills` SIGKILLs; `connector`: the connector's
    own properties.  Returns how many transactions the workload committed."""
    rng = random.Random(kills)
    topics, offsets, delta = tmp / "topics", tmp / "offsets.json", tmp / "delta"
    config = tmp / "connector.properties"
    config.write_text(properties_text({
        **connector,
        "offset.storage.file.filename": str(offsets), "headwater.topics.dir": str(topics),
        "headwater.topics.segment.ms": "200", "poll.interval.ms": "100",
        "max.batch.size": "64", "snapshot.fetch.size": "100",
        "headwater.pipeline.delta.path": str(delta),
        "headwater.pipeline.checkpoint.dir": str(tmp / "checkpoint"),
    }))
    log = tmp / "capture.log"
    workload = Workload(orders, seed=kills)
    proc = _start(config, log)
    try:
        wait_for(lambda: snapshot_completed(offsets), 60, what="the snapshot completed")
        workload.start()
        for _ in range(kills):
            time.sleep(rng.uniform(0.5, 2.0))
            assert proc.poll() is None, log.read_text()[-3000:]
            _kill(proc)
            proc = _start(config, log)
        # the callers assert a non-trivial workload: wait for it, not for a fixed time that a
        # loaded machine fills with fewer transactions
        wait_for(lambda: workload.error is not None or workload.transactions > 60, 120,
                 what="the workload's transactions")
        workload.stop.set()
        workload.join(30)
        assert workload.error is None, repr(workload.error)
        conn = orders.connect()
        with conn, conn.cursor() as cur:
            cur.execute(f"INSERT INTO {orders.table} ({orders.quoted()[0]}, "
                        f"{orders.quoted()[1]}) VALUES (%s, 0)", (SENTINEL,))
        conn.close()
        key = orders.columns[0]
        wait_for(lambda: any(k is not None and k[key] == SENTINEL
                             for _, k, _v in events(topics, orders.topic)), 60,
                 what="the capture to catch up")
        _kill(proc, signal.SIGTERM)
        assert proc.returncode == 0, log.read_text()[-3000:]
    finally:
        workload.stop.set()
        _kill(proc)
    out = subprocess.run(_cli("pipeline", str(config), "--once", "--log-level", "WARNING"),
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    from headwater.pipeline.delta_target import read_table

    rows = read_table(delta.joinpath(*orders.delta)).to_pylist()
    target = {r[key]: tuple(_target_value(r[c]) for c in orders.columns) for r in rows}
    source = orders.source()
    assert len(target) == len(rows), "duplicate keys in the target"
    differ = sorted(k for k in set(source) | set(target) if source.get(k) != target.get(k))
    assert not differ, [(k, source.get(k), target.get(k)) for k in differ[:5]]
    return workload.transactions
