"""Datastream's Cloud Storage layout on a local file system: `headwater.destination=files`.

Layout: `<dir>/<stream>/<object>/yyyy/mm/dd/hh/mm/<file>`, the minute folders from each event's
source timestamp (UTC), as Datastream writes to a bucket.  One file holds events of one object,
one minute folder and one schema (a schema change starts a new file, as in Datastream); files
rotate when the next event would pass `max.bytes` or when they have been open `max.ms`.
JSON files may be gzip-compressed (`.jsonl.gz`, Datastream's JSON `compression: GZIP`): each
append is one gzip member, so a file is valid gzip at every publication and `max.bytes`
counts compressed bytes, as the bucket would.

Durability contract (what lets the runtime acknowledge source positions):

* a file becomes visible complete or not at all: it is written under `<dir>/.inflight/`,
  fsynced, renamed into its folder and the folder fsynced (new folders too);
* the runtime hands the offset and acknowledgement of each batch to `when_durable`, which
  runs them once every file holding that batch or an earlier one is published.  Open files
  thus hold acknowledgement back by at most `max.ms`, and a crash (kill -9) loses only
  unpublished files, whose events the source re-delivers from the last stored offset, with
  the same uuids (at-least-once; docs/datastream.md).

`.inflight/` is emptied at start: what a crashed run left there was never acknowledged.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import shutil
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from headwater.destinations.avro_container import block, header, new_sync_marker
from headwater.formats.datastream.renderer import (
    AVRO_SCHEMA_HEADER,
    OBJECT_HEADER,
    SCHEMA_KEY_HEADER,
)
from headwater.fsync import fsync_dir, raise_with_path
from headwater.model.topic import RenderedBatch, TopicRecord

log = logging.getLogger("headwater.destinations.files")

FORMATS = ("json", "avro")
COMPRESSIONS = ("none", "gzip")
INFLIGHT = ".inflight"
_UNSAFE = re.compile(r"[/\\\x00]")


def folder_name(name: str) -> str:
    """A stream or object name as one folder: no separators, never hidden, never `..`."""
    clean = _UNSAFE.sub("_", name)
    if not clean or clean.startswith("."):
        clean = "_" + clean
    return clean


def stream_folder(stream_name: str) -> str:
    """`projects/p/locations/l/streams/<id>` -> `<id>`; any other name as it is."""
    return folder_name(stream_name.rstrip("/").rpartition("/")[2] or stream_name)


class _OpenFile:
    __slots__ = ("created", "first_seq", "folder", "handle", "records", "size", "sync",
                 "temp")

    def __init__(self, temp: Path, folder: Path, first_seq: int, now: float) -> None:
        self.temp = temp
        self.folder = folder
        self.handle: BinaryIO = open(temp, "wb")  # noqa: SIM115 - closed by publish/discard
        self.first_seq = first_seq
        self.created = now
        self.size = 0
        self.records = 0
        self.sync = b""

    def write(self, data: bytes) -> None:
        self.handle.write(data)
        self.size += len(data)


class FileDestination:
    """The runtime's writer for Datastream files (json lines or Avro container files)."""

    def __init__(
        self,
        root: Path,
        stream_name: str,
        *,
        file_format: str = "json",
        max_bytes: int = 50 * 1024 * 1024,
        max_ms: int = 60_000,
        compression: str = "none",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if file_format not in FORMATS:
            raise ValueError(f"file format must be one of {FORMATS}, not {file_format!r}")
        if compression not in COMPRESSIONS or (compression != "none" and file_format != "json"):
            raise ValueError(f"compression {compression!r} is not one of {COMPRESSIONS} for "
                             f"{file_format} files (only JSON files are compressed)")
        self.root = root
        self.base = root / stream_folder(stream_name)
        self.format = file_format
        self.gzip = compression == "gzip"
        self.suffix = (".jsonl.gz" if self.gzip else ".jsonl") if file_format == "json" else ".avro"
        self.max_bytes = max_bytes
        self.max_s = max_ms / 1000.0
        self.clock = clock
        self.run_id = uuid.uuid4().hex[:12]
        self.inflight = root / INFLIGHT
        if self.inflight.exists():
            shutil.rmtree(self.inflight)
        self.inflight.mkdir(parents=True)
        self._files: dict[tuple[bytes, bytes, int], _OpenFile] = {}
        self._pending: deque[tuple[int, Callable[[], None]]] = deque()
        self._seq = 0
        self._count = 0
        self._failed = False
        self._minutes: dict[int, str] = {}
        self.published: list[Path] = []  # every file this destination made visible

    # -- the runtime's writer interface ---------------------------------------------------------
    def append(self, batch: RenderedBatch) -> None:
        """Writes the batch into open files; durable once `when_durable` callbacks run."""
        try:
            self._seq += 1
            groups: dict[tuple[bytes, bytes, int], list[TopicRecord]] = {}
            for records in batch.values():
                for record in records:
                    slot = self._slot(record)
                    group = groups.get(slot)
                    if group is None:
                        groups[slot] = group = []
                    group.append(record)
            for slot, group in groups.items():
                self._write_group(slot, group)
            self._rotate_old()
        except BaseException as exc:
            self._failed = True
            raise_with_path(exc, self.root)

    def when_durable(self, callback: Callable[[], None]) -> None:
        """Runs `callback` once everything appended so far is in published files."""
        self._pending.append((self._seq, callback))
        self._release()

    def maintain(self) -> None:
        try:
            self._rotate_old()
        except OSError as exc:
            self._failed = True  # the files being published are discarded, never acknowledged
            raise_with_path(exc, self.root)

    def close(self) -> None:
        """Publishes every open file and runs the callbacks waiting for them (after a failed
        append: discards the open files instead; their batches were never acknowledged)."""
        if self._failed:
            for f in self._files.values():
                f.handle.close()
                f.temp.unlink(missing_ok=True)
            self._files.clear()
            self._pending.clear()
            return
        for slot in list(self._files):
            self._publish(slot)
        self._release()

    # -- files --------------------------------------------------------------------------------
    def _slot(self, record: TopicRecord) -> tuple[bytes, bytes, int]:
        obj = schema_key = b""
        for name, value in record.headers:
            if name == OBJECT_HEADER:
                obj = value or b""
            elif name == SCHEMA_KEY_HEADER:
                schema_key = value or b""
        if not obj:
            raise ValueError("the file destination needs Datastream events "
                             "(headwater.event.format=datastream)")
        return obj, schema_key, record.timestamp // 60_000

    def _write_group(self, slot: tuple[bytes, bytes, int], group: list[TopicRecord]) -> None:
        chunk: list[bytes] = []
        chunk_size = 0
        f = self._files.get(slot)
        for record in group:
            value = record.value
            assert value is not None
            size = len(value) + 1
            if f is None:
                f = self._open(slot, group[0])
            elif (f.records + len(chunk) > 0
                  and f.size + self._at_most(chunk_size + size) > self.max_bytes):
                self._flush_chunk(f, chunk)
                chunk, chunk_size = [], 0
                self._publish(slot)
                f = self._open(slot, group[0])
            chunk.append(value)
            chunk_size += size
        if f is not None and chunk:
            self._flush_chunk(f, chunk)

    def _at_most(self, size: int) -> int:
        """The most bytes `size` bytes of lines can take in the file: gzip may expand data
        that does not compress (a 18-byte member frame, 5 bytes per 16 KiB stored block)."""
        return size + 18 + 5 * (size // 16_384 + 1) if self.gzip else size

    def _flush_chunk(self, f: _OpenFile, chunk: list[bytes]) -> None:
        if not chunk:
            return
        if self.format == "json":
            lines = b"\n".join(chunk) + b"\n"
            f.write(gzip.compress(lines, compresslevel=6, mtime=0) if self.gzip else lines)
        else:
            f.write(block(chunk, f.sync))
        f.records += len(chunk)

    def _open(self, slot: tuple[bytes, bytes, int], first: TopicRecord) -> _OpenFile:
        obj, _, minute = slot
        self._count += 1
        name = f"{int(time.time() * 1000)}_{self.run_id}_{self._count:06d}{self.suffix}"
        folder = self.base / folder_name(obj.decode()) / self._minute_path(minute)
        f = _OpenFile(self.inflight / name, folder, self._seq, self.clock())
        if self.format == "avro":
            schema = next((v for n, v in first.headers if n == AVRO_SCHEMA_HEADER), None)
            if schema is None:
                raise ValueError("Avro files need events rendered with encoding=avro")
            f.sync = new_sync_marker()
            f.write(header(schema, f.sync))
        self._files[slot] = f
        return f

    def _minute_path(self, minute: int) -> str:
        path = self._minutes.get(minute)
        if path is None:
            if len(self._minutes) > 4096:
                self._minutes.clear()
            path = self._minutes[minute] = time.strftime("%Y/%m/%d/%H/%M",
                                                         time.gmtime(minute * 60))
        return path

    def _rotate_old(self) -> None:
        if not self._files:
            return
        now = self.clock()
        for slot in [s for s, f in self._files.items() if now - f.created >= self.max_s]:
            self._publish(slot)
        self._release()

    def _publish(self, slot: tuple[bytes, bytes, int]) -> None:
        """Complete and durable before visible: fsync, rename into place, fsync the folder."""
        f = self._files.pop(slot)
        f.handle.flush()
        os.fsync(f.handle.fileno())
        f.handle.close()
        _make_dirs(f.folder)
        final = f.folder / f.temp.name
        os.rename(f.temp, final)
        fsync_dir(f.folder)
        self.published.append(final)

    def _release(self) -> None:
        """Runs the callbacks of every append older than the oldest open file's first one."""
        oldest = min((f.first_seq for f in self._files.values()), default=None)
        pending = self._pending
        while pending and (oldest is None or pending[0][0] < oldest):
            pending.popleft()[1]()


def _make_dirs(folder: Path) -> None:
    """Creates `folder` and its missing parents, each made durable in its own parent."""
    missing: list[Path] = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            continue
        fsync_dir(path.parent)

