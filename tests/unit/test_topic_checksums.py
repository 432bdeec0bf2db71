"""Per-record CRC-32C of the topic log (format 2): the line framing, a byte changed inside a
record that still parses stopping every reader at that record (topic, segment, offset, byte),
`topics verify` finding it and `--repair` cutting there, and format 1 logs (no checksums)
still read and upgraded by their writer."""

from __future__ import annotations

import os
from pathlib import Path

import google_crc32c
import orjson
import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.pipeline.source import read_range
from headwater.state_format import (
    STAMP_FILE,
    TOPIC_LOG,
    Kind,
    StateFormatError,
    read_stamp,
    write_stamp,
)
from headwater.topics import checksum
from headwater.topics.check import check_topic
from headwater.topics.checksum import ChecksumError, body_end, with_checksum, without_checksum
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.log import OutRecord, TopicLog
from headwater.topics.reader import follow, list_topics, read
from headwater.topics.record import BadLineError, parse_line, split_line
from headwater.topics.segment import inprogress_name, list_segments, recoverable_end

T = "srv.public.t"
runner = CliRunner()

PLAIN = b'{"offset":7,"timestamp":5,"key":{"id":7},"value":{"op":"c","after":{"id":7}}}\n'
PLAIN_H = (b'{"offset":8,"timestamp":-1,"key":null,"value":null,'
           b'"headers":{"h":"{\\"a\\":1}","n":null}}\n')


def rec(i: int) -> OutRecord:
    return OutRecord(b'{"id":%d}' % i, b'{"op":"c","after":{"id":%d}}' % i, 1_700_000_000_000 + i)


def make_topic(root: Path, n: int = 12, segment_bytes: int = 400) -> list[Path]:
    """`n` records in several sealed segments, one append each; the paths in offset order."""
    with TopicLog(root, segment_bytes=segment_bytes) as log:
        for i in range(n):
            log.append({T: [rec(i)]})
    segs = [s.path for s in list_segments(root / T)]
    assert len(segs) >= min(3, n // 3)
    return segs


def damage(fn: object) -> TopicLogDamaged:
    with pytest.raises(TopicLogDamaged) as info:
        fn()  # type: ignore[operator]
    return info.value


# -- the framing -----------------------------------------------------------------------------

def test_crc32c_is_castagnoli() -> None:
    assert checksum.crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C
    assert checksum.extend(checksum.crc32c(b"1234"), b"56789") == 0xE3069283


@pytest.mark.parametrize("plain", [PLAIN, PLAIN_H])
def test_the_member_is_the_crc_of_the_bytes_before_it(plain: bytes) -> None:
    line = with_checksum(plain)
    body = plain[:-2]  # without the closing brace and the newline
    assert line == body + b',"crc":"%08x"}\n' % google_crc32c.value(body)
    assert len(line) - len(body) - 1 == checksum.TAIL_LEN
    assert body_end(line) == len(body) == body_end(line[:-1])
    assert without_checksum(line) == plain
    assert isinstance(orjson.loads(line), dict)  # still one JSON object (Spark reads it)
    # both layouts parse to the same record, by the reference and by the fast path
    assert parse_line(T, line) == parse_line(T, plain)
    assert split_line(line) == split_line(plain)


def test_a_line_without_the_member_is_unchecked() -> None:
    assert body_end(PLAIN) == -1
    assert body_end(PLAIN_H) == -1
    # a header or value that merely ends like the member is not one: the record closes
    # right after its value or headers document
    spoof = b'{"offset":1,"timestamp":1,"key":null,"value":{"crc":"00000000"}}\n'
    assert body_end(spoof) == -1 and parse_line(T, spoof).value == b'{"crc":"00000000"}'


@pytest.mark.parametrize("change", [
    lambda b: b.replace(b'"op":"c"', b'"op":"u"'),  # a value's byte: the JSON still parses
    lambda b: b.replace(b'"id":7}}', b'"id":8}}'),
    lambda b: b.replace(b'"timestamp":5', b'"timestamp":6'),
    lambda b: b[:-5] + (b"A" if b[-5:-4] != b"A" else b"B") + b[-4:],  # the stored checksum
])
def test_a_changed_byte_fails_the_check(change: object) -> None:
    line = with_checksum(PLAIN)
    bad = change(line)  # type: ignore[operator]
    assert bad != line and len(bad) == len(line)
    with pytest.raises(ChecksumError, match="CRC-32C checksum does not match"):
        body_end(bad)
    with pytest.raises(BadLineError, match="CRC-32C checksum does not match"):
        parse_line(T, bad)
    assert split_line(bad) is None  # the fast path hands it to `parse_line`, which says why


def test_upper_case_or_non_hex_checksums_are_refused() -> None:
    line = with_checksum(PLAIN)
    digits = line[-11:-3]
    for other in (digits.upper(), b"zzzzzzzz", b" " + digits[1:]):
        if other == digits:
            continue
        with pytest.raises(ChecksumError):
            body_end(line[:-11] + other + line[-3:])


# -- a byte changed inside a record of a sealed segment --------------------------------------

def changed_record(root: Path) -> tuple[list[Path], Path, int, int, dict[Path, bytes]]:
    """A topic whose second segment's second record has one byte of its value changed (the
    line still parses, with the right offset); (segments, that segment, the record's offset,
    the byte where its line starts, every segment's bytes before)."""
    segs = make_topic(root)
    before = {p: p.read_bytes() for p in segs}
    seg = segs[1]
    lines = before[seg].splitlines(keepends=True)
    assert len(lines) >= 2
    changed = lines[1].replace(b'"op":"c"', b'"op":"d"')
    assert changed != lines[1] and orjson.loads(changed)["value"]["op"] == "d"
    seg.write_bytes(b"".join([lines[0], changed, *lines[2:]]))
    return segs, seg, orjson.loads(lines[1])["offset"], len(lines[0]), before


def test_every_reader_stops_at_a_changed_byte(tmp_path: Path) -> None:
    _, seg, offset, byte, _ = changed_record(tmp_path)
    found = [
        damage(lambda: list(read(tmp_path, T))),
        damage(lambda: list(follow(tmp_path, T, timeout=5))),
        damage(lambda: list(read_range(tmp_path, T, 0, 12))),
        damage(lambda: list(read_range(tmp_path, T, offset, offset + 1))),
        check_topic(tmp_path, T).damages[0],
    ]
    for got in found:
        assert (got.topic, got.segment, got.offset, got.position) == (T, seg, offset, byte)
        assert "CRC-32C checksum does not match" in got.problem
        assert str(got).startswith(
            f"topic log damaged: topic {T}, segment {seg}, offset {offset}, byte {byte}: ")
    # the records before it are read
    offsets_read: list[int] = []
    with pytest.raises(TopicLogDamaged):
        for r in read(tmp_path, T):
            offsets_read.append(r.offset)
    assert offsets_read == list(range(offset))
    assert [r[0] for r in read_range(tmp_path, T, 0, offset - 1)] == list(range(offset - 1))
    tail = runner.invoke(app, ["topics", "tail", T, "--dir", str(tmp_path), "--from-beginning"])
    assert tail.exit_code == 1
    assert f"offset {offset}, byte {byte}" in tail.output.replace("\n", " ")


def test_a_changed_last_line_stops_the_cheap_checks_too(tmp_path: Path) -> None:
    segs = make_topic(tmp_path)
    seg = segs[-1]  # (the writer checks the last segment, `topics list` each one)
    lines = seg.read_bytes().splitlines(keepends=True)
    last = lines[-1].replace(b'"op":"c"', b'"op":"u"')
    seg.write_bytes(b"".join([*lines[:-1], last]))
    offset = orjson.loads(last)["offset"]
    for got in (damage(lambda: list_topics(tmp_path)), damage(lambda: TopicLog(tmp_path))):
        assert (got.segment, got.offset, got.position) == (
            seg, offset, sum(map(len, lines[:-1])))


def test_verify_finds_it_and_repair_cuts_there(tmp_path: Path) -> None:
    segs, seg, offset, byte, before = changed_record(tmp_path)
    out = runner.invoke(app, ["topics", "verify", "--dir", str(tmp_path)])
    assert out.exit_code == 1
    assert f"{T}: DAMAGED: segment {seg}, offset {offset}, byte {byte}" in out.output
    assert "CRC-32C checksum does not match" in out.output

    fixed = runner.invoke(app, ["topics", "verify", "--repair", "--dir", str(tmp_path)])
    assert fixed.exit_code == 0, fixed.output
    assert seg.read_bytes() == before[seg][:byte]  # cut at the changed record's line
    saved = seg.parent / f".{seg.name}.damaged"
    assert seg.read_bytes() + saved.read_bytes() != before[seg]  # (the changed bytes)
    assert len(seg.read_bytes() + saved.read_bytes()) == len(before[seg])
    for later in segs[segs.index(seg) + 1:]:  # nothing after the cut is kept
        assert not later.exists()
        assert (later.parent / f".{later.name}.damaged").read_bytes() == before[later]
    assert [r.offset for r in read(tmp_path, T)] == list(range(offset))
    again = runner.invoke(app, ["topics", "verify", "--dir", str(tmp_path)])
    assert again.exit_code == 0 and f"{T}: ok, {offset} records" in again.output
    with TopicLog(tmp_path) as log:  # the writer gives the removed offsets again
        assert log.append({T: [rec(offset)]}) == {T: (offset, offset)}
    assert [r.offset for r in read(tmp_path, T)] == list(range(offset + 1))


# -- the crash tail --------------------------------------------------------------------------

def test_a_last_line_failing_its_checksum_is_the_crash_tail_of_an_in_progress_segment(
        tmp_path: Path) -> None:
    with TopicLog(tmp_path) as log:
        log.append({T: [rec(0), rec(1), rec(2)]})
    (seg,) = list_segments(tmp_path / T)
    data = seg.path.read_bytes()
    lines = data.splitlines(keepends=True)
    # a power cut persisted the last line's end but not all of its bytes
    torn = lines[2].replace(b'"after"', b'"\x00\x00\x00\x00\x00"')
    path = tmp_path / T / inprogress_name(0)
    seg.path.unlink()
    path.write_bytes(b"".join([*lines[:2], torn]))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert recoverable_end(fd, os.fstat(fd).st_size) == (len(lines[0]) + len(lines[1]), 1)
    finally:
        os.close(fd)
    assert [r.offset for r in read(tmp_path, T)] == [0, 1]
    assert check_topic(tmp_path, T).damages == []
    with TopicLog(tmp_path) as log:  # recovery truncates it; appending continues at 2
        assert log.next_offset(T) == 2


# -- format 1 logs: read unchecked, upgraded by their writer ---------------------------------

def format_1(root: Path) -> list[Path]:
    """A topic as the release before checksums left it: plain lines, stamped format 1."""
    segs = make_topic(root, n=6)
    for seg in segs:
        lines = seg.read_bytes().splitlines(keepends=True)
        seg.write_bytes(b"".join(without_checksum(line) for line in lines))
    write_stamp(root, TOPIC_LOG, 1)
    assert b'"crc"' not in b"".join(s.read_bytes() for s in segs)
    return segs


def test_a_format_1_log_is_read_and_upgraded_by_its_writer(tmp_path: Path) -> None:
    old = format_1(tmp_path)
    assert [r.offset for r in read(tmp_path, T)] == list(range(6))
    assert [r[0] for r in read_range(tmp_path, T, 0, 6)] == list(range(6))
    assert check_topic(tmp_path, T).damages == []
    assert read_stamp(tmp_path, TOPIC_LOG) == 1  # readers leave the stamp as it is
    with TopicLog(tmp_path, segment_bytes=400) as log:
        assert read_stamp(tmp_path, TOPIC_LOG) == 2  # before anything is appended
        log.append({T: [rec(6), rec(7)]})
    new = [s.path for s in list_segments(tmp_path / T) if s.path not in old]
    assert new and all(body_end(line) > 0 for s in new
                       for line in s.read_bytes().splitlines(keepends=True))
    assert [r.offset for r in read(tmp_path, T)] == list(range(8))
    assert [r[0] for r in read_range(tmp_path, T, 0, 8)] == list(range(8))
    out = runner.invoke(app, ["topics", "verify", "--dir", str(tmp_path)])
    assert out.exit_code == 0 and f"{T}: ok, 8 records" in out.output
    stamp = orjson.loads((tmp_path / STAMP_FILE).read_bytes())
    assert (stamp["kind"], stamp["format"]) == ("topic-log", 2)


def test_a_format_1_release_refuses_an_upgraded_log(tmp_path: Path) -> None:
    # What the release before checksums runs on open (state_format.read_stamp with its
    # Kind): it refuses the log by its stamp instead of calling each new record damaged.
    make_topic(tmp_path, n=3, segment_bytes=1 << 20)
    before_checksums = Kind("topic log", "topic-log", 1, 1)
    with pytest.raises(StateFormatError, match=r"newer Headwater .*\(format 2\); this release "
                                               r"reads format 1"):
        read_stamp(tmp_path, before_checksums)
