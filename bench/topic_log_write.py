"""Write throughput of the local topic log (`headwater.topics.log.TopicLog.append`).

Appends N records of ~1 KB (a Debezium-like envelope as the value, a small JSON key) in batches,
fsync included, and prints records/s, MB/s and the CPU time per record (process time, which is
what the "one core" budget means; wall time also includes waiting for the disk).

    PYTHONPATH=src .venv/bin/python bench/topic_log_write.py [--records N] [--batch B]
        [--topics T] [--dir PATH]

The records are encoded once up front: the benchmark measures the log, not the formatter.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import orjson

from headwater.topics.log import OutRecord, TopicLog


def make_records(n: int, topics: int) -> list[tuple[str, OutRecord]]:
    out = []
    ts = 1_700_000_000_000
    for i in range(n):
        row = {
            "id": i,
            "first_name": "Anne-Marie",
            "last_name": "Kretchmar",
            "email": f"annek{i}@noanswer.org",
            "note": "x" * 420,
        }
        value = orjson.dumps(
            {
                "before": None,
                "after": row,
                "source": {
                    "version": "2.7.0.Final",
                    "connector": "postgresql",
                    "name": "inventory",
                    "ts_ms": ts + i,
                    "snapshot": "false",
                    "db": "inventory",
                    "sequence": f'["{i * 100}","{i * 100 + 40}"]',
                    "schema": "public",
                    "table": "customers",
                    "txId": 770 + i // 10,
                    "lsn": 24023128 + i * 200,
                    "xmin": None,
                },
                "transaction": None,
                "op": "c",
                "ts_ms": ts + i,
                "ts_us": (ts + i) * 1000,
                "ts_ns": (ts + i) * 1_000_000,
            }
        )
        key = orjson.dumps({"id": i})
        out.append((f"inventory.public.t{i % topics}", OutRecord(key, value, ts + i)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1000, help="records per append() call")
    ap.add_argument("--topics", type=int, default=1)
    ap.add_argument("--dir", type=Path, default=None, help="root dir (default: a temp dir)")
    ap.add_argument("--segment-mb", type=int, default=64)
    args = ap.parse_args()

    records = make_records(args.records, args.topics)
    avg = sum(len(r.key or b"") + len(r.value or b"") for _, r in records) / len(records)
    batches = []
    for i in range(0, len(records), args.batch):
        batch: dict[str, list[OutRecord]] = {}
        for topic, rec in records[i : i + args.batch]:
            batch.setdefault(topic, []).append(rec)
        batches.append(batch)

    root = Path(tempfile.mkdtemp(prefix="hw-bench-", dir=args.dir))
    try:
        with TopicLog(root, segment_bytes=args.segment_mb * 1024 * 1024) as log:
            t0, c0 = time.perf_counter(), time.process_time()
            for batch in batches:
                log.append(batch)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        written = sum(p.stat().st_size for p in root.rglob("*.jsonl"))
    finally:
        shutil.rmtree(root)
    n = len(records)
    print(
        f"{n} records (key+value avg {avg:.0f} B, line avg {written / n:.0f} B), "
        f"batch {args.batch}, {args.topics} topic(s), root {root.parent}"
    )
    print(
        f"wall: {n / wall:,.0f} records/s, {written / wall / 1e6:,.0f} MB/s "
        f"({len(batches) / wall:,.0f} appends/s)"
    )
    print(f"cpu:  {n / cpu:,.0f} records/s ({cpu / n * 1e6:.2f} us/record)")


if __name__ == "__main__":
    main()
