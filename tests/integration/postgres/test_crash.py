"""kill -9 the capture process under a continuous write load, again and again.

Checks, after a final clean run has caught up:
- no loss: every change of every transaction that committed after the final snapshot's
  consistent point is in the topic (by txId, key and version);
- order: per key, streamed events (duplicates from re-delivery removed) carry strictly
  increasing versions, and snapshot reads come before them;
- replaying the topic rebuilds the source table exactly;
- the slot never confirmed more than the topic log held: after each kill, every transaction
  that surely ended before the slot's confirmed_flush_lsn is in the topic.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from headwater.testing.replay import events, replay

from .conftest import Env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


class Load(threading.Thread):
    """Transactions of 1-20 inserts/updates/deletes; every row carries a global version."""

    def __init__(self, env: Env, seed: int) -> None:
        super().__init__(daemon=True)
        self.env = env
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        # (txid, lsn before commit, lsn after commit, [(key, op, version)])
        self.committed: list[tuple[int, int, int, list[tuple[int, str, int]]]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self) -> None:
        conn = self.env.pg.connect(self.env.db, autocommit=False)
        cur = conn.cursor()
        live = set(range(1, 2001))
        next_key = 2001
        while not self.stop.is_set():
            cur.execute("SELECT txid_current()")
            txid = int(cur.fetchone()[0])
            changes: list[tuple[int, str, int]] = []
            for _ in range(self.rng.randint(1, 20)):
                cur.execute("SELECT nextval('ver')")
                ver = int(cur.fetchone()[0])
                r = self.rng.random()
                if r < 0.3 or not live:
                    key = next_key
                    next_key += 1
                    cur.execute("INSERT INTO t VALUES (%s, %s, 'x')", (key, ver))
                    live.add(key)
                    changes.append((key, "c", ver))
                elif r < 0.85:
                    key = self.rng.choice(tuple(live))
                    cur.execute("UPDATE t SET ver = %s WHERE id = %s", (ver, key))
                    changes.append((key, "u", ver))
                else:
                    key = self.rng.choice(tuple(live))
                    cur.execute("DELETE FROM t WHERE id = %s", (key,))
                    live.discard(key)
                    changes.append((key, "d", ver))
            cur.execute("SELECT pg_current_wal_lsn()::text")
            before = _lsn(cur.fetchone()[0])
            conn.commit()
            cur.execute("SELECT pg_current_wal_insert_lsn()::text")
            after = _lsn(cur.fetchone()[0])
            conn.commit()
            self.committed.append((txid, before, after, changes))
            time.sleep(0.002)
        conn.close()


def _start(config: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def _topic_txids(env: Env) -> dict[int, set[tuple[int, str, int | None]]]:
    out: dict[int, set[tuple[int, str, int | None]]] = {}
    for _, key, value in events(env.topics, f"{env.prefix}.public.t"):
        if value is None or value["op"] == "r":
            continue
        row = value["after"] if value["op"] != "d" else value["before"]
        out.setdefault(value["source"]["txId"], set()).add(
            (key["id"], value["op"], row["ver"] if value["op"] != "d" else None))
    return out


def test_kill_minus_nine_under_load_loses_nothing(env: Env) -> None:
    env.sql("CREATE SEQUENCE ver")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver bigint NOT NULL, pad text)")
    env.sql("ALTER TABLE t REPLICA IDENTITY FULL")  # deletes carry the version too
    env.sql("INSERT INTO t SELECT g, nextval('ver'), repeat('p', 100) "
            "FROM generate_series(1, 2000) g")
    config = env.config({"max.batch.size": 256, "max.queue.size": 1024,
                         "slot.retry.delay.ms": 300, "slot.max.retries": 30})
    load = Load(env, seed=7)
    load.start()
    rng = random.Random(11)
    kills = 0
    try:
        for i in range(6):
            proc = _start(config)
            if i == 0:
                # The kills are for the stream: let the first run finish its snapshot (and store
                # its offset) however slow the start is on a busy machine, or every kill lands
                # in a snapshot and the last run snapshots again after all of the load.
                wait_for(lambda: env.offsets.exists() and _last_snapshot_lsn(env) is not None,
                         timeout=120, interval=0.1, what="the first run's snapshot")
            time.sleep(rng.uniform(0.3, 2.5))
            if proc.poll() is not None:
                raise AssertionError(f"capture exited early: {_stderr_tail(proc)}")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
            # The slot never confirmed a position whose events are not in the topic log.
            rows = env.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                           "WHERE slot_name = %s", (env.slot,))
            if rows and rows[0][0]:
                confirmed = _lsn(rows[0][0])
                in_topic = _topic_txids(env)
                snapshot_lsn = _last_snapshot_lsn(env)
                for txid, before, after, changes in list(load.committed):
                    if after <= confirmed and snapshot_lsn is not None and before >= snapshot_lsn:
                        want = {(k, op, v if op != "d" else None) for k, op, v in changes}
                        got = in_topic.get(txid, set())
                        assert want <= got, (
                            f"slot confirmed {confirmed} but tx {txid} is not (fully) durable")
        load.stop.set()
        load.join(30)
        assert load.error is None, load.error
        final_lsn = _lsn(env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0])
        proc = _start(config)
        try:
            source = {r[0]: r[1] for r in env.sql("SELECT id, ver FROM t")}

            differ: list[object] = []

            def caught_up() -> bool:
                table = replay(env.topics, f"{env.prefix}.public.t")
                got = {k[0][1]: row["ver"] for k, row in table.items()}
                differ[:] = [(k, source.get(k), got.get(k)) for k in sorted({*got, *source})
                             if got.get(k) != source.get(k)]
                return not differ

            try:
                wait_for(caught_up, timeout=180, interval=1.0, what="final run caught up")
            except TimeoutError as exc:
                raise AssertionError(f"{len(differ)} keys (key, source, topic) differ: "
                                     f"{differ[:10]}; capture: {_stderr_tail(proc)}") from exc
        finally:
            if proc.poll() is None:  # (a timeout above already stopped it, for its log)
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(60) == 0, _stderr_tail(proc)
    finally:
        load.stop.set()
    assert kills == 6 and len(load.committed) > 200
    assert final_lsn > 0
    snapshot_lsn = _last_snapshot_lsn(env)
    assert snapshot_lsn is not None
    in_topic = _topic_txids(env)
    checked = 0
    for txid, before, _after, changes in load.committed:
        if before >= snapshot_lsn:
            want = {(k, op, v if op != "d" else None) for k, op, v in changes}
            assert want <= in_topic.get(txid, set()), f"changes of tx {txid} missing"
            checked += 1
    assert checked > 100
    # Order per key: snapshot reads first, then strictly increasing versions.
    seen: set[tuple[int, str, int]] = set()
    last_ver: dict[int, int] = {}
    streamed: set[int] = set()
    for _, key, value in events(env.topics, f"{env.prefix}.public.t"):
        if value is None:
            continue
        src = value["source"]
        k = key["id"]
        row = value["after"] if value["op"] != "d" else value["before"]
        if value["op"] == "r":
            if src["lsn"] == snapshot_lsn:
                assert k not in streamed
            continue
        ident = (src["lsn"], value["op"], k)
        if ident in seen:
            continue  # re-delivered after a crash
        seen.add(ident)
        streamed.add(k)
        if value["op"] == "d":  # a delete carries the version of the row it removed
            assert row["ver"] >= last_ver.get(k, -1), f"key {k} out of order"
        else:
            assert row["ver"] > last_ver.get(k, -1), f"key {k} out of order"
        last_ver[k] = row["ver"]


def _stderr_tail(proc: subprocess.Popen[bytes]) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
    return proc.stderr.read().decode()[-3000:] if proc.stderr else ""


def _last_snapshot_lsn(env: Env) -> int | None:
    lsn = None
    for _, _, value in events(env.topics, f"{env.prefix}.public.t"):
        if value is not None and value["op"] == "r" and value["source"]["snapshot"] == "last":
            lsn = value["source"]["lsn"]
    return lsn
