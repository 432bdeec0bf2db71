"""A damaged topic log is reported, never skipped: the readers, the writer's recovery and
`check_topic` name the topic, segment, offset and byte of each damaged place."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from headwater.topics.check import check_topic
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.log import OutRecord, TopicLog
from headwater.topics.reader import follow, list_topics, read
from headwater.topics.segment import inprogress_name, list_segments, sealed_name

T = "srv.public.t"


def rec(i: int) -> OutRecord:
    return OutRecord(b'{"id":%d}' % i, b'{"op":"c","after":{"id":%d}}' % i, 1_700_000_000_000 + i)


def make_topic(root: Path, n: int = 12, segment_bytes: int = 400) -> list[Path]:
    """A topic of `n` records in several sealed segments; their paths in offset order."""
    with TopicLog(root, segment_bytes=segment_bytes) as log:
        for i in range(n):  # one append per record: segments cut between records
            log.append({T: [rec(i)]})
    segs = [s.path for s in list_segments(root / T)]
    assert len(segs) >= 3 and all(s.name.endswith(".jsonl") for s in segs)
    return segs


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def offsets(root: Path) -> list[int]:
    return [r.offset for r in read(root, T)]


def damage(fn: object) -> TopicLogDamaged:
    with pytest.raises(TopicLogDamaged) as info:
        fn()  # type: ignore[operator]
    return info.value


def test_half_cut_last_line_of_a_sealed_segment(tmp_path: Path) -> None:
    segs = make_topic(tmp_path)
    last = segs[-1]
    data = last.read_bytes()
    cut = data[:-7]  # the last record loses its end and its newline
    last.write_bytes(cut)
    start_of_last = data.rstrip(b"\n").rfind(b"\n") + 1
    want_offset = 11
    for found in (damage(lambda: list(read(tmp_path, T))), damage(lambda: list_topics(tmp_path)),
                  check_topic(tmp_path, T).damages[0]):
        assert (found.topic, found.segment, found.offset, found.position) == (
            T, last, want_offset, start_of_last)
        assert "cut short" in str(found) and str(last) in str(found)
    # the writer refuses to append after it (that would bury the damage mid-topic)
    found = damage(lambda: TopicLog(tmp_path))
    assert (found.segment, found.offset) == (last, want_offset)


def test_a_line_removed_inside_a_segment(tmp_path: Path) -> None:
    segs = make_topic(tmp_path)
    seg = segs[1]
    got = lines(seg)
    assert len(got) >= 3
    removed = orjson_offset(got[1])
    seg.write_bytes(got[0] + b"".join(got[2:]))
    found = damage(lambda: list(read(tmp_path, T)))
    assert (found.segment, found.offset, found.position) == (seg, removed, len(got[0]))
    assert f"record {removed} is missing" in found.problem
    assert [str(d) for d in check_topic(tmp_path, T).damages] == [str(found)]


def test_the_last_line_of_a_middle_segment_removed(tmp_path: Path) -> None:
    segs = make_topic(tmp_path)
    got = lines(segs[0])
    missing = orjson_offset(got[-1])
    segs[0].write_bytes(b"".join(got[:-1]))
    for found in (damage(lambda: list(read(tmp_path, T))), damage(lambda: list_topics(tmp_path))):
        assert (found.segment, found.offset, found.position) == (segs[1], missing, 0)
        assert "starts at offset" in found.problem


def test_the_first_segment_removed(tmp_path: Path) -> None:
    segs = make_topic(tmp_path)
    segs[0].unlink()
    found = damage(lambda: list(read(tmp_path, T)))
    assert (found.segment, found.offset, found.position) == (segs[1], 0, 0)
    assert damage(lambda: list_topics(tmp_path)).offset == 0


def test_garbage_bytes_in_the_middle_of_a_segment(tmp_path: Path) -> None:
    segs = make_topic(tmp_path)
    seg = segs[1]
    got = lines(seg)
    first = orjson_offset(got[0])
    at = len(got[0]) + 10
    data = bytearray(seg.read_bytes())
    data[at:at + 4] = b"\x00\xff\x13\x37"
    seg.write_bytes(bytes(data))
    found = damage(lambda: list(read(tmp_path, T)))
    assert (found.segment, found.offset, found.position) == (seg, first + 1, len(got[0]))
    assert "line 2 is not a record" in found.problem
    assert [r.offset for r in read(tmp_path, T, from_offset=list_segments(tmp_path / T)[2].base)]


def test_garbage_in_the_active_segments_tail_is_recovered_not_damage(tmp_path: Path) -> None:
    log = TopicLog(tmp_path)
    log.append({T: [rec(0), rec(1), rec(2)]})
    path = tmp_path / T / inprogress_name(0)
    os.close(log._lock_fd)  # the writer "crashes": no seal, and its tail gets garbage
    log._lock_fd = -1
    tail = b"\x00" * 50 + b"\n" + b'{"offset":3,"timestamp":1,"key":{"id":3},"va'
    with open(path, "ab") as f:
        f.write(tail)
    # readers stop at the crash tail without a word; it is not damage
    assert offsets(tmp_path) == [0, 1, 2]
    assert list_topics(tmp_path)[0].end_offset == 3
    assert check_topic(tmp_path, T).damages == []
    assert check_topic(tmp_path, T).segments[0].crash_tail == len(tail)
    got = []
    for r in follow(tmp_path, T, timeout=0.3):
        got.append(r.offset)
    assert got == [0, 1, 2]
    with TopicLog(tmp_path) as log2:  # recovery truncates the tail, appending continues
        assert log2.append({T: [rec(3)]}) == {T: (3, 3)}
    assert offsets(tmp_path) == [0, 1, 2, 3]
    assert check_topic(tmp_path, T).damages == []


def test_garbage_before_the_last_record_of_the_active_segment_is_damage(tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(0), rec(1)]})
    sealed = tmp_path / T / sealed_name(0)
    good, second = lines(sealed)
    path = tmp_path / T / inprogress_name(0)
    os.rename(sealed, path)
    path.write_bytes(good + b"garbage\n" + second)
    found = damage(lambda: list(read(tmp_path, T)))
    assert (found.segment, found.offset, found.position) == (path, 1, len(good))


def test_follow_reports_a_gap(tmp_path: Path) -> None:
    segs = make_topic(tmp_path)
    got = lines(segs[1])
    segs[1].write_bytes(got[0] + b"".join(got[2:]))
    found = damage(lambda: list(follow(tmp_path, T, timeout=5)))
    assert (found.segment, found.offset) == (segs[1], orjson_offset(got[1]))


def test_follow_reports_a_missing_segment_end(tmp_path: Path) -> None:
    segs = make_topic(tmp_path)
    got = lines(segs[0])
    segs[0].write_bytes(b"".join(got[:-1]))
    found = damage(lambda: list(follow(tmp_path, T, timeout=5)))
    assert (found.segment, found.offset, found.position) == (segs[1], orjson_offset(got[-1]), 0)


def test_the_error_survives_pickling(tmp_path: Path) -> None:
    exc = TopicLogDamaged(T, tmp_path / "x.jsonl", 5, 77, "bad")
    back = pickle.loads(pickle.dumps(exc))
    assert (back.topic, back.segment, back.offset, back.position, back.problem, str(back)) == (
        T, tmp_path / "x.jsonl", 5, 77, "bad", str(exc))


def orjson_offset(line: bytes) -> int:
    import orjson

    off = orjson.loads(line)["offset"]
    assert isinstance(off, int)
    return off
