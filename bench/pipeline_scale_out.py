"""Scale-out: the same N change events into Delta (SCD1) on a Spark standalone cluster of one,
then of two single-core workers, in one run; prints each run's seconds and changes/s and the
throughput ratios (issue 25 asks >= 1.6 on a 2-core machine).

Each run gets a cluster of its own (`headwater.testing.spark_cluster`), a session on it, a
first query of 50,000 events through the executors (the session's and executors' start-up,
not timed), then the timed `--once` run of the N events into a fresh table and checkpoint,
with the pipeline's default settings; the table's row count is checked against the
generator's final state, and the run's micro-batches are counted from its checkpoint's
commit log.

Two times per run, both printed, each with its ratio:
- *run*: the whole `--once` run, from `start` to the query's end: the query's start-up (the
  streaming source's Python runner and data-source workers the driver's JVM starts for each
  query, before the first batch is planned) included;
- *batches*: the micro-batches that process the N events, from the first batch's entry in the
  query's offset log (written when Spark has planned it, before it runs) to the last batch's
  entry in the commit log (written after its Delta commit): every batch's read, decode, net
  and MERGE, and the planning of each batch after the first.  This is the throughput of a
  running pipeline, which starts its query once; the query's start-up is the difference.

Each run also prints the CPU seconds of the
driver and of the executors during the timed run (from /proc): on a machine shared with other
work the wall-clock ratio says little, the CPU split says where the work ran.  With
`--writer spark` the batches are netted across parts and merged by delta-spark on the executors
(`executor_net`); with the default, delta-rs merges in the driver.

    PYTHONPATH=$PWD/src:$PWD .venv/bin/python bench/pipeline_scale_out.py [--changes N] \
        [--writer spark] [--max-records N]

(absolute paths: the bench changes directory, and the executors and the Python workers of the
driver's JVM run elsewhere; with `src:.` they import the installed package, which in a git
worktree is another checkout's code.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_delta import check, generate, run_pipeline

from headwater.pipeline.runner import spark_session
from headwater.testing.spark_cluster import SparkCluster, cpu_seconds, processes


def timed_run(work: Path, workers: int, changes: int,
              state: dict[int, tuple[object, ...] | None], writer: str = "delta-rs",
              max_records: int | None = None) -> tuple[float, float]:
    timed = {"headwater.pipeline.delta.writer": writer}
    if max_records is not None:
        timed["headwater.pipeline.max.records.per.trigger"] = str(max_records)
    with SparkCluster(workers=workers, base_dir=work / f"cluster-{workers}") as cluster:
        spark = spark_session(f"headwater-scale-out-{workers}", master=cluster.master_url,
                              spark_props={"spark.executor.memory": "768m"})
        try:
            sc = spark.sparkContext
            deadline = time.monotonic() + 300
            while sc._jsc.sc().getExecutorMemoryStatus().size() < workers + 1:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{workers} executors did not register")
                time.sleep(0.2)
            # the warm-up goes through the executors' path too: their JVMs compile the net's
            # window and aggregate code on the first batch they run (15-19 s of a 300k-change
            # run on a cold two-worker cluster), which a running pipeline pays once
            _retried(lambda: run_pipeline(
                spark, work, f"warm-{workers}", topics="warm-topics",
                extra={"headwater.pipeline.executors.min.records": "0",
                       "headwater.pipeline.delta.writer": writer}))
            before = _cpu(spark, cluster)
            seconds = _retried(lambda: run_pipeline(
                spark, work, f"delta-{workers}",
                extra=timed))
            driver, executors = (b - a for a, b in zip(before, _cpu(spark, cluster),
                                                       strict=True))
            check(work, f"delta-{workers}", state)
        finally:
            spark.stop()
    batches, in_batches = batch_seconds(work / f"delta-{workers}-checkpoint")
    print(f"{workers} worker(s), Delta writer {writer}: run {seconds:6.2f} s, "
          f"{changes / seconds:,.0f} changes/s; batches {in_batches:6.2f} s, "
          f"{changes / in_batches:,.0f} changes/s ({batches} micro-batches; the query's "
          f"start-up {seconds - in_batches:.2f} s); CPU: driver {driver:.1f} s, executors "
          f"{executors:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)
    return seconds, in_batches


def batch_seconds(checkpoint: Path) -> tuple[int, float]:
    """The number of micro-batches in a query's checkpoint, and the seconds from the first
    one's offset-log entry to the last one's commit-log entry (file modification times)."""
    commits = sorted(int(p.name) for p in (checkpoint / "commits").iterdir()
                     if p.name.isdigit())
    if not commits or commits[0] != 0:
        raise RuntimeError(f"{checkpoint}: expected batches from 0 in the commit log, "
                           f"found {commits}")
    first = (checkpoint / "offsets" / "0").stat().st_mtime
    last = (checkpoint / "commits" / str(commits[-1])).stat().st_mtime
    return len(commits), last - first


def _retried(run: Callable[[], float], attempts: int = 3) -> float:
    """`run` again (on the same checkpoint, so no batch twice) when its query failed because
    Spark's streaming source's Python runner missed its fixed 10 s connect-back, which a
    loaded machine makes common; the seconds are those of the attempt that ran."""
    for attempt in range(attempts):
        try:
            return run()
        except Exception as exc:  # (pyspark's StreamingQueryException, or run_pipeline's)
            if "failed to connect back" not in str(exc) or attempt == attempts - 1:
                raise
            print(f"(the query's Python runner did not connect back: attempt {attempt + 2})",
                  flush=True)
    raise AssertionError("unreachable")


def _cpu(spark: Any, cluster: SparkCluster) -> tuple[float, float]:
    """CPU seconds so far of the driver (this process and its JVM with the JVM's Python
    workers; not the cluster's daemons, which are this process's children too) and of the
    executors (their JVMs with their Python workers), from /proc."""
    table = processes()
    driver = (cpu_seconds(os.getpid(), tree=False, table=table)
              + cpu_seconds(spark.sparkContext._gateway.proc.pid, table=table))
    return driver, sum(cpu_seconds(p, table=table) for p in cluster.executor_pids(table))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--writer", choices=("delta-rs", "spark"), default="delta-rs",
                    help="headwater.pipeline.delta.writer: spark merges on the executors")
    ap.add_argument("--max-records", type=int, default=None,
                    help="headwater.pipeline.max.records.per.trigger (default: the "
                         "pipeline's)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headwater-scale-out-"))
    try:
        t0 = time.monotonic()
        state = generate(work / "topics", args.changes, args.keys)
        generate(work / "warm-topics", 50_000, 10_000)
        print(f"generated {args.changes:,} events over {args.keys:,} keys in "
              f"{time.monotonic() - t0:.1f}s", flush=True)
        os.chdir(work)
        one = timed_run(work, 1, args.changes, state, args.writer, args.max_records)
        two = timed_run(work, 2, args.changes, state, args.writer, args.max_records)
        print(f"throughput ratio, two workers / one: batches {one[1] / two[1]:.2f}, whole "
              f"run {one[0] / two[0]:.2f} (goal >= 1.6)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
