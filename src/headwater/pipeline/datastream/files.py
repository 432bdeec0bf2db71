"""The files destination's directory as a source: which files there are, which were taken,
and the events in one file.

Files arrive in any order (a minute folder of the past can get a new file: another process,
a re-delivery after a crash, a copy), so the set of files is not a position in a sorted
listing.  The source keeps a *file log* instead, `<checkpoint>/datastream-files.log`: every
file it has seen, one relative path per line, in the order it saw them.  A Spark offset is a
line count of that log (`{"files": n}`), so a micro-batch is the lines [start, end), exactly
as a topic's offset range is; the log only grows, and the lines a checkpointed offset covers
are fsynced before Spark writes that offset, so a replayed batch reads the same files.  A new
file is appended once, wherever it lies, and so processed once.

Only published files are listed: the destination writes under `.inflight/` and renames a
complete file into its minute folder; hidden names are skipped.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from headwater.pipeline.datastream.events import RawEvent

FORMATS = ("json", "avro", "auto")
SUFFIXES = {"json": (".jsonl", ".json", ".jsonl.gz", ".json.gz"), "avro": (".avro",),
            "auto": (".jsonl", ".json", ".jsonl.gz", ".json.gz", ".avro")}
LOG_NAME = "datastream-files.log"
OFFSET_KEY = "files"
# Ordinal of an event in a batch: the file's line in the file log, then the event in the file.
EVENTS_PER_FILE = 1 << 24


def list_files(root: Path, fmt: str) -> list[str]:
    """Published event files under `root` (relative paths, sorted), skipping hidden entries
    (`.inflight/`, editors' and copiers' temporary files)."""
    suffixes = SUFFIXES[fmt]
    found: list[str] = []
    for parent, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith(".") and name.endswith(suffixes):
                found.append(os.path.relpath(os.path.join(parent, name), root))
    found.sort()
    return found


class FileLog:
    """The checkpoint's append-only list of the files seen (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []
        if path.exists():
            data = path.read_bytes()
            complete = data[:data.rfind(b"\n") + 1]
            if len(complete) != len(data):  # a line cut by a crash: never in an offset
                with path.open("r+b") as fh:
                    fh.truncate(len(complete))
                    os.fsync(fh.fileno())
            self.lines = complete.decode("utf-8").splitlines()
        self.known = set(self.lines)

    def add(self, names: list[str]) -> int:
        """Appends the names not seen yet (durably); returns the log's length."""
        new = [n for n in names if n not in self.known]
        if new:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab") as fh:
                fh.write("".join(f"{n}\n" for n in new).encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
            self.lines.extend(new)
            self.known.update(new)
        return len(self.lines)


def read_log(path: Path, start: int, end: int) -> list[str]:
    """Lines [start, end) of a file log (those an offset covers are complete and durable)."""
    lines = path.read_bytes().decode("utf-8").split("\n")
    if len(lines) - 1 < end:
        raise ValueError(f"{path}: the checkpoint's offset {end} is past the file log's "
                         f"{len(lines) - 1} lines: the log was changed or removed")
    return lines[start:end]


def read_file(path: Path, base: int) -> Iterator[RawEvent]:
    """The events of one JSON lines (plain or gzip) or Avro object container file; `base`
    numbers them."""
    # Imported here: Spark's Python planner worker imports this module for the file log
    # only, and must connect back within Spark's fixed 10 s even on a loaded machine
    # (pyarrow, through the event types, is most of the import time).
    from fastavro import reader as avro_reader

    from headwater.pipeline.datastream import types
    from headwater.pipeline.datastream.events import RawEvent, is_datastream_event

    if path.suffix == ".avro":
        with path.open("rb") as fh:
            events = avro_reader(fh)
            schema = orjson.loads(events.metadata["avro.schema"])
            columns = types.payload_columns(schema)
            for i, event in enumerate(events):
                yield RawEvent(base + i, _as_dict(event), columns)
        return
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{path}: not a complete gzip file: {exc}") from exc
    for i, line in enumerate(data.splitlines()):
        if not line.strip():
            continue
        event = orjson.loads(line)
        if not is_datastream_event(event):
            raise ValueError(f"{path}: line {i + 1} is not a Datastream event")
        yield RawEvent(base + i, event)


def _as_dict(event: Any) -> dict[str, Any]:
    if not isinstance(event, dict):
        raise ValueError("an Avro datum that is not a Datastream event record")
    return event
