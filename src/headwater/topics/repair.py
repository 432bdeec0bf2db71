"""`headwater topics verify --repair`: cut a damaged topic back to its last good record.

A topic is a gap-free sequence of offsets, so everything from the first damaged place on has to
go: the damaged segment is truncated there and every later segment is taken out whole.  Nothing
is deleted: the removed bytes are moved to a hidden `.<segment name>.damaged` file next to the
segment (hidden, so that Spark's JSON source and the readers skip it), and every removal is
returned for the CLI to print.  The root's writer lock is held meanwhile (a running capture
must be stopped first); the writer's next start continues at the first removed offset.

A compacted segment's name holds the end of its range (`segment.compacted_name`); one cut
inside is renamed to end at the first removed offset, so that the next start continues there
and not at the old range's end.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import orjson

from headwater.topics.check import TopicCheck, check_topic
from headwater.topics.log import lock_root
from headwater.topics.segment import compacted_name, parse_segment

__all__ = ["Removal", "repair_topic"]


class Removal(NamedTuple):
    """Bytes taken out of one segment file."""

    topic: str
    segment: Path
    start: int  # first byte removed
    size: int  # bytes removed
    saved_to: Path
    first_offset: int  # offset of the first record no longer in the topic
    found_offsets: tuple[int, int, int] | None  # (lowest, highest, lines) readable in them
    renamed_to: Path | None = None  # a compacted segment cut inside: its name with the new end

    def describe(self) -> str:
        found = ("no readable record" if self.found_offsets is None else
                 "{2} lines with offsets {0}..{1}".format(*self.found_offsets))
        what = ("the whole segment" if self.start == 0
                else f"bytes {self.start}..{self.start + self.size - 1}")
        return (f"topic {self.topic}: removed {what} of {self.segment} ({self.size} bytes, "
                f"{found}), the topic now ends before offset {self.first_offset}; "
                f"saved to {self.saved_to}"
                + ("" if self.renamed_to is None else f"; renamed to {self.renamed_to}"))


def _aside(path: Path) -> Path:
    n = 0
    while True:
        name = f".{path.name}.damaged" + (f".{n}" if n else "")
        if not (path.parent / name).exists():
            return path.parent / name
        n += 1


def _offsets(data: bytes) -> tuple[int, int, int] | None:
    """Best effort: the offsets of the complete lines that parse, for the report."""
    found = []
    for line in data.split(b"\n")[:-1]:
        try:
            off = orjson.loads(line).get("offset")
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if type(off) is int:
            found.append(off)
    return (min(found), max(found), len(found)) if found else None


def _cut(topic: str, path: Path, start: int, first_offset: int) -> Removal:
    saved = _aside(path)
    if start == 0:
        size = path.stat().st_size
        found = _offsets(path.read_bytes())
        os.rename(path, saved)
        return Removal(topic, path, 0, size, saved, first_offset, found)
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        removed = os.pread(fd, size - start, start)
        with open(saved, "xb") as f:  # saved and fsync'ed before the segment is cut
            f.write(removed)
            f.flush()
            os.fsync(f.fileno())
        os.ftruncate(fd, start)
        os.fsync(fd)
    finally:
        os.close(fd)
    renamed = None
    seg = parse_segment(path.name, path.parent)
    if seg is not None and seg.compacted:
        renamed = path.with_name(compacted_name(seg.base, first_offset))
        os.rename(path, renamed)
    return Removal(topic, path, start, len(removed), saved, first_offset, _offsets(removed),
                   renamed)


def repair_topic(root: Path, topic: str) -> tuple[TopicCheck, list[Removal]]:
    """Check `topic` under the writer lock and truncate it to the record before its first
    damaged place (see the module docstring): the check and the removals, in offset order
    (none when the topic is sound).  Raises `TopicLogLockedError` while a writer runs."""
    fd = lock_root(root)
    try:
        check = check_topic(root, topic)
        damaged = [i for i, s in enumerate(check.segments) if s.damage is not None]
        if not damaged:
            return check, []
        first = check.segments[damaged[0]]
        assert first.damage is not None
        out = [_cut(topic, first.path, first.damage.position, first.damage.offset)]
        for seg in check.segments[damaged[0] + 1:]:
            out.append(_cut(topic, seg.path, 0, first.damage.offset))
        dfd = os.open(root / topic, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    finally:
        os.close(fd)
    return check, out
