"""One SCD2 batch into Delta with delta-rs: wall seconds and the driver process's CPU seconds.

Writes `--changes` change events over `--keys` keys to a topic log, then applies them as
two batches with the pipeline's `apply_batch` (the first into an empty table, the second
over the first's history, so that every key has stored versions), in a local[2] Spark
session (`--no-spark`: the driver alone).  Run it from a tree's root with that tree's
`src` on PYTHONPATH to time that tree's path (the event path before issue 25's
column-wise SCD2, `scd2.changed_versions` after).

    PYTHONPATH=src .venv/bin/python bench/pipeline_scd2_delta.py [--changes 200000]
                                                                 [--keys 20000] [--no-spark]
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import change_events
from deltalake import DeltaTable

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_target import DeltaTarget, delta_tables
from headwater.pipeline.runner import apply_batch, spark_session


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=20_000)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="hw-scd2-bench-"))
    change_events.write(work / "topics", args.changes, args.keys, segment_bytes=8 << 20)
    config = work / "p.properties"
    config.write_text(f"topic.prefix=bench\nheadwater.pipeline.mode=scd2\n"
                      f"headwater.pipeline.delta.path={work / 'delta'}\n"
                      f"headwater.pipeline.checkpoint.dir={work / 'cp'}\n"
                      "headwater.pipeline.executors.min.records=1000\n")
    cfg = load_pipeline_config(config)
    spark = None if args.no_spark else spark_session("scd2-bench", master="local[2]")
    target = DeltaTarget(work / "delta", cfg.pipeline_id)
    topic = next(p.name for p in (work / "topics").iterdir() if p.is_dir())
    half = args.changes // 2
    for batch, (a, b) in enumerate([(0, half), (half, args.changes)]):
        w0, c0 = time.monotonic(), cpu()
        n = apply_batch(work / "topics", {topic: (a, b)}, batch, cfg, target, spark=spark)
        wall, used = time.monotonic() - w0, cpu() - c0
        print(f"batch {batch}: {n} events, wall {wall:.2f}s, driver CPU {used:.2f}s "
              f"({used / max(n, 1) * 1e6:.1f} us/event)", flush=True)
    (table,) = [p for p in delta_tables(work / "delta") if "_headwater" not in p.parts]
    rows = DeltaTable(str(table)).to_pyarrow_table(columns=["__END_AT"])
    print(f"history: {rows.num_rows} versions, {rows.column(0).null_count} current")
    if spark is not None:
        spark.stop()


if __name__ == "__main__":
    main()
