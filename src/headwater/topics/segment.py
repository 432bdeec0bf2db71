"""Naming, listing and tail-scanning of topic log segments, shared by the writer and the reader.

The on-disk format itself is documented in `headwater.topics.log`.  In short: a topic is a
directory `<root>/<topic>/`; a segment is a JSON-lines file named after the offset of its first
record, zero-padded to 20 digits.  A sealed (complete, immutable) segment is visible as
`00000000000000000042.jsonl`; the one segment being appended to is hidden as
`.00000000000000000042.jsonl.inprogress` because Spark and Hadoop file sources skip names that
start with `.` or `_`, so a batch or streaming job never reads a file that is still growing.

A sealed segment that compaction (`headwater.topics.compactor`) has rewritten is named after
its whole original range, `00000000000000000042-00000000000000000100.compacted.jsonl` for
offsets 42..99: its records ascend with gaps, so neither its first nor its last line tells
where the range starts or ends, and the name is what lets readers still chain segments up
exactly.  The name is also the marker that allows the gaps: it appears with the same atomic
rename that puts the rewritten file in place, so a reader knows from the name it opened a file
under whether that file may have gaps, as it knows whether it is sealed.  Compaction also merges
adjacent small segments into one, named after the whole merged range
(`00000000000000000042-00000000000000000300.compacted.jsonl`); until the parts are unlinked (or
after a kill there, until the writer's next start) both are on disk, and a segment whose range
lies inside a compacted one listed before it is such a part: `live_segments` leaves it out, and
`open_segment` moves a reader whose listed part vanished on into the merged file.

Finding the last offset of a segment reads only its tail (backwards, in chunks) rather than the
whole file: recovery and `list_topics` must stay cheap with 64 MiB segments.  That relies on the
writer's guarantee that every record is exactly one line, i.e. no raw newline inside a line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import BinaryIO, NamedTuple

import orjson

from headwater.topics.checksum import ChecksumError, body_end

__all__ = [
    "COMPACTED_SUFFIX",
    "INPROGRESS_SUFFIX",
    "MAX_TOPIC_NAME_LENGTH",
    "SEALED_SUFFIX",
    "CorruptSegmentError",
    "InvalidTopicNameError",
    "Opened",
    "Segment",
    "compacted_end",
    "compacted_name",
    "covers",
    "inprogress_name",
    "last_complete_line",
    "list_segments",
    "list_topic_names",
    "live_segments",
    "open_segment",
    "parse_segment",
    "parse_segment_name",
    "recoverable_end",
    "sealed_name",
    "validate_topic_name",
]

SEALED_SUFFIX = ".jsonl"
INPROGRESS_SUFFIX = ".jsonl.inprogress"
COMPACTED_SUFFIX = ".compacted.jsonl"
MAX_TOPIC_NAME_LENGTH = 249  # Kafka's limit
_DIGITS = 20
_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]+")
_TAIL_CHUNK = 64 * 1024


class InvalidTopicNameError(ValueError):
    """A topic name that Kafka would reject, or that would collide with a hidden file."""


class CorruptSegmentError(RuntimeError):
    """A segment file that does not hold what the writer could have written."""


def validate_topic_name(name: str) -> str:
    """Return `name` if it is a legal topic name, else raise `InvalidTopicNameError`.

    Kafka's rule (letters, digits, `.`, `_`, `-`; 1 to 249 characters; not `.` or `..`) plus:
    no leading `.`, since the topic directory would be hidden (and `<root>/.lock` lives there).
    Leading `_` stays legal: Debezium's heartbeat topic is `__debezium-heartbeat.<prefix>`.
    """
    if not isinstance(name, str):
        raise InvalidTopicNameError(f"topic name must be a str, got {type(name).__name__}")
    if not name:
        raise InvalidTopicNameError("topic name is empty")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicNameError(
            f"topic name is {len(name)} characters long, max is {MAX_TOPIC_NAME_LENGTH}: "
            f"{name[:40]!r}..."
        )
    if _TOPIC_RE.fullmatch(name) is None:
        raise InvalidTopicNameError(
            f"illegal topic name {name!r}: only ASCII letters, digits, '.', '_' and '-' are allowed"
        )
    if name.startswith("."):
        raise InvalidTopicNameError(
            f"illegal topic name {name!r}: must not start with '.' (hidden directory)"
        )
    return name


def sealed_name(base: int) -> str:
    """Visible file name of the sealed segment whose first record has offset `base`."""
    return f"{base:020d}{SEALED_SUFFIX}"


def inprogress_name(base: int) -> str:
    """Hidden file name of the in-progress segment whose first record has offset `base`."""
    return f".{base:020d}{INPROGRESS_SUFFIX}"


def compacted_name(base: int, end: int) -> str:
    """Visible file name of the compacted segment holding what is left of offsets base..end-1."""
    return f"{base:020d}-{end:020d}{COMPACTED_SUFFIX}"


def _number(digits: str) -> int | None:
    if len(digits) != _DIGITS or not digits.isascii() or not digits.isdigit():
        return None
    return int(digits)


class Segment(NamedTuple):
    """One segment file of a topic directory."""

    base: int  # offset of its first record (compacted: of its range's first offset)
    sealed: bool
    path: Path
    end: int | None = None  # compacted: the offset after its range; None: no gaps inside

    @property
    def compacted(self) -> bool:
        return self.end is not None


def parse_segment(name: str, directory: Path) -> Segment | None:
    """The segment a file name in `directory` stands for, None for any other file."""
    if name.endswith(COMPACTED_SUFFIX) and not name.startswith("."):
        first, dash, last = name[: -len(COMPACTED_SUFFIX)].partition("-")
        base, end = _number(first), _number(last)
        if not dash or base is None or end is None or end <= base:
            return None
        return Segment(base, True, directory / name, end)
    if name.endswith(INPROGRESS_SUFFIX) and name.startswith("."):
        digits = name[1 : -len(INPROGRESS_SUFFIX)]
        sealed = False
    elif name.endswith(SEALED_SUFFIX) and not name.startswith("."):
        digits = name[: -len(SEALED_SUFFIX)]
        sealed = True
    else:
        return None
    number = _number(digits)
    return None if number is None else Segment(number, sealed, directory / name)


def parse_segment_name(name: str) -> tuple[int, bool] | None:
    """`(base offset, sealed)` for a segment file name, None for any other file."""
    seg = parse_segment(name, Path())
    return None if seg is None else (seg.base, seg.sealed)


def compacted_end(path: Path) -> int | None:
    """The end of a compacted segment's range by the name it was opened under; None when the
    file is not a compacted segment (then its offsets have no gaps)."""
    seg = parse_segment(path.name, path.parent)
    return None if seg is None else seg.end


def _rank(seg: Segment) -> tuple[int, int, int]:
    # For one base: the compacted forms first, the widest (a merge) first, then the sealed
    # one, then the in-progress one.
    if seg.end is not None:
        return seg.base, 0, -seg.end
    return seg.base, 1 if seg.sealed else 2, 0


def list_segments(topic_dir: Path) -> list[Segment]:
    """Every segment file of a topic directory, sorted by base offset; for one base the
    compacted forms first (the widest first), then the sealed one, then the in-progress one
    (see `live_segments`).

    A missing directory yields an empty list.
    """
    out: list[Segment] = []
    try:
        entries = os.scandir(topic_dir)
    except FileNotFoundError:
        return out
    with entries:
        for entry in entries:
            seg = parse_segment(entry.name, topic_dir)
            if seg is not None:
                out.append(seg)
    out.sort(key=_rank)
    return out


def live_segments(topic_dir: Path, include_inprogress: bool = True) -> list[Segment]:
    """The segments readers read: one per range of offsets, the latest form of each.

    Two files hold the same offsets only for a moment: an in-progress segment renamed to its
    sealed name between two directory reads; a sealed one whose compacted rewrite is in place
    while the original is not unlinked yet; the parts of a merge whose merged file is in place
    while they are not all unlinked yet (a crash there leaves them until the writer's next
    start).  The rewrite or merged file was complete and fsynced before its rename, so it holds
    everything of the original or the parts that still counts: they are never counted as well.
    A part is a sealed segment whose base lies inside the range of a compacted segment listed
    before it (an in-progress one there is not a part: it stays, and readers report the
    overlap as damage)."""
    out: list[Segment] = []
    reach = 0  # the end of the last compacted range kept
    for seg in list_segments(topic_dir):
        if out and out[-1].base == seg.base:
            continue
        if seg.sealed and seg.base < reach:
            continue
        if seg.sealed or include_inprogress:
            out.append(seg)
        if seg.end is not None:
            reach = max(reach, seg.end)
    return out


class Opened(NamedTuple):
    """A listed segment opened for reading."""

    file: BinaryIO  # positioned at `start`
    path: Path  # the name it was opened under: sealed or not, compacted (gaps allowed) or not
    start: int  # byte position of its first line at or past the listed base: 0, unless the
    #             segment was merged into a wider compacted one since it was listed


def open_segment(seg: Segment) -> Opened | None:
    """Open a listed segment: the file, positioned at the listed base, and the name it was
    opened under, which says whether it is sealed and whether it may have gaps.

    Since the listing, an in-progress segment may have been sealed, a sealed one replaced by
    its compacted form, and any sealed one merged into a wider compacted segment: then the
    directory is listed again and the file now holding the listed base is opened, positioned
    at its first line at or past that base (the lines before it belong to segments listed
    before this one).  A reader that reads it to its end skips the listed segments it covers
    (`covers`): it read them in it.  None when the segment is gone (recovery removed an
    in-progress file with no complete line, retention a segment)."""
    candidates = [seg.path]
    if not seg.sealed:
        candidates.append(seg.path.with_name(sealed_name(seg.base)))
    for path in candidates:
        try:
            return Opened(open(path, "rb"), path, 0)
        except FileNotFoundError:
            continue
    while True:
        holder = next((s for s in live_segments(seg.path.parent)
                       if s.end is not None and s.base <= seg.base < s.end), None)
        if holder is None:
            return None
        try:
            return _skip_below(Opened(open(holder.path, "rb"), holder.path, 0), seg.base)
        except FileNotFoundError:
            continue  # merged again meanwhile, or removed: list again


def covers(path: Path, seg: Segment) -> bool:
    """Whether the file a reader just read (by the name it was opened under) is a merged
    compacted segment holding the whole range of the listed `seg` after it: the directory
    was listed before the merge, and `seg` is one of its parts (read already, in it)."""
    opened = parse_segment(path.name, path.parent)
    return (opened is not None and opened.end is not None
            and opened.base < seg.base < opened.end)


_HEAD = b'{"offset":'


def _skip_below(opened: Opened, offset: int) -> Opened:
    """`opened` moved to its first line whose offset is `offset` or more, or to the first line
    that does not start like a record (the reader reports it)."""
    pos = 0
    for line in opened.file:
        digits, comma, _ = line[len(_HEAD):len(_HEAD) + 21].partition(b",")
        if (not line.startswith(_HEAD) or not comma or not digits.isdigit()
                or int(digits) >= offset):
            break
        pos += len(line)
    opened.file.seek(pos)
    return opened._replace(start=pos)


def list_topic_names(root: Path) -> list[str]:
    """Names of the topic directories under `root` (other entries are ignored), sorted."""
    names: list[str] = []
    try:
        entries = os.scandir(root)
    except FileNotFoundError:
        return names
    with entries:
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or entry.name.startswith("."):
                continue  # hidden: Headwater's own (.consumers), not a topic
            try:
                validate_topic_name(entry.name)
            except InvalidTopicNameError:
                continue
            names.append(entry.name)
    names.sort()
    return names


def _rfind_newline(fd: int, end: int) -> int:
    """Position of the last b"\\n" strictly before byte `end` of the file, or -1."""
    pos = end
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        chunk = os.pread(fd, pos - start, start)
        if len(chunk) != pos - start:
            # The file shrank under us (a writer truncating a torn tail): search what we have.
            pos = start + len(chunk)
            if not chunk:
                return -1
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i
        pos = start
    return -1


def _line_offset(line: bytes) -> int | None:
    """The `offset` of one complete line, None if it is not a valid record line (nor one
    whose checksum matches: a power cut can persist a line's end but not all its bytes)."""
    try:
        body_end(line)
        obj = orjson.loads(line)
    except (orjson.JSONDecodeError, ChecksumError):
        return None
    if not isinstance(obj, dict):
        return None
    off = obj.get("offset")
    if type(off) is not int or off < 0:
        return None
    return off


def last_complete_line(fd: int, size: int) -> tuple[int, int, int | None]:
    """Scan the tail of an open segment: `(end, start, offset)`.

    `end` is the length of the prefix made of complete lines (just past the last b"\\n"), `start`
    the position where the last complete line begins, `offset` that line's record offset (None
    when the file holds no complete line, or when the last complete line is not a valid record;
    callers decide whether that is corruption or a torn tail).
    """
    end = _rfind_newline(fd, size) + 1
    if end == 0:
        return 0, 0, None
    start = _rfind_newline(fd, end - 1) + 1
    line = os.pread(fd, end - start, start)
    return end, start, _line_offset(line)


def recoverable_end(fd: int, size: int) -> tuple[int, int | None]:
    """What crash recovery keeps of an in-progress segment: `(end, last offset)`.

    `end` is the position just past the last complete line that is a record (None offset and
    0 when there is none); the bytes after it - a torn last line, and complete lines that are
    not records (a power cut can persist a file's size before its data) - are the crash tail
    that recovery truncates.  Readers of an in-progress segment treat that tail as not written
    yet rather than as damage, and the writer's recovery removes it: both use this function so
    that they agree byte for byte.
    """
    end = size
    while True:
        end, start, last = last_complete_line(fd, end)
        if end == 0 or last is not None:
            return end, last
        end = start
