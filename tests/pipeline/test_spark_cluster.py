"""The pipeline on a real Spark standalone cluster (a master and two single-core workers on
loopback, from the pyspark wheel's launcher): a PostgreSQL workload captured, then materialized
into Delta with the reading, decoding and netting running as tasks on the executors.  Shows
(issue 25, "Must show" 1, the CI form) that most of the CPU the run spends beyond start-up is
the executors' (from /proc, since Spark's "Executor CPU Time" counts only the JVM task thread
and not the Python workers the tasks run in; the event log's figures are printed beside), and
that a kill -9 of one executor in the middle of a batch (Spark's event log shows the tasks it
lost) leaves the Delta table equal to the source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.pipeline.delta_target import read_table
from headwater.testing.spark_cluster import SparkCluster, cpu_seconds, processes
from tests.integration.postgres.conftest import Env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROWS = int(os.environ.get("HEADWATER_CLUSTER_ROWS", "20000"))
ROUNDS = 3  # full-table updates after the snapshot


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    c = SparkCluster(workers=2, base_dir=tmp_path_factory.mktemp("spark-cluster")).start()
    try:
        yield c
    finally:
        c.stop()


def capture(env: Env, props: dict[str, Any]) -> int:
    """Snapshot, then full-table updates, deletes, inserts; returns the number of events."""
    env.sql("CREATE TABLE t (id int PRIMARY KEY, v text, n int NOT NULL, pad text)")
    env.sql(f"INSERT INTO t SELECT g, 'v' || g, 0, repeat('x', 40) "
            f"FROM generate_series(1, {ROWS}) g")
    cap = env.capture(props)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, timeout=300, what="snapshot")
        for i in range(ROUNDS):
            env.sql(f"UPDATE t SET n = n + 1, v = 'r{i}-' || (id * 7 % 1000)")
        env.sql("DELETE FROM t WHERE id % 17 = 0")
        env.sql(f"INSERT INTO t SELECT g, 'new', 1, NULL FROM generate_series({ROWS + 1}, "
                f"{ROWS + 500}) g")
        events = ROWS * (1 + ROUNDS) + ROWS // 17 + 500
        wait_for(lambda: cap.runtime.metrics.total_events_seen >= events, timeout=600,
                 what="stream events")
    finally:
        cap.stop()
    return events


def event_log_tasks(folder: Path, app_id: str) -> dict[str, float]:
    """Spark's own task metrics, from the application's event log."""
    files = sorted(p for p in folder.rglob("*")
                   if p.is_file() and app_id in p.name and p.name.startswith(("app", "events")))
    assert files, f"no event log for {app_id} in {folder}"
    out = {"tasks": 0, "executor_cpu_s": 0.0, "executor_run_s": 0.0, "executor_lost": 0}
    for line in (line for f in files for line in f.read_text().splitlines()):
        event = json.loads(line)
        if event.get("Event") != "SparkListenerTaskEnd":
            continue
        out["tasks"] += 1
        if event.get("Task End Reason", {}).get("Reason") == "ExecutorLostFailure":
            out["executor_lost"] += 1
        metrics = event.get("Task Metrics") or {}
        out["executor_cpu_s"] += metrics.get("Executor CPU Time", 0) / 1e9
        out["executor_run_s"] += metrics.get("Executor Run Time", 0) / 1e3
    return out


def test_pipeline_work_runs_on_executors_and_survives_an_executor_kill(
        env: Env, cluster: SparkCluster, tmp_path: Path) -> None:
    props = {
        "headwater.pipeline.delta.path": env.tmp / "delta",
        "headwater.pipeline.executors.min.records": 0,  # every range on the executors
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
    }
    events = capture(env, props)
    config = env.config(props)
    handshake = tmp_path / "handshake"
    event_log = tmp_path / "events"
    handshake.mkdir()
    event_log.mkdir()
    driver = subprocess.Popen(
        [sys.executable, "-m", "tests.pipeline.cluster_driver", str(config), cluster.master_url,
         str(event_log), str(handshake), "2"],
        stdout=open(tmp_path / "driver.log", "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        wait_for(lambda: (handshake / "ready").exists() or driver.poll() is not None,
                 timeout=900, what="driver ready")
        assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        first = cluster.executor_pids()
        assert len(first) == 2, first
        baseline = {pid: cpu_seconds(pid) for pid in first}
        seen = dict(baseline)
        later: dict[int, float] = {}
        (handshake / "go").write_text("")
        killed: int | None = None
        while driver.poll() is None:
            table = processes()
            for pid in cluster.executor_pids(table):
                cpu = cpu_seconds(pid, table=table)
                if pid in baseline:
                    seen[pid] = max(seen[pid], cpu)
                else:
                    later[pid] = max(later.get(pid, 0.0), cpu)
            # mid-batch: the tasks' Python workers are busy on both executors
            if killed is None and all(seen[p] - baseline[p] > 1.5 for p in first):
                killed = first[0]
                cluster.kill_executor(killed)
            time.sleep(0.5)
        assert driver.returncode == 0, (tmp_path / "driver.log").read_text()[-5000:]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert killed is not None, "the run ended before the executors were busy"
    result = json.loads((handshake / "result.json").read_text())
    executors_cpu = sum(seen[p] - baseline[p] for p in first)
    spark_metrics = event_log_tasks(event_log, result["app_id"])
    print(f"\n{events} events; driver CPU {result['driver_cpu_s']:.1f} s, executors' CPU "
          f"{executors_cpu:.1f} s (+{sum(later.values()):.1f} s in the executor started after "
          f"the kill, start-up included, not counted); wall {result['wall_s']:.1f} s; Spark's "
          f"event log: {spark_metrics['tasks']} tasks, Executor CPU Time "
          f"{spark_metrics['executor_cpu_s']:.1f} s (JVM threads only), Executor Run Time "
          f"{spark_metrics['executor_run_s']:.1f} s, {spark_metrics['executor_lost']} lost "
          f"with the killed executor; the driver's JVM {result['driver_jvm_cpu_s']:.1f} s of "
          "the driver's CPU")
    assert spark_metrics["executor_lost"] >= 1, "the kill did not hit a running task"
    assert executors_cpu > result["driver_cpu_s"], (executors_cpu, result)
    got = {r["id"]: (r["v"], r["n"], r["pad"])
           for r in read_table(env.tmp / "delta" / "public" / "t").to_pylist()}
    want = {r[0]: (r[1], r[2], r[3]) for r in env.sql("SELECT id, v, n, pad FROM t")}
    assert len(got) == len(want) and got == want
