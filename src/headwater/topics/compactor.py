"""Compaction of the local topic log: the passes the writer runs.

Which records go is `headwater.topics.compaction`'s rule; this module reads the segments,
applies it and has the results put in place by `headwater.topics.compaction_files`, which makes
each file operation crash-safe.  Only the writer calls it (it holds the root's lock, so nothing
else rewrites or removes segments meanwhile); readers run concurrently, lock-free.

A pass over one topic, in steps that the log echoes:

1. *list* the sealed segments (never the in-progress one): range ends, sizes, times, the
   per-topic state and the smallest consumer marker; choose the cleanable prefix and whether
   a pass is worth it (`compaction.cleanable`, `compaction.pass_reason`);
2. *map*: read every cleanable segment, checking it as every reader does (a damaged segment
   stops the pass with `TopicLogDamaged`: compacting it would turn a missing record into a
   legitimate gap), and keep each key's highest offset;
3. *clean*: apply the rule to every cleanable segment (the lines it keeps, the tombstones left
   under each of its clocks), and group adjacent ones into files of at most the topic's
   segment size (`compaction.merge_groups`);
4. *write* every group that changes: a lone segment that loses records is rewritten, one
   compacted for the first time gets its compacted name (`segment.compacted_name`, which holds
   its original range: offsets never change, the name keeps its base, and the next segment
   still starts at its end), and several segments become one file named after their whole
   range, whose time is the newest of theirs (retention by time then never removes a record
   earlier than it would have);
5. *record* in `<topic>/.compaction` the tombstone clocks (`compaction.Clock`): since when each
   range was compacted and how many tombstones it kept (for `delete.retention.ms`).

Crash safety: each file is put in place as `compaction_files` describes (a kill leaves, for
every range, the old files or the new one, and readers count one of them, never both, never
neither).  When files change, the state is written before them too, with every clock the new
files need and their tombstone counts unknown: a kill among the file operations then leaves
every range under a clock no earlier than its own (a dirty part merged into a compacted file
must not fall under its neighbour's older clock), and a count that makes the next due pass
read it.  A lost state only ever delays a tombstone: a compacted segment with no clock is
taken as compacted at the time it is found.
"""

from __future__ import annotations

import logging
import os
from array import array
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import Final, NamedTuple

from headwater.topics import check
from headwater.topics.compaction import (
    Clock,
    CompactionPolicy,
    Entry,
    SegmentInfo,
    cleanable,
    coalesce,
    merge_groups,
    pass_reason,
    survives,
    tombstone_clock,
    tombstones_expire,
)
from headwater.topics.compaction_files import put_in_place, read_state, write_state
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.record import BadLineError, parse_line, split_line
from headwater.topics.retention import RetentionPolicy, consumer_floor
from headwater.topics.segment import (
    CorruptSegmentError,
    Segment,
    compacted_name,
    live_segments,
)

__all__ = ["CompactionPass", "compact_topic"]

log = logging.getLogger("headwater.topics.compaction")

_NULL_KEY: Final = 1
_TOMBSTONE: Final = 2


@dataclass
class CompactionPass:
    """What one pass over a topic did."""

    topic: str
    reason: str
    segments: int = 0  # cleanable segments read
    files: int = 0  # files they are in after the pass
    rewritten: int = 0  # lone segments written again without some records
    renamed: int = 0  # lone segments compacted for the first time with nothing to remove
    merged: int = 0  # segments merged with adjacent ones into one file
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


class _Kept(NamedTuple):
    """What the rule leaves of one cleanable segment."""

    lines: list[int]  # indexes of its surviving lines
    size: int  # their bytes
    dropped: int  # lines removed
    clocks: list[Clock]  # its tombstone clocks, with the tombstones each keeps now


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


def _clocks(state: Mapping[int, Clock], item: _Listed, now_ms: int) -> list[Clock]:
    """A listed segment's tombstone clocks, in offset order: the state's inside its range for a
    compacted one (the caller adds one at its base when the state has none), a clock starting
    now for a dirty one (its tombstones are timed from this, its first compaction)."""
    if not item.seg.compacted:
        return [Clock(item.seg.base, now_ms, 0)]
    return sorted(c for b, c in state.items() if item.seg.base <= b < item.end)


def _info(item: _Listed, clocks: list[Clock]) -> SegmentInfo:
    compacted_ms, tombstones = tombstone_clock(clocks) if item.seg.compacted else (None, 0)
    return SegmentInfo(item.seg.base, item.end, item.size, item.mtime_ns // 1_000_000,
                       compacted_ms, tombstones)


def _pruned(state: Mapping[int, Clock], listed: Sequence[_Listed]) -> dict[int, Clock]:
    """The clocks inside a compacted segment still there (retention removes segments, a
    pass replaces clocks)."""
    ranges = [(i.seg.base, i.end) for i in listed if i.seg.compacted]
    bases = [b for b, _ in ranges]
    out = {}
    for b, clock in state.items():
        at = bisect_right(bases, b) - 1
        if at >= 0 and b < ranges[at][1]:
            out[b] = clock
    return out


def compact_topic(root: Path, topic: str, policy: RetentionPolicy, now_ms: int, *,
                  segment_bytes: int) -> CompactionPass | None:
    """One pass over `topic` if one is due (see the module docstring); what it did, or None.
    `segment_bytes` is the log's segment size, which bounds the files merging writes."""
    settings = policy.compaction
    if settings is None:
        return None
    topic_dir = root / topic
    listed = _list(topic, topic_dir)
    state = read_state(topic_dir)
    known = dict(state)
    for item in listed:
        if item.seg.compacted and item.seg.base not in state:
            state[item.seg.base] = Clock(item.seg.base, now_ms, -1)  # (tombstones: read to know)
    clocks = [_clocks(state, item, now_ms) for item in listed]
    infos = [_info(item, c) for item, c in zip(listed, clocks, strict=True)]
    floor = None if policy.ignore_consumers else consumer_floor(root, topic)
    prefix = listed[:cleanable(infos, floor, now_ms, settings)]
    reason = pass_reason(infos[:len(prefix)], now_ms, settings)
    if reason is None:
        if _pruned(state, listed) != known:  # found compacted, or removed by retention
            write_state(topic_dir, _pruned(state, listed))
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
    kept = [_keep(item, scan, c, latest, now_ms, settings, done)
            for item, scan, c in zip(prefix, scans, clocks[:len(prefix)], strict=True)]
    groups = merge_groups([k.size for k in kept], segment_bytes)
    done.files = len(groups)
    log.info("compaction: topic %s: clean: %d record(s) left of %d in %d file(s)", topic,
             done.kept, done.kept + done.removed, len(groups))
    changing = [g for g in groups
                if len(g) > 1 or kept[g[0]].dropped or not prefix[g[0]].seg.compacted]
    _write(topic_dir, prefix, scans, kept, groups, changing, _pruned(state, listed), done)
    log.info("compaction: topic %s: %d record(s) removed (%d tombstone(s)), %d left in %d "
             "segment(s) now in %d file(s); %d rewritten, %d marked compacted, %d merged",
             topic, done.removed, done.tombstones_removed, done.kept, done.segments,
             done.files, done.rewritten, done.renamed, done.merged)
    return done


def _write(topic_dir: Path, prefix: Sequence[_Listed], scans: Sequence[_Scan],
           kept: Sequence[_Kept], groups: Sequence[range], changing: Sequence[range],
           state: dict[int, Clock], done: CompactionPass) -> None:
    """Steps 4 and 5: the state before (see the module docstring), the files, the state."""
    before, after = _states(state, prefix, kept, groups, {g.start for g in changing})
    if changing:
        write_state(topic_dir, before)
    for group in changing:
        items = [prefix[i] for i in group]
        if len(group) > 1:
            done.merged += len(group)
        elif kept[group.start].dropped:
            done.rewritten += 1
        else:
            done.renamed += 1  # compacted for the first time with every record kept
        data = None if len(group) == 1 and not kept[group.start].dropped else b"".join(
            _join(prefix[i], scans[i], kept[i].lines) for i in group)
        newest = max(items, key=lambda i: i.mtime_ns)  # retention's clock: never younger
        put_in_place(topic_dir, [i.seg.path for i in items],
                     topic_dir / compacted_name(items[0].seg.base, items[-1].end), data,
                     (newest.atime_ns, newest.mtime_ns))
    write_state(topic_dir, after)


def _states(state: Mapping[int, Clock], prefix: Sequence[_Listed], kept: Sequence[_Kept],
            groups: Sequence[range], written: set[int]) -> tuple[dict[int, Clock],
                                                                  dict[int, Clock]]:
    """The clocks to record before the files are written (every clock of a group written,
    its tombstones not known) and after (each group's coalesced clocks); the clocks of the
    segments after the prefix stay."""
    start, end = prefix[0].seg.base, prefix[-1].end
    after = {b: c for b, c in state.items() if not start <= b < end}
    before = dict(after)
    for group in groups:
        clocks = [c for i in group for c in kept[i].clocks]
        after.update((c.base, c) for c in coalesce(clocks))
        if group.start in written:
            before.update((c.base, c._replace(tombstones=-1)) for c in clocks)
        else:
            before.update((c.base, c) for c in coalesce(clocks))
    return before, after


def _keep(item: _Listed, scan: _Scan, clocks: list[Clock], latest: dict[bytes, int],
          now_ms: int, settings: CompactionPolicy, done: CompactionPass) -> _Kept:
    """Step 3 for one segment: the rule applied to each of its records, under its clock."""
    bases = [c.base for c in clocks]
    # A range's tombstones are timed from its first compaction: never this one's.
    go = [item.seg.compacted and tombstones_expire(c.first_ms, now_ms, settings)
          for c in clocks]
    left = [0] * len(clocks)
    lines = []
    size = 0
    ends = scan.ends
    for i in range(len(scan.offsets)):
        entry = scan.entry(i)
        at = bisect_right(bases, entry.offset) - 1 if len(bases) > 1 else 0
        if survives(entry, latest, go[at]):
            lines.append(i)
            size += ends[i] - (ends[i - 1] if i else 0)
            left[at] += entry.tombstone and entry.key is not None
        elif entry.tombstone:
            done.tombstones_removed += 1
    dropped = len(scan.offsets) - len(lines)
    done.removed += dropped
    done.kept += len(lines)
    return _Kept(lines, size, dropped,
                 [c._replace(tombstones=n) for c, n in zip(clocks, left, strict=True)])


def _join(item: _Listed, scan: _Scan, keep: list[int]) -> bytes:
    """The surviving lines of a segment, read again (only the writer changes sealed segments,
    and it is running this pass)."""
    data = item.seg.path.read_bytes()
    if len(data) != item.size:
        raise CorruptSegmentError(f"{item.seg.path} changed during a compaction pass "
                                  f"({item.size} bytes, now {len(data)})")
    ends = scan.ends
    return b"".join(data[(ends[i - 1] if i else 0):ends[i]] for i in keep)
