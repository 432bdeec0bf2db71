"""Format versions of the state Headwater keeps on disk, and the one check every opener runs.

Why: a release that changes how it lays out offsets, the topic log, the service's catalog or
a pipeline's checkpoint must be able to tell whose files it is looking at.  Reading a newer
layout with older code (a downgrade, a backup restored onto an old install) could misread
positions and skip or repeat changes without a word; refusing with one line naming the file
and both versions costs the operator a minute instead.

Each kind of state has one current format version here and carries it where it is created:

========================  ===========================================  =====================
kind                      where the stamp is                           written by
========================  ===========================================  =====================
offsets                   the offset file's `"version"` field           every save
topic log                 `<topics dir>/.headwater-format.json`         the log's writer
catalog                   SQLite's `PRAGMA user_version` of             every open
                          `<data dir>/catalog.sqlite`
checkpoint                `<checkpoint dir>/.headwater-format.json`     the pipeline
schema history file       `.<name>.headwater-format.json` beside it     the connector
========================  ===========================================  =====================

A schema history file (`schema.history.internal.file.filename`) keeps Debezium's layout line
for line (one HistoryRecord per line, readable by Debezium's FileSchemaHistory), so its stamp
is a file beside it rather than a line in it (`file_stamp_path`).

The stamp file is JSON: `{"kind": "topic-log", "format": 2, "written_by": "headwater 0.1.0"}`,
written atomically (temporary file, fsync, rename, fsync of the directory).  Only Headwater's
own files are covered: in a checkpoint directory Spark versions its own (`metadata`,
`offsets/`, `commits/`).

The rules (`check_version`): a stamp with this release's format is accepted; state without a
stamp is the layout of the releases before stamps (format 1) and is accepted, and stamped by
whoever writes it (read-only commands leave it as it is; the topic log's writer upgrades a
format 1 log to 2 that way, `headwater.topics.log`); a newer format is
refused (`StateFormatError`, one line: the file, the format found, the format this release
reads); an older format this release cannot upgrade, or a stamp that is not one, is refused
the same way.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, NamedTuple

import orjson

from headwater import __version__
from headwater.fsync import fsync_dir

STAMP_FILE: Final = ".headwater-format.json"
# The format of state with no stamp: the layout of every release before stamps existed.
UNSTAMPED_FORMAT: Final = 1


class Kind(NamedTuple):
    """One kind of state: its name in messages, its key in a stamp, its current format and
    the oldest format this release still reads (older ones are refused by name)."""

    label: str
    key: str
    current: int
    oldest: int


OFFSETS: Final = Kind("offset file", "offsets", 1, 1)
# Format 2: every record line carries a CRC-32C (headwater.topics.checksum); format 1 logs
# are read (their records unchecked) and upgraded by their writer.
TOPIC_LOG: Final = Kind("topic log", "topic-log", 2, 1)
CATALOG: Final = Kind("catalog", "catalog", 1, 1)
CHECKPOINT: Final = Kind("pipeline checkpoint", "checkpoint", 1, 1)
SCHEMA_HISTORY: Final = Kind("schema history file", "schema-history", 1, 1)
KINDS: Final = (OFFSETS, TOPIC_LOG, CATALOG, CHECKPOINT, SCHEMA_HISTORY)


class StateFormatError(RuntimeError):
    """State this release must not read: `path` is the file holding the stamp."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


def offsets_document(raw: bytes, where: str, error: Callable[[str], Exception]) -> dict[str, Any]:
    """A stored offset (`raw`, from `where`: a file, a key of the offsets topic) as the JSON
    object it must be; anything else raises `error(message)`: a damaged offset is refused,
    never read as no offset or as some other position."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise error(f"{where} is not valid JSON ({exc}); refusing to guess a position") from exc
    if not isinstance(doc, dict):
        raise error(f"{where} holds {type(doc).__name__}, not an offsets document; refusing "
                    "to guess a position")
    return doc


def newer_message(kind: Kind, path: Path, found: int, written_by: str | None = None) -> str:
    by = f" ({written_by})" if written_by else ""
    return (f"{kind.label} {path} was written by a newer Headwater{by} (format {found}); "
            f"this release reads format {kind.current}: upgrade Headwater or restore a backup")


def check_version(kind: Kind, path: Path, found: object, written_by: str | None = None) -> int:
    """`found` (the format a stamp holds) when this release reads it; StateFormatError
    otherwise.  No stamp at all is the caller's case (today's layout: accepted)."""
    if type(found) is not int or found < 1:
        raise StateFormatError(path, f"{kind.label} {path} has format {found!r}, which is not "
                               "a format version (a positive integer): the stamp is damaged; "
                               "restore a backup")
    if found > kind.current:
        raise StateFormatError(path, newer_message(kind, path, found, written_by))
    if found < kind.oldest:
        raise StateFormatError(path, (
            f"{kind.label} {path} was written by an older Headwater (format {found}) that this "
            f"release cannot upgrade (it reads formats {kind.oldest} to {kind.current}): "
            "upgrade through an intermediate release or restore a backup"))
    return found


def stamp_path(directory: Path) -> Path:
    return Path(directory) / STAMP_FILE


def file_stamp_path(path: Path) -> Path:
    """The stamp of a state file whose own layout has no room for one (a schema history
    file is Debezium's): `.<name>.headwater-format.json` in its directory."""
    path = Path(path)
    return path.with_name(f".{path.name}{STAMP_FILE}")


def read_stamp(directory: Path, kind: Kind) -> int | None:
    """The format stamped on `directory` (checked: StateFormatError), or None if unstamped."""
    return read_stamp_at(stamp_path(directory), kind)


def read_stamp_at(path: Path, kind: Kind) -> int | None:
    """The format the stamp file `path` holds (checked: StateFormatError), or None if there
    is no stamp."""
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise StateFormatError(path, f"{kind.label} stamp {path} is not JSON ({exc}): the "
                               "stamp is damaged; restore a backup") from None
    if not isinstance(doc, dict) or "format" not in doc:
        raise StateFormatError(path, f"{kind.label} stamp {path} has no \"format\": the stamp "
                               "is damaged; restore a backup")
    if doc.get("kind") != kind.key:
        raise StateFormatError(path, (
            f"{path} stamps a {doc.get('kind')!r} directory, not a {kind.label} "
            f"({kind.key!r}): is the path pointing at the wrong directory?"))
    by = doc.get("written_by")
    return check_version(kind, path, doc["format"], by if isinstance(by, str) else None)


def write_stamp(directory: Path, kind: Kind, version: int | None = None) -> Path:
    """Stamps `directory` with format `version` of `kind` (this release's by default),
    atomically; the stamp's path."""
    return write_stamp_at(stamp_path(directory), kind, version)


def write_stamp_at(path: Path, kind: Kind, version: int | None = None) -> Path:
    """Writes the stamp file `path` (format `version` of `kind`, this release's by default)
    atomically; `path`."""
    data = orjson.dumps({"kind": kind.key, "format": version or kind.current,
                         "written_by": f"headwater {__version__}"}) + b"\n"
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return path


def open_state_dir(directory: Path, kind: Kind, *, stamp: bool) -> int:
    """The check every opener of a stamped directory runs; the format it holds.

    `stamp`: the caller writes this state (it holds its lock, or is its only writer), so an
    unstamped directory, today's layout, is stamped now.  Read-only callers pass False and
    leave it unstamped (format 1 all the same)."""
    return _open_stamped(stamp_path(directory), kind, stamp)


def open_state_file(path: Path, kind: Kind, *, stamp: bool) -> int:
    """`open_state_dir` for a state file stamped beside it (`file_stamp_path`); with `stamp`
    the caller writes the file (it may not exist yet: its directory is created)."""
    stamp_file = file_stamp_path(path)
    if stamp:
        stamp_file.parent.mkdir(parents=True, exist_ok=True)
    return _open_stamped(stamp_file, kind, stamp)


def _open_stamped(stamp_file: Path, kind: Kind, stamp: bool) -> int:
    found = read_stamp_at(stamp_file, kind)
    if found is not None:
        return found
    # Unstamped: the layout before stamps, which this release must still read.
    check_version(kind, stamp_file, UNSTAMPED_FORMAT)
    if stamp:
        write_stamp_at(stamp_file, kind, UNSTAMPED_FORMAT)
    return UNSTAMPED_FORMAT


def open_catalog(db: sqlite3.Connection, path: Path) -> int:
    """The check every opener of the catalog runs (before it creates or reads any table);
    the format it holds.  The stamp is SQLite's `user_version` (0 until set): one field of
    the file's header, written in a transaction like any change, so no stamp file can go
    missing beside the database.  Every opener of the catalog writes to it, so an unstamped
    one is stamped now."""
    row = db.execute("PRAGMA user_version").fetchone()
    found = int(row[0]) if row is not None else 0
    if found != 0:
        return check_version(CATALOG, path, found)
    check_version(CATALOG, path, UNSTAMPED_FORMAT)
    db.execute(f"PRAGMA user_version = {UNSTAMPED_FORMAT:d}")
    return UNSTAMPED_FORMAT
