"""The driver's CPU per batch of the Spark Delta writer (`headwater.pipeline.delta.writer=spark`),
with Delta settings that may cut delta-spark's fixed per-MERGE driver work.

A standalone cluster of one single-core worker (`headwater.testing.spark_cluster`), so that the
executors' CPU is not the driver's; one session. Each variant (a set of session settings,
applied with `spark.conf.set` around its batches, the session's values restored after) has a
table of its own; the topic log is cut into batches of `--batch` events, and batch after batch
every variant applies it (`runner.apply_batch`: the executor stage, the net across parts on the
executors, delta-spark's MERGE), so the variants take turns under the same machine load. Batch 0
creates the tables and is not counted. Printed per variant: the median over the later batches of
the driver's CPU seconds (this process plus its JVM, from /proc) and of the executor's. CPU, not
wall time: the machine is shared. The tables are checked against the generator's final state at
the end.

    PYTHONPATH=src:bench .venv/bin/python bench/delta_spark_driver_cpu.py [--changes 240000]
        [--keys 60000] [--batch 60000] [--variants base,no_checksum,...]
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_delta import check, generate, pipeline_config

from headwater.pipeline.runner import spark_session
from headwater.testing.spark_cluster import SparkCluster, cpu_seconds, processes
from headwater.topics.log import TopicLog

D = "spark.databricks.delta."
# Each variant: settings on top of the session's defaults (spark_session.session_conf).
VARIANTS: dict[str, dict[str, str]] = {
    "base": {},
    "no_checksum": {D + "writeChecksumFile.enabled": "false"},
    "snapshot_1": {D + "snapshotPartitions": "1"},
    "no_stats_skipping": {D + "stats.skipping": "false"},
    "stats_1_col": {D + "properties.defaults.dataSkippingNumIndexedCols": "1"},
    "no_history_metrics": {D + "history.metricsEnabled": "false"},
    "no_aqe": {"spark.sql.adaptive.enabled": "false"},
    "materialize_auto": {D + "merge.materializeSource": "auto"},
}
VARIANTS["lean"] = {**VARIANTS["no_aqe"], **VARIANTS["snapshot_1"]}
# Delta's own default (50 tasks rebuild a table's state before each MERGE), not the session's 4
VARIANTS["snapshot_50"] = {D + "snapshotPartitions": "50"}
VARIANTS["lean_no_checksum"] = {**VARIANTS["lean"], **VARIANTS["no_checksum"]}


def driver_cpu(spark: Any) -> float:
    table = processes()
    return (cpu_seconds(os.getpid(), tree=False, table=table)
            + cpu_seconds(spark.sparkContext._gateway.proc.pid, table=table))


def executor_cpu(cluster: SparkCluster) -> float:
    table = processes()
    return sum(cpu_seconds(p, table=table) for p in cluster.executor_pids(table))


def main() -> None:
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import apply_batch, make_target

    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=240_000)
    ap.add_argument("--keys", type=int, default=60_000)
    ap.add_argument("--batch", type=int, default=60_000)
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="names from VARIANTS, or name=key:value;key:value")
    args = ap.parse_args()
    chosen: dict[str, dict[str, str]] = {}
    for spec in args.variants.split(","):
        name, _, settings = spec.partition("=")
        chosen[name] = (dict(kv.split(":", 1) for kv in settings.split(";")) if settings
                        else VARIANTS[name])
    work = Path(tempfile.mkdtemp(prefix="headwater-delta-driver-"))
    try:
        state = generate(work / "topics", args.changes, args.keys)
        os.chdir(work)
        topic = next(p.name for p in (work / "topics").iterdir() if p.is_dir())
        with SparkCluster(workers=1, base_dir=work / "cluster") as cluster:
            spark = spark_session("headwater-delta-driver", master=cluster.master_url,
                                  spark_props={"spark.executor.memory": "768m"})
            try:
                runs = {}
                for name in chosen:
                    cfg = load_pipeline_config(pipeline_config(work, name, extra={
                        "headwater.pipeline.executors.min.records": "0",
                        "headwater.pipeline.delta.writer": "spark"}))
                    runs[name] = (cfg, make_target(cfg, spark))
                got: dict[str, list[tuple[float, float]]] = {n: [] for n in chosen}
                with TopicLog(work / "topics") as log:  # (deletes add tombstones)
                    end = log.next_offset(topic)
                bounds = [*range(0, end, args.batch), end]
                for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
                    for name, conf in chosen.items():
                        cfg, target = runs[name]
                        # (restored afterwards to the session's value, not unset: an unset
                        # setting falls back to Delta's or Spark's own default)
                        saved = {key: spark.conf.get(key, None) for key in conf}
                        for key, value in conf.items():
                            spark.conf.set(key, value)
                        try:
                            t0 = time.monotonic()
                            d0, e0 = driver_cpu(spark), executor_cpu(cluster)
                            apply_batch(work / "topics", {topic: (a, b)}, batch, cfg, target,
                                        spark=spark)
                            d, e = driver_cpu(spark) - d0, executor_cpu(cluster) - e0
                        finally:
                            for key, value in saved.items():
                                if value is None:
                                    spark.conf.unset(key)
                                else:
                                    spark.conf.set(key, value)
                        if batch:
                            got[name].append((d, e))
                        print(f"batch {batch} {name:20s}: driver {d:5.2f} s, executors "
                              f"{e:5.2f} s of CPU, {time.monotonic() - t0:5.1f} s wall "
                              f"(load {os.getloadavg()[0]:.1f})", flush=True)
                for name in chosen:
                    check(work, name, state)
            finally:
                spark.stop()
        first = next(iter(chosen))
        base = statistics.median(d for d, _ in got[first])
        print(f"\nmedian CPU per batch over batches 1-{len(bounds) - 2} ({args.changes:,} "
              f"events over {args.keys:,} keys, batches of {args.batch:,}):")
        for name, runs_ in got.items():
            d = statistics.median(x for x, _ in runs_)
            e = statistics.median(x for _, x in runs_)
            print(f"  {name:20s} driver {d:5.2f} s ({d / base:4.2f} of {first}), "
                  f"executors {e:5.2f} s  {chosen[name]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
