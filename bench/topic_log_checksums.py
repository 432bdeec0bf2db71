"""What the topic log's per-record CRC-32C costs: the writer with checksums against the same
writer without them (the encoding of format 1, kept here only: checksums cannot be switched
off), measured in the same run, and the event path's read of both logs.

    PYTHONPATH=src:bench .venv/bin/python bench/topic_log_checksums.py [--records N]
        [--batch B] [--rounds R] [--dir PATH]

Two workloads, each written by both writers in every round (the order alternating), into
fresh roots; the best round of each is compared (the machine's noise only ever slows a round
down):

* capture: what the capture does after decoding, for one PostgreSQL table's inserts, updates
  and deletes (`bench/change_events.py`): Debezium JSON rendered (`DebeziumJsonFormat.
  render_batch`, Debezium 3.x context headers, tombstones) and appended, fsync included;
* writer: `bench/topic_log_write.py`'s ~1 KB records, encoded once up front, appended: the
  log alone, where the checksum's share is largest.

Throughput counts CPU time (the capture's budget: one core) and wall time.  Target: capture
with checksums within 5% of capture without.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from change_events import TOPIC, changes, chunks
from topic_log_write import make_records

from headwater.connectors.postgres.position import PostgresSourceBlock
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import ChangeRecord
from headwater.pipeline.source import read_range
from headwater.topics.log import _HEADERS, _PARTS, _PREFIX, OutRecord, TopicLog, _clean
from headwater.topics.log import _encode_slow as encode_slow
from headwater.topics.log import _headers_json as headers_json


class PlainTopicLog(TopicLog):
    """The writer as it was before checksums (format 1 lines): the comparison's baseline."""

    def _encode_batch(self, first: int, records: Sequence[OutRecord]) -> list[bytes]:
        parts: list[bytes] = []
        add = parts.extend
        prefix = _PREFIX
        suffix = b"}\n"
        off = first
        headers_seen: tuple[tuple[str, bytes | None], ...] = ()
        headers_suffix = suffix
        for key, value, ts, headers in records:
            if not key or not value or 10 in value or 13 in value or 10 in key or 13 in key:
                head, v, member = encode_slow(off, key, value, ts, headers)
                add((head, v, member + suffix))
            elif not headers:
                add((prefix % (off, ts, key), value, suffix))
            else:
                if headers is not headers_seen:
                    headers_suffix = _HEADERS % _clean(headers_json(headers)) + b"}\n"
                    headers_seen = headers
                add((prefix % (off, ts, key), value, headers_suffix))
            off += 1
        assert len(parts) == _PARTS * len(records)
        return parts


def write(cls: type[TopicLog], root: Path, batches: list[dict[str, list[OutRecord]]]
          ) -> tuple[float, float]:
    """(wall, cpu) seconds of appending every batch to a fresh log at `root`."""
    with cls(root) as log:
        t0, c0 = time.perf_counter(), time.process_time()
        for batch in batches:
            log.append(batch)
        return time.perf_counter() - t0, time.process_time() - c0


def capture(cls: type[TopicLog], root: Path, batches: list[list[ChangeRecord]]
            ) -> tuple[float, float]:
    """(wall, cpu) seconds of rendering and appending every batch of changes at `root`."""
    fmt = DebeziumJsonFormat(PostgresSourceBlock())
    with cls(root) as log:
        t0, c0 = time.perf_counter(), time.process_time()
        for batch in batches:
            log.append(fmt.render_batch(batch))
        return time.perf_counter() - t0, time.process_time() - c0


def read(root: Path, topics: list[str], n: int) -> float:
    """CPU seconds of the pipeline's event path (`source.read_range`) over every topic."""
    c0 = time.process_time()
    got = sum(sum(1 for _ in read_range(root, t, 0, n)) for t in topics)
    assert got == n
    return time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1000, help="records per append() call")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where the roots go (a temp dir)")
    args = ap.parse_args()

    n = args.records
    records = make_records(n, 1)
    topics = sorted({t for t, _ in records})
    batches = []
    for i in range(0, n, args.batch):
        batch: dict[str, list[OutRecord]] = {}
        for topic, rec in records[i:i + args.batch]:
            batch.setdefault(topic, []).append(rec)
        batches.append(batch)
    events = list(chunks(changes(n, max(1, n // 10)), args.batch))
    on, off = "with checksums", "without (format 1)"
    variants: dict[str, type[TopicLog]] = {on: TopicLog, off: PlainTopicLog}
    best: dict[tuple[str, str], float] = {}
    lines: dict[str, int] = {}

    def keep(what: str, name: str, value: float) -> None:
        best[what, name] = min(best.get((what, name), float("inf")), value)

    base = Path(tempfile.mkdtemp(prefix="hw-bench-crc-", dir=args.dir))
    try:
        for r in range(args.rounds):
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name in order:
                root = base / f"c{r}-{name[:4]}"
                wall, cpu = capture(variants[name], root, events)
                keep("capture wall", name, wall)
                keep("capture cpu", name, cpu)
                lines[name] = sum(1 for _ in read_range(root, TOPIC, 0, 1 << 62))
                shutil.rmtree(root)
                root = base / f"w{r}-{name[:4]}"
                wall, cpu = write(variants[name], root, batches)
                keep("writer wall", name, wall)
                keep("writer cpu", name, cpu)
                keep("read cpu", name, read(root, topics, n))
                shutil.rmtree(root)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    avg = sum(len(r.key or b"") + len(r.value or b"") for _, r in records) / n
    print(f"{n:,} changes per workload (capture: {lines[on]:,} records with tombstones; writer: "
          f"key+value avg {avg:.0f} B), batch {args.batch}, best of {args.rounds} rounds, "
          f"root under {base.parent}")
    for what in ("capture cpu", "capture wall", "writer cpu", "writer wall", "read cpu"):
        count = n
        rate = {name: count / best[what, name] for name in variants}
        print(f"{what:>13}: {rate[on]:>10,.0f} changes/s with checksums, {rate[off]:>10,.0f} "
              f"without; ratio {rate[on] / rate[off]:.3f}")
    print("(ratio: throughput with checksums / without; 1.000 = no cost; target >= 0.950 for "
          "the capture)")


if __name__ == "__main__":
    main()
