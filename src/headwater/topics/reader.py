"""Reading the local topic log: listing topics, reading a range, following new records.

The format and the writer's contracts are documented in `headwater.topics.log`.  The reader is
lock-free and safe to run while the writer appends, in this process or another:

* sealed segments are immutable;
* an in-progress segment only grows, so a torn (not yet `\\n`-terminated) last line is simply not
  yielded yet; it is not an error;
* an in-progress file may be renamed to its sealed name between listing and opening it, a
  sealed one replaced by its compacted form, and segments merged into one compacted segment,
  so opening falls back to the file now holding the listed offsets (`segment.open_segment`)
  and the listed segments it also holds are skipped (`segment.covers`); a file already open
  keeps reading across the rename or unlink;
* a compacted segment (by the name it was opened under) may skip offsets inside its range.

Keys, values and header values are returned as the exact raw JSON bytes that were appended
(only CR/LF, which the writer turns into spaces, can differ): lines are parsed with a positional
JSON scanner that knows the fixed field order, not by decoding and re-encoding the documents, so
big integers, number formatting and whitespace survive.  A JSON `null` key/value reads as None.

Every entry point checks the root's format stamp first (`headwater.state_format`): a log a
newer Headwater wrote is refused, not misread.

The reader is not on the hot path; it favours exactness and simplicity over speed, but it does
skip whole segments below `from_offset` using only the file names.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import NamedTuple

from headwater.state_format import TOPIC_LOG, open_state_dir
from headwater.topics.check import (
    is_sealed,
    iter_records,
    next_after,
    segment_end,
    start_mismatch,
    unexpected_offset,
)
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.record import BadLineError, Record, parse_line
from headwater.topics.retention import log_start
from headwater.topics.segment import (
    CorruptSegmentError,
    Opened,
    Segment,
    compacted_end,
    covers,
    inprogress_name,
    list_segments,
    list_topic_names,
    live_segments,
    open_segment,
    parse_segment,
    recoverable_end,
    sealed_name,
    validate_topic_name,
)

__all__ = [
    "CorruptSegmentError",
    "Record",
    "TopicInfo",
    "TopicLogDamaged",
    "follow",
    "list_topics",
    "read",
]


class TopicInfo(NamedTuple):
    """Summary of one topic directory."""

    name: str
    start_offset: int  # offset of the first record on disk
    end_offset: int  # next offset: last offset on disk + 1
    record_count: int  # records on disk (fewer than end - start where compaction removed some)
    size_bytes: int
    segment_count: int


def _topic_dir(root: Path | str, topic: str) -> Path:
    return Path(root) / validate_topic_name(topic)


def read(
    root: Path | str,
    topic: str,
    from_offset: int = 0,
    include_inprogress: bool = True,
) -> Iterator[Record]:
    """Records of `topic` with offset >= `from_offset`, in offset order, then stop.

    With `include_inprogress` (the default) the records not yet sealed are included, up to the
    last complete line; without it, only what Spark would see.  Every line read is checked
    (`headwater.topics.check`): a damaged segment raises `TopicLogDamaged`.
    """
    topic_dir = _topic_dir(root, topic)
    open_state_dir(Path(root), TOPIC_LOG, stamp=False)
    segs = live_segments(topic_dir, include_inprogress)
    # offset the next segment must start with (None: not known); the first at the log start
    expect: int | None = log_start(topic_dir)
    last: Path | None = None  # the file read last
    for idx, seg in enumerate(segs):
        if last is not None and covers(last, seg):
            continue  # merged since the listing into the file read last: read in it
        if idx + 1 < len(segs) and segs[idx + 1].base <= from_offset:
            expect = None
            continue  # wholly below from_offset, known from the next segment's name
        opened = open_segment(seg)
        if opened is None:
            continue
        f, path, _ = opened
        last = path
        with f:
            expect = seg.base if expect is None else expect
            for _, rec in iter_records(topic, path, seg.base, f, expect):
                expect = rec.offset + 1
                if rec.offset >= from_offset:
                    yield rec
            expect = next_after(path, expect)


def _segment_end(topic: str, seg: Segment) -> tuple[int, int, int, Path] | None:
    """(next offset after the segment, its bytes, its records, the file read) or None if
    gone.  A segment merged into a wider one since the listing is counted from its listed
    base on (what comes before was counted in the segments listed before it)."""
    opened = open_segment(seg)
    if opened is None:
        return None
    f, path, start = opened
    with f:
        fd = f.fileno()
        st = os.fstat(fd)
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, start)
        hit = _SEALED_ENDS.get(key)
        if hit is None:
            own = parse_segment(path.name, path.parent)
            nxt = segment_end(topic, path, seg.base if own is None else own.base, fd,
                              st.st_size)
            # A compacted segment's records are counted once (it is immutable): its offsets
            # have gaps, so the range does not say how many records it holds.
            records = nxt - seg.base if compacted_end(path) is None else _count_lines(fd, start)
            hit = nxt, records
            if is_sealed(path):
                if len(_SEALED_ENDS) > 100_000:
                    _SEALED_ENDS.clear()
                _SEALED_ENDS[key] = hit
        return hit[0], st.st_size - start, hit[1], path


def _count_lines(fd: int, at: int) -> int:
    count = 0
    while chunk := os.pread(fd, 1 << 20, at):
        count += chunk.count(b"\n")
        at += len(chunk)
    return count


# Sealed segments are immutable: their checked end (and record count) is kept, so the
# pipeline's end-offset poll (every trigger) reads only the in-progress segment's tail.  Keyed
# by path, inode, size and mtime, so a file replaced or changed by hand is checked again (and
# by where counting started: see `_segment_end`).
_SEALED_ENDS: dict[tuple[str, int, int, int, int], tuple[int, int]] = {}


def list_topics(root: Path | str, include_inprogress: bool = True) -> list[TopicInfo]:
    """Every topic under `root`, sorted by name.

    Reads only the first and last line of each segment (`check.segment_end`), and checks that
    they chain up: the first segment starts at the log start and each one where the previous
    ended.  A damaged place found raises `TopicLogDamaged`."""
    out: list[TopicInfo] = []
    open_state_dir(Path(root), TOPIC_LOG, stamp=False)
    for name in list_topic_names(Path(root)):
        segs = live_segments(Path(root) / name, include_inprogress)
        size = 0
        start = end = log_start(Path(root) / name)
        count = 0
        records = 0
        last: Path | None = None  # the file read last
        for seg in segs:
            if last is not None and covers(last, seg):
                continue  # merged since the listing into the file read last: counted in it
            if seg.base != end:
                raise start_mismatch(name, seg.path, seg.base, end)
            tail = _segment_end(name, seg)
            if tail is None:
                continue
            end, seg_size, seg_records, last = tail
            count += 1
            size += seg_size
            records += seg_records
        out.append(TopicInfo(name, start, end, records, size, count))
    return out


# ---------------------------------------------------------------------- follow


def follow(
    root: Path | str,
    topic: str,
    from_offset: int = 0,
    *,
    poll_interval: float = 0.2,
    timeout: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> Generator[Record, None, None]:
    """Like `read`, then keep polling for new records (`headwater topics tail -f`).

    Stops when `stop()` returns true or `timeout` seconds after the call, whichever first (both
    are checked between reads, so also while records keep arriving); with neither it runs until
    the consumer stops iterating.  Works while the topic directory does not exist yet, across
    segment seals and across writer restarts (including recovery of a crashed writer).
    """
    topic_dir = _topic_dir(root, topic)
    open_state_dir(Path(root), TOPIC_LOG, stamp=False)
    deadline = None if timeout is None else time.monotonic() + timeout
    pos = from_offset  # next offset wanted
    cur: _Cursor | None = None
    try:
        while True:
            if stop is not None and stop():
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            if cur is None:
                cur = _Cursor.open(topic, topic_dir, pos)
            progressed = False
            if cur is not None:
                for rec in cur.read_complete():
                    if rec.offset >= pos:
                        pos = rec.offset + 1
                        progressed = True
                        yield rec
                if not progressed and cur.superseded():
                    # Nothing new and the writer has moved on: the segment is complete.  Drain
                    # what was appended between our last read and the check, then switch.
                    for rec in cur.read_complete():
                        if rec.offset >= pos:
                            pos = rec.offset + 1
                            yield rec
                    pos = cur.check_complete(pos)
                    cur.close()
                    cur = None
                    progressed = True
            if progressed:
                continue
            nap = poll_interval
            if deadline is not None:
                nap = min(nap, max(0.0, deadline - time.monotonic()))
            time.sleep(nap)
    finally:
        if cur is not None:
            cur.close()


class _Cursor:
    """An open segment being followed, with the torn tail read so far.

    Checks what it reads as `check.iter_records` does (offsets continue from the segment's base,
    skipping ahead only inside a compacted segment's range; complete lines are records; a
    crash tail of an in-progress segment is waited out until recovery seals or replaces the
    file), and when it leaves the segment, that the segment was complete and the next one
    starts where it ended."""

    def __init__(self, topic: str, topic_dir: Path, seg: Segment, opened: Opened) -> None:
        self.topic = topic
        self.dir = topic_dir
        self.base = seg.base
        self.path = opened.path
        self.f = opened.file
        self.ino = os.fstat(self.f.fileno()).st_ino
        self.pending = b""
        self.expect = seg.base  # offset of the next line (the lowest one, if compacted)
        self.end = compacted_end(self.path)  # compacted: offsets skip ahead up to this end
        self.done = opened.start  # position after the complete lines read
        self.stalled = False  # at the crash tail of an in-progress segment

    @classmethod
    def open(cls, topic: str, topic_dir: Path, pos: int) -> _Cursor | None:
        """Open the segment holding offset `pos` (the first one if `pos` is below all)."""
        chosen = None
        for seg in live_segments(topic_dir, include_inprogress=True):
            if chosen is not None and seg.base > pos:
                break
            chosen = seg
        if chosen is None:
            return None
        opened = open_segment(chosen)
        return None if opened is None else cls(topic, topic_dir, chosen, opened)

    def read_complete(self) -> list[Record]:
        if self.stalled:
            return []
        chunk = self.f.read()
        if not chunk:
            return []
        data = self.pending + chunk
        cut = data.rfind(b"\n") + 1
        self.pending = data[cut:]
        out = []
        for line in data[:cut].splitlines(keepends=True):
            try:
                rec = parse_line(self.topic, line)
            except BadLineError as exc:
                self._bad_line(exc)
                break
            if rec.offset != self.expect and (
                    self.end is None or not self.expect < rec.offset < self.end):
                raise TopicLogDamaged(self.topic, self.path, self.expect, self.done,
                                      unexpected_offset(self.expect, rec.offset, self.end))
            out.append(rec)
            self.expect = rec.offset + 1
            self.done += len(line)
        return out

    def _bad_line(self, exc: BadLineError) -> None:
        fd = self.f.fileno()
        if not is_sealed(self.path) and self.done >= recoverable_end(fd, os.fstat(fd).st_size)[0]:
            self.stalled = True  # a crashed writer's tail: its recovery will remove it
            return
        raise TopicLogDamaged(self.topic, self.path, self.expect, self.done,
                              f"not a record: {exc}") from None

    def check_complete(self, pos: int) -> int:
        """On leaving the segment: it did not end with a cut line (unless recovery cut it
        off), and the next segment starts where it ends (`pos`, the offset after the last
        record read, or a compacted segment's range end), unless a compacted segment holds
        it: this one was merged into it since it was opened, and reading goes on there; that
        offset."""
        if self.pending and not self.stalled:
            size = os.fstat(self.f.fileno()).st_size
            if size >= self.done + len(self.pending):  # not truncated by recovery
                raise TopicLogDamaged(
                    self.topic, self.path, self.expect, self.done,
                    f"the last line is cut short: {len(self.pending)} bytes without the closing "
                    "newline")
        pos = pos if self.end is None else max(pos, self.end)
        live = live_segments(self.dir, True)
        later = [s for s in live if s.base > self.base]
        if later and later[0].base != pos and not any(
                s.end is not None and s.base < pos < s.end for s in live):
            raise start_mismatch(self.topic, later[0].path, later[0].base, pos)
        return pos

    def superseded(self) -> bool:
        """True once the writer appends elsewhere: a later segment exists, or our file was
        replaced (a crashed writer's recovery removed it and a new one took its name)."""
        segs = list_segments(self.dir)
        if any(seg.base > self.base for seg in segs):
            return True
        for seg in segs:
            if seg.base == self.base:
                try:
                    if seg.path.stat().st_ino == self.ino:
                        return False
                except FileNotFoundError:
                    continue  # renamed by sealing after the listing: decide on the next poll
        return True

    def close(self) -> None:
        self.f.close()


# Re-exported for callers that build paths themselves (CLI, tests).
__all__ += ["inprogress_name", "parse_line", "sealed_name"]
