"""Parallel initial snapshot (snapshot.max.threads): same events as the serial one, one
consistent point, and a hand-over to streaming with nothing lost or duplicated."""

from __future__ import annotations

import collections
import logging
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.testing.replay import events, replay
from headwater.topics import reader
from tests.record_json import json_of

from .conftest import Capture, Env, wait_for

pytestmark = pytest.mark.integration

SCHEMA = """
CREATE TABLE public.big (
  id bigint PRIMARY KEY, qty integer NOT NULL, price numeric(12,2), name varchar(64),
  note text, at timestamptz, raw bytea, doc jsonb, tags int[]);
INSERT INTO big
  SELECT g, g % 97, (g % 100000) / 100.0, 'item-' || g,
         CASE WHEN g % 7 = 0 THEN NULL ELSE E'tab\\there\\nnew line \\\\ ' || md5(g::text) END,
         timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second',
         decode(md5(g::text), 'hex'), jsonb_build_object('g', g, 's', 'x"y'),
         ARRAY[g, g + 1]
  FROM generate_series(1, 40000) g;
CREATE TABLE public.nokey (msg text, n int);
ALTER TABLE public.nokey REPLICA IDENTITY FULL;
INSERT INTO nokey SELECT 'row ' || (g % 10), g % 3 FROM generate_series(1, 3000) g;
CREATE TABLE public.small (id int PRIMARY KEY, v text);
INSERT INTO small VALUES (1, 'one'), (2, NULL), (3, 'three');
CREATE TABLE public.empty (id int PRIMARY KEY);
CREATE SCHEMA other;
CREATE TABLE other.mid (k text PRIMARY KEY, d date, f float8);
INSERT INTO other.mid
  SELECT 'k' || g, date '2000-01-01' + g, g / 3.0 FROM generate_series(1, 5000) g;
ANALYZE;
"""

TOPICS = ("public.big", "public.nokey", "public.small", "public.empty", "other.mid")


def _snapshot(env: Env, threads: int, tag: str) -> tuple[Path, dict[str, Any]]:
    """Runs an initial_only snapshot with its own slot and topic dir; returns the topic dir
    and the capture's metrics."""
    root = env.tmp / tag
    cap = Capture(env.config({
        "snapshot.mode": "initial_only",
        "snapshot.max.threads": threads,
        "snapshot.fetch.size": 1000,
        "slot.name": f"{env.slot}_{tag}",
        "slot.drop.on.stop": "true",
        "headwater.topics.dir": root / "topics",
        "offset.storage.file.filename": root / "offsets.json",
    })).start()
    cap.thread.join(120)
    assert not cap.thread.is_alive(), "snapshot did not finish"
    if cap.error is not None:
        raise cap.error
    metrics = cap.runtime.metrics.as_dict()
    assert metrics["SnapshotCompleted"] is True
    assert metrics["TotalTableCount"] == len(TOPICS)
    assert metrics["RemainingTableCount"] == 0
    return root / "topics", metrics


def _normalized(root: Path, prefix: str) -> tuple[collections.Counter[bytes], list[Any]]:
    """Every record with the times and the snapshot point stripped and snapshot=last read as
    true, as a multiset; plus the `source.snapshot` marker of each topic's final record.

    Each run has its own slot, so its own consistent point: every record of one run must carry
    the same LSN and txId (checked here), which differ from another run's."""
    bag: collections.Counter[bytes] = collections.Counter()
    finals = []
    points = set()
    for name in TOPICS:
        last_marker = None
        for rec in reader.read(root, f"{prefix}.{name}", from_offset=0):
            value = json_of(rec.value)
            payload = value["payload"]
            assert payload["op"] == "r"
            last_marker = payload["source"]["snapshot"]
            src = payload["source"]
            points.add((src.pop("lsn"), src.pop("txId"), src.pop("sequence")))
            for times in (payload, src):  # processing and source times differ per run
                for field in ("ts_ms", "ts_us", "ts_ns"):
                    times.pop(field, None)
            payload["source"]["snapshot"] = "true"
            bag[name.encode() + b"|" + (rec.key or b"") + b"|" + orjson.dumps(
                value, option=orjson.OPT_SORT_KEYS)] += 1
        finals.append(last_marker)
    assert len(points) == 1, points
    return bag, finals


def test_parallel_snapshot_equals_serial(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    env.sql(SCHEMA)
    serial, serial_finals = _normalized(_snapshot(env, 1, "t1")[0], env.prefix)
    assert sum(serial.values()) == 40000 + 3000 + 3 + 5000
    assert serial_finals.count("last") == 1
    for threads in (2, 4):
        with caplog.at_level(logging.INFO, logger="headwater"):
            root, metrics = _snapshot(env, threads, f"t{threads}")
        chunks = [r.getMessage() for r in caplog.records if "chunks with" in r.getMessage()]
        assert chunks and f"with {threads} worker processes" in chunks[-1]
        assert int(chunks[-1].split(" in ")[1].split()[0]) > len(TOPICS)  # big was split
        caplog.clear()
        bag, finals = _normalized(root, env.prefix)
        assert bag == serial, f"max.threads={threads} differs from the serial snapshot"
        # Exactly one event of the whole snapshot is `last`, and it ends its topic.
        assert finals.count("last") == 1
        assert all(f in ("true", "last", None) for f in finals)
        total_last = sum(
            1 for name in TOPICS for _, _, v in events(root, f"{env.prefix}.{name}")
            if v["source"]["snapshot"] == "last"
        )
        assert total_last == 1
        # The parallel snapshot's metrics count each table's rows once.  (Once a test of its
        # own, with a fourth snapshot of the same 48,003 rows.)
        assert metrics["RowsScanned"] == {"public.big": 40000, "public.nokey": 3000,
                                          "public.small": 3, "public.empty": 0,
                                          "other.mid": 5000}
        assert metrics["TotalNumberOfEventsSeen"] == 48003
        assert metrics["SnapshotRunning"] is False


PAUSE = 0.01  # seconds between the writer's transactions


def _writer(env: Env, stop: threading.Event, counts: dict[str, int]) -> None:
    """Inserts new rows, updates and deletes old ones, in small transactions, until stopped;
    paced (`PAUSE`), so that writes land all through the snapshot's chunks without the topic
    growing past what the scenario needs.  (Unpaced, its volume followed the machine's load:
    on a quiet machine 557k change events, 2.5 GB of topic, which the catch-up check re-read
    every second until pytest's 600 s limit; paced, ~200 MB and 45 s.)"""
    conn = env.pg.connect(env.db)
    next_id = 1_000_000
    n = 0
    try:
        with conn.cursor() as cur:
            while not stop.is_set() or n < 20:
                n += 1
                cur.execute("INSERT INTO big (id, qty, name) SELECT g, 1, 'new' "
                            "FROM generate_series(%s, %s) g", (next_id, next_id + 9))
                next_id += 10
                cur.execute("UPDATE big SET qty = qty + 1000, note = 'upd' WHERE id = %s",
                            (n * 37 % 40000 + 1,))
                cur.execute("DELETE FROM big WHERE id = %s", (40000 - n,))
                counts["tx"] = n
                stop.wait(PAUSE)
    finally:
        conn.close()


@pytest.mark.parametrize("threads", [2, pytest.param(4, marks=pytest.mark.long)])  # 4: --long
def test_writes_during_parallel_snapshot_are_neither_lost_nor_duplicated(
    env: Env, threads: int
) -> None:
    env.sql(SCHEMA)
    stop = threading.Event()
    counts: dict[str, int] = {}
    writer = threading.Thread(target=_writer, args=(env, stop, counts), daemon=True)
    writer.start()
    wait_for(lambda: counts.get("tx", 0) >= 5, what="writes before the snapshot")
    cap = env.capture({"snapshot.max.threads": threads, "snapshot.fetch.size": 500})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_running
                 or cap.runtime.metrics.snapshot_completed, timeout=60, what="snapshot start")
        before = counts["tx"]
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, timeout=120,
                 what="snapshot completed")
        assert counts["tx"] > before, "the writer did not write during the snapshot"
        stop.set()
        writer.join(60)
        expected = {
            (("id", r[0]),): r[1:]
            for r in env.sql("SELECT id, qty, name, note FROM big ORDER BY id")
        }
        topic = f"{env.prefix}.public.big"

        def caught_up() -> bool:
            got = replay(env.topics, topic)
            return {k: (v["qty"], v["name"], v["note"]) for k, v in got.items()} == expected

        wait_for(caught_up, timeout=180, interval=1.0, what="topic equal to the table")
    finally:
        stop.set()
        cap.stop()
    ops: dict[Any, list[str]] = collections.defaultdict(list)
    for _, key, value in events(env.topics, f"{env.prefix}.public.big"):
        if value is not None:
            ops[key["id"]].append(value["op"])
    for key, seq in ops.items():
        assert seq.count("r") <= 1, f"id {key} read twice: {seq}"
        if key >= 1_000_000:  # inserted by the writer: seen once, by the snapshot or the stream
            assert (seq[0], seq.count("r") + seq.count("c")) in (("r", 1), ("c", 1)), seq
    # the writer's rows met both sides of the consistent point: some read, some streamed
    assert {seq[0] for k, seq in ops.items() if k >= 1_000_000} == {"r", "c"}
    reads = [v for _, _, v in events(env.topics, f"{env.prefix}.public.big")
             if v is not None and v["op"] == "r"]
    assert len({v["source"]["lsn"] for v in reads}) == 1  # one consistent point
    streamed = [v for _, _, v in events(env.topics, f"{env.prefix}.public.big")
                if v is not None and v["op"] != "r"]
    assert streamed and min(v["source"]["lsn"] for v in streamed) >= reads[0]["source"]["lsn"]
