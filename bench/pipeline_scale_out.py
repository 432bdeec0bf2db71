"""Scale-out: the same N change events into Delta (SCD1) on a Spark standalone cluster of one,
then of two single-core workers, in one run; prints each run's seconds and changes/s and the
throughput ratio (issue 25 asks >= 1.6 on a 2-core machine).

Each run gets a cluster of its own (`headwater.testing.spark_cluster`), a session on it, a
first query of 100 events (the session's and executors' start-up, not timed), then the timed
`--once` run of the N events into a fresh table and checkpoint; the table's row count is
checked against the generator's final state.

    PYTHONPATH=src:. .venv/bin/python bench/pipeline_scale_out.py [--changes 1000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_delta import check, generate, run_pipeline

from headwater.pipeline.runner import spark_session
from headwater.testing.spark_cluster import SparkCluster


def timed_run(work: Path, workers: int, changes: int,
              state: dict[int, tuple[object, ...] | None]) -> float:
    with SparkCluster(workers=workers, base_dir=work / f"cluster-{workers}") as cluster:
        spark = spark_session(f"headwater-scale-out-{workers}", master=cluster.master_url,
                              conf={"spark.executor.memory": "768m"})
        try:
            sc = spark.sparkContext
            deadline = time.monotonic() + 300
            while sc._jsc.sc().getExecutorMemoryStatus().size() < workers + 1:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{workers} executors did not register")
                time.sleep(0.2)
            run_pipeline(spark, work, f"warm-{workers}", topics="warm-topics")
            seconds = run_pipeline(spark, work, f"delta-{workers}")
            check(work, f"delta-{workers}", state)
        finally:
            spark.stop()
    print(f"{workers} worker(s): {seconds:6.2f} s, {changes / seconds:,.0f} changes/s",
          flush=True)
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=200_000)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headwater-scale-out-"))
    try:
        t0 = time.monotonic()
        state = generate(work / "topics", args.changes, args.keys)
        generate(work / "warm-topics", 100, 10)
        print(f"generated {args.changes:,} events over {args.keys:,} keys in "
              f"{time.monotonic() - t0:.1f}s", flush=True)
        os.chdir(work)
        one = timed_run(work, 1, args.changes, state)
        two = timed_run(work, 2, args.changes, state)
        print(f"throughput ratio, two workers / one: {one / two:.2f} (goal >= 1.6)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
