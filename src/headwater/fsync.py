"""Making a directory entry durable: after a rename or a new file, the file's own fsync does
not persist its name; the directory must be fsynced too (POSIX), or a crash can lose the entry
with its data intact.  One helper for every writer that publishes files by rename (topic log,
compaction, retention, schema history, Datastream files); and naming the path in the error
of a write that took a descriptor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn


def fsync_dir(path: Path) -> None:
    """Flushes the directory `path` (its entries) to stable storage."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def with_path(exc: BaseException, path: Path) -> BaseException:
    """An OSError of a write or fsync names no file (the call took a descriptor): the same
    error naming `path`, so that "No space left on device" says where; others unchanged."""
    if isinstance(exc, OSError) and exc.filename is None and exc.errno is not None:
        return type(exc)(exc.errno, exc.strerror, str(path))
    return exc


def raise_with_path(exc: BaseException, path: Path) -> NoReturn:
    """Raises `exc` (being handled), as `with_path` names it when it names no file."""
    named = with_path(exc, path)
    if named is exc:
        raise exc
    raise named from exc
