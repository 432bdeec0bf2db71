"""The schema history as a local file (Debezium's FileSchemaHistory): one history record, as
JSON, per line, appended and fsynced before `append` returns.

Why shared: every connector with a schema history (MySQL/MariaDB replay its DDL, SQL Server and
Db2 their `tableChanges`) keeps the same file with the same durability rules; what a record
means stays with the connector.  A record becomes durable when its line and newline are
fsynced.  A last line without a newline is a write torn by a crash: reading ignores it and the
next `append` cuts it off (it was never acknowledged).

The file is Debezium's layout, line for line, so its format stamp lives beside it
(`state_format.file_stamp_path`); it is checked before the file is first read, cut or
written (a newer Headwater's history is refused, by name, untouched) and an unstamped one,
today's layout, is stamped then: only connectors open a history, and they write it.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import orjson

from headwater.engine.metrics import SchemaHistoryMetrics
from headwater.fsync import fsync_dir
from headwater.state_format import SCHEMA_HISTORY, open_state_file

log = logging.getLogger("headwater.relational.history_file")


class SchemaHistoryError(RuntimeError):
    """A history that cannot be read, written or replayed; the message names the store and
    the record."""


def parse_record(raw: bytes, where: str) -> dict[str, Any]:
    """A stored history record, checked for the fields every reader needs."""
    try:
        record = orjson.loads(raw)
        if not isinstance(record["position"], dict):
            raise TypeError("position must be an object")
    except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise SchemaHistoryError(f"{where} is corrupt: {exc}") from None
    return dict(record)


class HistoryFile:
    """A JSON-lines history file: `append` records, read them all back in order."""

    # `clear` empties the store (a new snapshot's history starts afresh).
    clears = True

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._checked_tail = False
        self._checked_format = False
        # Debezium's schema-history metrics context, read by the connector's metrics.
        self.metrics = SchemaHistoryMetrics()

    def __str__(self) -> str:
        return f"schema history file {self.path}"

    def exists(self) -> bool:
        return self.path.exists()

    def _check_format(self, writing: bool) -> None:
        """The format stamp, once, before the file is first touched (StateFormatError for a
        format this release does not read); stamped when the file exists or is written."""
        if not self._checked_format:
            open_state_file(self.path, SCHEMA_HISTORY, stamp=writing or self.path.exists())
            self._checked_format = True

    def append(self, value: bytes, change: str) -> None:
        """Stores one record (its JSON, no newline) durably; `change` is what the metrics
        report as the last applied change."""
        self._check_format(writing=True)
        line = value + b"\n"
        created = not self.path.exists()
        if created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self._checked_tail:
            self._cut_torn_tail()
        self._checked_tail = True
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.path.parent)
        self.metrics.applied(change)

    def _cut_torn_tail(self) -> None:
        with open(self.path, "rb+") as f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                return
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return
            f.seek(0)
            data = f.read()
            keep = data.rfind(b"\n") + 1
            log.warning("schema history %s: cutting off a torn last record (%d bytes)",
                        self.path, size - keep)
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())

    def records(self) -> list[tuple[str, dict[str, Any]]]:
        """Every complete record in file order, each with its label ("line N") for errors."""
        self._check_format(writing=False)
        if not self.path.exists():
            return []
        lines = self.path.read_bytes().split(b"\n")
        torn = lines.pop()  # after the last newline: empty, or a torn write
        if torn.strip():
            log.warning("schema history %s: ignoring a torn last record at line %d",
                        self.path, len(lines) + 1)
        return [(f"line {number}", parse_record(raw, f"{self}: line {number}"))
                for number, raw in enumerate(lines, start=1) if raw.strip()]

    def recovering(self) -> None:
        """Recovery starts (the metrics' status)."""
        self.metrics.status = "RECOVERING"
        self.metrics.recovery_start_ms = int(time.time() * 1000)

    def last_record(self) -> dict[str, Any] | None:
        """The last complete record, without reading the others."""
        self._check_format(writing=False)
        if not self.path.exists():
            return None
        data = self.path.read_bytes()
        end = data.rfind(b"\n")
        if end < 0:
            return None
        start = data.rfind(b"\n", 0, end) + 1
        return parse_record(data[start:end], f"{self}: the last record")

    def close(self) -> None:
        """Nothing to release: every append opens and closes the file."""

    def clear(self) -> None:
        """Atomically replaces the history with an empty one."""
        self._check_format(writing=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)
        self._checked_tail = True

