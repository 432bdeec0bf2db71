"""End to end on the SQL Server EMULATION (not a live server): a random workload, the capture
(`headwater run`, a subprocess) killed with SIGKILL and restarted, then the Spark pipeline
(`headwater pipeline --once`, SCD1 into Delta): the Delta table equals the emulated source
table row by row, in the types the pipeline gives SQL Server's columns.

The pipeline orders the events by the order SQL Server's connector registers for
`source.connector=sqlserver` (connectors/sqlserver/ordering.py): commit LSN, snapshot before
stream, change LSN, event serial number.  The short form (2 kills) runs in CI; more kills are
`slow`.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.registry import event_order
from headwater.connectors.sqlserver.ordering import SQLSERVER_ORDER
from headwater.testing.localpg import wait_for
from headwater.testing.replay import events
from tests.conformance.driver import properties_text
from tests.sqlserver.conftest import enable_cdc, tsql

pytestmark = pytest.mark.integration

TABLE = ("CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, ver BIGINT NOT NULL, "
         "name NVARCHAR(40) NULL, amount DECIMAL(10,2) NULL, placed DATETIME2(3) NULL, "
         "paid BIT NULL)")
INITIAL = 400
SENTINEL = 10**6
EPOCH = datetime(2020, 1, 1)


def _row(rng: random.Random, key: int, ver: int) -> tuple[Any, ...]:
    name = rng.choice([None, "ann", "bö", f"k{key}", "😀"])
    amount = None if rng.random() < 0.1 else Decimal(rng.randint(-10**6, 10**6)) / 100
    placed = EPOCH + timedelta(milliseconds=rng.randint(0, 10**10))
    return key, ver, name, amount, placed, rng.random() < 0.5


class Workload(threading.Thread):
    """Transactions of 1-6 inserts, updates and deletes (a deleted key never comes back)."""

    def __init__(self, db: dict[str, Any], seed: int) -> None:
        super().__init__(daemon=True)
        self.db, self.rng = db, random.Random(seed)
        self.live, self.next_key, self.ver = set(range(1, INITIAL + 1)), INITIAL + 1, 0
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        import psycopg2

        try:
            conn = psycopg2.connect(host=self.db["server"], port=self.db["port"],
                                    user=self.db["user"], dbname=self.db["database"])
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
            cur.execute("INSERT INTO dbo.orders VALUES (%s, %s, %s, %s, %s, %s)",
                        _row(self.rng, key, self.ver))
            self.live.add(key)
        elif r < 0.85:
            key = self.rng.choice(tuple(self.live))
            _, ver, name, amount, placed, paid = _row(self.rng, key, self.ver)
            cur.execute("UPDATE dbo.orders SET ver = %s, name = %s, amount = %s, placed = %s, "
                        "paid = %s WHERE id = %s", (ver, name, amount, placed, paid, key))
        else:
            key = self.rng.choice(tuple(self.live))
            cur.execute("DELETE FROM dbo.orders WHERE id = %s", (key,))
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


def _source(db: dict[str, Any]) -> dict[int, dict[str, Any]]:
    import psycopg2

    conn = psycopg2.connect(host=db["server"], port=db["port"], user=db["user"],
                            dbname=db["database"])
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT id, ver, name, amount, placed, paid FROM dbo.orders")
            names = [d[0] for d in cur.description or ()]
            return {r[0]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}
    finally:
        conn.close()


def _target_value(value: Any) -> Any:
    """A Delta value as the source holds it: timestamps are UTC instants of naive times."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def test_pipeline_registers_sqlserver_ordering() -> None:
    assert event_order("sqlserver") is SQLSERVER_ORDER


@pytest.mark.parametrize("kills", [2, pytest.param(6, marks=pytest.mark.slow)],
                         ids=["2-kills", "6-kills"])
def test_kill9_capture_then_pipeline_equals_the_source_table(
        sqlserver_db: dict[str, Any], tmp_path: Path, kills: int) -> None:
    db = sqlserver_db
    rng = random.Random(kills)
    tsql(db, TABLE)
    seeding = random.Random(0)
    values = ", ".join(f"({k}, 0, 'seed', {_row(seeding, k, 0)[3] or 'NULL'}, "
                       "'2021-02-03 04:05:06.789', '1')" for k in range(1, INITIAL + 1))
    tsql(db, f"INSERT INTO dbo.orders VALUES {values}")
    enable_cdc(db, "dbo", "orders")
    topics, offsets, delta = tmp_path / "topics", tmp_path / "offsets.json", tmp_path / "delta"
    config = tmp_path / "connector.properties"
    config.write_text(properties_text({
        "name": "sqlserver-e2e", "connector.class": "sqlserver",
        "database.hostname": db["server"], "database.port": str(db["port"]),
        "database.user": db["user"], "database.names": db["database"],
        "database.encrypt": "false",
        "headwater.sqlserver.driver": "headwater.testing.sqlserver_emulation.dbapi",
        "topic.prefix": "ss", "offset.storage.file.filename": str(offsets),
        "headwater.topics.dir": str(topics), "headwater.topics.segment.ms": "200",
        "poll.interval.ms": "100", "max.batch.size": "64", "snapshot.fetch.size": "100",
        "headwater.pipeline.delta.path": str(delta),
        "headwater.pipeline.checkpoint.dir": str(tmp_path / "checkpoint"),
    }))
    log = tmp_path / "capture.log"
    workload = Workload(db, seed=kills)
    proc = _start(config, log)
    try:
        wait_for(lambda: offsets.exists() and json.loads(offsets.read_text() or "{}"), 60,
                 what="the snapshot's offsets")
        workload.start()
        for _ in range(kills):
            time.sleep(rng.uniform(0.5, 2.0))
            assert proc.poll() is None, log.read_text()[-3000:]
            _kill(proc)
            proc = _start(config, log)
        time.sleep(1.0)
        workload.stop.set()
        workload.join(30)
        assert workload.error is None, repr(workload.error)
        tsql(db, f"INSERT INTO dbo.orders (id, ver) VALUES ({SENTINEL}, 0)")
        topic = "ss.dbo.orders"
        wait_for(lambda: any(k is not None and k["id"] == SENTINEL
                             for _, k, _v in events(topics, topic)), 60,
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

    rows = read_table(delta / "dbo" / "orders").to_pylist()
    target = {r["id"]: {k: _target_value(r[k]) for k in ("id", "ver", "name", "amount",
                                                          "placed", "paid")} for r in rows}
    source = _source(db)
    assert len(target) == len(rows), "duplicate keys in the target"
    differ = sorted(k for k in set(source) | set(target) if source.get(k) != target.get(k))
    assert not differ, [(k, source.get(k), target.get(k)) for k in differ[:5]]
    assert workload.transactions > 50
