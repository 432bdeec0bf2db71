"""Cost of a compaction pass of the local topic log (`headwater.topics.compactor`).

Writes N Debezium-like records (~2.5 KB, key and value with their Connect schemas) updating K
keys into sealed segments, then times, on the same files:

* the reference: the pipeline's event path reading the whole topic (`source.read_range`, the
  same per-line splitting and checking in Python that a pass does);
* a first pass over the whole topic (every segment dirty: map, rewrite, rename);
* a second pass after as many records again were appended (the dirty half and the clean half
  are read, the clean one rewritten again).

Both passes also merge the segments into files of at most `--segment-bytes` (what a pass
keeps is a tenth here): the file counts are printed.

A pass runs on the capture's writer thread: its duration is how long appends wait.

    PYTHONPATH=src .venv/bin/python bench/topic_compaction.py [--records N] [--keys K]
        [--segment-bytes B] [--dir PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import orjson

from headwater.model.topic import TopicRecord
from headwater.pipeline.source import read_range
from headwater.topics.compaction import CompactionPolicy
from headwater.topics.compactor import compact_topic
from headwater.topics.log import TopicLog
from headwater.topics.reader import list_topics
from headwater.topics.retention import RetentionPolicy

TOPIC = "inventory.public.customers"
FIELDS = [{"type": t, "optional": o, "field": f} for t, o, f in (
    ("int32", False, "id"), ("string", False, "first_name"), ("string", False, "last_name"),
    ("string", False, "email"), ("string", True, "note"))]


def records(first: int, n: int, keys: int) -> list[TopicRecord]:
    key_schema = {"type": "struct", "optional": False, "fields": FIELDS[:1],
                  "name": f"{TOPIC}.Key"}
    row_schema = {"type": "struct", "optional": True, "fields": FIELDS, "name": f"{TOPIC}.Value"}
    value_schema = {"type": "struct", "optional": False, "name": f"{TOPIC}.Envelope",
                    "fields": [{**row_schema, "field": "before"}, {**row_schema, "field": "after"},
                               {"type": "string", "optional": False, "field": "op"}]}
    out = []
    for i in range(first, first + n):
        k = i % keys
        row = {"id": k, "first_name": "Anne", "last_name": "Kretchmar",
               "email": f"annek{k}@noanswer.org", "note": f"update {i} " + "x" * 400}
        out.append(TopicRecord(
            orjson.dumps({"schema": key_schema, "payload": {"id": k}}),
            orjson.dumps({"schema": value_schema,
                          "payload": {"before": None, "after": row, "op": "u"}}),
            1_700_000_000_000 + i))
    return out


def append(root: Path, first: int, n: int, keys: int, segment_bytes: int) -> None:
    with TopicLog(root, segment_bytes=segment_bytes) as log:
        for at in range(first, first + n, 10_000):
            log.append({TOPIC: records(at, min(10_000, first + n - at), keys)})
    then = time.time() - 3600  # sealed an hour ago
    for p in (root / TOPIC).iterdir():
        os.utime(p, (then, then))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--segment-bytes", type=int, default=16 << 20)
    ap.add_argument("--dir", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        root = work / "topics"
        n = args.records
        append(root, 0, n, args.keys, args.segment_bytes)
        size = sum(p.stat().st_size for p in (root / TOPIC).iterdir())
        policy = RetentionPolicy(delete=False, compaction=CompactionPolicy())
        t = time.perf_counter()
        read = sum(1 for _ in read_range(root, TOPIC, 0, n))
        reference = time.perf_counter() - t
        t = time.perf_counter()
        first = compact_topic(root, TOPIC, policy, int(time.time() * 1000),
                              segment_bytes=args.segment_bytes)
        one = time.perf_counter() - t
        assert first is not None and read == n
        append(root, n, n, args.keys, args.segment_bytes)
        t = time.perf_counter()
        second = compact_topic(root, TOPIC, policy, int(time.time() * 1000),
                               segment_bytes=args.segment_bytes)
        two = time.perf_counter() - t
        assert second is not None
        (info,) = list_topics(root)
        print(f"{n} records ({size / 1e6:.0f} MB, {args.keys} keys) in "
              f"{args.segment_bytes / (1 << 20):g} MiB segments")
        print(f"reference, read_range of the topic: {reference:.2f} s "
              f"({n / reference / 1e3:.0f} k records/s)")
        print(f"first pass:  {one:.2f} s ({n / one / 1e3:.0f} k records/s, "
              f"{one / reference:.2f}x the reference), {first.removed} removed; "
              f"{first.segments} segments into {first.files} file(s)")
        print(f"second pass: {two:.2f} s over {second.kept + second.removed} records "
              f"({(second.kept + second.removed) / two / 1e3:.0f} k records/s), "
              f"{second.removed} removed; {info.record_count} records left; "
              f"{second.segments} segments into {second.files} file(s)")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
