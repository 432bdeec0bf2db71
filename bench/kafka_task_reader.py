"""The executors' Kafka reader against Spark's Kafka source, in the same run.

`pipeline.kafka_tasks` reads a batch's slices in Spark tasks with confluent-kafka
(`read_slice`) instead of Spark's own Kafka source (`spark.read.format("kafka")`, Kafka's Java
consumer, rows handed to `mapInArrow` as Arrow batches).  This bench reads the same records
both ways on `local[2]`, in alternating rounds, the tasks doing nothing after the read but
count (so only the reads are compared), and prints per read the wall time and the CPU seconds
of the Spark JVM and of its Python workers.  The first read of each kind in the session is
printed apart: it is where the JVM compiles Spark's Kafka source's code.

    .venv/bin/python bench/kafka_task_reader.py [--records 200000] [--partitions 3]
        [--slices 4] [--rounds 3] [--value-bytes 1500]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator

import pyarrow as pa

from headwater.testing.kafka_cluster import KafkaCluster

TOPIC = "bench-reader"


def produce(broker: KafkaCluster, records: int, partitions: int, value_bytes: int) -> None:
    """Debezium-like JSON records through the capture's Kafka writer (lz4, as capture)."""
    from headwater.config.kafka import kafka_settings
    from headwater.kafka.writer import KafkaTopicWriter
    from headwater.model.topic import TopicRecord

    writer = KafkaTopicWriter(kafka_settings({
        "headwater.topics.store": "kafka", "bootstrap.servers": broker.bootstrap,
        "topic.creation.default.partitions": str(partitions),
        "topic.creation.default.replication.factor": str(broker.replication_factor)},
        "bench-reader"))
    pad = b"x" * value_bytes
    for start in range(0, records, 5000):
        writer.append({TOPIC: [
            TopicRecord(b'{"id":%d}' % i,
                        b'{"before":null,"after":{"id":%d,"pad":"%s"},"op":"c"}' % (i, pad), 0)
            for i in range(start, min(records, start + 5000))]})
    writer.flush(300)
    writer.close()


class SparkCpu:
    """CPU seconds of the Spark JVM (a child of this process whose command line names Spark)
    and of the Python workers under it."""

    def read(self) -> tuple[float, float]:
        from headwater.testing.spark_cluster import cpu_seconds, processes

        table = processes()
        me = os.getpid()
        jvms = []
        for pid, fields in table.items():
            if int(fields[1]) != me:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"org.apache.spark" in f.read():
                        jvms.append(pid)
            except OSError:
                continue
        workers = sum(cpu_seconds(c, table=table) for j in jvms for c, f in table.items()
                      if int(f[1]) == j)
        return sum(cpu_seconds(j, table=table) for j in jvms) - workers, workers


def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_pylist([{"n": sum(b.num_rows for b in batches)}])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--slices", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--value-bytes", type=int, default=1500)
    args = ap.parse_args()
    from confluent_kafka import Consumer, TopicPartition

    from headwater.pipeline import kafka_tasks
    from headwater.pipeline.runner import spark_session

    broker = KafkaCluster(nodes=1).start()
    try:
        produce(broker, args.records, args.partitions, args.value_bytes)
        settings = {"bootstrap.servers": broker.bootstrap, "group.id": "bench-reader",
                    "enable.auto.commit": "false", "enable.partition.eof": "true"}
        probe = Consumer(settings)
        ends = {p: probe.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1]
                for p in range(args.partitions)}
        probe.close()
        cut = kafka_tasks.slices({TOPIC: {p: (0, e) for p, e in ends.items()}}, args.slices)
        spark = spark_session("headwater-bench-reader", master="local[2]")

        def spark_source() -> int:
            frame = (spark.read.format("kafka")
                     .option("kafka.bootstrap.servers", broker.bootstrap)
                     .option("kafka.max.partition.fetch.bytes", str(16 << 20))
                     .option("kafka.fetch.max.bytes", str(64 << 20))
                     .option("kafka.max.poll.records", "10000")
                     .option("subscribe", TOPIC).option("startingOffsets", "earliest")
                     .option("endingOffsets", "latest").option("minPartitions", str(args.slices))
                     .load().select("topic", "partition", "offset", "key", "value"))
            return sum(r.n for r in frame.mapInArrow(count, "n long").collect())

        def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            n = 0
            for batch in batches:
                for number in batch.column(0).to_pylist():
                    topic, partition, start, end = cut[number]
                    n += len(kafka_tasks.read_slice(settings, number, topic, partition, start,
                                                    end).offsets)
            yield pa.RecordBatch.from_pylist([{"n": n}])

        def slice_reader() -> int:
            return sum(r.n for r in spark.range(0, len(cut), 1, len(cut))
                       .mapInArrow(read, "n long").collect())

        meter = SparkCpu()
        readers: dict[str, Callable[[], int]] = {"Spark's Kafka source": spark_source,
                                                 "slice reader": slice_reader}
        totals: dict[str, list[float]] = {name: [] for name in readers}
        spark.range(1).collect()  # Spark's first job (its own start-up), not timed
        for r in range(args.rounds + 1):
            order = list(readers) if r % 2 == 0 else list(reversed(readers))
            for name in order:
                jvm0, py0 = meter.read()
                t0 = time.monotonic()
                n = readers[name]()
                seconds = time.monotonic() - t0
                jvm1, py1 = meter.read()
                assert n == args.records, (name, n)
                label = "first read" if r == 0 else f"round {r}"
                print(f"{label}: {name:22s} {seconds:6.1f}s wall, CPU: Spark JVM "
                      f"{jvm1 - jvm0:5.1f}s, Python workers {py1 - py0:5.1f}s, "
                      f"together {jvm1 - jvm0 + py1 - py0:5.1f}s", flush=True)
                if r:
                    totals[name].append(jvm1 - jvm0 + py1 - py0)
        spark.stop()
        a, b = (sorted(totals[k])[len(totals[k]) // 2] for k in readers)
        print(f"median CPU a round: Spark's Kafka source {a:.1f}s, slice reader {b:.1f}s: "
              f"the slice reader costs {b / a:.2f} of Spark's Kafka source")
    finally:
        broker.cleanup()


if __name__ == "__main__":
    main()
