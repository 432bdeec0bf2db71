"""The format rules every reader of the topic log checks, in one place.

A topic is a gap-free sequence of records 0, 1, 2, ... cut into segments (docs/topic-log.md):

* continuity - the first segment starts at the log start (offset 0 unless retention moved it),
  each segment's file name is the offset of its first record, every record's `offset` is the
  previous one + 1, also across segments;
* compaction - the one place offsets may skip: inside a segment whose name marks it compacted
  (`segment.compacted_name`: its range base..end-1).  Its records ascend within that range,
  possibly none are left; the next segment starts at its range's end.  A gap anywhere else,
  or between two segments, is still damage;
* framing - every line of a sealed segment is complete (ends with a newline) and is a record
  line of the writer's layout (`headwater.topics.record.parse_line`);
* checksum - a record line that carries a CRC-32C matches it (`headwater.topics.checksum`;
  `parse_line` checks it): a byte changed inside a record that still parses is damage there;
* the one exception is the crash tail of an in-progress segment: a torn last line, and complete
  lines that are not records (or fail their checksum) after the last one that is
  (`segment.recoverable_end`).  A writer
  that crashed leaves it and its recovery truncates it; a live writer's last line may simply
  not be complete yet.  Readers stop there without a word; it is not damage.

`iter_records` is the line-by-line reader that enforces them (`headwater.topics.reader` reads
through it); `check_segment`/`check_topic` run it over whole files for `headwater topics
verify` and to describe precisely what a fast path (the pipeline's `source.read_range`, the
compiled scan) only detected.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from headwater.state_format import TOPIC_LOG, open_state_dir
from headwater.topics.damage import TopicLogDamaged, missing_records
from headwater.topics.record import BadLineError, Record, parse_line
from headwater.topics.retention import log_start
from headwater.topics.segment import (
    compacted_end,
    covers,
    last_complete_line,
    live_segments,
    open_segment,
    parse_segment,
    parse_segment_name,
    recoverable_end,
)

__all__ = [
    "SegmentCheck",
    "TopicCheck",
    "check_segment",
    "check_topic",
    "diagnose",
    "is_sealed",
    "iter_records",
    "next_after",
    "segment_end",
    "start_mismatch",
    "unexpected_offset",
]


def is_sealed(path: Path) -> bool:
    """Whether a segment file is sealed, by the name it was opened under."""
    parsed = parse_segment_name(path.name)
    return parsed is not None and parsed[1]


def start_mismatch(topic: str, path: Path, base: int, expect: int) -> TopicLogDamaged:
    """The damage of a segment whose name says it starts at `base` where `expect` was due."""
    return TopicLogDamaged(
        topic, path, expect, 0,
        f"the segment starts at offset {base} (its file name): "
        + missing_records(expect, base).split(": ", 1)[1],
    )


def _in_crash_tail(f: BinaryIO, pos: int) -> bool:
    fd = f.fileno()
    end, _ = recoverable_end(fd, os.fstat(fd).st_size)
    return pos >= end


def unexpected_offset(expect: int, found: int, end: int | None) -> str:
    """The problem text of a record with offset `found` where `expect` was due."""
    if end is not None and found >= end:
        return (f"offset {found}, past the range of this compacted segment (offsets up to "
                f"{end - 1}, its file name)")
    return missing_records(expect, found)


def next_after(path: Path, next_offset: int) -> int:
    """The offset the segment after a fully read one starts with: its compacted range's end
    (records at its end may be compacted away), else the offset after its last record."""
    end = compacted_end(path)
    return next_offset if end is None else end


def iter_records(topic: str, path: Path, base: int, f: BinaryIO,
                 expect: int) -> Iterator[tuple[int, Record]]:
    """(position after the line, record) of every record of the open segment `f`, checked.

    `expect` is the offset the segment must start with (0 for a topic's first segment, the
    previous segment's next offset, or `base` when the previous one was not read).  Raises
    `TopicLogDamaged` at the first place that breaks the rules; stops quietly at the crash tail
    of an in-progress segment (the writer's torn last line).  In a compacted segment (by the
    name `path` was opened under) offsets may skip ahead within its range.  `f` is read from
    where it is: the start, or the listed base of a segment merged into it since the listing
    (`segment.open_segment`); positions and line numbers are the file's own."""
    if base != expect:
        raise start_mismatch(topic, path, base, expect)
    sealed = is_sealed(path)
    end = compacted_end(path)
    pos = f.tell()
    first_line = 1 + (os.pread(f.fileno(), pos, 0).count(b"\n") if pos else 0)
    for lineno, line in enumerate(f, first_line):
        if not line.endswith(b"\n"):
            if sealed:
                raise TopicLogDamaged(
                    topic, path, expect, pos,
                    f"line {lineno}, the last of this sealed segment, is cut short: "
                    f"{len(line)} bytes without the closing newline")
            return  # torn tail of an in-progress segment: not written completely yet
        try:
            rec = parse_line(topic, line)
        except BadLineError as exc:
            if not sealed and _in_crash_tail(f, pos):
                return
            raise TopicLogDamaged(topic, path, expect, pos,
                                  f"line {lineno} is not a record: {exc}") from None
        if rec.offset != expect and (end is None or not expect < rec.offset < end):
            raise TopicLogDamaged(topic, path, expect, pos,
                                  f"line {lineno} has {unexpected_offset(expect, rec.offset, end)}")
        pos += len(line)
        expect = rec.offset + 1
        yield pos, rec


class SegmentCheck(NamedTuple):
    """What `check_segment` found in one segment file."""

    path: Path
    base: int
    next_offset: int  # where the next segment starts (when damaged: after the last good record)
    good_end: int  # byte position after the last good record
    size: int  # file size when checked
    damage: TopicLogDamaged | None  # the first damaged place, None when the segment is sound
    records: int  # good records read

    @property
    def crash_tail(self) -> int:
        """Bytes after the last good record of a sound in-progress segment (recovery's part)."""
        return 0 if self.damage is not None else self.size - self.good_end


def check_segment(topic: str, path: Path, base: int, expect: int) -> SegmentCheck:
    """Read a whole segment file through `iter_records`; its first damage, if any."""
    with open(path, "rb") as f:
        return _check_open(topic, path, base, expect, f)


def _check_open(topic: str, path: Path, base: int, expect: int, f: BinaryIO) -> SegmentCheck:
    good_end = f.tell()
    nxt = expect
    records = 0
    size = os.fstat(f.fileno()).st_size
    try:
        for end, rec in iter_records(topic, path, base, f, expect):
            good_end, nxt = end, rec.offset + 1
            records += 1
    except TopicLogDamaged as exc:
        return SegmentCheck(path, base, nxt, good_end, size, exc, records)
    if not records:
        nxt = base  # no record (an empty file or only a crash tail): the next one is `base`
    return SegmentCheck(path, base, next_after(path, nxt), good_end, size, None, records)


def diagnose(topic: str, path: Path, base: int, expect: int) -> TopicLogDamaged | None:
    """The damage of a segment that a fast reader found broken (None if the checker, the
    reference, finds it sound: then the fast reader is wrong and must say so itself).  A
    merged segment that the reader moved on to after the listing (its name's range starts
    below `base`) is checked whole, from its own base."""
    own = parse_segment(path.name, path.parent)
    if own is not None and own.compacted and own.base < base:
        base = expect = own.base
    return check_segment(topic, path, base, expect).damage


class TopicCheck(NamedTuple):
    """`check_segment` of every segment of a topic, in offset order."""

    topic: str
    segments: list[SegmentCheck]

    @property
    def damages(self) -> list[TopicLogDamaged]:
        return [s.damage for s in self.segments if s.damage is not None]


def check_topic(root: Path, topic: str) -> TopicCheck:
    """Check every segment of a topic.  After a damaged segment the next one is checked from
    its own base, so that each independent damaged place is listed once."""
    open_state_dir(root, TOPIC_LOG, stamp=False)  # a newer layout is not "damage"
    out: list[SegmentCheck] = []
    # The first segment starts at the log start (0, or where retention moved it).
    expect: int | None = log_start(root / topic)  # None after a damaged segment
    last: Path | None = None  # the file checked last
    for seg in live_segments(root / topic):
        if last is not None and covers(last, seg):
            continue  # merged since the listing into the file checked last: checked in it
        opened = open_segment(seg)
        if opened is None:
            continue  # removed by a writer's recovery (it held no complete line)
        f, path, _ = opened
        last = path
        with f:
            check = _check_open(topic, path, seg.base, seg.base if expect is None else expect, f)
        out.append(check)
        expect = check.next_offset if check.damage is None else None
    return TopicCheck(topic, out)


_HEAD = b'{"offset":'


def _head_offset(fd: int) -> int | None:
    """The offset in the first line's `{"offset":N,` prefix, None if it is not there."""
    head = os.pread(fd, 32, 0)
    if not head.startswith(_HEAD):
        return None
    digits, comma, _ = head[len(_HEAD):].partition(b",")
    return int(digits) if comma and digits.isdigit() else None


def segment_end(topic: str, path: Path, base: int, fd: int, size: int) -> int:
    """The next offset after a segment's last record, from its first and last line only.

    This is `topics list`'s (and the pipeline's end-offset poll's) cheap check: the first
    line's offset is the segment's base, a sealed segment ends with a complete record line, and
    its last offset is not below its base; with the caller checking that each segment's base
    is the previous one's end, the segments chain up.  A compacted segment's end is its name's;
    its first and last lines lie within that range.  The whole file is read only to describe
    a damage found.  A gap inside a segment is found by the readers and `headwater topics
    verify`, which read every line."""
    end = compacted_end(path)
    if size == 0:
        return base if end is None else end
    if is_sealed(path):
        stop, _, last = last_complete_line(fd, size)
        complete = stop == size
    else:
        stop, last = recoverable_end(fd, size)
        if stop == 0:
            return base  # only a crash tail so far
        complete = True
    head = _head_offset(fd)
    if last is not None and complete and head is not None:
        if end is None and last >= base and head == base:
            return last + 1
        if end is not None and base <= head <= last < end:
            return end
    raise diagnose(topic, path, base, base) or TopicLogDamaged(
        topic, path, base, 0,
        "the first or last line of the segment is not a record line with a consistent offset")
