"""The offset store: where a connector resumes after a stop or a crash.

An offset is written only after the events before it are durable in the topic log, and it is
written atomically (temporary file, fsync, rename, fsync of the directory), so after a crash the
file holds either the previous offset or the new one, never a torn mix.  Reading an older
offset than the truth only causes re-delivery (at-least-once), never loss.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path
from typing import Any, Protocol

import orjson

from headwater.fsync import raise_with_path
from headwater.state_format import OFFSETS, StateFormatError, check_version, offsets_document

# The offset file's format: its "version" field is the stamp (headwater.state_format).
OFFSET_FORMAT_VERSION = OFFSETS.current


class OffsetStoreError(RuntimeError):
    pass


class OffsetFormatError(OffsetStoreError, StateFormatError):
    """An offset file of a format this release does not read (a newer Headwater's)."""


def read_offset_file(path: Path) -> dict[str, Any] | None:
    """The offset file's document, its format checked; None when there is no file.  Every
    reader of an offset file goes through here (the store, `offsets show`, `status`, the
    REST offsets), so none reads a newer Headwater's offsets as its own."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    doc = offsets_document(raw, f"offset file {path}", OffsetStoreError)
    # Every release has written "version" since the first: a file without it is not ours.
    if "version" not in doc:
        raise OffsetStoreError(f"offset file {path} has no \"version\": not an offsets "
                               "document; refusing to guess a position")
    try:
        check_version(OFFSETS, path, doc["version"])
    except StateFormatError as exc:
        raise OffsetFormatError(path, str(exc)) from None
    return doc


class OffsetStore(Protocol):
    """Where the runtime keeps a connector's offset: this file store, or Kafka's offsets
    topic (headwater.kafka.offsets)."""

    partition: dict[str, Any]

    def load(self) -> dict[str, Any] | None: ...

    def save(self, offset: dict[str, Any]) -> None: ...

    def clear(self) -> None: ...


class FileOffsetStore:
    """One connector's offsets in one JSON file (Debezium's `offset.storage.file.filename`)."""

    def __init__(self, path: Path, partition: dict[str, Any]) -> None:
        self.path = Path(path)
        self.partition = partition

    def load(self) -> dict[str, Any] | None:
        doc = read_offset_file(self.path)
        if doc is None:
            return None
        if doc.get("partition") != self.partition:
            raise OffsetStoreError(
                f"offset file {self.path} belongs to partition {doc.get('partition')}, "
                f"not {self.partition}; point offset.storage.file.filename elsewhere"
            )
        offset = doc.get("offset")
        return dict(offset) if isinstance(offset, dict) else None

    def save(self, offset: dict[str, Any]) -> None:
        doc = {
            "version": OFFSET_FORMAT_VERSION,
            "partition": self.partition,
            "offset": offset,
            "updated_ms": int(time.time() * 1000),
        }
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                # A full disk may take part of the document and answer with a short count
                # rather than an error: such a file must never replace the last good one.
                written = os.write(fd, data)
                while written < len(data):
                    step = os.write(fd, data[written:])
                    if step == 0:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))
                    written += step
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise_with_path(exc, self.path)
        os.replace(tmp, self.path)
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
