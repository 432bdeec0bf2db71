"""Retention of the local topic log: whole sealed segments removed by age and size.

Why whole sealed segments: they are immutable, so removing one never races a reader inside it
more than removing a file does (an open file stays readable), and offsets stay what they were:
the log's *start* moves forward, its end never moves back.  The new start is recorded in
`<topic>/.log-start-offset` (written and fsynced *before* any segment goes), so readers can tell
a retained log (first segment at the recorded start) from a damaged one (first segment missing
with no record of it): see `log_start`.

Consumers: a pipeline writes its committed next offset per topic to
`<root>/.consumers/<id>.json` after each committed batch (`write_consumer`).  Retention never
removes a segment holding a record at or past the smallest of those offsets, unless
`ignore_consumers` (`headwater.topics.retention.ignore.consumers=true`); a topic a consumer
file does not list does not hold that consumer back.  Removing records a pipeline has not read
would make it stop with an error (`pipeline.source.read_range`), never skip silently.

Policies use Kafka's per-topic config names and meanings: `retention.ms` (by the time of a
segment's last record, here its file's modification time, as Kafka uses the largest record
timestamp; compaction keeps that time), `retention.bytes` (the topic's total size, oldest
segments first), -1 = no limit.  They apply when `cleanup.policy` includes `delete` (the
default); `compact` is `headwater.topics.compactor`'s.  The in-progress segment is never
removed.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from headwater.fsync import fsync_dir
from headwater.topics.compaction import CompactionPolicy
from headwater.topics.segment import live_segments

log = logging.getLogger("headwater.topics.retention")

START_FILE: Final = ".log-start-offset"
CONSUMERS_DIR: Final = ".consumers"


def log_start(topic_dir: Path) -> int:
    """The first offset the topic still holds by design (0 unless retention moved it)."""
    try:
        return int((topic_dir / START_FILE).read_text().strip() or 0)
    except FileNotFoundError:
        return 0


def set_log_start(topic_dir: Path, offset: int) -> None:
    """Records the new log start durably (temp file, fsync, rename, fsync the directory)."""
    tmp = topic_dir / (START_FILE + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"%d\n" % offset)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, topic_dir / START_FILE)
    fsync_dir(topic_dir)


_CONSUMER_ID: Final = re.compile(r"[A-Za-z0-9._-]+")


def write_consumer(root: Path, consumer_id: str, offsets: Mapping[str, int]) -> None:
    """A consumer's committed next offset per topic, replacing its previous file atomically."""
    if not _CONSUMER_ID.fullmatch(consumer_id):
        raise ValueError(f"consumer id {consumer_id!r}: letters, digits, '.', '_', '-' only")
    directory = root / CONSUMERS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{consumer_id}.json.tmp"
    tmp.write_bytes(orjson.dumps(dict(offsets), option=orjson.OPT_SORT_KEYS))
    os.replace(tmp, directory / f"{consumer_id}.json")


def consumer_floor(root: Path, topic: str) -> int | None:
    """The smallest committed offset of `topic` over the registered consumers (None: none)."""
    floor: int | None = None
    try:
        files = sorted((root / CONSUMERS_DIR).glob("*.json"))
    except FileNotFoundError:
        return None
    for path in files:
        try:
            offsets = orjson.loads(path.read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            continue  # replaced meanwhile, or being written by hand: take the others
        value = offsets.get(topic) if isinstance(offsets, dict) else None
        if isinstance(value, int):
            floor = value if floor is None else min(floor, value)
    return floor


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """One topic's cleanup (Kafka's names; -1 = unlimited): `cleanup.policy` holds `delete`
    (`delete`, retention by time and size) and/or `compact` (`compaction`, its settings)."""

    retention_ms: int = -1
    retention_bytes: int = -1
    ignore_consumers: bool = False
    delete: bool = True
    compaction: CompactionPolicy | None = None

    @property
    def deletes(self) -> bool:
        return self.delete and (self.retention_ms >= 0 or self.retention_bytes >= 0)

    @property
    def active(self) -> bool:
        return self.deletes or self.compaction is not None


def apply_retention(root: Path, topic: str, policy: RetentionPolicy, now_ms: int) -> int:
    """Removes the sealed segments of `topic` that the policy lets go; the count removed.

    Only the writer (which holds the root's lock) calls this.  Segments go oldest first and
    only while every later one stays: the log start is always a segment boundary."""
    if not policy.deletes:
        return 0
    topic_dir = root / topic
    segments = live_segments(topic_dir)
    sealed = [s for s in segments if s.sealed]
    if not sealed:
        return 0
    bases = [s.base for s in segments]
    floor = None if policy.ignore_consumers else consumer_floor(root, topic)
    sizes = [s.path.stat().st_size for s in sealed]
    total = sum(s.path.stat().st_size for s in segments)
    remove = 0
    for i, seg in enumerate(sealed):
        nxt = bases[bases.index(seg.base) + 1] if bases.index(seg.base) + 1 < len(bases) \
            else None
        if nxt is None or (floor is not None and nxt > floor):
            break  # its records are not all behind every consumer
        too_old = policy.retention_ms >= 0 and \
            seg.path.stat().st_mtime * 1000 < now_ms - policy.retention_ms
        too_big = policy.retention_bytes >= 0 and total > policy.retention_bytes
        if not (too_old or too_big):
            break
        total -= sizes[i]
        remove = i + 1
    if not remove:
        return 0
    new_start = bases[bases.index(sealed[remove - 1].base) + 1]
    set_log_start(topic_dir, new_start)
    for seg in sealed[:remove]:
        seg.path.unlink()
    fsync_dir(topic_dir)
    log.info("retention: topic %s starts at offset %d now (%d segment(s) removed)", topic,
             new_start, remove)
    return remove
