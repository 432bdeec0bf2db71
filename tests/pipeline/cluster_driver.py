"""The pipeline's driver for the cluster test, in a process of its own (a pytest process may
already hold a local Spark session, the driver's CPU must be its own, and the test kills it
with -9 in the middle of a batch).

    python -m tests.pipeline.cluster_driver CONFIG[,CONFIG...] MASTER_URL EVENT_LOG_DIR \
        HANDSHAKE_DIR N warm-up|cold

Starts a session on MASTER_URL with Spark's event log on, waits until N executors registered,
runs a warm-up pipeline of 300 events (not when `cold`), writes HANDSHAKE_DIR/ready (the
application's id, as JSON), waits for HANDSHAKE_DIR/go, then runs one pipeline per CONFIG at
once in that session (AvailableNow: each to the end of what is there) and writes
HANDSHAKE_DIR/done.  The test
measures the CPU itself, from /proc, between "go" and the end or the kill: a driver killed
mid-batch writes nothing more."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from headwater.testing.timeouts import scaled

CONNECT_BACK = "Python worker failed to connect back"
ATTEMPTS = 10


def main() -> None:
    configs, master, event_log, handshake, executors, warm = sys.argv[1:7]
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("headwater.pipeline").setLevel(logging.INFO)  # the batches, in the log
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import spark_session

    cfgs = [load_pipeline_config(Path(c)) for c in configs.split(",")]
    spark = spark_session("headwater-cluster-test", master=master, spark_props={
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": event_log,
        "spark.eventLog.compress": "false",
        "spark.executor.memory": "768m", "spark.driver.memory": "1g",
    })
    sc = spark.sparkContext
    deadline = time.monotonic() + scaled(180)
    while sc._jsc.sc().getExecutorMemoryStatus().size() < int(executors) + 1:
        if time.monotonic() > deadline:
            raise SystemExit("executors did not register")
        time.sleep(0.2)
    if warm == "warm-up":
        warm_up(spark, Path(handshake) / "warm-up")
    Path(handshake, "ready").write_text(json.dumps({"app_id": sc.applicationId}))
    while not Path(handshake, "go").exists():
        time.sleep(0.05)
    started = time.monotonic()
    queries: list[Query] = []
    for cfg in cfgs:
        # one query's start at a time: each starts a Python runner for its source, which must
        # connect back to the JVM within Spark's fixed 10 s
        while queries and not queries[-1].planned() and not queries[-1].finished():
            time.sleep(0.2)
        queries.append(Query(spark, cfg))
    while not all([q.finished() for q in queries]):  # (each asked: a failed one restarts)
        time.sleep(0.2)
    Path(handshake, "done").write_text(json.dumps({"wall_s": time.monotonic() - started}))
    spark.stop()


class Query:
    """One pipeline's streaming query, started again when Spark's fixed 10 s wait for the
    streaming source's Python runner to connect back ran out (a loaded 2-core machine
    sometimes misses it): a restart of the query is what the pipeline does after any crash,
    and it is said here (the driver's log), not hidden."""

    def __init__(self, spark: Any, cfg: Any) -> None:
        from headwater.pipeline.runner import start

        self.spark, self.cfg, self.start = spark, cfg, start
        self.attempt = 0
        self.query = start(spark, cfg, once=True)

    def planned(self) -> bool:
        """The query planned a batch (its source's runner is up)."""
        offsets = self.cfg.checkpoint_dir / "offsets"
        return offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())

    def finished(self) -> bool:
        if self.query.isActive:
            return False
        failure = self.query.exception()
        if failure is None:
            return True
        if CONNECT_BACK not in str(failure) or self.attempt == ATTEMPTS:
            raise SystemExit(f"the query failed: {failure}")
        self.attempt += 1
        print(f"query restarted: {CONNECT_BACK} (attempt {self.attempt})", flush=True)
        self.query = self.start(self.spark, self.cfg, once=True)
        return False


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
