"""What the topic log's per-record CRC-32C costs: the writer with checksums against the same
writer without them (the encoding of format 1, kept here only: checksums cannot be switched
off), measured in the same run, and the event path's read of both logs.

    PYTHONPATH=src .venv/bin/python bench/topic_log_checksums.py [--records N]
        [--batch B] [--rounds R] [--dir PATH]

Two workloads, each written by both writers in every round into fresh roots, interleaved
batch by batch (the order alternating), so that a busy moment of the machine slows both
alike; each round gives a ratio, and the median and best of them are printed:

* capture: what the capture does after decoding, for one PostgreSQL table's inserts, updates
  and deletes (`bench/change_events.py`): Debezium JSON rendered (`DebeziumJsonFormat.
  render_batch`, Debezium 3.x context headers, tombstones) and appended, fsync included;
* writer: `bench/topic_log_write.py`'s ~1 KB records, encoded once up front, appended: the
  log alone, where the checksum's share is largest;
* read: the pipeline's event path (`source.read_range`) over the writer's log, and its
  column-wise scan (`columnar.scan`, the numba kernel) over ~2.3 KB Debezium JSON records with
  embedded schemas, each against the same log with the checksums taken out (format 1).

Throughput counts CPU time (the capture's budget: one core) and wall time.  Target: capture
with checksums within 5% of capture without.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson
from change_events import TOPIC, changes, chunks
from topic_log_write import make_records

from headwater.connectors.postgres.position import PostgresSourceBlock
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import ChangeRecord
from headwater.model.topic import TopicRecord
from headwater.pipeline import columnar
from headwater.pipeline.source import read_range
from headwater.topics.checksum import without_checksum
from headwater.topics.log import (
    _HEADERS,
    _PARTS,
    _PREFIX,
    OutRecord,
    PartitionRefused,
    TopicLog,
    _clean,
)
from headwater.topics.log import _encode_slow as encode_slow
from headwater.topics.log import _headers_json as headers_json


class PlainTopicLog(TopicLog):
    """The writer as it was before checksums (format 1 lines): the comparison's baseline."""

    def _encode_batch(self, first: int, records: Sequence[OutRecord]) -> bytes:
        parts: list[bytes] = []
        add = parts.extend
        prefix = _PREFIX
        suffix = b"}\n"
        off = first
        headers_seen: tuple[tuple[str, bytes | None], ...] = ()
        headers_suffix = suffix
        for key, value, ts, headers, partition in records:
            if partition:  # (as the writer with checksums: the benchmark gives partition 0)
                raise PartitionRefused(f"partition {partition}")
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
        return b"".join(parts)


class Timed:
    """CPU and wall seconds spent in one variant's steps."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.wall = 0.0

    def run(self, step: Callable[[], object]) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        self.wall += time.perf_counter() - t0
        self.cpu += time.process_time() - c0


def interleaved(steps: dict[str, list[Callable[[], object]]]) -> dict[str, Timed]:
    """Runs the variants' steps alternately (step i of one, then of the other, the order
    switching every step), so that both meet the same machine: a busy moment slows both."""
    names = list(steps)
    timed = {name: Timed() for name in names}
    for i in range(len(steps[names[0]])):
        for name in (names if i % 2 == 0 else names[::-1]):
            timed[name].run(steps[name][i])
    return timed


def write_steps(log: TopicLog, batches: list[dict[str, list[OutRecord]]]
                ) -> list[Callable[[], object]]:
    return [functools.partial(log.append, batch) for batch in batches]


def capture_steps(log: TopicLog, batches: list[list[ChangeRecord]]
                  ) -> list[Callable[[], object]]:
    fmt = DebeziumJsonFormat(PostgresSourceBlock())
    return [lambda b=batch: log.append(fmt.render_batch(b)) for batch in batches]


def read(root: Path, topics: list[str], n: int) -> float:
    """CPU seconds of the pipeline's event path (`source.read_range`) over every topic."""
    c0 = time.process_time()
    got = sum(sum(1 for _ in read_range(root, t, 0, n)) for t in topics)
    assert got == n
    return time.process_time() - c0


def strip_checksums(root: Path) -> None:
    """The log at `root` as a format 1 writer would have left it."""
    for seg in root.rglob("*.jsonl"):
        lines = seg.read_bytes().splitlines(keepends=True)
        seg.write_bytes(b"".join(without_checksum(line) for line in lines))


def scan_log(root: Path, n: int) -> None:
    """`n` Debezium-like records with embedded schemas (the column-wise path's input)."""
    key_schema = {"type": "struct", "optional": False,
                  "fields": [{"type": "int32", "optional": False, "field": "id"}]}
    value_schema = {"type": "struct", "optional": False, "name": "s.public.t.Envelope",
                    "fields": [{"type": "string", "optional": True, "field": f"v{i}"}
                               for i in range(40)]}
    with TopicLog(root, segment_bytes=1 << 30) as log:
        for i in range(0, n, 1000):
            log.append({"s.public.t": [TopicRecord(
                orjson.dumps({"schema": key_schema, "payload": {"id": j}}),
                orjson.dumps({"schema": value_schema, "payload": {"v0": "x" * 200, "v1": j}}), j)
                for j in range(i, min(n, i + 1000))]})


def scan(root: Path, n: int) -> float:
    """Seconds of the column-wise scan of the whole topic."""
    t0 = time.perf_counter()
    assert columnar.scan(root, "s.public.t", 0, n, columnar.Positions()).count == n
    return time.perf_counter() - t0


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
    base = Path(tempfile.mkdtemp(prefix="hw-bench-crc-", dir=args.dir))
    ratios: dict[str, list[float]] = {}

    def keep(what: str, name: str, value: float) -> None:
        best[what, name] = min(best.get((what, name), float("inf")), value)
        if name == off:  # (the pair is complete)
            ratios.setdefault(what, []).append(value / best_round[on])
        best_round[name] = value

    best_round: dict[str, float] = {}
    try:
        scan_roots = {on: base / "scan-on", off: base / "scan-off"}
        scan_log(scan_roots[on], n)
        shutil.copytree(scan_roots[on], scan_roots[off])
        strip_checksums(scan_roots[off])
        scan(scan_roots[on], n)  # compiles the kernel (or loads it from numba's cache)
        for r in range(args.rounds):
            for what, make, work in (("capture", capture_steps, events),
                                     ("writer", write_steps, batches)):
                logs = {name: cls(base / f"{what}{r}-{k}")
                        for k, (name, cls) in enumerate(variants.items())}
                try:
                    timed = interleaved({name: make(log, work)  # type: ignore[operator]
                                         for name, log in logs.items()})
                finally:
                    for log in logs.values():
                        log.close()
                for name in variants:
                    keep(f"{what} cpu", name, timed[name].cpu)
                for name in variants:
                    keep(f"{what} wall", name, timed[name].wall)
                if what == "capture":
                    lines[on] = sum(1 for _ in read_range(logs[on].root, TOPIC, 0, 1 << 62))
                else:
                    for name in variants:
                        keep("read cpu", name, read(logs[name].root, topics, n))
                for log in logs.values():
                    shutil.rmtree(log.root)
            for name in variants:
                keep("scan wall", name, scan(scan_roots[name], n))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    avg = sum(len(r.key or b"") + len(r.value or b"") for _, r in records) / n
    print(f"{n:,} changes per workload (capture: {lines[on]:,} records with tombstones; writer: "
          f"key+value avg {avg:.0f} B), batch {args.batch}, best of {args.rounds} rounds, "
          f"root under {base.parent}")
    for what in ("capture cpu", "capture wall", "writer cpu", "writer wall", "read cpu",
                 "scan wall"):
        rate = {name: n / best[what, name] for name in variants}
        print(f"{what:>13}: {rate[on]:>10,.0f} changes/s with checksums, {rate[off]:>10,.0f} "
              f"without (best rounds); ratio per round: median "
              f"{statistics.median(ratios[what]):.3f}, best {max(ratios[what]):.3f}")
    print("(ratio: throughput with checksums / without, both measured in the same round, "
          "interleaved batch by batch; 1.000 = no cost; target >= 0.950 for the capture)")


if __name__ == "__main__":
    main()
