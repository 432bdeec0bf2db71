"""Incremental snapshots on a real PostgreSQL, under a concurrent write load.

The capture starts with snapshot.mode=no_data, so the only way a row that no transaction
touches reaches the topic is an incremental snapshot READ: replaying the topic must still give
the source table exactly, whatever the load did to the rows while their chunks were read.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.replay import events, replay
from headwater.testing.timeouts import scaled

from .conftest import Env, wait_for

pytestmark = [pytest.mark.integration]

SIGNALS = "public.debezium_signal"


def setup_tables(env: Env, rows: int) -> None:
    env.sql("CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) "
            "NOT NULL, data text)")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver bigint NOT NULL, pad text)")
    env.sql("INSERT INTO t SELECT g, 0, repeat('p', 50) FROM generate_series(1, %s) g", (rows,))


def send(env: Env, signal_id: str, kind: str, data: dict[str, Any] | None = None) -> None:
    env.sql("INSERT INTO debezium_signal VALUES (%s, %s, %s)",
            (signal_id, kind, json.dumps(data) if data is not None else None))


def offset(env: Env) -> dict[str, Any]:
    try:
        doc = json.loads(env.offsets.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return dict(doc.get("offset") or {})


def incremental_reads(env: Env, table: str = "t") -> list[int]:
    return [key["id"] for _, key, value in events(env.topics, f"{env.prefix}.public.{table}")
            if value is not None and value["op"] == "r"
            and value["source"]["snapshot"] == "incremental"]


def source_table(env: Env) -> dict[int, int]:
    return {r[0]: r[1] for r in env.sql("SELECT id, ver FROM t")}


def replayed(env: Env) -> dict[int, int]:
    table = replay(env.topics, f"{env.prefix}.public.t")
    return {k[0][1]: row["ver"] for k, row in table.items()}


class Load(threading.Thread):
    """Small transactions of updates, deletes and inserts over the whole key range."""

    def __init__(self, env: Env, keys: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.env, self.keys, self.rng = env, keys, random.Random(seed)
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = self.env.pg.connect(self.env.db, autocommit=False)
            cur = conn.cursor()
            ver = 0
            while not self.stop.is_set():
                for _ in range(self.rng.randint(1, 10)):
                    ver += 1
                    key = self.rng.randint(1, self.keys + self.keys // 10)
                    r = self.rng.random()
                    if r < 0.6:
                        cur.execute("UPDATE t SET ver = %s WHERE id = %s", (ver, key))
                    elif r < 0.85:
                        cur.execute("DELETE FROM t WHERE id = %s", (key,))
                    else:
                        cur.execute("INSERT INTO t VALUES (%s, %s, 'new') ON CONFLICT (id) "
                                    "DO UPDATE SET ver = EXCLUDED.ver", (key, ver))
                conn.commit()
                self.transactions += 1
                time.sleep(0.001)
            conn.close()
        except BaseException as exc:
            self.error = exc


def converge(env: Env, timeout: float = 60) -> None:
    """Waits for the replayed topic to equal the source; on failure says how they differ."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        got, want = replayed(env), source_table(env)
        if got == want:
            return
        if time.monotonic() > deadline:
            bad = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            history = {k: [(v["op"], v["source"]["snapshot"], (v["after"] or {}).get("ver"))
                           for _, key, v in events(env.topics, f"{env.prefix}.public.t")
                           if v is not None and key["id"] == k] for k in bad[:5]}
            raise AssertionError(
                f"{len(bad)} keys differ, e.g. {[(k, got.get(k), want.get(k)) for k in bad[:5]]}"
                f"; their events: {history}")
        time.sleep(1.0)


def snapshot_done(env: Env) -> bool:
    off = offset(env)
    return bool(off) and not off.get("incremental_snapshot_collections") and bool(
        incremental_reads(env))


@pytest.mark.parametrize("variant", [
    {"incremental.snapshot.watermarking.strategy": "insert_insert"},
    {"incremental.snapshot.watermarking.strategy": "insert_delete"},
    {"read.only": "true"},
], ids=["insert_insert", "insert_delete", "read_only"])
def test_incremental_snapshot_under_load_replays_to_the_source(
    env: Env, variant: dict[str, str]
) -> None:
    rows = 6000
    setup_tables(env, rows)
    capture = env.capture({
        "snapshot.mode": "no_data", "signal.data.collection": SIGNALS,
        "incremental.snapshot.chunk.size": 250, **variant,
    })
    load = Load(env, rows, seed=3)
    try:
        wait_for(lambda: "lsn" in offset(env) or capture.runtime.metrics.connected,
                 timeout=60, what="streaming started")
        load.start()
        time.sleep(0.5)
        send(env, "ad-hoc-1", "execute-snapshot",
             {"data-collections": ["public.t"], "type": "incremental"})
        def done() -> bool:
            assert capture.error is None, capture.error
            return snapshot_done(env)

        wait_for(done, timeout=240, interval=0.5, what="incremental snapshot completed")
        during = load.transactions
        assert during > 0, "no write overlapped the snapshot"
        # The load goes on after the last chunk, too, to a workload that is not trivial however
        # slowly a loaded machine runs it (a fixed time once gave 89 transactions, not 100).
        wait_for(lambda: load.error is not None or load.transactions > max(100, during + 20),
                 timeout=120, what="writes after the snapshot")
        load.stop.set()
        load.join(30)
        assert load.error is None, load.error
        converge(env)
    finally:
        load.stop.set()
        capture.stop()
    reads = incremental_reads(env)
    # Every chunk was read, in key order, and rows the load changed meanwhile were dropped.
    assert reads == sorted(reads)
    assert rows // 2 < len(reads) <= rows + rows // 10
    # RowsScanned counts the rows the chunks read, dropped ones included (a chunk read again
    # because it missed a transaction counts once)
    scanned = capture.runtime.metrics.as_dict()["RowsScanned"]
    assert isinstance(scanned, dict)
    assert len(reads) <= scanned["public.t"] <= rows + rows // 10
    if "read.only" in variant:
        assert env.sql("SELECT count(*) FROM debezium_signal")[0][0] == 1  # only ours
    elif variant["incremental.snapshot.watermarking.strategy"] == "insert_delete":
        assert env.sql("SELECT count(*) FROM debezium_signal WHERE type <> "
                       "'execute-snapshot'")[0][0] == 0


def _start(config: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def test_kill_minus_nine_resumes_from_the_last_chunk(env: Env) -> None:
    rows = 20000
    setup_tables(env, rows)
    config = env.config({
        "snapshot.mode": "no_data", "signal.data.collection": SIGNALS,
        "incremental.snapshot.chunk.size": 100, "slot.retry.delay.ms": 300,
        "slot.max.retries": 30,
    })
    proc = _start(config)
    try:
        wait_for(lambda: env.sql("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                                 (env.slot,)) == [(True,)], timeout=60, what="streaming started")
        send(env, "ad-hoc-crash", "execute-snapshot", {"data-collections": ["public.t"]})
        wait_for(lambda: int((offset(env).get("incremental_snapshot_primary_key") or ["0"])[0])
                 > 2000, timeout=120, interval=0.05, what="some chunks durable")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stored = offset(env)
    resume_key = int(stored["incremental_snapshot_primary_key"][0])
    assert resume_key < rows, "the snapshot finished before the kill"
    before = len(incremental_reads(env))
    env.sql("UPDATE t SET ver = 1 WHERE id IN (1, %s)", (rows,))  # a change after the crash
    proc = _start(config)
    try:
        wait_for(lambda: snapshot_done(env) and replayed(env) == source_table(env),
                 timeout=240, interval=1.0, what="snapshot completed after restart")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
    second_run = incremental_reads(env)[before:]
    # Resumed at the last durable chunk: nothing at or below the stored key is read again.
    assert second_run and min(second_run) == resume_key + 1
    assert len(second_run) == rows - resume_key
    assert set(incremental_reads(env)) == set(range(1, rows + 1))
