"""Capture into Kafka vs into the local topic log, and the pipeline from each into Delta.

The PostgreSQL workload is bench/capture_vs_pg_recvlogical.py's generator (N row changes,
inserts/updates/deletes in transactions of 1 to 2000 rows), decoded by two pgoutput slots
created beforehand, so both captures read exactly the same WAL.  Then:

- `headwater run` into the local log (the reference), until its stored offset reaches the end
  LSN (offsets in a file in both runs, so only the topic store differs);
- `headwater run` with headwater.topics.store=kafka into a three-node Apache Kafka 4.4 cluster
  on this machine (headwater.testing.kafka_cluster: KRaft, replication factor 3,
  min.insync.replicas=2; topic.creation.default.partitions=--partitions), idempotent producer,
  acks=all, produced asynchronously, each batch's offset stored once the brokers acknowledged
  it and every batch before it (as Kafka Connect's source tasks);
- the pipeline (SCD1 into Delta, Trigger.AvailableNow) from the local log, then from Kafka.

Before the captures, the cluster is warmed, not timed (`warm_up`): a fresh cluster's first
producer waits for its controller and coordinators, and the brokers' JVMs compile their produce,
replication and fetch paths under the first load they see, CPU a running cluster spent long
before that here comes out of the same two cores as the capture's.  So `--warm-up-records`
records like the workload's (1 KB JSON values) go through the Kafka writer into a scratch topic
of the same layout and are read back once by the pipeline's Kafka reader.  Before the timed
pipelines, each store's pipeline runs once over round 1's topics into a scratch target: Spark's
first job, numba's kernels, and the Spark JVM's compiled code for Spark's Kafka source (a cold
JVM spent 20 s of CPU on its first 200k Kafka records, a warm one 4 s).  `--rounds N` runs the
captures and the pipelines N times, alternating local and Kafka (a slot and a topic prefix a
round), and prints each round and the ratio of the medians, so that a machine whose load moves
during the run does not decide the ratio by where it fell.
`--executors-min-records` sets `headwater.pipeline.executors.min.records` for both pipelines
(0: every batch is read, decoded and netted on executors, the Kafka one through Spark's Kafka
source).

Prints events/s of each and the Kafka figures as ratios of the same run's local-log figures.
The three brokers share the machine's cores with Headwater and PostgreSQL (and every replica
is written three times on the same disk): the figures say what Headwater's Kafka path costs
here, not what a real cluster on its own machines would sustain.

    .venv/bin/python bench/capture_into_kafka.py [--changes 200000] [--partitions 3]
        [--rounds 1] [--warm-up-records 50000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from headwater.testing.kafka_cluster import KafkaCluster
from headwater.testing.localpg import LocalPostgres

_spec = importlib.util.spec_from_file_location(
    "capture_vs_pg_recvlogical", Path(__file__).with_name("capture_vs_pg_recvlogical.py"))
assert _spec is not None and _spec.loader is not None
_recv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_recv)
GEN: str = _recv.GEN
lsn = _recv.lsn


def config(pg: LocalPostgres, work: Path, slot: str, extra: dict[str, Any],
           prefix: str = "bench") -> Path:
    work.mkdir(parents=True, exist_ok=True)
    props = {
        "name": f"bench-{slot}",
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1", "database.port": pg.port,
        "database.user": pg.user, "database.dbname": "bench", "topic.prefix": prefix,
        "slot.name": slot, "publication.name": "bench_pub", "snapshot.mode": "no_data",
        "offset.storage.file.filename": work / "offsets.json",
        "headwater.topics.dir": work / "topics",
        "headwater.pipeline.delta.path": work / "delta",
        "headwater.pipeline.checkpoint.dir": work / "checkpoint",
        **extra,
    }
    path = work / "bench.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def capture(path: Path, end_lsn: int) -> float:
    offsets = path.parent / "offsets.json"
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "headwater.cli", "run", str(path),
                             "--log-level", "WARNING"])
    while True:
        time.sleep(0.05)
        if proc.poll() is not None:
            raise SystemExit(f"headwater exited with {proc.returncode}")
        try:
            if json.loads(offsets.read_text())["offset"]["lsn"] >= end_lsn:
                break
        except (OSError, ValueError, KeyError):
            continue
    seconds = time.monotonic() - t0
    proc.terminate()
    proc.wait(60)
    return seconds


def warm_up(broker: KafkaCluster, partitions: int, records: int) -> None:
    """`records` records like the workload's through the capture's writer into a scratch topic,
    then read back once by the pipeline's reader; not timed (the module's docstring says why:
    a second capture into the same cluster took 12.7 s where the first took 18.8 s)."""
    from headwater.config.kafka import kafka_settings
    from headwater.kafka.consume import end_offsets
    from headwater.kafka.writer import KafkaTopicWriter
    from headwater.model.topic import TopicRecord
    from headwater.pipeline.kafka_source import KafkaTopics

    settings = kafka_settings({
        "headwater.topics.store": "kafka", "bootstrap.servers": broker.bootstrap,
        "topic.creation.default.partitions": str(partitions),
        "topic.creation.default.replication.factor": str(broker.replication_factor)},
        "bench-warm-up")
    writer = KafkaTopicWriter(settings)
    pad = b"x" * 900
    for start in range(0, max(records, 1), 2000):
        writer.append({"bench-warm-up": [
            TopicRecord(b'{"id":%d}' % i,
                        b'{"before":null,"after":{"id":%d,"pad":"%s"},"op":"c"}' % (i, pad), 0)
            for i in range(start, min(start + 2000, max(records, 1)))]})
    writer.flush(300)
    writer.close()
    topics = KafkaTopics(settings.consumer_config("bench-warm-up"), "bench-warm-up")
    ends = end_offsets(topics.consumer, [("bench-warm-up", p) for p in range(partitions)])
    read = 0
    for _ in range(2):  # the fetch path twice: the JIT's second tier wants more than one pass
        read += len(topics.fetch_columns("bench-warm-up", {
            p: (0, ends[("bench-warm-up", p)]) for p in range(partitions)})[0])
    topics.consumer.close()
    print(f"warm-up: {records} records produced, {read} read", flush=True)


class CpuMeter:
    """CPU seconds between `start` and `stop` of: this process (the driver's Python), its JVM
    (the Spark driver, which in `local[2]` runs the tasks' JVM side), the Python workers under
    that JVM, and the brokers; what a pipeline run costs each side, beside its wall time."""

    def __init__(self, broker: KafkaCluster) -> None:
        self.broker = broker
        self.base: dict[str, float] = {}

    def read(self) -> dict[str, float]:
        import os

        from headwater.testing.spark_cluster import cpu_seconds, processes

        table = processes()
        me = os.getpid()
        # the brokers are this process's children too: the Spark JVM is the other one
        brokers = {n.proc.pid for n in self.broker.nodes.values() if n.proc is not None}
        jvms = [pid for pid, f in table.items() if int(f[1]) == me and pid not in brokers]
        workers = sum(cpu_seconds(c, table=table) for j in jvms for c, f in table.items()
                      if int(f[1]) == j)
        jvm = sum(cpu_seconds(j, table=table) for j in jvms) - workers
        return {"driver": cpu_seconds(me, tree=False, table=table), "jvm": jvm,
                "python workers": workers,
                "brokers": sum(cpu_seconds(pid, table=table) for pid in brokers)}

    def start(self) -> None:
        self.base = self.read()

    def stop(self) -> str:
        now = self.read()
        return ", ".join(f"{k} {now[k] - self.base.get(k, 0.0):.1f}" for k in now)


def pipeline(spark: Any, path: Path, meter: CpuMeter | None = None) -> float:
    """Seconds of one `--once` run.  A run that fails because one of Spark's Python workers
    missed its fixed 10 s connect-back timeout (a loaded machine) is started again from
    scratch (target and checkpoint removed), up to three times, and only the last is timed."""
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import close_query, start

    for attempt in range(3):
        t0 = time.monotonic()
        if meter is not None:
            meter.start()
        query = start(spark, load_pipeline_config(path), once=True)
        try:
            query.awaitTermination()
        except Exception as exc:  # (StreamingQueryException)
            if attempt == 2 or "connect back" not in str(exc):
                raise
            print(f"{path.parent.name}: a Python worker did not connect back in time; "
                  "run again from scratch", flush=True)
            for name in ("delta", "checkpoint"):
                shutil.rmtree(path.parent / name, ignore_errors=True)
            continue
        finally:
            close_query(query)
        if query.exception() is not None:
            raise SystemExit(str(query.exception()))
        seconds = time.monotonic() - t0
        print(f"{path.parent.name}: {seconds:.1f}s; Spark's trigger phases (ms): "
              f"{phases(query)}", flush=True)
        if meter is not None:
            print(f"{path.parent.name}: CPU seconds: {meter.stop()}", flush=True)
        return seconds
    raise AssertionError("unreachable")


def phases(query: Any) -> str:
    """The query's trigger phases summed over its triggers (`durationMs` of its progress
    reports: addBatch is the batch function, latestOffset and getBatch the source's
    planning), to tell the batch's own time from the streaming around it."""
    total: dict[str, int] = {}
    progress = query.recentProgress
    for report in progress:
        for name, ms in (report.durationMs or {}).items():
            total[name] = total.get(name, 0) + int(ms)
    return f"{len(progress)} triggers, " + ", ".join(
        f"{k} {v}" for k, v in sorted(total.items(), key=lambda kv: -kv[1]))


def median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2] if len(xs) % 2 else sum(sorted(xs)[len(xs) // 2 - 1:
                                                                   len(xs) // 2 + 1]) / 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1,
                    help="captures and pipelines per store, alternating (the medians compared)")
    ap.add_argument("--warm-up-records", type=int, default=50_000,
                    help="records through the cluster before anything is timed")
    ap.add_argument("--executors-min-records", type=int, default=None,
                    help="headwater.pipeline.executors.min.records of both pipelines (default: "
                         "the pipeline's; 0: every batch read, decoded and netted on executors)")
    args = ap.parse_args()
    rounds = range(max(1, args.rounds))
    work = Path(tempfile.mkdtemp(prefix="headwater-bench-kafka-"))
    pg = LocalPostgres().start()  # its own temporary directory (readable by postgres)
    broker = KafkaCluster(nodes=args.nodes, quick_start=False).start()
    try:
        pg.create_database("bench")
        conn = pg.connect("bench")
        with conn.cursor() as cur:
            cur.execute(GEN)
            for r in rounds:
                for store in ("local", "kafka"):
                    cur.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')",
                                (f"hw_{store}_{r}",))
        conn.commit()
        conn.autocommit = True
        with conn.cursor() as cur:
            t0 = time.monotonic()
            cur.execute("CALL gen(%s)", (args.changes,))
            print(f"generated {args.changes} changes in {time.monotonic() - t0:.1f}s")
            cur.execute("SELECT pg_current_wal_insert_lsn()::text")
            end = lsn(cur.fetchone()[0])
            cur.execute("SELECT pg_stat_force_next_flush()")
            time.sleep(1)
            cur.execute("SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables "
                        "WHERE relname = 'bench'")
            made = int(cur.fetchone()[0])
            print(f"row changes made: {made}")
        spark_props = {} if args.executors_min_records is None else {
            "headwater.pipeline.executors.min.records": args.executors_min_records}
        configs = {}
        for r in rounds:
            configs["local", r] = config(pg, work / f"local-{r}", f"hw_local_{r}", spark_props)
            configs["kafka", r] = config(pg, work / f"kafka-{r}", f"hw_kafka_{r}", {
                **spark_props, "headwater.topics.store": "kafka",
                "bootstrap.servers": broker.bootstrap,
                "topic.creation.default.partitions": args.partitions,
                "topic.creation.default.replication.factor": broker.replication_factor},
                prefix=f"bench{r}")
        n = made
        warm_up(broker, args.partitions, args.warm_up_records)
        captures: dict[str, list[float]] = {"local": [], "kafka": []}
        for r in rounds:
            for store in ("local", "kafka") if r % 2 == 0 else ("kafka", "local"):
                captures[store].append(capture(configs[store, r], end))
            print(f"round {r + 1}: capture into the local log {captures['local'][-1]:.1f}s, "
                  f"into Kafka {captures['kafka'][-1]:.1f}s", flush=True)
        c_local, c_kafka = median(captures["local"]), median(captures["kafka"])
        print(f"capture into the local log: {n / c_local:10,.0f} events/s ({c_local:.1f}s)")
        print(f"capture into Kafka ({args.nodes} nodes, acks=all): {n / c_kafka:10,.0f} events/s"
              f" ({c_kafka:.1f}s)  ratio {c_local / c_kafka:.2f}", flush=True)
        from headwater.pipeline.runner import spark_session

        spark = spark_session("headwater-bench-kafka", master="local[2]")
        pipelines: dict[str, list[float]] = {"local": [], "kafka": []}
        meter = CpuMeter(broker)
        try:
            # Warm-up (Spark's first job, numba's compilation), not timed: a third slot's
            # capture is not needed, the local log is read into a scratch target.
            warm = config(pg, work / "warm", "hw_local_0", {
                **spark_props, "headwater.topics.dir": work / "local-0" / "topics"})
            pipeline(spark, warm)
            # ... and the same for Kafka: round 1's topics read into a scratch target, so that
            # the Spark JVM has compiled Spark's Kafka source, its rows and their Arrow form
            # (the first such read cost the JVM 20 s of CPU here, the next ones 4 s: a
            # running pipeline pays that once, not every batch)
            pipeline(spark, config(pg, work / "warm-kafka", "hw_kafka_0", {
                **spark_props, "name": "bench-warm-kafka", "headwater.topics.store": "kafka",
                "bootstrap.servers": broker.bootstrap,
                "topic.creation.default.partitions": args.partitions,
                "topic.creation.default.replication.factor": broker.replication_factor},
                prefix="bench0"))
            for r in rounds:
                for store in ("local", "kafka") if r % 2 == 0 else ("kafka", "local"):
                    pipelines[store].append(pipeline(spark, configs[store, r], meter))
        finally:
            spark.stop()
        p_local, p_kafka = median(pipelines["local"]), median(pipelines["kafka"])
        print(f"pipeline from the local log: {n / p_local:9,.0f} events/s ({p_local:.1f}s)")
        print(f"pipeline from Kafka: {n / p_kafka:17,.0f} events/s ({p_kafka:.1f}s)"
              f"  ratio {p_local / p_kafka:.2f}")
        if len(rounds) > 1:
            print(f"(medians of {len(rounds)} rounds; ratios per round: capture "
                  + ", ".join(f"{a / b:.2f}" for a, b in zip(captures["local"],
                                                             captures["kafka"], strict=True))
                  + "; pipeline " + ", ".join(
                      f"{a / b:.2f}" for a, b in zip(pipelines["local"], pipelines["kafka"],
                                                     strict=True)) + ")")
    finally:
        broker.cleanup()
        pg.cleanup()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
