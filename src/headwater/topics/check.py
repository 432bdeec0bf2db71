"""The format rules every reader of the topic log checks, in one place.

A topic is a gap-free sequence of records 0, 1, 2, ... cut into segments (docs/topic-log.md):

* continuity - the first segment starts at offset 0, each segment's file name is the offset of
  its first record, every record's `offset` is the previous one + 1, also across segments;
* framing - every line of a sealed segment is complete (ends with a newline) and is a record
  line of the writer's layout (`headwater.topics.record.parse_line`);
* the one exception is the crash tail of an in-progress segment: a torn last line, and complete
  lines that are not records after the last one that is (`segment.recoverable_end`).  A writer
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

from headwater.topics.damage import TopicLogDamaged, missing_records
from headwater.topics.record import BadLineError, Record, parse_line
from headwater.topics.retention import log_start
from headwater.topics.segment import (
    last_complete_line,
    list_segments,
    parse_segment_name,
    recoverable_end,
    sealed_name,
)

__all__ = [
    "SegmentCheck",
    "TopicCheck",
    "check_segment",
    "check_topic",
    "diagnose",
    "is_sealed",
    "iter_records",
    "segment_end",
    "start_mismatch",
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


def iter_records(topic: str, path: Path, base: int, f: BinaryIO,
                 expect: int) -> Iterator[tuple[int, Record]]:
    """(position after the line, record) of every record of the open segment `f`, checked.

    `expect` is the offset the segment must start with (0 for a topic's first segment, the
    previous segment's next offset, or `base` when the previous one was not read).  Raises
    `TopicLogDamaged` at the first place that breaks the rules; stops quietly at the crash tail
    of an in-progress segment (the writer's torn last line)."""
    if base != expect:
        raise start_mismatch(topic, path, base, expect)
    sealed = is_sealed(path)
    pos = 0
    for lineno, line in enumerate(f, 1):
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
        if rec.offset != expect:
            raise TopicLogDamaged(topic, path, expect, pos,
                                  f"line {lineno} has {missing_records(expect, rec.offset)}")
        pos += len(line)
        expect += 1
        yield pos, rec


class SegmentCheck(NamedTuple):
    """What `check_segment` found in one segment file."""

    path: Path
    base: int
    next_offset: int  # offset after the last good record
    good_end: int  # byte position after the last good record
    size: int  # file size when checked
    damage: TopicLogDamaged | None  # the first damaged place, None when the segment is sound

    @property
    def crash_tail(self) -> int:
        """Bytes after the last good record of a sound in-progress segment (recovery's part)."""
        return 0 if self.damage is not None else self.size - self.good_end


def check_segment(topic: str, path: Path, base: int, expect: int) -> SegmentCheck:
    """Read a whole segment file through `iter_records`; its first damage, if any."""
    good_end = 0
    nxt = expect
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        try:
            for end, rec in iter_records(topic, path, base, f, expect):
                good_end, nxt = end, rec.offset + 1
        except TopicLogDamaged as exc:
            return SegmentCheck(path, base, nxt, good_end, size, exc)
    if good_end == 0:
        nxt = base  # no record (an empty file or only a crash tail): the next one is `base`
    return SegmentCheck(path, base, nxt, good_end, size, None)


def diagnose(topic: str, path: Path, base: int, expect: int) -> TopicLogDamaged | None:
    """The damage of a segment that a fast reader found broken (None if the checker, the
    reference, finds it sound: then the fast reader is wrong and must say so itself)."""
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
    out: list[SegmentCheck] = []
    # The first segment starts at the log start (0, or where retention moved it).
    expect: int | None = log_start(root / topic)  # None after a damaged segment
    segs = list_segments(root / topic)
    sealed_bases = {s.base for s in segs if s.sealed}
    for seg in segs:
        if not seg.sealed and seg.base in sealed_bases:
            continue  # renamed between two directory reads
        path = seg.path
        start = seg.base if expect is None else expect
        try:
            check = check_segment(topic, path, seg.base, start)
        except FileNotFoundError:
            path = path.with_name(sealed_name(seg.base))
            try:
                check = check_segment(topic, path, seg.base, start)
            except FileNotFoundError:
                continue  # removed by a writer's recovery (it held no complete line)
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
    is the previous one's end, the segments chain up.  The whole file is read only to describe
    a damage found.  A gap inside a segment is found by the readers and `headwater topics
    verify`, which read every line."""
    if size == 0:
        return base
    if is_sealed(path):
        end, _, last = last_complete_line(fd, size)
        complete = end == size
    else:
        end, last = recoverable_end(fd, size)
        if end == 0:
            return base  # only a crash tail so far
        complete = True
    if last is not None and complete and last >= base and _head_offset(fd) == base:
        return last + 1
    raise diagnose(topic, path, base, base) or TopicLogDamaged(
        topic, path, base, 0,
        "the first or last line of the segment is not a record line with a consistent offset")
