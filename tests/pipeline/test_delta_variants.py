"""Random workloads captured from a real PostgreSQL, materialized into Delta by a real Spark,
compared in full with the source: clean, duplicated, reordered across batches, and with the
pipeline killed with kill -9 mid-run.  The duplicated+reordered SCD1 run and the kill -9
changelog run go through both Delta writers (`headwater.pipeline.delta.writer`: delta-rs in
the driver, and Delta Lake's Spark connector)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from headwater.model.topic import TopicRecord
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.runner import start
from headwater.testing.replay import replay
from headwater.topics import reader
from headwater.topics.log import TopicLog
from tests.integration.postgres.conftest import Env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def workload(env: Env) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY, v text, n int NOT NULL)")
    env.sql("INSERT INTO t SELECT g, 'init' || g, 0 FROM generate_series(1, 100) g")


def mutate(env: Env, seed: int, transactions: int = 150, truncate_at: int | None = None) -> None:
    rng = random.Random(seed)
    next_id = 1000
    for i in range(transactions):
        if truncate_at is not None and i == truncate_at:
            env.sql("TRUNCATE t")
        ops = []
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.35:
                next_id += 1
                ops.append(f"INSERT INTO t VALUES ({next_id}, 'new{i}', {i})")
            elif r < 0.75:
                ops.append(f"UPDATE t SET n = n + 1, v = 'u{i}' WHERE id = "
                           f"(SELECT id FROM t ORDER BY random() LIMIT 1)")
            elif r < 0.9:
                ops.append("DELETE FROM t WHERE id = (SELECT id FROM t ORDER BY random() LIMIT 1)")
            else:
                next_id += 1
                ops.append(f"UPDATE t SET id = {next_id} WHERE id = "
                           f"(SELECT id FROM t ORDER BY random() LIMIT 1)")
        env.sql("BEGIN; " + "; ".join(ops) + "; COMMIT")


def capture_workload(env: Env, props: dict[str, Any], seed: int, truncate: bool = False) -> None:
    workload(env)
    cap = env.capture(props)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        mutate(env, seed, truncate_at=60 if truncate else None)
        lsn = env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0]
        hi, lo = lsn.split("/")
        target = (int(hi, 16) << 32) | int(lo, 16)
        wait_for(lambda: int((cap.runtime.offsets.load() or {}).get("lsn", 0)) >= target,
                 timeout=120, what="capture caught up")
    finally:
        cap.stop()


def props_for(env: Env, **extra: Any) -> dict[str, Any]:
    return {
        "skipped.operations": "none",
        "headwater.pipeline.delta.path": env.tmp / "delta",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
        "headwater.pipeline.max.records.per.trigger": 150,
        **extra,
    }


def source_table(env: Env) -> dict[int, tuple[Any, ...]]:
    return {r[0]: (r[1], r[2]) for r in env.sql("SELECT id, v, n FROM t")}


def delta_table(env: Env) -> dict[int, tuple[Any, ...]]:
    rows = read_table(env.tmp / "delta" / "public" / "t").to_pylist()
    assert len({r["id"] for r in rows}) == len(rows), "duplicate keys in the target"
    return {r["id"]: (r["v"], r["n"]) for r in rows}


def engines(env: Env) -> set[str]:
    """Who committed to the target table: "spark" (delta-spark's commits name their engine,
    `Apache-Spark/... Delta-Lake/...`) or "delta-rs" (`clientVersion: delta-rs.x`)."""
    history = DeltaTable(str(env.tmp / "delta" / "public" / "t")).history()
    return {"spark" if "Delta-Lake" in str(c.get("engineInfo", "")) else "delta-rs"
            for c in history if c.get("operation") in ("MERGE", "WRITE")}


def run_once(spark: Any, config: Path) -> None:
    query = start(spark, load_pipeline_config(config), once=True)
    query.awaitTermination()
    assert query.exception() is None


def scramble(env: Env, seed: int, duplicate: bool, shuffle_window: int | None) -> None:
    """Rewrites the table topic with records duplicated and/or reordered, in small segments
    (one segment per micro-batch), as an unreliable transport would deliver them."""
    topic = f"{env.prefix}.public.t"
    records = list(reader.read(env.topics, topic))
    rng = random.Random(seed)
    out = []
    for r in records:
        out.extend([r] * (rng.randint(1, 3) if duplicate else 1))
    if shuffle_window is None:
        rng.shuffle(out)
    else:
        for i in range(0, len(out), shuffle_window):
            chunk = out[i:i + shuffle_window]
            rng.shuffle(chunk)
            out[i:i + shuffle_window] = chunk
    scrambled = env.tmp / "scrambled"
    with TopicLog(scrambled, segment_bytes=200_000) as log:
        for i in range(0, len(out), 50):
            log.append({topic: [TopicRecord(r.key, r.value, r.timestamp)
                                for r in out[i:i + 50]]})
    env.topics = scrambled


WRITER = "headwater.pipeline.delta.writer"
# Through delta-spark a batch costs tens of seconds of Spark jobs (its MERGEs) where delta-rs
# takes a fraction of one (bench/delta_writers.py): these runs take minutes, so --long.
SPARK_WRITER = [pytest.mark.long, pytest.mark.timeout(2400)]


@pytest.mark.parametrize(
    ("name", "duplicate", "window", "writer"),
    [("clean", False, 1, "delta-rs"), ("duplicated", True, 5, "delta-rs"),
     ("reordered", False, None, "delta-rs"), ("duplicated+reordered", True, None, "delta-rs"),
     pytest.param("duplicated+reordered", True, None, "spark", marks=SPARK_WRITER)],
)
def test_target_equals_source(env: Env, spark: Any, name: str, duplicate: bool,
                              window: int | None, writer: str) -> None:
    props = props_for(env, **{WRITER: writer})
    seed = sum(map(ord, name)) + int(os.environ.get("HEADWATER_TEST_SEED", "0"))
    capture_workload(env, props, seed=seed, truncate=(name == "clean"))
    replayed = replay(env.topics, f"{env.prefix}.public.t")
    assert {k[0][1]: (r["v"], r["n"]) for k, r in replayed.items()} == source_table(env), (
        "the capture itself is incomplete")
    if duplicate or window is None:
        scramble(env, seed=5, duplicate=duplicate, shuffle_window=window)
        props["headwater.topics.dir"] = env.topics
    run_once(spark, env.config(props))
    assert delta_table(env) == source_table(env)
    assert engines(env) == {writer}


@pytest.mark.parametrize("writer", ["delta-rs", pytest.param("spark", marks=SPARK_WRITER)])
def test_pipeline_killed_mid_run_applies_exactly_once(env: Env, writer: str) -> None:
    props = props_for(env, **{"headwater.pipeline.mode": "changelog", WRITER: writer})
    capture_workload(env, props, seed=11)
    config = env.config(props)
    events = sum(1 for r in reader.read(env.topics, f"{env.prefix}.public.t")
                 if r.value is not None)
    rng = random.Random(2)
    # (kill inside the batches, which take seconds with delta-rs, a minute with delta-spark)
    window, final_timeout = ((8, 14), 300) if writer == "delta-rs" else ((15, 90), 1500)
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "headwater.cli", "pipeline", str(config),
             "--log-level", "WARNING"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
        time.sleep(rng.uniform(*window))  # Spark starts in ~5-8 s
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    final = subprocess.run(
        [sys.executable, "-m", "headwater.cli", "pipeline", str(config), "--once",
         "--log-level", "WARNING"], capture_output=True, text=True, timeout=final_timeout,
        check=False)
    assert final.returncode == 0, final.stderr[-3000:]
    changelog = read_table(env.tmp / "delta" / "public" / "t")
    # Every event exactly once: no batch applied twice, none lost.
    assert changelog.num_rows == events
    assert engines(env) == {writer}
