"""A compaction pass killed at each of its file operations: readers count either the old or the
new form of every segment (never both, never neither), the writer's recovery removes what was
left, and the next pass completes to the same result as a pass that was never killed."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from headwater.model.topic import TopicRecord
from headwater.pipeline.source import read_range
from headwater.topics import compaction_files, reader
from headwater.topics.check import check_topic
from headwater.topics.compactor import compact_topic
from headwater.topics.log import TopicLog
from headwater.topics.reader import Record
from headwater.topics.segment import list_segments, live_segments

from .helpers import (
    HOUR_MS,
    MERGED,
    UNMERGED,
    T,
    age,
    compact,
    key,
    now_ms,
    state,
    value,
    write_segments,
)

OPS = ("_write_file", "_fsync_file", "_rename", "_unlink", "_fsync_dir")
# (what a recovery seals is too young to compact)
POLICY = compact(HOUR_MS, lag_ms=HOUR_MS, ratio=0.0)


class Killed(BaseException):
    """The process dies here (nothing catches it, as nothing runs after a kill -9)."""


def killing_at(monkeypatch: pytest.MonkeyPatch, step: int) -> list[str]:
    """Makes the `step`-th file operation of the compactor die (a write dies halfway); the
    names of the operations run, for the test to know when a pass had fewer steps."""
    seen: list[str] = []
    for name in OPS:
        real = getattr(compaction_files, name)

        def op(*args: Any, _real: Callable[..., Any] = real, _name: str = name) -> Any:
            seen.append(_name)
            if len(seen) - 1 == step:
                if _name == "_write_file":  # half the bytes made it to the file
                    path, data = args
                    with open(path, "xb") as f:
                        f.write(data[: len(data) // 2])
                raise Killed(_name)
            return _real(*args)

        monkeypatch.setattr(compaction_files, name, op)
    return seen


def initial(root: Path, segment_bytes: int) -> None:
    """Four aged sealed segments with a key updated across them, tombstones and a null key,
    and an in-progress one."""
    write_segments(root, [
        [(1, "a"), (2, "a"), (3, "a")],
        [(1, "b"), (None, "x"), (2, None)],
        [(4, "a"), (5, "a")],  # nothing to remove: only renamed
        [(1, "c"), (3, None)],
    ], in_progress=[(1, "d")])
    age(root, hours=2)


def again(root: Path, segment_bytes: int) -> None:
    """`initial`, compacted once, then more sealed segments: a second pass rewrites compacted
    segments over their own names, or merges compacted segments with new ones."""
    initial(root, segment_bytes)
    compact_topic(root, T, POLICY, now_ms(), segment_bytes=segment_bytes)
    with TopicLog(root) as log:  # (seals the in-progress segment)
        log.append({T: [TopicRecord(key(4), value("b"), 1), TopicRecord(key(5), None, 1)]})
    age(root, hours=2)


@pytest.mark.parametrize("segment_bytes", [UNMERGED, 1000, MERGED],
                         ids=["unmerged", "some merged", "all merged"])
@pytest.mark.parametrize("setup", [initial, again], ids=["first pass", "second pass"])
def test_a_pass_killed_at_each_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    setup: Callable[[Path, int], None],
                                    segment_bytes: int) -> None:
    template = tmp_path / "template"
    setup(template, segment_bytes)
    now = now_ms()
    reference = tmp_path / "reference"
    shutil.copytree(template, reference)
    done = compact_topic(reference, T, POLICY, now, segment_bytes=segment_bytes)
    assert done is not None and (done.merged > 0) == (segment_bytes != UNMERGED)
    if segment_bytes == 1000:
        assert 1 < done.files < done.segments
    want = list(reader.read(reference, T))
    before = list(reader.read(template, T))
    end = reader.list_topics(template)[0].end_offset
    step = 0
    while True:
        root = tmp_path / f"crash-{step}"
        shutil.copytree(template, root)
        with monkeypatch.context() as patch:
            seen = killing_at(patch, step)
            with contextlib.suppress(Killed):
                compact_topic(root, T, POLICY, now, segment_bytes=segment_bytes)
        if len(seen) <= step:
            break  # the pass had fewer steps: every one was killed once
        check_after_kill(root, before, want, end, segment_bytes)
        step += 1
    assert step >= 10


def check_after_kill(root: Path, before: list[Record], want: list[Record], end: int,
                     segment_bytes: int) -> None:
    # readers, before any recovery: each range's old or new records, never both or neither
    # (a merged file next to some of its parts: only the merged file counts)
    got = list(reader.read(root, T))
    assert state(got) == state(before)
    old = {r.offset for r in before}
    new = {r.offset for r in want}
    for seg in live_segments(root / T):
        stop = seg.end if seg.end is not None else next(
            (s.base for s in live_segments(root / T) if s.base > seg.base), end)
        here = {r.offset for r in got if seg.base <= r.offset < stop}
        assert here in ({o for o in old if seg.base <= o < stop},
                        {o for o in new if seg.base <= o < stop})
    assert not check_topic(root, T).damages
    assert [(r.offset, r.key, r.value) for r in got] == list(read_range(root, T, 0, end))
    assert (reader.list_topics(root)[0].end_offset, reader.list_topics(root)[0].record_count
            ) == (end, len(got))
    # the writer's recovery removes the leftovers and continues the offsets
    with TopicLog(root) as log:
        assert log.append({T: [TopicRecord(key(9), value("z"), 1)]}) == {T: (end, end)}
    names = [p.name for p in (root / T).iterdir()]
    assert not [n for n in names if n.endswith(".tmp")]
    # no original next to its rewrite, no part next to its merged file
    assert list_segments(root / T) == live_segments(root / T)
    # and the next pass ends where a pass never killed ended
    compact_topic(root, T, POLICY, now_ms(), segment_bytes=segment_bytes)
    assert [r for r in reader.read(root, T) if r.offset < end] == want
