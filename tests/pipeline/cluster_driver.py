"""The pipeline's driver for the cluster test, in a process of its own (a pytest process may
already hold a local Spark session, and the driver's CPU must be its own).

    python -m tests.pipeline.cluster_driver CONFIG MASTER_URL EVENT_LOG_DIR HANDSHAKE_DIR N

Starts a session on MASTER_URL with Spark's event log on, waits until N executors registered,
runs a warm-up pipeline of 300 events, writes HANDSHAKE_DIR/ready, waits for HANDSHAKE_DIR/go,
runs the pipeline once (AvailableNow) and writes HANDSHAKE_DIR/result.json: the driver's CPU
seconds (Python and its JVM, from /proc) spent by the run, beyond the start-up."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

CONNECT_BACK = "Python worker failed to connect back"


def main() -> None:
    config, master, event_log, handshake, executors = sys.argv[1:6]
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import spark_session, start
    from headwater.testing.spark_cluster import cpu_seconds

    cfg = load_pipeline_config(Path(config))
    spark = spark_session("headwater-cluster-test", master=master, spark_props={
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": event_log,
        "spark.eventLog.compress": "false",
        "spark.executor.memory": "768m", "spark.driver.memory": "1g",
    })
    sc = spark.sparkContext
    deadline = time.monotonic() + 180
    while sc._jsc.sc().getExecutorMemoryStatus().size() < int(executors) + 1:
        if time.monotonic() > deadline:
            raise SystemExit("executors did not register")
        time.sleep(0.2)
    warm_up(spark, Path(handshake) / "warm-up")
    Path(handshake, "ready").write_text(str(os.getpid()))
    while not Path(handshake, "go").exists():
        time.sleep(0.05)
    before = cpu_seconds(os.getpid())
    jvm_before = cpu_seconds(sc._gateway.proc.pid)
    started = time.monotonic()
    for attempt in range(3):
        query = start(spark, cfg, once=True)
        query.awaitTermination()
        failure = query.exception()
        if failure is None:
            break
        # Spark waits a fixed 10 s for the streaming source's Python runner to connect back,
        # which a loaded 2-core machine sometimes misses: a restart of the query (what the
        # pipeline does after any crash) is the remedy, and it is said here, not hidden.
        if CONNECT_BACK not in str(failure) or attempt == 2:
            raise SystemExit(f"the query failed: {failure}")
        print(f"query restarted: {CONNECT_BACK} (attempt {attempt + 1})", flush=True)
    jvm = sc._gateway.proc.pid
    result = {"driver_cpu_s": cpu_seconds(os.getpid()) - before,
              "driver_jvm_cpu_s": cpu_seconds(jvm) - jvm_before,
              "wall_s": time.monotonic() - started, "app_id": sc.applicationId}
    Path(handshake, "result.json").write_text(json.dumps(result))
    spark.stop()


def warm_up(spark: Any, work: Path) -> None:
    """A first pipeline run of 300 events into a table of its own: the session's first
    streaming query, first Spark SQL jobs and the executors' Python workers are start-up."""
    import random

    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import start
    from tests.pipeline.test_columnar import workload, write

    write(work / "topics", workload(random.Random(1), mysql=False, n=300))
    config = work / "warm-up.properties"
    config.write_text(f"topic.prefix=s\nheadwater.topics.dir={work / 'topics'}\n"
                      f"headwater.pipeline.delta.path={work / 'delta'}\n"
                      f"headwater.pipeline.checkpoint.dir={work / 'checkpoint'}\n")
    query = start(spark, load_pipeline_config(config), once=True)
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"the warm-up query failed: {query.exception()}")


if __name__ == "__main__":
    main()
