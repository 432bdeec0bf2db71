"""One part of a pipeline batch, from the local topic log and from Kafka, in this process: the
CPU of each step of an executor task on the same change events, so that the Kafka reader's
extra cost (`bench/capture_into_kafka.py` shows its Python workers spending about twice the
local log's) is found step by step.

The events are `change_events`' (Debezium JSON of one PostgreSQL table, with schemas, as the
capture writes them), written to a topic log, then copied into a one-partition topic of a
one-node Apache Kafka through the capture's own Kafka writer (lz4, as capture produces).  Each
round times, in CPU seconds of this process (librdkafka's threads included):

- local: `tasks.run_task` over the whole range (the numba scan, decode, net, stage);
- kafka: `kafka_tasks.read_slice` (the read into Arrow), then `tasks.run_part` on it (the
  lines cut from the Arrow buffers, the same decode, net and stage).

Measured 2026-11-30 (200k events of 3.4 KB, load 6-8 from other jobs, medians of 3 rounds):
local 0.77 s; Kafka read 0.87 s + stage 0.79 s (2.14x).  The stage costs what the local log's
whole part does (the lines cut from the Arrow buffers as cheaply as the numba scan cuts them
from the segment): the gap is the read, 4.3 µs a record, two thirds of it in librdkafka's
`consume` (the fetch, lz4's decompression of 680 MB, a Python object and a copy per value),
the rest the chunks' joins and the per-call checks.

    PYTHONPATH=src:bench .venv/bin/python bench/kafka_part_cost.py [--changes 200000]
        [--keys 40000] [--rounds 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from change_events import TOPIC, write

from headwater.testing.kafka_cluster import KafkaCluster


def copy_to_kafka(root: Path, broker: KafkaCluster, count: int) -> None:
    from headwater.config.kafka import kafka_settings
    from headwater.kafka.writer import KafkaTopicWriter
    from headwater.model.topic import TopicRecord
    from headwater.pipeline.source import read_range

    writer = KafkaTopicWriter(kafka_settings({
        "headwater.topics.store": "kafka", "bootstrap.servers": broker.bootstrap,
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1"}, "bench-part"))
    batch: list[TopicRecord] = []
    for _offset, key, value in read_range(root, TOPIC, 0, count):
        batch.append(TopicRecord(key, value, 0))
        if len(batch) == 5000:
            writer.append({TOPIC: batch})
            batch = []
    if batch:
        writer.append({TOPIC: batch})
    writer.flush(300)
    writer.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=40_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    from headwater.pipeline import tasks
    from headwater.pipeline.kafka_tasks import read_slice

    work = Path(tempfile.mkdtemp(prefix="hw-part-"))
    try:
        root = work / "topics"
        write(root, args.changes, args.keys)
        end = args.changes
        with KafkaCluster(nodes=1, base_dir=work / "kafka") as broker:
            copy_to_kafka(root, broker, end)
            consumer = {"bootstrap.servers": broker.bootstrap, "group.id": "bench-part",
                        "enable.auto.commit": "false"}
            figures: dict[str, list[float]] = {"local": [], "kafka read": [], "kafka stage": []}
            for r in range(args.rounds + 1):  # round 0 warms (numba's kernels, imports)
                profile = cProfile.Profile() if args.profile and r == args.rounds else None
                staging = work / f"staging-{r}"
                t0 = time.process_time()
                if profile:
                    profile.enable()
                local = tasks.run_task(root, staging / "local", "scd1",
                                       tasks.Task(TOPIC, 0, end, 0))
                t1 = time.process_time()
                part = read_slice(consumer, 0, TOPIC, 0, 0, end)
                t2 = time.process_time()
                kafka = tasks.run_part(part, staging / "kafka", "scd1")
                t3 = time.process_time()
                if profile:
                    profile.disable()
                # (a result per table: run_task and run_part give lists)
                assert all(x.refused is None for x in [*local, *kafka]), (local, kafka)
                events = (sum(x.events for x in local), sum(x.events for x in kafka))
                assert events[0] == events[1], events
                print(f"round {r}: local {t1 - t0:.2f} s; kafka read {t2 - t1:.2f} s + stage "
                      f"{t3 - t2:.2f} s = {t3 - t1:.2f} s ({(t3 - t1) / (t1 - t0):.2f}x)"
                      + ("  (warm-up)" if r == 0 else ""))
                if r:
                    figures["local"].append(t1 - t0)
                    figures["kafka read"].append(t2 - t1)
                    figures["kafka stage"].append(t3 - t2)
                if profile:
                    pstats.Stats(profile).sort_stats("tottime").print_stats(20)
            med = {k: statistics.median(v) for k, v in figures.items()}
            size = (root / TOPIC)
            print(f"medians of {args.rounds} rounds, {end} events "
                  f"({sum(p.stat().st_size for p in size.glob('*.jsonl')) / end:.0f} bytes a "
                  f"record in the log): local {med['local']:.2f} s, kafka read "
                  f"{med['kafka read']:.2f} s + stage {med['kafka stage']:.2f} s "
                  f"({(med['kafka read'] + med['kafka stage']) / med['local']:.2f}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
