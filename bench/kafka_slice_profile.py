"""One executor task's Kafka read alone: `kafka_tasks.read_slice` over a partition in this
process, no Spark, timed in CPU seconds (this thread's and the process's, which includes
librdkafka's broker threads: fetching, lz4), with `--profile` under cProfile.

Why: the pipeline from Kafka costs its Python workers more CPU than the pipeline from the local
log (`bench/capture_into_kafka.py` prints both); this says how much of that gap is the read
itself, a record at a time, before any decoding.  The records are `kafka_task_reader`'s (values
padded with one repeated byte, which lz4 shrinks far more than real events): a floor for the
read, not its cost on a capture's topics.  Measured 2026-11-30 (one node, load 3): 3.3 µs a
record of process CPU, 2.3 µs of it in the reading thread, `consume` itself 57 %.

    .venv/bin/python bench/kafka_slice_profile.py [--records 200000] [--value-bytes 1500]
        [--rounds 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from kafka_task_reader import TOPIC, produce

from headwater.testing.kafka_cluster import KafkaCluster


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--value-bytes", type=int, default=1500)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    from headwater.pipeline.kafka_tasks import read_slice

    with KafkaCluster(nodes=1) as broker:
        produce(broker, args.records, 1, args.value_bytes)
        consumer = {"bootstrap.servers": broker.bootstrap, "group.id": "bench-slice",
                    "enable.auto.commit": "false"}
        thread, process = [], []
        for r in range(args.rounds):
            t0, p0 = time.thread_time(), time.process_time()
            profile = cProfile.Profile() if args.profile and r == args.rounds - 1 else None
            if profile is not None:
                profile.enable()
            part = read_slice(consumer, 0, TOPIC, 0, 0, args.records)
            if profile is not None:
                profile.disable()
            thread.append(time.thread_time() - t0)
            process.append(time.process_time() - p0)
            assert len(part.offsets) == args.records, len(part.offsets)
            print(f"round {r + 1}: {args.records} records, CPU {thread[-1]:.2f} s in this "
                  f"thread, {process[-1]:.2f} s in the process "
                  f"({process[-1] / args.records * 1e6:.1f} µs a record)")
        print(f"median: thread {statistics.median(thread):.2f} s, process "
              f"{statistics.median(process):.2f} s "
              f"({statistics.median(process) / args.records * 1e6:.1f} µs a record)")
        if profile is not None:
            pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
