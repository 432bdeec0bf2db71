"""Every reader over a compacted topic: the gaps inside compacted segments are read through,
ranges may start or end inside them, and any other gap - in a segment not marked compacted,
between two segments, past a compacted range, offsets going backwards - is still the same
precise `TopicLogDamaged` from every reader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.model.topic import TopicRecord
from headwater.pipeline import columnar
from headwater.pipeline.source import read_range
from headwater.topics import reader
from headwater.topics.check import check_topic
from headwater.topics.checksum import with_checksum, without_checksum
from headwater.topics.compactor import compact_topic
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.log import TopicLog
from headwater.topics.repair import repair_topic
from headwater.topics.retention import write_consumer
from headwater.topics.segment import compacted_name, list_segments, sealed_name

from .helpers import UNMERGED, Spec, T, age, compact, key, now_ms, value, write_segments

# offset: (key, value)                        compacted away?
SEGMENTS: list[list[Spec]] = [
    [(1, "a"), (2, "a"), (3, "a"), (4, "a")],  # 0..3: all but 3 (key 4)
    [(2, None), (1, "b"), (5, "a")],  # 4..6: all but the tombstone 4: the range ends at 7
    [(3, "b"), (6, "a")],  # 7..8: nothing left (an empty file)
    [(1, "c"), (5, "b"), (6, "b"), (3, "c")],  # 9..12: all kept (only renamed)
    [(7, "a"), (8, "x")],  # 13..14: past the consumer's marker, not compacted
]
IN_PROGRESS: list[Spec] = [(1, "d"), (8, "a")]  # 15..16
LEFT = [3, 4, 9, 10, 11, 12, 13, 14, 15, 16]
END = 17


def build(root: Path, *, compacted: bool = True) -> None:
    write_segments(root, SEGMENTS, in_progress=IN_PROGRESS)
    age(root, hours=1)
    write_consumer(root, "pipe", {T: 13})
    if compacted:
        assert compact_topic(root, T, compact(), now_ms(), segment_bytes=UNMERGED) is not None


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    build(tmp_path / "topics")
    return tmp_path / "topics"


def test_the_layout(root: Path) -> None:
    assert [s.path.name for s in list_segments(root / T)] == [
        compacted_name(0, 4), compacted_name(4, 7), compacted_name(7, 9),
        compacted_name(9, 13), sealed_name(13), ".00000000000000000015.jsonl.inprogress"]
    assert (root / T / compacted_name(7, 9)).stat().st_size == 0


def test_read_from_every_offset(root: Path) -> None:
    for start in range(END + 2):
        assert [r.offset for r in reader.read(root, T, start)] == [o for o in LEFT if o >= start]
    assert [r.offset for r in reader.read(root, T, include_inprogress=False)] == LEFT[:-2]


def test_follow_reads_through_and_across_a_rewrite(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    build(root, compacted=False)
    got = []
    for rec in reader.follow(root, T, timeout=10, poll_interval=0.01):
        got.append(rec.offset)
        if len(got) == 3:  # the compaction replaces the segment being read, and the next ones
            assert compact_topic(root, T, compact(), now_ms(), segment_bytes=UNMERGED) is not None
        if rec.offset == END - 1:
            break
    assert got == [0, 1, 2, *LEFT]
    assert [r.offset for r in reader.follow(root, T, timeout=0.5)] == LEFT


def test_list_verify_and_repair(root: Path) -> None:
    (info,) = reader.list_topics(root)
    assert (info.start_offset, info.end_offset, info.record_count, info.segment_count) == (
        0, END, len(LEFT), 6)
    check = check_topic(root, T)
    assert not check.damages and sum(s.records for s in check.segments) == len(LEFT)
    out = CliRunner().invoke(app, ["topics", "verify", "--dir", str(root)])
    assert out.exit_code == 0 and f"{T}: ok, {len(LEFT)} records in 6 segments" in out.output
    names = sorted(p.name for p in (root / T).iterdir())
    assert repair_topic(root, T)[1] == []  # --repair: nothing to cut
    assert sorted(p.name for p in (root / T).iterdir()) == names
    with TopicLog(root) as log:  # the writer continues after the compacted ranges
        assert log.append({T: [TopicRecord(key(1), value("e"), 1)]}) == {T: (END, END)}


def test_pipeline_ranges_start_and_end_inside_gaps(root: Path) -> None:
    tombstones = {4}
    positions = columnar.Positions()
    for a in range(END + 1):
        for b in range(a, END + 2):
            want = [o for o in LEFT if a <= o < b]
            assert [o for o, _, _ in read_range(root, T, a, b)] == want, (a, b)
            data = [o for o in want if o not in tombstones]
            assert columnar.scan(root, T, a, b, columnar.Positions()).offsets.tolist() == data
            assert columnar.scan(root, T, a, b, positions).offsets.tolist() == data


# -- damage is still damage ---------------------------------------------------------------------


def readers(root: Path) -> dict[str, Callable[[], object]]:
    return {
        "read": lambda: list(reader.read(root, T)),
        "follow": lambda: list(reader.follow(root, T, timeout=2, poll_interval=0.01)),
        "read_range": lambda: list(read_range(root, T, 0, END)),
        "columnar": lambda: columnar.scan(root, T, 0, END, columnar.Positions()),
        "verify": lambda: _raise(check_topic(root, T).damages),
    }


def _raise(damages: list[TopicLogDamaged]) -> None:
    assert len(damages) == 1
    raise damages[0]


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def damage_everywhere(root: Path) -> TopicLogDamaged:
    found = {}
    for name, read in readers(root).items():
        with pytest.raises(TopicLogDamaged) as info:
            read()
        found[name] = info.value
    first = found["verify"]
    where = (first.segment, first.offset, first.position)
    assert {n: (d.segment, d.offset, d.position) for n, d in found.items()} == {
        n: where for n in found}
    # the same words, but from `follow`, which words its own line by line (as before compaction)
    assert {str(d) for n, d in found.items() if n != "follow"} == {str(first)}
    return first


def test_a_gap_in_a_segment_not_marked_compacted(root: Path) -> None:
    seg = root / T / sealed_name(13)
    seg.write_bytes(lines(seg)[1])
    found = damage_everywhere(root)
    assert (found.segment, found.offset, found.position) == (seg, 13, 0)
    assert "line 1 has offset 14 where 13 was expected: record 13 is missing" in found.problem
    with pytest.raises(TopicLogDamaged):  # (its first line is checked by the cheap check too)
        reader.list_topics(root)


def test_a_gap_between_a_compacted_segment_and_the_next(root: Path) -> None:
    (root / T / compacted_name(7, 9)).unlink()  # the empty one: its range is missing now
    found = damage_everywhere(root)
    assert (found.segment, found.offset) == (root / T / compacted_name(9, 13), 7)
    assert "starts at offset 9 (its file name): records 7..8 are missing" in found.problem
    with pytest.raises(TopicLogDamaged, match=r"records 7\.\.8 are missing"):
        reader.list_topics(root)


def test_an_offset_past_the_compacted_range(root: Path) -> None:
    seg = root / T / compacted_name(4, 7)
    lines = seg.read_bytes().splitlines(keepends=True)
    lines[0] = with_checksum(without_checksum(lines[0]).replace(b'{"offset":4,', b'{"offset":7,'))
    seg.write_bytes(b"".join(lines))  # a valid record line, with its checksum
    found = damage_everywhere(root)
    assert (found.segment, found.offset, found.position) == (seg, 4, 0)
    assert "offset 7, past the range of this compacted segment (offsets up to 6" in found.problem


def test_offsets_going_backwards_in_a_compacted_segment_and_their_repair(root: Path) -> None:
    seg = root / T / compacted_name(9, 13)
    got = lines(seg)
    seg.write_bytes(got[0] + got[2] + got[1] + got[3])
    found = damage_everywhere(root)
    # (9, then 11: a compacted gap; then 10)
    assert (found.segment, found.offset, found.position) == (seg, 12, len(got[0]) + len(got[2]))
    assert "offset 10 where 12 was expected: offsets repeat or go backwards" in found.problem
    _, removals = repair_topic(root, T)
    assert removals[0].renamed_to == root / T / compacted_name(9, 12)  # ends at the cut now
    assert [r.offset for r in reader.read(root, T)] == [3, 4, 9, 11]
    assert not check_topic(root, T).damages
    with TopicLog(root) as log:  # so the next record gets the first offset removed
        assert log.append({T: [TopicRecord(key(1), value("e"), 1)]}) == {T: (12, 12)}
