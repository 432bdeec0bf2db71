"""Compaction of the local topic log: the passes the writer runs, and their crash-safe rewrites.

Which records go is `headwater.topics.compaction`'s rule; this module reads the segments,
applies it and puts the results in place.  Only the writer calls it (it holds the root's lock,
so nothing else rewrites or removes segments meanwhile); readers run concurrently, lock-free.

A pass over one topic, in steps that the log echoes:

1. *list* the sealed segments (never the in-progress one): range ends, sizes, times, the
   per-topic state and the smallest consumer marker; choose the cleanable prefix and whether
   a pass is worth it (`compaction.cleanable`, `compaction.pass_reason`);
2. *map*: read every cleanable segment, checking it as every reader does (a damaged segment
   stops the pass with `TopicLogDamaged`: compacting it would turn a missing record into a
   legitimate gap), and keep each key's highest offset;
3. *rewrite* each segment that loses records, and give every segment compacted for the first
   time its compacted name (`segment.compacted_name`, which holds its original range: offsets
   never change, the name keeps its base, and the next segment still starts at its end);
4. *record* in `<topic>/.compaction` when each segment was first compacted and how many
   tombstones it kept (for `delete.retention.ms`).

Crash safety of one rewrite: the surviving lines go to a hidden temporary file, which gets the
original's modification time (retention's clock: compaction must not make a segment look new)
and is fsynced; it is renamed to the compacted name (atomic; over the previous compacted file
of the same range, if any) and the directory fsynced; only then is an uncompacted original
unlinked.  A kill at any point leaves the original alone (before the rename), or the rewrite
next to the original (the readers' `segment.live_segments` counts only the rewrite, and the
writer's next start removes the original: `remove_leftovers`), or the rewrite alone: either
the old or the new segment counts, never both, never neither.  The state file is written last
and only ever delays a tombstone's removal when it is lost: a compacted segment it does not
know about is taken as compacted at the time it is found.
"""

from __future__ import annotations

import logging
import os
from array import array
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import Final, NamedTuple

import orjson

from headwater.topics import check
from headwater.topics.compaction import (
    Entry,
    SegmentInfo,
    cleanable,
    pass_reason,
    survives,
    tombstones_expire,
)
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.record import BadLineError, parse_line, split_line
from headwater.topics.retention import RetentionPolicy, consumer_floor
from headwater.topics.segment import (
    COMPACTED_SUFFIX,
    CorruptSegmentError,
    Segment,
    compacted_name,
    list_segments,
    live_segments,
)

__all__ = ["STATE_FILE", "CompactionPass", "compact_topic", "remove_leftovers"]

log = logging.getLogger("headwater.topics.compaction")

STATE_FILE: Final = ".compaction"
_TMP: Final = ".tmp"
_NULL_KEY: Final = 1
_TOMBSTONE: Final = 2


@dataclass
class CompactionPass:
    """What one pass over a topic did."""

    topic: str
    reason: str
    segments: int = 0  # cleanable segments read
    rewritten: int = 0  # segments written again without some records
    renamed: int = 0  # segments compacted for the first time with nothing to remove
    removed: int = 0  # records removed
    tombstones_removed: int = 0
    kept: int = 0  # records left in the cleanable segments
    keys: int = 0


class _Listed(NamedTuple):
    seg: Segment
    end: int  # offset after its range
    size: int
    mtime_ns: int
    atime_ns: int
    next_path: Path | None  # the segment after it, if any


@dataclass
class _Scan:
    """What the map step kept of one segment: per record its offset, key digest, flags and
    the end of its line, in arrays (a few dozen bytes per record, no object each; the bytes
    are read again for a rewrite, so a pass holds one segment's bytes at a time)."""

    offsets: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    digests: bytearray = field(default_factory=bytearray)
    flags: bytearray = field(default_factory=bytearray)

    def entry(self, i: int) -> Entry:
        flag = self.flags[i]
        key = None if flag & _NULL_KEY else bytes(self.digests[16 * i:16 * i + 16])
        return Entry(self.offsets[i], key, bool(flag & _TOMBSTONE))


# -- the file operations of a rewrite (module functions: tests crash a pass at each one) -------

def _write_file(path: Path, data: bytes) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        raise
    return fd


def _fsync_file(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rename(src: Path, dst: Path) -> None:
    os.rename(src, dst)


def _unlink(path: Path) -> None:
    path.unlink()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- the per-topic state ----------------------------------------------------------------------

def _read_state(topic_dir: Path) -> dict[int, tuple[int, int]]:
    """{base: (first compacted, ms; tombstones kept)} of the compacted segments; {} if none."""
    try:
        raw = orjson.loads((topic_dir / STATE_FILE).read_bytes())
        return {int(b): (int(v[0]), int(v[1])) for b, v in raw.items()}
    except FileNotFoundError:
        return {}
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError, IndexError) as exc:
        log.warning("compaction: %s is unreadable (%s): its segments' tombstones are kept "
                    "delete.retention.ms from now", topic_dir / STATE_FILE, exc)
        return {}


def _write_state(topic_dir: Path, state: dict[int, tuple[int, int]]) -> None:
    tmp = topic_dir / (STATE_FILE + _TMP)
    tmp.unlink(missing_ok=True)
    data = orjson.dumps({str(b): list(v) for b, v in sorted(state.items())})
    _fsync_file(_write_file(tmp, data))
    _rename(tmp, topic_dir / STATE_FILE)
    _fsync_dir(topic_dir)


# -- recovery ----------------------------------------------------------------------------------

def remove_leftovers(topic_dir: Path) -> list[Path]:
    """What a pass killed midway left (the writer's recovery calls this before it lists the
    topic): temporary files, and originals whose compacted rewrite is in place.  The removed
    paths."""
    removed: list[Path] = []
    try:
        names = os.listdir(topic_dir)
    except FileNotFoundError:
        return removed
    for name in names:
        if name.startswith(".") and name.endswith((COMPACTED_SUFFIX + _TMP, STATE_FILE + _TMP)):
            removed.append(topic_dir / name)
    segments = list_segments(topic_dir)
    compacted = {s.base for s in segments if s.compacted}
    removed += [s.path for s in segments
                if s.sealed and not s.compacted and s.base in compacted]
    for path in removed:
        log.warning("compaction: removing %s, left by a pass that did not complete", path)
        path.unlink()
    if removed:
        _fsync_dir(topic_dir)
    return removed


# -- a pass -------------------------------------------------------------------------------------

def _list(topic: str, topic_dir: Path) -> list[_Listed]:
    """The sealed segments before the in-progress one, with their range ends."""
    segments = live_segments(topic_dir)
    out = []
    for i, seg in enumerate(segments):
        if not seg.sealed:
            break
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        try:
            fd = os.open(seg.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            break  # (not by a concurrent writer: by hand; list again next time)
        try:
            st = os.fstat(fd)
            end = (seg.end if seg.end is not None else nxt.base if nxt is not None
                   else check.segment_end(topic, seg.path, seg.base, fd, st.st_size))
        finally:
            os.close(fd)
        out.append(_Listed(seg, end, st.st_size, st.st_mtime_ns, st.st_atime_ns,
                           None if nxt is None else nxt.path))
    return out


def _damage(topic: str, item: _Listed, expect: int, pos: int, problem: str
            ) -> TopicLogDamaged:
    """As every reader describes it: the checker's words (the reference)."""
    return check.diagnose(topic, item.seg.path, item.seg.base, item.seg.base) or \
        TopicLogDamaged(topic, item.seg.path, expect, pos, problem)


def _scan(topic: str, item: _Listed) -> _Scan:
    """Step 2 for one segment: every line read and checked, the arrays filled."""
    path = item.seg.path
    with open(path, "rb") as f:
        data = f.read()
    out = _Scan()
    top = -1 if item.seg.end is None else item.seg.end  # offsets may skip ahead below this
    expect = item.seg.base
    pos = 0
    size = len(data)
    while pos < size:
        stop = data.find(b"\n", pos)
        if stop < 0:
            raise _damage(topic, item, expect, pos, "the last line is cut short")
        line = data[pos:stop + 1]
        parts = split_line(line)
        if parts is None:
            try:
                rec = parse_line(topic, line)
            except BadLineError as exc:
                raise _damage(topic, item, expect, pos, f"not a record: {exc}") from None
            parts = (rec.offset, rec.key, rec.value)
        offset, key, value = parts
        if offset != expect and not expect < offset < top:
            raise _damage(topic, item, expect, pos,
                          check.unexpected_offset(expect, offset, item.seg.end))
        out.offsets.append(offset)
        out.ends.append(stop + 1)
        if key is None:
            out.digests += bytes(16)
            out.flags.append(_NULL_KEY | (_TOMBSTONE if value is None else 0))
        else:
            out.digests += blake2b(key, digest_size=16).digest()
            out.flags.append(_TOMBSTONE if value is None else 0)
        expect = offset + 1
        pos = stop + 1
    if item.seg.end is None and expect != item.end and item.next_path is not None:
        raise check.start_mismatch(topic, item.next_path, item.end, expect)
    return out


def _put_in_place(topic_dir: Path, item: _Listed, data: bytes | None) -> None:
    """The compacted form of a segment put in place of it, crash-safely (see the
    module docstring); `data` None: every record stays, the file is only renamed."""
    seg = item.seg
    final = topic_dir / compacted_name(seg.base, item.end)
    if data is None:
        _rename(seg.path, final)
        _fsync_dir(topic_dir)
        return
    tmp = topic_dir / f".{final.name}{_TMP}"
    tmp.unlink(missing_ok=True)  # (a pass killed before)
    fd = _write_file(tmp, data)
    os.utime(fd, ns=(item.atime_ns, item.mtime_ns))  # retention's clock stays the original's
    _fsync_file(fd)
    _rename(tmp, final)
    _fsync_dir(topic_dir)
    if seg.path != final:
        _unlink(seg.path)


def compact_topic(root: Path, topic: str, policy: RetentionPolicy, now_ms: int
                  ) -> CompactionPass | None:
    """One pass over `topic` if one is due (see the module docstring); what it did, or None."""
    settings = policy.compaction
    if settings is None:
        return None
    topic_dir = root / topic
    listed = _list(topic, topic_dir)
    state = _read_state(topic_dir)
    known = dict(state)
    for item in listed:
        if item.seg.compacted and item.seg.base not in state:
            state[item.seg.base] = (now_ms, -1)  # (tombstones: not known until read)
    infos = [SegmentInfo(i.seg.base, i.end, i.size, i.mtime_ns // 1_000_000,
                         state[i.seg.base][0] if i.seg.compacted else None,
                         state[i.seg.base][1] if i.seg.compacted else 0) for i in listed]
    floor = None if policy.ignore_consumers else consumer_floor(root, topic)
    prefix = listed[:cleanable(infos, floor, now_ms, settings)]
    reason = pass_reason(infos[:len(prefix)], now_ms, settings)
    if reason is None:
        if _pruned(state, listed) != known:  # found compacted, or removed by retention
            _write_state(topic_dir, _pruned(state, listed))
        return None
    done = CompactionPass(topic, reason, len(prefix))
    log.info("compaction: topic %s: pass over %d segment(s), offsets %d..%d (%s)", topic,
             len(prefix), prefix[0].seg.base, prefix[-1].end - 1, reason)
    scans = [_scan(topic, item) for item in prefix]
    latest: dict[bytes, int] = {}
    for scan in scans:
        digests = bytes(scan.digests)
        for i, offset in enumerate(scan.offsets):
            if not scan.flags[i] & _NULL_KEY:
                latest[digests[16 * i:16 * i + 16]] = offset  # ascending: the last is highest
    done.keys = len(latest)
    log.info("compaction: topic %s: map: %d records, %d keys", topic,
             sum(len(s.offsets) for s in scans), len(latest))
    for item, scan in zip(prefix, scans, strict=True):
        # A segment's tombstones are timed from its first compaction: this one, if it is dirty.
        first = state[item.seg.base][0] if item.seg.compacted else now_ms
        go = item.seg.compacted and tombstones_expire(first, now_ms, settings)
        state[item.seg.base] = (first, _clean(topic_dir, item, scan, latest, go, done))
    _write_state(topic_dir, _pruned(state, listed))
    log.info("compaction: topic %s: %d record(s) removed (%d tombstone(s)), %d left in %d "
             "segment(s); %d rewritten, %d marked compacted", topic, done.removed,
             done.tombstones_removed, done.kept, done.segments, done.rewritten, done.renamed)
    return done


def _clean(topic_dir: Path, item: _Listed, scan: _Scan, latest: dict[bytes, int],
           tombstones_go: bool, done: CompactionPass) -> int:
    """Step 3 for one segment: the rule applied, the segment rewritten or renamed if that
    changes it; the tombstones it keeps."""
    keep = []
    tombstones = 0
    for i in range(len(scan.offsets)):
        entry = scan.entry(i)
        if survives(entry, latest, tombstones_go):
            keep.append(i)
            tombstones += entry.tombstone and entry.key is not None
        elif entry.tombstone:
            done.tombstones_removed += 1
    removed = len(scan.offsets) - len(keep)
    done.removed += removed
    done.kept += len(keep)
    if removed:
        _put_in_place(topic_dir, item, _join(item, scan, keep))
        done.rewritten += 1
    elif not item.seg.compacted:
        _put_in_place(topic_dir, item, None)
        done.renamed += 1
    return tombstones


def _join(item: _Listed, scan: _Scan, keep: list[int]) -> bytes:
    """The surviving lines of a segment, read again (only the writer changes sealed segments,
    and it is running this pass)."""
    data = item.seg.path.read_bytes()
    if len(data) != item.size:
        raise CorruptSegmentError(f"{item.seg.path} changed during a compaction pass "
                                  f"({item.size} bytes, now {len(data)})")
    ends = scan.ends
    return b"".join(data[(ends[i - 1] if i else 0):ends[i]] for i in keep)


def _pruned(state: dict[int, tuple[int, int]], listed: list[_Listed]
            ) -> dict[int, tuple[int, int]]:
    """The state of the segments still there (retention removes segments)."""
    bases = {i.seg.base for i in listed}
    return {b: v for b, v in state.items() if b in bases}
