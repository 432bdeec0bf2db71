"""The two Delta writers of the pipeline (`headwater.pipeline.delta.writer`) on the same
changes, in one run: delta-rs in the driver (the reference) and Delta Lake's Spark connector.

For each size it writes N change events over K keys into a topic log, runs the pipeline
`--once` in SCD1 mode with `max.records.per.trigger` = N / batches (so a few batches, each a
MERGE into a table that already holds rows), once per writer, checks both tables hold the
same rows, and prints seconds, changes/s, seconds per batch and the ratio spark / delta-rs.
Reading, decoding and netting run in the driver for both (`executors.min.records` above N):
only the writer differs.  `--profile` also times each statement of the Spark writer's batch.

    .venv/bin/python bench/delta_writers.py [--changes 30000,100000] [--batches 4] [--profile]
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import change_events
from deltalake import DeltaTable
from pipeline_delta import run_pipeline

from headwater.pipeline.runner import spark_session

WRITERS = ("delta-rs", "spark")


def rows(work: Path, name: str) -> list[dict[str, Any]]:
    table = DeltaTable(str(work / name / "public" / "items")).to_pyarrow_table()
    return sorted(table.drop_columns(["__hw_sequence"]).to_pylist(), key=lambda r: r["id"])


def profile_spark_writer() -> dict[str, list[float]]:
    """Wraps the Spark writer's steps with timers (seconds per call, by step)."""
    from headwater.pipeline import change_frame, delta_spark
    from headwater.pipeline.delta_spark import SparkDeltaTarget

    took: dict[str, list[float]] = defaultdict(list)

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            t0 = time.monotonic()
            try:
                return fn(*args, **kwargs)
            finally:
                took[name].append(time.monotonic() - t0)
        return run

    for step in ("apply_scd1_net", "already_applied", "_net_after_state", "_spark_table",
                 "_merge_state", "_merge_state_frame", "_merge_scd1_frame"):
        setattr(SparkDeltaTarget, step, timed(step, getattr(SparkDeltaTarget, step)))
    delta_spark.from_columnar = timed("from_columnar", change_frame.from_columnar)
    return took


def run(spark: Any, work: Path, name: str, topics: str, extra: dict[str, str]) -> float:
    """`run_pipeline` from an empty table and checkpoint; on a machine so loaded that a Python
    worker of Spark misses its connect-back timeout (10 s, fixed in Spark), it runs again
    from scratch (said on the output), up to three times."""
    for attempt in range(3):
        shutil.rmtree(work / name, ignore_errors=True)
        shutil.rmtree(work / f"{name}-checkpoint", ignore_errors=True)
        try:
            return run_pipeline(spark, work, name, topics=topics, extra=extra)
        except Exception as exc:
            if "Python worker failed to connect back" not in str(exc) or attempt == 2:
                raise
            print(f"  ({name}: a Python worker missed Spark's connect-back timeout; run again)")
    raise AssertionError("unreachable")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", default="30000,100000", help="sizes, comma-separated")
    ap.add_argument("--keys", type=int, default=0, help="keys (default: changes / 5)")
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--profile", action="store_true", help="time the Spark writer's steps")
    args = ap.parse_args()
    sizes = [int(s) for s in args.changes.split(",")]
    took = profile_spark_writer() if args.profile else None
    work = Path(tempfile.mkdtemp(prefix="headwater-delta-writers-"))
    os.chdir(work)
    try:
        t0 = time.monotonic()
        spark = spark_session("headwater-bench", master=os.environ.get("BENCH_MASTER",
                                                                       "local[2]"))
        change_events.write(work / "warm-topics", 100, 10)
        for writer in WRITERS:  # each writer's first query and first table: set-up, not cost
            run(spark, work, f"warm-{writer}", "warm-topics",
                {"headwater.pipeline.delta.writer": writer})
        print(f"Spark start-up and a first query per writer (100 events): "
              f"{time.monotonic() - t0:.1f} s")
        if took is not None:
            took.clear()
        try:
            for n in sizes:
                keys = args.keys or max(n // 5, 1)
                topics = f"topics-{n}"
                change_events.write(work / topics, n, keys, seed=n)
                per_trigger = -(-n // args.batches)
                secs = {}
                for writer in WRITERS:
                    name = f"{writer}-{n}"
                    secs[writer] = run(
                        spark, work, name, topics,
                        {"headwater.pipeline.delta.writer": writer,
                         "headwater.pipeline.max.records.per.trigger": str(per_trigger),
                         "headwater.pipeline.executors.min.records": str(n + 1)})
                    print(f"{n:>9,} changes, {keys:,} keys, {args.batches} batches, {writer:>8}: "
                          f"{secs[writer]:6.2f} s = {n / secs[writer]:>9,.0f} changes/s, "
                          f"{secs[writer] / args.batches:5.2f} s/batch")
                assert rows(work, f"spark-{n}") == rows(work, f"delta-rs-{n}"), (
                    f"{n}: the two writers' tables differ")
                print(f"{n:>9,} changes: spark / delta-rs time ratio "
                      f"{secs['spark'] / secs['delta-rs']:.2f} (tables equal)")
                if took is not None:
                    print("  spark writer steps (s per call): " + "; ".join(
                        f"{k} " + ",".join(f"{t:.2f}" for t in v) for k, v in took.items()))
                    took.clear()
        finally:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
