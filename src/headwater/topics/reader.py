"""Reading the local topic log: listing topics, reading a range, following new records.

The format and the writer's contracts are documented in `headwater.topics.log`.  The reader is
lock-free and safe to run while the writer appends, in this process or another:

* sealed segments are immutable;
* an in-progress segment only grows, so a torn (not yet `\\n`-terminated) last line is simply not
  yielded yet; it is not an error;
* an in-progress file may be renamed to its sealed name between listing and opening it, so
  opening falls back to the sealed name; a file already open keeps reading across the rename.

Keys, values and header values are returned as the exact raw JSON bytes that were appended
(only CR/LF, which the writer turns into spaces, can differ): lines are parsed with a positional
JSON scanner that knows the fixed field order, not by decoding and re-encoding the documents, so
big integers, number formatting and whitespace survive.  A JSON `null` key/value reads as None.

The reader is not on the hot path; it favours exactness and simplicity over speed, but it does
skip whole segments below `from_offset` using only the file names.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from headwater.topics.segment import (
    CorruptSegmentError,
    Segment,
    inprogress_name,
    last_complete_line,
    list_segments,
    list_topic_names,
    sealed_name,
    validate_topic_name,
)

__all__ = ["CorruptSegmentError", "Record", "TopicInfo", "follow", "list_topics", "read"]


class Record(NamedTuple):
    """One record read back from a topic; key/value/header values are raw JSON bytes."""

    topic: str
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]


class TopicInfo(NamedTuple):
    """Summary of one topic directory."""

    name: str
    start_offset: int  # offset of the first record on disk
    end_offset: int  # next offset: last offset on disk + 1
    record_count: int
    size_bytes: int
    segment_count: int


# ---------------------------------------------------------------------- line parsing

_DECODER = json.JSONDecoder()
_SCAN = _DECODER.raw_decode
_WS = " \t\n\r"
_P_OFFSET = '{"offset":'
_P_TS = ',"timestamp":'
_P_KEY = ',"key":'
_P_VALUE = ',"value":'
_P_HEADERS = ',"headers":{'


class _BadLineError(ValueError):
    pass


def _skip_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _raw(s: str, i: int) -> tuple[str | None, int]:
    """Scan the JSON document starting at `i`; (its raw text or None for null, end index)."""
    j = _skip_ws(s, i)
    try:
        obj, end = _SCAN(s, j)
    except json.JSONDecodeError as exc:
        raise _BadLineError(f"invalid JSON at column {exc.pos}") from None
    k = _skip_ws(s, end)
    return (None if obj is None else s[i:k]), k


def _expect(s: str, i: int, token: str) -> int:
    if not s.startswith(token, i):
        raise _BadLineError(f"expected {token!r} at column {i}")
    return i + len(token)


def _int_until(s: str, i: int, token: str) -> tuple[int, int]:
    j = s.find(token, i)
    if j < 0:
        raise _BadLineError(f"expected {token!r} after column {i}")
    text = s[i:j]
    if not text.isascii() or not text.isdigit():
        raise _BadLineError(f"expected an integer at column {i}, got {text[:30]!r}")
    return int(text), j + len(token)


def parse_line(topic: str, line: bytes) -> Record:
    """Parse one complete line of a segment (with or without its trailing newline)."""
    try:
        s = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadLineError(f"not UTF-8: {exc}") from None
    i = _expect(s, 0, _P_OFFSET)
    offset, i = _int_until(s, i, _P_TS)
    # A timestamp may in principle be negative (before 1970).
    neg = s.startswith("-", i)
    ts, i = _int_until(s, i + neg, _P_KEY)
    if neg:
        ts = -ts
    key, i = _raw(s, i)
    i = _expect(s, i, _P_VALUE)
    value, i = _raw(s, i)
    headers: tuple[tuple[str, bytes], ...] = ()
    if s.startswith(_P_HEADERS, i):
        i += len(_P_HEADERS)
        pairs: list[tuple[str, bytes]] = []
        i = _skip_ws(s, i)
        if s.startswith("}", i):
            i += 1
        else:
            while True:
                name, i = _raw(s, i)
                if name is None or not name.strip().startswith('"'):
                    raise _BadLineError(f"expected a header name before column {i}")
                i = _expect(s, i, ":")
                hval, i = _raw(s, i)
                pairs.append((json.loads(name), b"null" if hval is None else hval.encode()))
                if s.startswith(",", i):
                    i += 1
                    continue
                i = _expect(s, i, "}")
                break
        headers = tuple(pairs)
    i = _expect(s, i, "}")
    if s[i:].strip(_WS):
        raise _BadLineError(f"trailing data at column {i}")
    return Record(
        topic,
        offset,
        ts,
        None if key is None else key.encode(),
        None if value is None else value.encode(),
        headers,
    )


# ---------------------------------------------------------------------- segment access


def _open_segment(seg: Segment) -> BinaryIO | None:
    """Open a listed segment; an in-progress one may have been sealed (renamed) meanwhile."""
    candidates = [seg.path]
    if not seg.sealed:
        candidates.append(seg.path.with_name(sealed_name(seg.base)))
    for path in candidates:
        try:
            return open(path, "rb")
        except FileNotFoundError:
            continue
    return None  # removed by recovery (it held no complete line)


def _segments(topic_dir: Path, include_inprogress: bool) -> list[Segment]:
    segs = list_segments(topic_dir)
    # Drop an in-progress entry that has a sealed twin (renamed between two scandir reads).
    sealed_bases = {s.base for s in segs if s.sealed}
    return [s for s in segs if s.sealed or (include_inprogress and s.base not in sealed_bases)]


def _topic_dir(root: Path | str, topic: str) -> Path:
    return Path(root) / validate_topic_name(topic)


def _iter_file(topic: str, f: BinaryIO, path: Path, from_offset: int) -> Iterator[Record]:
    for lineno, line in enumerate(f, 1):
        if not line.endswith(b"\n"):
            return  # torn tail of an in-progress file: not written completely yet
        try:
            rec = parse_line(topic, line)
        except _BadLineError as exc:
            raise CorruptSegmentError(f"{path}, line {lineno}: {exc}") from None
        if rec.offset >= from_offset:
            yield rec


def read(
    root: Path | str,
    topic: str,
    from_offset: int = 0,
    include_inprogress: bool = True,
) -> Iterator[Record]:
    """Records of `topic` with offset >= `from_offset`, in offset order, then stop.

    With `include_inprogress` (the default) the records not yet sealed are included, up to the
    last complete line; without it, only what Spark would see.
    """
    topic_dir = _topic_dir(root, topic)
    segs = _segments(topic_dir, include_inprogress)
    for idx, seg in enumerate(segs):
        if idx + 1 < len(segs) and segs[idx + 1].base <= from_offset:
            continue  # wholly below from_offset, known from the next segment's name
        f = _open_segment(seg)
        if f is None:
            continue
        with f:
            yield from _iter_file(topic, f, seg.path, from_offset)


def _segment_end(seg: Segment) -> tuple[int, int] | None:
    """(next offset after the segment's last complete record, file size) or None if gone."""
    f = _open_segment(seg)
    if f is None:
        return None
    with f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        end, _, last = last_complete_line(fd, size)
        if end == 0:
            return seg.base, size
        if last is None:
            if seg.sealed:
                raise CorruptSegmentError(f"{seg.path} does not end with a valid record")
            return seg.base, size  # pragma: no cover - garbage tail awaiting recovery
        return last + 1, size


def list_topics(root: Path | str, include_inprogress: bool = True) -> list[TopicInfo]:
    """Every topic under `root`, sorted by name (reads only each topic's last segment tail)."""
    out: list[TopicInfo] = []
    for name in list_topic_names(Path(root)):
        segs = _segments(Path(root) / name, include_inprogress)
        size = 0
        end = start = 0
        count = 0
        for i, seg in enumerate(segs):
            if i == len(segs) - 1:
                tail = _segment_end(seg)
                if tail is None:
                    continue
                end, seg_size = tail
            else:
                try:
                    seg_size = seg.path.stat().st_size
                except FileNotFoundError:
                    try:
                        seg_size = seg.path.with_name(sealed_name(seg.base)).stat().st_size
                    except FileNotFoundError:
                        continue
            if count == 0:
                start = seg.base
            count += 1
            size += seg_size
        if count == 0:
            start = end = 0
        out.append(TopicInfo(name, start, end, end - start, size, count))
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
) -> Iterator[Record]:
    """Like `read`, then keep polling for new records (`headwater topics tail -f`).

    Stops when `stop()` returns true or `timeout` seconds after the call, whichever first (both
    are checked between reads, so also while records keep arriving); with neither it runs until
    the consumer stops iterating.  Works while the topic directory does not exist yet, across
    segment seals and across writer restarts (including recovery of a crashed writer).
    """
    topic_dir = _topic_dir(root, topic)
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
    """An open segment being followed, with the torn tail read so far."""

    def __init__(self, topic: str, topic_dir: Path, seg: Segment, f: BinaryIO) -> None:
        self.topic = topic
        self.dir = topic_dir
        self.base = seg.base
        self.f = f
        self.ino = os.fstat(f.fileno()).st_ino
        self.pending = b""

    @classmethod
    def open(cls, topic: str, topic_dir: Path, pos: int) -> _Cursor | None:
        """Open the segment holding offset `pos` (the first one if `pos` is below all)."""
        chosen = None
        for seg in _segments(topic_dir, include_inprogress=True):
            if chosen is not None and seg.base > pos:
                break
            chosen = seg
        if chosen is None:
            return None
        f = _open_segment(chosen)
        return None if f is None else cls(topic, topic_dir, chosen, f)

    def read_complete(self) -> list[Record]:
        chunk = self.f.read()
        if not chunk:
            return []
        data = self.pending + chunk
        cut = data.rfind(b"\n") + 1
        self.pending = data[cut:]
        out = []
        for line in data[:cut].splitlines():
            try:
                out.append(parse_line(self.topic, line))
            except _BadLineError as exc:
                raise CorruptSegmentError(
                    f"segment {self.base} of topic {self.topic}: {exc}"
                ) from None
        return out

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
