"""Kafka's log compaction rule for the local topic log, as pure functions.

Why pure functions: which records a compaction may remove is the one decision on which a
compacted topic's correctness rests (a consumer replaying it must end with the same state per
key), and as a function of plain values (offsets, key digests, tombstone flags, segment times)
it can be tested against a brute-force model with no files (tests/unit/topics_compaction).
`headwater.topics.compactor` does the reading and the crash-safe rewriting around it.

The rule, Kafka's (KIP-58, KIP-354, KIP-534) on a segment granularity:

1. *Cleanable segments* are the longest prefix of the sealed segments that are all at least
   `min.compaction.lag.ms` old and wholly before the smallest consumer marker (the pipeline
   must see every change it has not passed: a record at or past the marker never goes, as
   retention never removes it).  The in-progress segment is never touched.
2. Among the cleanable records, for each key (its raw JSON bytes; here a 16-byte digest of
   them, as Kafka's cleaner keys its offset map by an MD5 digest) only the record with the
   highest offset survives.  Records outside the cleanable prefix neither go nor count: they
   are newer, and replaying the log still ends with them.
3. A tombstone (null value) that is the latest of its key survives `delete.retention.ms` after
   its segment was first compacted, so a consumer has that long to see the delete; then it
   goes too.
4. A record with a null key is never removed.  Kafka refuses such records in a compacted topic
   at produce time; Headwater keeps them instead (a keyless table's rows, a truncate event),
   so that nothing captured is lost and a replay still applies them in order.

A pass runs when it is worth it, as Kafka's cleaner decides: the *dirty* (never compacted) part
of the cleanable bytes is more than `min.cleanable.dirty.ratio` of them, or a dirty segment is
older than `max.compaction.lag.ms`, or a tombstone is due to go.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

MAX_LONG: Final = (1 << 63) - 1

__all__ = [
    "CompactionPolicy",
    "Entry",
    "SegmentInfo",
    "cleanable",
    "latest_offsets",
    "pass_reason",
    "survives",
]


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """One topic's compaction settings: Kafka's topic config names and defaults."""

    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = MAX_LONG
    delete_retention_ms: int = 86_400_000
    min_cleanable_dirty_ratio: float = 0.5


class Entry(NamedTuple):
    """What the rule needs of one record."""

    offset: int
    key: bytes | None  # digest of the raw key JSON; None for a null key
    tombstone: bool  # null value


class SegmentInfo(NamedTuple):
    """What the schedule needs of one sealed segment."""

    base: int
    end: int  # offset after its range
    size: int  # bytes
    mtime_ms: int  # its last write: the time of its newest record, as retention uses it
    compacted_ms: int | None  # when it was first compacted; None: dirty (never compacted)
    tombstones: int  # tombstones left after its last compaction (-1: not known)


def cleanable(segments: Sequence[SegmentInfo], floor: int | None, now_ms: int,
              policy: CompactionPolicy) -> int:
    """How many of the sealed `segments` (in offset order) form the cleanable prefix (rule 1).

    `floor` is the smallest consumer marker (None: no consumer holds the topic back)."""
    count = 0
    for seg in segments:
        if floor is not None and seg.end > floor:
            break
        if seg.mtime_ms > now_ms - policy.min_compaction_lag_ms:
            break
        count += 1
    return count


def pass_reason(prefix: Sequence[SegmentInfo], now_ms: int, policy: CompactionPolicy
                ) -> str | None:
    """Why a pass over the cleanable `prefix` should run now, None when it is not worth it."""
    dirty = [s for s in prefix if s.compacted_ms is None]
    total = sum(s.size for s in prefix)
    dirty_bytes = sum(s.size for s in dirty)
    if dirty:
        ratio = dirty_bytes / total if total else 1.0
        if ratio > policy.min_cleanable_dirty_ratio:
            return f"dirty ratio {ratio:.2f} > min.cleanable.dirty.ratio"
        if min(s.mtime_ms for s in dirty) < now_ms - policy.max_compaction_lag_ms:
            return "a dirty segment is older than max.compaction.lag.ms"
    for seg in prefix:
        if (seg.compacted_ms is not None and seg.tombstones != 0
                and tombstones_expire(seg.compacted_ms, now_ms, policy)):
            return "tombstones past delete.retention.ms"
    return None


def tombstones_expire(compacted_ms: int, now_ms: int, policy: CompactionPolicy) -> bool:
    """Whether the tombstones of a segment first compacted at `compacted_ms` go now (rule 3)."""
    return now_ms >= compacted_ms + policy.delete_retention_ms


def latest_offsets(entries: Iterable[Entry]) -> dict[bytes, int]:
    """The highest offset of each (non-null) key among the cleanable records (rule 2)."""
    latest: dict[bytes, int] = {}
    for offset, key, _ in entries:
        if key is not None:
            latest[key] = offset  # offsets ascend: the last one seen is the highest
    return latest


def survives(entry: Entry, latest: dict[bytes, int], tombstones_go: bool) -> bool:
    """Whether a cleanable record stays (rules 2-4); `tombstones_go` says whether its segment's
    tombstones are past `delete.retention.ms`."""
    if entry.key is None:
        return True
    if latest.get(entry.key, entry.offset) != entry.offset:
        return False
    return not (entry.tombstone and tombstones_go)
