"""Kafka's compaction rule: the pure decisions, then the whole pass over random topics against
what must hold whatever the log looks like (replaying the compacted log ends in the same state,
nothing at or past a consumer's marker or younger than the lag goes, one record per key is
left in the cleaned part, offsets never change)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from headwater.topics import reader
from headwater.topics.check import check_topic
from headwater.topics.compaction import (
    Clock,
    CompactionPolicy,
    Entry,
    SegmentInfo,
    cleanable,
    coalesce,
    latest_offsets,
    merge_groups,
    pass_reason,
    survives,
    tombstone_clock,
)
from headwater.topics.compactor import compact_topic
from headwater.topics.retention import write_consumer
from headwater.topics.segment import list_segments

from .helpers import HOUR_MS, MERGED, UNMERGED, Spec, T, age, compact, now_ms, state, write_segments

NOW = 1_000 * HOUR_MS


def info(base: int, end: int, *, size: int = 100, age_ms: int = HOUR_MS,
         compacted_ms: int | None = None, tombstones: int = 0) -> SegmentInfo:
    return SegmentInfo(base, end, size, NOW - age_ms, compacted_ms, tombstones)


def test_the_cleanable_prefix_stops_at_the_lag_and_the_consumer() -> None:
    segs = [info(0, 10), info(10, 20), info(20, 30, age_ms=10), info(30, 40)]
    policy = CompactionPolicy()
    assert cleanable(segs, None, NOW, policy) == 4
    assert cleanable(segs, None, NOW, CompactionPolicy(min_compaction_lag_ms=60_000)) == 2
    assert cleanable(segs, 20, NOW, policy) == 2  # a marker at a segment's end
    assert cleanable(segs, 19, NOW, policy) == 1  # ... inside a segment holds it back whole
    assert cleanable(segs, 0, NOW, policy) == 0


def test_a_pass_runs_when_the_dirty_ratio_the_max_lag_or_a_tombstone_says_so() -> None:
    clean = info(0, 10, size=300, compacted_ms=NOW - 60_000)
    dirty = info(10, 20, size=100, age_ms=2 * HOUR_MS)
    assert pass_reason([], NOW, CompactionPolicy()) is None
    assert pass_reason([dirty], NOW, CompactionPolicy()) == \
        "dirty ratio 1.00 > min.cleanable.dirty.ratio"
    assert pass_reason([clean, dirty], NOW, CompactionPolicy()) is None  # 0.25
    assert pass_reason([clean, dirty], NOW, CompactionPolicy(min_cleanable_dirty_ratio=0.2))
    assert pass_reason([clean, dirty], NOW, CompactionPolicy(max_compaction_lag_ms=HOUR_MS)) \
        == "a dirty segment is older than max.compaction.lag.ms"
    with_tombstones = clean._replace(tombstones=2)
    assert pass_reason([with_tombstones], NOW, CompactionPolicy(delete_retention_ms=60_001)) \
        is None
    assert pass_reason([with_tombstones], NOW, CompactionPolicy(delete_retention_ms=60_000)) \
        == "tombstones past delete.retention.ms"
    unknown = clean._replace(tombstones=-1)  # (a lost state file: read it to find out)
    assert pass_reason([unknown], NOW, CompactionPolicy(delete_retention_ms=0))
    assert pass_reason([clean], NOW, CompactionPolicy(delete_retention_ms=0)) is None


def test_the_last_record_of_a_key_survives_null_keys_always() -> None:
    entries = [Entry(0, b"a", False), Entry(1, b"b", False), Entry(2, None, False),
               Entry(3, b"a", True), Entry(4, None, True), Entry(5, b"b", False)]
    latest = latest_offsets(entries)
    assert latest == {b"a": 3, b"b": 5}
    assert [e.offset for e in entries if survives(e, latest, False)] == [2, 3, 4, 5]
    # tombstones past delete.retention.ms go (a null-key record is never a tombstone of a key)
    assert [e.offset for e in entries if survives(e, latest, True)] == [2, 4, 5]


def test_merge_groups_fill_files_up_to_the_segment_size() -> None:
    assert merge_groups([], 100) == []
    assert merge_groups([10, 20, 30, 40], 100) == [range(0, 4)]  # 100: within the limit
    assert merge_groups([10, 20, 30, 41], 100) == [range(0, 3), range(3, 4)]
    # a segment as large as the limit (or larger: the writer rolls past it) stays alone
    assert merge_groups([150, 10, 100, 0, 0], 100) == [range(0, 1), range(1, 2), range(2, 5)]
    assert merge_groups([0, 0, 5], 1) == [range(0, 2), range(2, 3)]  # empty ones go together


@pytest.mark.parametrize("seed", range(20))
def test_merge_groups_against_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [rng.choice([0, rng.randint(1, 60), rng.randint(60, 200)])
             for _ in range(rng.randint(1, 30))]
    limit = rng.randint(1, 150)
    groups = merge_groups(sizes, limit)
    assert [i for g in groups for i in g] == list(range(len(sizes)))  # in order, each once
    for g in groups:
        assert len(g) == 1 or sum(sizes[i] for i in g) <= limit
    for g, h in itertools.pairwise(groups):  # greedy: the next one did not fit
        assert sum(sizes[i] for i in g) + sizes[h.start] > limit


def test_a_merged_segments_tombstone_clocks() -> None:
    old, new = Clock(0, NOW - HOUR_MS, 1), Clock(10, NOW, 2)
    # the schedule looks at the earliest clock that still holds tombstones
    assert tombstone_clock([old, new]) == (NOW - HOUR_MS, 3)
    assert tombstone_clock([old._replace(tombstones=0), new]) == (NOW, 2)
    assert tombstone_clock([old._replace(tombstones=0), new._replace(tombstones=0)]) == (
        NOW - HOUR_MS, 0)
    assert tombstone_clock([old, new._replace(tombstones=-1)]) == (NOW - HOUR_MS, -1)
    # coalescing keeps the first clock, drops those without tombstones, joins equal times
    empty = Clock(5, NOW - 2 * HOUR_MS, 0)
    same = Clock(20, NOW, 4)
    assert coalesce([old, empty, new, same]) == [old, Clock(10, NOW, 6)]
    assert coalesce([empty, new]) == [empty, new]
    assert coalesce([new, same._replace(tombstones=-1)]) == [Clock(10, NOW, -1)]


# -- the whole pass over random topics ----------------------------------------------------------


def random_topic(rng: random.Random) -> tuple[list[list[Spec]], list[Spec]]:
    def spec() -> Spec:
        k = rng.choice([0, 1, 2, 3, None]) if rng.random() < 0.95 else None
        return k, None if rng.random() < 0.25 else rng.choice("abcdef")

    segments = [[spec() for _ in range(rng.randint(1, 6))] for _ in range(rng.randint(1, 6))]
    in_progress = [spec() for _ in range(rng.randint(0, 3))]
    return segments, in_progress


@pytest.mark.parametrize("seed", range(40))
def test_a_pass_keeps_the_state_the_markers_and_the_offsets(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root = tmp_path / "topics"
    segments, in_progress = random_topic(rng)
    write_segments(root, segments, in_progress=in_progress)
    age(root, hours=1)
    ends: list[int] = []
    for specs in segments:
        ends.append((ends[-1] if ends else 0) + len(specs))
    floor = rng.choice([None, *range(ends[-1] + len(in_progress) + 1)])
    if floor is not None:
        write_consumer(root, "pipe", {T: floor})
    young = rng.random() < 0.2  # everything younger than min.compaction.lag.ms
    policy = compact(rng.choice([0, HOUR_MS]), lag_ms=10 * HOUR_MS if young else 0)
    limit = rng.choice([UNMERGED, 400, 1500, MERGED])  # (lines are 300-400 bytes)
    before = list(reader.read(root, T))
    now = now_ms()
    for step in range(3):  # the second pass removes what the first one's clock let expire
        compact_topic(root, T, policy, now + step * HOUR_MS, segment_bytes=limit)
        after = list(reader.read(root, T))
        assert state(after) == state(before)
        # the cleaned part: segments wholly before the marker, old enough, sealed
        boundary = 0 if young else max(
            [0, *(e for e in ends if floor is None or e <= floor)])
        assert [r for r in after if r.offset >= boundary] == \
            [r for r in before if r.offset >= boundary]
        cleaned = [r.key for r in after if r.offset < boundary and r.key is not None]
        assert len(cleaned) == len(set(cleaned))
        assert {r.offset for r in after} <= {r.offset for r in before}
        assert not check_topic(root, T).damages
        listed = reader.list_topics(root)[0]
        assert (listed.end_offset, listed.record_count) == (len(before), len(after))
    if boundary and policy.compaction and policy.compaction.delete_retention_ms == 0:
        # the tombstones of the cleaned part are gone after the second pass
        assert not [r for r in after if r.offset < boundary and r.key and r.value is None]
    # the cleaned part is in compacted files that chain up from 0 to its end, each one either
    # an original segment or a merge of adjacent ones that fits the segment size
    compacted = [s for s in list_segments(root / T) if s.compacted]
    assert [s.base for s in compacted[:1]] == ([0] if boundary else [])
    assert [s.end for s in compacted[-1:]] == ([boundary] if boundary else [])
    assert all(a.end == b.base for a, b in itertools.pairwise(compacted))
    assert {s.end for s in compacted} <= set(ends)
    originals = set(zip([0, *ends], ends, strict=False))
    merged = [s for s in compacted if (s.base, s.end) not in originals]
    assert all(s.path.stat().st_size <= limit for s in merged)
    if limit == MERGED:
        assert len(compacted) == (1 if boundary else 0)
