"""The file operations of a compaction pass, each crash-safe, and the recovery from a pass killed
between them.

A pass (`headwater.topics.compactor`) changes a topic directory only through `put_in_place`
(a segment's compacted form, or several adjacent segments merged into one) and `write_state`
(the per-topic tombstone clocks); the writer's recovery calls `remove_leftovers` before it
lists a topic.  The five primitive operations are module functions so that tests can kill a
pass at each one of them (tests/unit/topics_compaction/test_crash.py).

Why this order makes every kill safe: a new file is written under a hidden temporary name,
given its time and fsynced before it is renamed to its visible name, so a visible compacted
file is always complete; the renamed-over or superseded files go only after the directory is
fsynced.  Whatever a kill leaves, the readers' `segment.live_segments` counts each offset
range once: the compacted file over the original or the parts it holds.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

import orjson

from headwater.fsync import fsync_dir as _fsync_dir  # a module name: tests kill a pass here
from headwater.topics.compaction import Clock
from headwater.topics.segment import COMPACTED_SUFFIX, list_segments, live_segments

__all__ = ["STATE_FILE", "put_in_place", "read_state", "remove_leftovers", "write_state"]

log = logging.getLogger("headwater.topics.compaction")

STATE_FILE: Final = ".compaction"
_TMP: Final = ".tmp"


# -- the primitive operations (module functions: tests kill a pass at each one) ---------------

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


# -- segments -----------------------------------------------------------------------------------

def put_in_place(topic_dir: Path, parts: Sequence[Path], final: Path, data: bytes | None,
                 times_ns: tuple[int, int]) -> None:
    """`final` (a compacted segment's name) made to hold `data`, in place of `parts` (the
    segment files it replaces, in offset order: one for a rewrite, several for a merge); the
    file gets `times_ns` (access, modification: retention's clock, which compaction must not
    make look new).  `data` None: the one part keeps every record and is only renamed."""
    if data is None:
        (part,) = parts
        _rename(part, final)
        _fsync_dir(topic_dir)
        return
    tmp = topic_dir / f".{final.name}{_TMP}"
    tmp.unlink(missing_ok=True)  # (a pass killed before)
    fd = _write_file(tmp, data)
    os.utime(fd, ns=times_ns)
    _fsync_file(fd)
    _rename(tmp, final)  # (over the previous compacted file of the same range, if any)
    _fsync_dir(topic_dir)
    for part in parts:
        if part != final:
            _unlink(part)


def remove_leftovers(topic_dir: Path) -> list[Path]:
    """What a pass killed midway left (the writer's recovery calls this before it lists the
    topic): temporary files, and the sealed segments that a compacted file in place holds (an
    original next to its rewrite, the parts of a merge).  The removed paths."""
    removed: list[Path] = []
    try:
        names = os.listdir(topic_dir)
    except FileNotFoundError:
        return removed
    for name in names:
        if name.startswith(".") and name.endswith((COMPACTED_SUFFIX + _TMP, STATE_FILE + _TMP)):
            removed.append(topic_dir / name)
    live = set(live_segments(topic_dir))
    removed += [s.path for s in list_segments(topic_dir) if s.sealed and s not in live]
    for path in removed:
        log.warning("compaction: removing %s, left by a pass that did not complete", path)
        path.unlink()
    if removed:
        _fsync_dir(topic_dir)
    return removed


# -- the per-topic state: the tombstone clocks ----------------------------------------------------

def read_state(topic_dir: Path) -> dict[int, Clock]:
    """The tombstone clocks of the compacted segments by base (`compaction.Clock`); {} if
    none.  A lost or unreadable state only delays tombstones: a compacted segment with no
    clock counts as compacted when it is found."""
    try:
        raw = orjson.loads((topic_dir / STATE_FILE).read_bytes())
        return {int(b): Clock(int(b), int(v[0]), int(v[1])) for b, v in raw.items()}
    except FileNotFoundError:
        return {}
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError, IndexError) as exc:
        log.warning("compaction: %s is unreadable (%s): its segments' tombstones are kept "
                    "delete.retention.ms from now", topic_dir / STATE_FILE, exc)
        return {}


def write_state(topic_dir: Path, state: Mapping[int, Clock]) -> None:
    """Replace the state, crash-safely (temporary file, fsync, rename, fsync the directory).
    Its format: `{"<clock base>": [first compacted ms, tombstones kept], ...}`."""
    tmp = topic_dir / (STATE_FILE + _TMP)
    tmp.unlink(missing_ok=True)
    data = orjson.dumps({str(b): [c.first_ms, c.tombstones] for b, c in sorted(state.items())})
    _fsync_file(_write_file(tmp, data))
    _rename(tmp, topic_dir / STATE_FILE)
    _fsync_dir(topic_dir)
