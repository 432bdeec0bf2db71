"""Every reader across a merge that happens while it reads: the segments it read before the
merge come from their old files, the rest from the merged one, so no record is read twice and
none is missed (beyond what the pass removed, as for any compacted range); and a reader that
opens while the merged file and some of its parts are both on disk counts the merged file
only."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from headwater.model.topic import TopicRecord
from headwater.pipeline import columnar, source
from headwater.pipeline.source import read_range
from headwater.topics import check, reader
from headwater.topics.check import check_topic
from headwater.topics.compactor import compact_topic
from headwater.topics.log import TopicLog
from headwater.topics.reader import Record
from headwater.topics.segment import Segment, compacted_name, list_segments, live_segments

from .helpers import MERGED, UNMERGED, Spec, T, age, compact, key, now_ms, value, write_segments

SEGMENTS: list[list[Spec]] = [
    [(1, "a"), (2, "a"), (3, "a")],  # 0..2
    [(1, "b"), (4, "a")],  # 3..4
    [(2, None), (5, "a")],  # 5..6: a tombstone
    [(3, "b"), (1, "c")],  # 7..8
    [(6, "a"), (4, "b")],  # 9..10
]
IN_PROGRESS: list[Spec] = [(1, "d"), (7, "a")]  # 11..12
END = 13


@pytest.fixture()
def template(tmp_path: Path) -> Path:
    """The first three segments compacted one by one (gaps at their ends), two dirty ones,
    the in-progress one: the merging pass merges all five sealed ones."""
    root = tmp_path / "template"
    write_segments(root, SEGMENTS[:3])
    age(root, hours=1)
    compact_topic(root, T, compact(), now_ms(), segment_bytes=UNMERGED)
    write_segments(root, SEGMENTS[3:], in_progress=IN_PROGRESS)
    age(root, hours=1)
    return root


def merge(root: Path) -> None:
    done = compact_topic(root, T, compact(ratio=0.0), now_ms(), segment_bytes=MERGED)
    assert done is not None and done.files == 1 and done.merged == 5


def records(root: Path) -> list[Record]:
    return list(reader.read(root, T))


def merged_between_listing_and_opening(monkeypatch: pytest.MonkeyPatch, module: Any,
                                       root: Path, at: int) -> None:
    """The `at`-th segment a reader opens is opened just after a merging pass."""
    real = module.open_segment
    calls = []

    def open_segment(seg: Segment) -> Any:
        calls.append(seg)
        if len(calls) == at + 1:
            merge(root)
        return real(seg)

    monkeypatch.setattr(module, "open_segment", open_segment)


def _follow_to_end(root: Path) -> list[Record]:
    out = []
    for rec in reader.follow(root, T, timeout=5, poll_interval=0.01):
        out.append(rec)
        if rec.offset == END - 1:
            break
    return out


def _verified(root: Path) -> list[tuple[int, Any]]:
    found = check_topic(root, T)
    assert not found.damages
    return [(len(found.segments), sum(s.records for s in found.segments))]


READERS: dict[str, tuple[Any, Callable[[Path], list[tuple[int, Any]]]]] = {
    "read": (reader, lambda root: [(r.offset, r.value) for r in reader.read(root, T)]),
    "follow": (reader, lambda root: [(r.offset, r.value) for r in _follow_to_end(root)]),
    "read_range": (source, lambda root: [(o, v) for o, _, v in read_range(root, T, 0, END)]),
    "columnar": (columnar, lambda root: [
        (int(o), None) for o in columnar.scan(root, T, 0, END, columnar.Positions()).offsets]),
    "verify": (check, _verified),
}



@pytest.mark.parametrize("name", list(READERS))
def test_a_merge_between_listing_and_opening(tmp_path: Path, template: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             name: str) -> None:
    module, read = READERS[name]
    after = tmp_path / "after"
    shutil.copytree(template, after)
    merge(after)
    old, new = records(template), records(after)
    listed = live_segments(template / T)
    assert len(listed) == 6
    for at in range(len(listed)):
        root = tmp_path / f"merged-at-{at}"
        shutil.copytree(template, root)
        with monkeypatch.context() as patch:
            merged_between_listing_and_opening(patch, module, root, at)
            got = read(root)
        # the segments opened before the merge from their old files, the rest from the new
        cut = listed[at].base
        want = [r for r in old if r.offset < cut] + [r for r in new if r.offset >= cut]
        if name == "verify":  # segments checked: the old ones, the merged file, the last
            assert got == [(at + 1 + (at < 5), len(want))], at
        elif name == "columnar":  # (tombstones are not data rows)
            assert got == [(r.offset, None) for r in want if r.value is not None], at
        else:
            assert got == [(r.offset, r.value) for r in want], at


def test_list_topics_across_a_merge(tmp_path: Path, template: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    old = records(template)
    for at in range(6):
        root = tmp_path / f"merged-at-{at}"
        shutil.copytree(template, root)
        with monkeypatch.context() as patch:
            merged_between_listing_and_opening(patch, reader, root, at)
            (info,) = reader.list_topics(root)
        cut = live_segments(template / T)[at].base
        new = records(root)
        want = [r for r in old if r.offset < cut] + [r for r in new if r.offset >= cut]
        assert (info.end_offset, info.record_count) == (END, len(want)), at


def test_follow_across_a_merge_of_the_segment_it_reads(tmp_path: Path, template: Path) -> None:
    after = tmp_path / "after"
    shutil.copytree(template, after)
    merge(after)
    old, new = records(template), records(after)
    got = []
    for rec in reader.follow(template, T, timeout=5, poll_interval=0.01):
        got.append(rec)
        if rec.offset == 7:  # inside the fourth segment (7..8), still open when it is merged
            merge(template)
        if rec.offset == END - 1:
            break
    assert got == [r for r in old if r.offset < 9] + [r for r in new if r.offset >= 9]


def test_read_across_a_merge_of_the_segment_it_reads(tmp_path: Path, template: Path) -> None:
    after = tmp_path / "after"
    shutil.copytree(template, after)
    merge(after)
    old, new = records(template), records(after)
    got = []
    for rec in reader.read(template, T):
        got.append(rec)
        if rec.offset == 3:  # inside the second segment (3..4), still open when it is merged
            merge(template)
    assert got == [r for r in old if r.offset < 5] + [r for r in new if r.offset >= 5]
    assert list_segments(template / T)[0].path.name == compacted_name(0, 11)


def test_readers_count_a_merged_file_not_its_parts_left_next_to_it(template: Path) -> None:
    parts = {p.name: p.read_bytes() for p in (template / T).iterdir()
             if p.name.endswith(".jsonl")}
    merge(template)
    want = records(template)
    for name, data in parts.items():  # as a kill before the unlinks leaves them
        (template / T / name).write_bytes(data)
    assert [s.path.name for s in live_segments(template / T)] == [
        compacted_name(0, 11), ".00000000000000000011.jsonl.inprogress"]
    assert records(template) == want
    assert [o for o, _, _ in read_range(template, T, 0, END)] == [r.offset for r in want]
    (info,) = reader.list_topics(template)
    assert (info.record_count, info.segment_count) == (len(want), 2)
    with TopicLog(template) as log:  # the writer's recovery removes them
        assert log.append({T: [TopicRecord(key(1), value("e"), 1)]}) == {T: (END, END)}
    assert list_segments(template / T) == live_segments(template / T)
