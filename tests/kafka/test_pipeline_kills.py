"""Exactly once from Kafka into Delta across kills: the pipeline runs as its own process
(`headwater pipeline`), is killed with SIGKILL while a micro-batch is in flight (once in
Spark's planning-to-commit window, once after Delta committed a batch whose Spark commit is not
written yet, when that window is caught), the broker is killed and restarted on its durable
storage between runs, and at the end the Delta table equals PostgreSQL; in changelog mode every
Kafka record is in the table exactly once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from headwater.pipeline.kafka_source import virtual_offset
from headwater.testing.kafka_cluster import KafkaCluster
from headwater.testing.timeouts import scaled
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic, unique
from tests.kafka.test_capture_postgres import current_lsn, stored_lsn

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def batches(checkpoint: Path, kind: str) -> set[int]:
    d = checkpoint / kind
    return {int(p.name) for p in d.iterdir() if p.name.isdigit()} if d.is_dir() else set()


def in_flight(checkpoint: Path) -> int | None:
    """A batch Spark planned (offsets/N) but has not committed (no commits/N)."""
    planned = batches(checkpoint, "offsets") - batches(checkpoint, "commits")
    return max(planned) if planned else None


def delta_txn(table: Path) -> int:
    """The newest batch id the target recorded in the table's `txn` actions (-1: none)."""
    log = table / "_delta_log"
    if not log.is_dir():
        return -1
    found = [int(m) for p in log.glob("*.json")
             for m in re.findall(rb'"txn":\{[^}]*"version":(\d+)', p.read_bytes())]
    return max(found, default=-1)


def start_pipeline(config: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "pipeline", str(config), "--log-level",
         "WARNING"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def alive(proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"the pipeline exited ({proc.returncode}): "
                             f"{proc.stderr.read().decode()[-3000:] if proc.stderr else ''}")
    return True


def changes(env: Env, round_: int) -> None:
    env.sql("UPDATE t SET ver = ver + 1 WHERE id %% 3 = %s", (round_ % 3,))
    env.sql("DELETE FROM t WHERE id %% 17 = %s", (round_,))
    env.sql(f"INSERT INTO t SELECT g, {round_} FROM generate_series({1000 + 40 * round_}, "
            f"{1039 + 40 * round_}) g")
    env.conn.commit()


def source_rows(env: Env) -> dict[int, int]:
    return {r[0]: r[1] for r in env.sql("SELECT id, ver FROM t")}


def table_rows(table: Path, mode: str) -> dict[int, int]:
    """The table as its source would show it: SCD1 as is (no key twice), the changelog folded
    (the last event per key by sequence; a delete removes the key)."""
    from deltalake import DeltaTable

    rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    if mode == "scd1":
        assert len({r["id"] for r in rows}) == len(rows), "duplicate keys in the target"
        return {r["id"]: r["ver"] for r in rows}
    out: dict[int, int] = {}
    for r in sorted(rows, key=lambda r: r["__hw_sequence"]):
        if r["__op"] == "d":
            out.pop(r["id"], None)
        else:
            out[r["id"]] = r["ver"]
    return out


def caught_up(env: Env, kafka: KafkaCluster, store: str) -> None:
    target = current_lsn(env)
    wait_for(lambda: stored_lsn(kafka.bootstrap, store) >= target, timeout=120,
             what="capture caught up")


@pytest.mark.parametrize("mode", [
    "changelog",  # in CI: every Kafka record exactly once
    pytest.param("scd1", marks=pytest.mark.long),  # the same kills, merged (--long)
])
def test_pipeline_killed_mid_batch_is_exactly_once(env: Env, kafka: KafkaCluster,
                                                   mode: str) -> None:
    env.prefix = unique("kil")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL)")
    env.sql("INSERT INTO t SELECT g, 0 FROM generate_series(1, 300) g")
    env.conn.commit()
    checkpoint = env.tmp / "checkpoint"
    table = env.tmp / "delta" / "public" / "t"
    props = kafka_props(kafka, **{
        "headwater.pipeline.mode": mode,
        "headwater.pipeline.delta.path": env.tmp / "delta",
        "headwater.pipeline.checkpoint.dir": checkpoint,
        "headwater.pipeline.max.records.per.trigger": 40,
        "headwater.pipeline.trigger.interval.ms": 100,
    })
    store = props["offset.storage.topic"]
    config = env.config(props)
    cap = env.capture(props)
    proc: subprocess.Popen[bytes] | None = None
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        for round_ in range(4):
            changes(env, round_)
        caught_up(env, kafka, store)

        # Run 1: killed while a batch is in flight (planned, not committed by Spark).
        proc = start_pipeline(config)
        wait_for(lambda: alive(proc) and (in_flight(checkpoint) or 0) >= 3, timeout=300,
                 interval=0.02, what="batch 3 in flight")
        kill(proc)
        first = in_flight(checkpoint)
        assert first is not None

        # Run 2: killed once Delta holds a batch Spark has not committed (the targets must
        # skip it when Spark replays it); else, at the latest, while one is in flight.
        proc = start_pipeline(config)
        wait_for(lambda: alive(proc) and (in_flight(checkpoint) or 0) > first, timeout=300,
                 interval=0.02, what="a new batch in flight")
        deadline = time.monotonic() + scaled(60)
        while time.monotonic() < deadline and alive(proc):
            flying = in_flight(checkpoint)
            if flying is not None and delta_txn(table) >= flying:
                break
            time.sleep(0.005)
        kill(proc)
        print(f"run 2 killed: in flight {in_flight(checkpoint)}, Delta's txn {delta_txn(table)}")

        # The broker dies and comes back on its storage; more changes meanwhile.
        kafka.restart(kill=True)
        for round_ in range(4, 7):
            changes(env, round_)
        caught_up(env, kafka, store)

        # Run 3: to the end.
        proc = start_pipeline(config)
        source = source_rows(env)
        wait_for(lambda: alive(proc) and _equal(table, mode, source), timeout=300,
                 interval=1, what="the target equals the source")
    finally:
        cap.stop()
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stderr.decode()[-3000:]
    assert table_rows(table, mode) == source_rows(env)
    if mode == "changelog":
        # Every record of the topic exactly once (tombstones carry no row).
        records = read_topic(kafka.bootstrap, f"{env.prefix}.public.t")
        want = sorted(virtual_offset(r.offset, r.partition) for r in records
                      if r.value is not None)
        from deltalake import DeltaTable

        got = sorted(DeltaTable(str(table)).to_pyarrow_table().column("__offset").to_pylist())
        assert got == want


def _equal(table: Path, mode: str, source: dict[int, Any]) -> bool:
    try:
        return table_rows(table, mode) == source
    except Exception:  # no table yet, or a version being written
        return False
