"""Per-object backfill jobs (Datastream's StartBackfillJob / StopBackfillJob) as signals.

Why signals: an incremental snapshot (`execute-snapshot` with `additional-conditions`)
backfills one table while the stream goes on, resumes after a restart from its last chunk,
and takes a WHERE filter; `stop-snapshot` stops it.  The stream's connector reads its own
signal file (`signal.enabled.channels=file`), so a backfill can be asked for from any
process, and one asked for while the stream is paused runs when it resumes.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import orjson

from headwater.model.collection import format_collection
from headwater.streams.model import ObjectRef
from headwater.streams.translate import SIGNAL_FILE, stream_dir


def _append(path: Path, signal: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = orjson.dumps(signal) + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line)  # one write of a whole line: a reader never sees half of it
        os.fsync(fd)
    finally:
        os.close(fd)


def _signal_name(obj: ObjectRef, database: str | None) -> str:
    """The table as the connector's signals name it: SQL Server's carry the database
    (`<database>.<schema>.<table>`, Debezium 3.x's form)."""
    if database is None:
        return obj.table_name()
    assert obj.table is not None
    return format_collection((database, obj.container, obj.table))


def start_backfill(data_dir: Path, stream: str, obj: ObjectRef, where: str | None = None,
                   database: str | None = None) -> dict[str, Any]:
    """Queues an incremental backfill of one table, limited by `where` when given
    (`database`: SQL Server's, which its signals name)."""
    table = _signal_name(obj, database)
    data: dict[str, Any] = {"data-collections": [table], "type": "incremental"}
    if where:
        data["additional-conditions"] = [{"data-collection": table, "filter": where}]
    signal = {"id": f"backfill-{uuid.uuid4()}", "type": "execute-snapshot", "data": data}
    _append(stream_dir(data_dir, stream) / SIGNAL_FILE, signal)
    return signal


def stop_backfill(data_dir: Path, stream: str, obj: ObjectRef, database: str | None = None
                  ) -> dict[str, Any]:
    """Stops the table's incremental backfill (what it already wrote stays)."""
    table = _signal_name(obj, database)
    signal = {"id": f"stop-backfill-{uuid.uuid4()}", "type": "stop-snapshot",
              "data": {"data-collections": [table], "type": "incremental"}}
    _append(stream_dir(data_dir, stream) / SIGNAL_FILE, signal)
    return signal
