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

A pass also merges adjacent cleanable segments into one file, as Kafka's cleaner groups
segments while it cleans them (`merge_groups`): otherwise a compacted topic would keep one file
per segment it ever rolled.  A merged file holds ranges first compacted at different times, so
the tombstone clock of rule 3 is kept per range (`Clock`), not per file: a tombstone goes when
it would have without the merge.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

MAX_LONG: Final = (1 << 63) - 1

__all__ = [
    "Clock",
    "CompactionPolicy",
    "Entry",
    "SegmentInfo",
    "cleanable",
    "coalesce",
    "latest_offsets",
    "merge_groups",
    "pass_reason",
    "survives",
    "tombstone_clock",
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
    compacted_ms: int | None  # when it was first compacted (merged: `tombstone_clock`);
    #                           None: dirty (never compacted)
    tombstones: int  # tombstones left after its last compaction (-1: not known)


class Clock(NamedTuple):
    """When the records of a compacted segment from offset `base` on (up to its next clock or
    its end) were first compacted, which times their tombstones (rule 3), and how many
    tombstones they kept.  A segment compacted on its own has one clock, at its base; a merged
    one keeps the clocks of its parts that still matter (`coalesce`)."""

    base: int
    first_ms: int
    tombstones: int  # kept after the last pass (-1: not known)


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


def tombstone_clock(clocks: Sequence[Clock]) -> tuple[int, int]:
    """(compacted_ms, tombstones) of a compacted segment for the schedule (`pass_reason`): of
    its clocks still holding tombstones the earliest, so that a pass runs when the first of
    them is due; its first clock's time when none holds any."""
    holding = [c for c in clocks if c.tombstones != 0]
    if not holding:
        return clocks[0].first_ms, 0
    unknown = any(c.tombstones < 0 for c in holding)
    return (min(c.first_ms for c in holding),
            -1 if unknown else sum(c.tombstones for c in holding))


def coalesce(clocks: Sequence[Clock]) -> list[Clock]:
    """The clocks of one (merged) segment that still matter, in offset order: its first one,
    and each later one that holds tombstones at another time than the one before it.  A range
    with no tombstone left never gets any (compaction only removes records), so which clock
    it falls under does not matter; ranges first compacted at the same time share one."""
    out = [clocks[0]]
    for clock in clocks[1:]:
        if clock.tombstones == 0:
            continue
        last = out[-1]
        if clock.first_ms == last.first_ms:
            unknown = clock.tombstones < 0 or last.tombstones < 0
            out[-1] = last._replace(
                tombstones=-1 if unknown else last.tombstones + clock.tombstones)
        else:
            out.append(clock)
    return out


def merge_groups(sizes: Sequence[int], limit: int) -> list[range]:
    """The cleanable segments (by index, in offset order) grouped into one file each, as
    Kafka's cleaner groups them (`groupSegmentsBySize`): a group takes the next segment while
    their sizes together stay within `limit` (the topic's `segment.bytes`), so that merged
    files stay about a segment's size and a segment that large already stays alone.  `sizes`
    are the bytes each one keeps after the pass (Kafka counts them before cleaning; here they
    are known before anything is written, and a merged file gets closer to the limit)."""
    groups = []
    i = 0
    while i < len(sizes):
        j, total = i + 1, sizes[i]
        while j < len(sizes) and total + sizes[j] <= limit:
            total += sizes[j]
            j += 1
        groups.append(range(i, j))
        i = j
    return groups
