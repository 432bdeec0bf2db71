"""Merging adjacent segments in a compaction pass: files of at most the segment size, never past
the consumer marker, the lag or into the in-progress segment, the newest part's time for
retention, tombstones timed per merged range (also when a pass is killed), and the writer
merging with its own segment size."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import orjson
import pytest

from headwater.model.topic import TopicRecord
from headwater.topics import reader
from headwater.topics.check import check_topic
from headwater.topics.compaction import CompactionPolicy
from headwater.topics.compaction_files import STATE_FILE
from headwater.topics.compactor import compact_topic
from headwater.topics.retention import RetentionPolicy, apply_retention, write_consumer
from headwater.topics.retention_config import retention_rules
from headwater.topics.segment import (
    compacted_name,
    inprogress_name,
    list_segments,
    live_segments,
    sealed_name,
)
from headwater.topics.sink import TopicLogSink

from .helpers import HOUR_MS, MERGED, T, age, compact, key, now_ms, value, write_segments
from .test_crash import Killed, killing_at

# eight segments of two records each, every key distinct: nothing to remove, only to merge
DISTINCT = [[(2 * i, "a"), (2 * i + 1, "a")] for i in range(8)]
ENDS = [2 * (i + 1) for i in range(8)]


def names(root: Path) -> list[str]:
    return [s.path.name for s in list_segments(root / T)]


def offsets(root: Path) -> list[int]:
    return [r.offset for r in reader.read(root, T)]


def test_segments_merge_into_files_of_at_most_the_segment_size(tmp_path: Path) -> None:
    write_segments(tmp_path, DISTINCT, in_progress=[(99, "a")])
    age(tmp_path, hours=1)
    # (lines with two-digit offsets and keys are longer: three of them fit, three of the
    # others and one more do not)
    size = max(s.path.stat().st_size for s in list_segments(tmp_path / T) if s.sealed)
    before = list(reader.read(tmp_path, T))
    done = compact_topic(tmp_path, T, compact(), now_ms(), segment_bytes=3 * size)
    assert done is not None and (done.segments, done.files, done.merged) == (8, 3, 8)
    assert names(tmp_path) == [compacted_name(0, 6), compacted_name(6, 12),
                               compacted_name(12, 16), inprogress_name(16)]
    assert all(s.path.stat().st_size <= 3 * size for s in list_segments(tmp_path / T))
    assert list(reader.read(tmp_path, T)) == before  # the same records, offsets and bytes
    assert not check_topic(tmp_path, T).damages
    (info,) = reader.list_topics(tmp_path)
    assert (info.end_offset, info.record_count, info.segment_count) == (17, 17, 4)
    # the next pass merges the merged files no further: two would not fit
    write_segments(tmp_path, [])  # (seals the in-progress segment)
    age(tmp_path, hours=1)
    done = compact_topic(tmp_path, T, compact(ratio=0.0), now_ms(), segment_bytes=3 * size)
    assert done is not None and done.files == 3
    assert names(tmp_path) == [compacted_name(0, 6), compacted_name(6, 12),
                               compacted_name(12, 17)]


def test_a_merge_uses_what_the_parts_keep(tmp_path: Path) -> None:
    # every segment rewrites the same two keys: after the pass only the last two records are
    # left, so everything fits one segment's size
    write_segments(tmp_path, [[(1, str(i)), (2, str(i))] for i in range(6)])
    age(tmp_path, hours=1)
    size = (tmp_path / T / sealed_name(10)).stat().st_size
    done = compact_topic(tmp_path, T, compact(), now_ms(), segment_bytes=size)
    assert done is not None and (done.files, done.removed) == (1, 10)
    assert names(tmp_path) == [compacted_name(0, 12)] and offsets(tmp_path) == [10, 11]


def test_nothing_is_merged_past_the_marker_the_lag_or_into_the_in_progress_segment(
        tmp_path: Path) -> None:
    write_segments(tmp_path, DISTINCT, in_progress=[(99, "a")])
    age(tmp_path, hours=1)
    young = list_segments(tmp_path / T)[6].path  # the last two sealed ones: 12..15
    os.utime(young, None)
    os.utime(list_segments(tmp_path / T)[7].path, None)
    write_consumer(tmp_path, "pipe", {T: 9})  # inside the fifth segment (8..9)
    policy = compact(lag_ms=HOUR_MS // 2)
    compact_topic(tmp_path, T, policy, now_ms(), segment_bytes=MERGED)
    assert names(tmp_path) == [compacted_name(0, 8), *map(sealed_name, ENDS[3:7]),
                               inprogress_name(16)]
    # ignoring the consumers: up to the young segments
    policy = compact(lag_ms=HOUR_MS // 2, ratio=0.0, ignore_consumers=True)
    compact_topic(tmp_path, T, policy, now_ms(), segment_bytes=MERGED)
    assert names(tmp_path) == [compacted_name(0, 12), sealed_name(12), sealed_name(14),
                               inprogress_name(16)]
    # and without the lag: every sealed segment, never the in-progress one
    compact_topic(tmp_path, T, compact(ratio=0.0, ignore_consumers=True), now_ms(),
                  segment_bytes=MERGED)
    assert names(tmp_path) == [compacted_name(0, 16), inprogress_name(16)]
    assert offsets(tmp_path) == list(range(17))


def test_a_merged_file_has_its_newest_parts_time_for_retention(tmp_path: Path) -> None:
    write_segments(tmp_path, DISTINCT[:3], in_progress=[(99, "a")])
    for hours, seg in zip([5, 4, 3], list_segments(tmp_path / T), strict=False):
        age_one = (now_ms() - hours * HOUR_MS) / 1000
        os.utime(seg.path, (age_one, age_one))
    newest = list_segments(tmp_path / T)[2].path.stat().st_mtime_ns
    compact_topic(tmp_path, T, compact(), now_ms(), segment_bytes=MERGED)
    merged = tmp_path / T / compacted_name(0, 6)
    assert merged.stat().st_mtime_ns == newest
    # compact,delete with retention.ms of 3.5 h: unmerged, the two older parts would go; the
    # merged file keeps them until its newest records are that old (never earlier)
    both = RetentionPolicy(retention_ms=7 * HOUR_MS // 2, compaction=CompactionPolicy())
    assert apply_retention(tmp_path, T, both, now_ms()) == 0
    assert apply_retention(tmp_path, T, both, now_ms() + HOUR_MS) == 1
    assert offsets(tmp_path) == [6]


def tombstones_in_two_ranges(root: Path) -> int:
    """Segment 0..1 compacted (its tombstone's clock starts then), then segment 2..3 written:
    each ends with a tombstone.  The time of the first compaction."""
    write_segments(root, [[(1, "a"), (1, None)]])
    age(root, hours=1)
    first = now_ms()
    assert compact_topic(root, T, compact(HOUR_MS), first, segment_bytes=MERGED) is not None
    write_segments(root, [[(2, "a"), (2, None)]])
    age(root, hours=1)
    return first


def test_tombstones_keep_their_own_clock_in_a_merged_file(tmp_path: Path) -> None:
    first = tombstones_in_two_ranges(tmp_path)
    second = first + HOUR_MS // 2
    policy = compact(HOUR_MS)
    assert compact_topic(tmp_path, T, policy, second, segment_bytes=MERGED) is not None
    assert names(tmp_path) == [compacted_name(0, 4)] and offsets(tmp_path) == [1, 3]
    state = orjson.loads((tmp_path / T / STATE_FILE).read_bytes())
    assert state == {"0": [first, 1], "2": [second, 1]}
    compact_topic(tmp_path, T, policy, first + HOUR_MS, segment_bytes=MERGED)
    assert offsets(tmp_path) == [3]  # the first one's time has come, not the second one's
    assert compact_topic(tmp_path, T, policy, second + HOUR_MS - 1, segment_bytes=MERGED) is None
    compact_topic(tmp_path, T, policy, second + HOUR_MS, segment_bytes=MERGED)
    assert offsets(tmp_path) == []
    assert orjson.loads((tmp_path / T / STATE_FILE).read_bytes()) == {"0": [first, 0]}


def test_a_killed_merge_never_lets_a_tombstone_go_early(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    template = tmp_path / "template"
    first = tombstones_in_two_ranges(template)
    second = first + HOUR_MS // 2
    policy = compact(HOUR_MS)
    step = 0
    while True:
        root = tmp_path / f"crash-{step}"
        shutil.copytree(template, root)
        with monkeypatch.context() as patch:
            seen = killing_at(patch, step)
            with contextlib.suppress(Killed):
                compact_topic(root, T, policy, second, segment_bytes=MERGED)
        if len(seen) <= step:
            break
        write_segments(root, [])  # the writer's recovery
        assert list_segments(root / T) == live_segments(root / T)
        # at the first tombstone's time: the second one stays, wherever the pass was killed
        compact_topic(root, T, policy, first + HOUR_MS, segment_bytes=MERGED)
        assert offsets(root) == [3], step
        for later in (second + HOUR_MS, first + 2 * HOUR_MS):  # (killed before its clock)
            compact_topic(root, T, policy, later, segment_bytes=MERGED)
        assert offsets(root) == []
        step += 1
    assert step >= 12


def test_the_writer_merges_with_its_segment_size(tmp_path: Path) -> None:
    rules = retention_rules({"headwater.topics.cleanup.policy": "compact",
                             "headwater.topics.min.cleanable.dirty.ratio": "0.01"})
    one = len(orjson.dumps({"offset": 10, "timestamp": 1})) + len(key(0)) + len(value("x"))
    sink = TopicLogSink(tmp_path, segment_bytes=4 * one, segment_ms=1000, retention=rules)
    try:
        for i in range(40):  # a segment per two records, five keys
            sink.append({T: [TopicRecord(key(i % 5), value(str(i)), 1)]})
        sink.retain()
    finally:
        sink.close()
    segs = list_segments(tmp_path / T)
    merges = [s for s in segs if s.end is not None and s.end - s.base > 4]  # (4 per segment)
    assert len(segs) < 8 and merges
    assert all(s.path.stat().st_size <= 4 * one for s in merges)
    assert [r.offset for r in reader.read(tmp_path, T)][-5:] == list(range(35, 40))
