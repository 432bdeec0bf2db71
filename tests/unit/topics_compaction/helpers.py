"""A compacted topic's test vocabulary: writing a topic segment by segment, ageing segments,
and the state per key that replaying records ends with (what compaction must never change)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson

from headwater.model.topic import TopicRecord
from headwater.topics.compaction import CompactionPolicy
from headwater.topics.log import TopicLog
from headwater.topics.reader import Record
from headwater.topics.retention import RetentionPolicy
from headwater.topics.segment import inprogress_name, list_segments

T = "p.public.t"
HOUR_MS = 3_600_000
UNMERGED = 1  # a segment size no two non-empty segments fit in: each keeps its own file
MERGED = 1 << 30  # one that every test topic fits in: the cleanable segments become one file

KEY_SCHEMA = {"type": "struct", "optional": False,
              "fields": [{"type": "int32", "optional": False, "field": "id"}]}
VALUE_SCHEMA = {"type": "struct", "optional": False, "name": "p.public.t.Envelope",
                "fields": [{"type": "string", "optional": True, "field": "v"}]}

# One record to write: (key id or None for a null key, value text or None for a tombstone).
Spec = tuple[int | None, str | None]


def key(k: int) -> bytes:
    return orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": k}})


def value(text: str) -> bytes:
    return orjson.dumps({"schema": VALUE_SCHEMA, "payload": {"v": text}})


def now_ms() -> int:
    return int(time.time() * 1000)


def compact(delete_retention_ms: int = 86_400_000, *, lag_ms: int = 0, ratio: float = 0.5,
            max_lag_ms: int = (1 << 63) - 1, ignore_consumers: bool = False,
            delete: bool = False) -> RetentionPolicy:
    return RetentionPolicy(ignore_consumers=ignore_consumers, delete=delete,
                           compaction=CompactionPolicy(lag_ms, max_lag_ms,
                                                       delete_retention_ms, ratio))


def _records(specs: Sequence[Spec]) -> list[TopicRecord]:
    return [TopicRecord(None if k is None else key(k), None if v is None else value(v), 1)
            for k, v in specs]


def write_segments(root: Path, segments: Iterable[Sequence[Spec]], *,
                   in_progress: Sequence[Spec] = (), topic: str = T) -> None:
    """One sealed segment per element of `segments`, then the records of `in_progress` in an
    in-progress segment (as a running writer has it), if any."""
    with TopicLog(root) as log:
        for specs in [*segments, in_progress]:
            if specs:
                log.append({topic: _records(specs)})
            log.maintain(now_ms=now_ms() + 10 * HOUR_MS)  # seals it by age
    if in_progress:
        last = list_segments(root / topic)[-1]
        os.rename(last.path, root / topic / inprogress_name(last.base))


def age(root: Path, hours: float, topic: str = T) -> None:
    """Makes every sealed segment `hours` old (the time compaction's lag is measured by)."""
    then = time.time() - hours * 3600
    for seg in list_segments(root / topic):
        if seg.sealed:
            os.utime(seg.path, (then, then))


def state(records: Iterable[Record]) -> tuple[dict[bytes, bytes], list[tuple[int, bytes | None]]]:
    """What replaying `records` ends with: the value per key (a tombstone removes the key),
    and the null-key records in order (each one counts: nothing may drop them)."""
    per_key: dict[bytes, bytes] = {}
    keyless = []
    for rec in records:
        if rec.key is None:
            keyless.append((rec.offset, rec.value))
        elif rec.value is None:
            per_key.pop(rec.key, None)
        else:
            per_key[rec.key] = rec.value
    return per_key, keyless
