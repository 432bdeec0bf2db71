"""Incremental snapshots on a real MariaDB, under a concurrent write load.

The capture starts with snapshot.mode=no_data, so the only way a row that no transaction
touches reaches the topic is an incremental snapshot READ: replaying the topic must still give
the source table exactly, whatever the load did to the rows while their chunks were read.  The
read-only variant must get there without writing a single watermark row.
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

from .conftest import MariaEnv, wait_for

pytestmark = [pytest.mark.integration]


def signal_table(env: MariaEnv) -> str:
    return f"{env.db}.debezium_signal"


def setup_tables(env: MariaEnv, rows: int) -> None:
    env.sql("CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) "
            "NOT NULL, data text)")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver bigint NOT NULL, pad varchar(64))")
    with env.conn.cursor() as cur:
        for start in range(1, rows + 1, 2000):
            cur.executemany("INSERT INTO t VALUES (%s, 0, REPEAT('p', 50))",
                            [(i,) for i in range(start, min(start + 2000, rows + 1))])


def send(env: MariaEnv, signal_id: str, kind: str, data: dict[str, Any] | None = None) -> None:
    env.sql("INSERT INTO debezium_signal VALUES (%s, %s, %s)",
            (signal_id, kind, json.dumps(data) if data is not None else None))


def offset(env: MariaEnv) -> dict[str, Any]:
    try:
        doc = json.loads(env.offsets.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return dict(doc.get("offset") or {})


def primary_key(env: MariaEnv) -> int:
    return int((offset(env).get("incremental_snapshot_primary_key") or [0])[0])


def incremental_reads(env: MariaEnv, table: str = "t") -> list[int]:
    return [key["id"] for _, key, value in events(env.topics, env.topic(table))
            if value is not None and value["op"] == "r"
            and value["source"]["snapshot"] == "incremental"]


def source_table(env: MariaEnv) -> dict[int, int]:
    return {r[0]: r[1] for r in env.sql("SELECT id, ver FROM t")}


def replayed(env: MariaEnv) -> dict[int, int]:
    return {dict(k)["id"]: row["ver"] for k, row in replay(env.topics, env.topic("t")).items()}


class Load(threading.Thread):
    """Small transactions of updates, deletes and inserts over the whole key range."""

    def __init__(self, env: MariaEnv, keys: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.env, self.keys, self.rng = env, keys, random.Random(seed)
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            conn = self.env.server.connect(self.env.db, autocommit=False)
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
                        cur.execute("INSERT INTO t VALUES (%s, %s, 'new') "
                                    "ON DUPLICATE KEY UPDATE ver = VALUES(ver)", (key, ver))
                conn.commit()
                self.transactions += 1
                time.sleep(0.001)
            conn.close()
        except BaseException as exc:
            self.error = exc


def converge(env: MariaEnv, timeout: float = 60) -> None:
    """Waits for the replayed topic to equal the source; on failure says how they differ."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        got, want = replayed(env), source_table(env)
        if got == want:
            return
        if time.monotonic() > deadline:
            bad = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            history = {k: [(v["op"], v["source"]["snapshot"], (v["after"] or {}).get("ver"))
                           for _, key, v in events(env.topics, env.topic("t"))
                           if v is not None and key["id"] == k] for k in bad[:5]}
            raise AssertionError(
                f"{len(bad)} keys differ, e.g. {[(k, got.get(k), want.get(k)) for k in bad[:5]]}"
                f"; their events: {history}")
        time.sleep(1.0)


def snapshot_done(env: MariaEnv) -> bool:
    off = offset(env)
    return bool(off) and not off.get("incremental_snapshot_collections") and bool(
        incremental_reads(env))


@pytest.mark.parametrize("variant", [
    {"incremental.snapshot.watermarking.strategy": "insert_insert"},
    {"incremental.snapshot.watermarking.strategy": "insert_delete"},
    {"read.only": "true"},
], ids=["insert_insert", "insert_delete", "read_only"])
def test_incremental_snapshot_under_load_replays_to_the_source(
    menv: MariaEnv, variant: dict[str, str]
) -> None:
    rows = 6000
    setup_tables(menv, rows)
    capture = menv.capture({
        "snapshot.mode": "no_data", "signal.data.collection": signal_table(menv),
        "incremental.snapshot.chunk.size": 250, **variant,
    })
    load = Load(menv, rows, seed=3)
    try:
        wait_for(lambda: "file" in offset(menv), timeout=60, what="streaming started")
        load.start()
        time.sleep(0.5)
        send(menv, "ad-hoc-1", "execute-snapshot",
             {"data-collections": [f"{menv.db}.t"], "type": "incremental"})

        def done() -> bool:
            assert capture.error is None, capture.error
            return snapshot_done(menv)

        wait_for(done, timeout=240, interval=0.5, what="incremental snapshot completed")
        during = load.transactions
        assert during > 0, "no write overlapped the snapshot"
        # The load goes on after the last chunk, too, to a workload that is not trivial however
        # slowly a loaded machine runs it (a fixed time gave 89 transactions on PostgreSQL).
        wait_for(lambda: load.error is not None or load.transactions > max(100, during + 20),
                 timeout=120, what="writes after the snapshot")
        load.stop.set()
        load.join(30)
        assert load.error is None, load.error
        converge(menv)
    finally:
        load.stop.set()
        capture.stop()
    reads = incremental_reads(menv)
    # Every chunk was read, in key order, and rows the load changed meanwhile were dropped.
    assert reads == sorted(reads)
    assert rows // 2 < len(reads) <= rows + rows // 10
    reads_values = [v for _, _, v in events(menv.topics, menv.topic("t"))
                    if v is not None and v["op"] == "r"]
    # The load's versions only grow, so per key the topic's row images must never go back:
    # a READ emitted before a change it already shows, or after one it missed, would.
    last_ver: dict[int, int] = {}
    for _, key, v in events(menv.topics, menv.topic("t")):
        if v is not None and v["after"] is not None:
            assert v["after"]["ver"] >= last_ver.get(key["id"], 0), (key, v)
            last_ver[key["id"]] = v["after"]["ver"]
    assert {v["source"]["snapshot"] for v in reads_values} == {"incremental"}
    watermarks = menv.sql("SELECT count(*) FROM debezium_signal WHERE type <> "
                          "'execute-snapshot'")[0][0]
    if "read.only" in variant:
        assert menv.sql("SELECT id FROM debezium_signal") == [("ad-hoc-1",)]  # only ours
    elif variant["incremental.snapshot.watermarking.strategy"] == "insert_delete":
        assert watermarks == 0
    else:
        # an open and a close row per chunk; the load deletes rows, so count chunks by reads
        assert watermarks >= 2 * (len(reads) // 250)
        assert watermarks % 2 == 0


def test_composite_key_and_filter_under_updates(menv: MariaEnv) -> None:
    """A two-column key is paged lexicographically; the filter limits the rows read."""
    setup_tables(menv, 0)
    menv.sql("CREATE TABLE c (a int, b varchar(10), n int NOT NULL, PRIMARY KEY (a, b))")
    with menv.conn.cursor() as cur:
        cur.executemany("INSERT INTO c VALUES (%s, %s, %s)",
                        [(a, b, a * 10) for a in range(1, 41) for b in ("x", "y", "z")])
    capture = menv.capture({"snapshot.mode": "no_data",
                            "signal.data.collection": signal_table(menv),
                            "incremental.snapshot.chunk.size": 7})
    try:
        wait_for(lambda: "file" in offset(menv), timeout=60, what="streaming started")
        send(menv, "cmp", "execute-snapshot", {
            "data-collections": [f"{menv.db}.c"],
            "additional-conditions": [{"data-collection": f"{menv.db}.c",
                                       "filter": "b <> 'y'"}]})
        menv.sql("UPDATE c SET n = n + 1 WHERE a = 20")
        wait_for(lambda: not offset(menv).get("incremental_snapshot_collections") and len(
            [v for _, _, v in events(menv.topics, menv.topic("c"))
             if v is not None and v["op"] == "r"]) > 0, timeout=60, what="snapshot done")
    finally:
        capture.stop()
    reads = [(v["after"]["a"], v["after"]["b"]) for _, _, v in events(menv.topics, menv.topic("c"))
             if v is not None and v["op"] == "r"]
    assert reads == sorted(reads)
    assert len(reads) == len(set(reads))
    # RowsScanned: the rows the filtered chunks read, whether or not the window kept them
    assert capture.runtime.metrics.as_dict()["RowsScanned"] == {f"{menv.db}.c": 80}
    expected = {(a, b) for a in range(1, 41) for b in ("x", "z")}
    assert set(reads) <= expected
    # Only a row the concurrent update touched inside its chunk's window may be missing.
    assert expected - set(reads) <= {(20, "x"), (20, "z")}
    table = {(dict(k)["a"], dict(k)["b"]): row["n"]
             for k, row in replay(menv.topics, menv.topic("c")).items()}
    assert {k: v for k, v in table.items() if k[1] != "y"} == {
        (a, b): a * 10 + (a == 20) for a, b in expected}


def _start(config: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def test_kill_minus_nine_resumes_from_the_last_chunk(menv: MariaEnv) -> None:
    rows = 20000
    setup_tables(menv, rows)
    config = menv.config({
        "snapshot.mode": "no_data", "signal.data.collection": signal_table(menv),
        "incremental.snapshot.chunk.size": 100,
    })
    proc = _start(config)
    try:
        wait_for(lambda: "file" in offset(menv), timeout=60, what="streaming started")
        send(menv, "ad-hoc-crash", "execute-snapshot", {"data-collections": [f"{menv.db}.t"]})
        wait_for(lambda: primary_key(menv) > 2000, timeout=120, interval=0.05,
                 what="some chunks durable")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    resume_key = primary_key(menv)
    assert resume_key < rows, "the snapshot finished before the kill"
    before = len(incremental_reads(menv))
    menv.sql("UPDATE t SET ver = 1 WHERE id IN (1, %s)", (rows,))  # a change after the crash
    proc = _start(config)
    try:
        wait_for(lambda: snapshot_done(menv) and replayed(menv) == source_table(menv),
                 timeout=240, interval=1.0, what="snapshot completed after restart")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
    second_run = incremental_reads(menv)[before:]
    # Resumed at the last durable chunk: nothing at or below the stored key is read again.
    assert second_run and min(second_run) == resume_key + 1
    assert len(second_run) == rows - resume_key
    assert set(incremental_reads(menv)) == set(range(1, rows + 1))
