"""What the connectors API shows of a stored connector: info, status, tasks, offsets, topics.

Why apart from the routes: the mapping from Headwater's states to Kafka Connect's (one task
per connector; the target state wins over what a worker said) is the part worth reading and
testing on its own.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from headwater.server.connectors import effective, hidden
from headwater.server.models import (
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorState,
    ConnectorStateInfo,
    ConnectorTaskId,
    StateName,
    TaskInfo,
    TaskState,
)
from headwater.server.store import ConnectorRow, Reported, Target


def tasks_of(row: ConnectorRow) -> list[ConnectorTaskId]:
    """One task per connector (a capture is one ordered reader); none while STOPPED, as
    Kafka Connect removes a stopped connector's tasks."""
    return [] if row.target is Target.STOPPED else [ConnectorTaskId(connector=row.name, task=0)]


def info(row: ConnectorRow) -> ConnectorInfo:
    return ConnectorInfo(name=row.name, config=hidden(row.config), tasks=tasks_of(row))


def state_of(row: ConnectorRow, running: bool) -> StateName:
    if row.target is Target.STOPPED:
        return "STOPPED"
    if row.target is Target.PAUSED:
        return "PAUSED"
    if row.reported is Reported.FAILED:
        return "FAILED"
    if row.reported is Reported.RUNNING and running:
        return "RUNNING"
    return "UNASSIGNED"


def status(row: ConnectorRow, running: bool, worker_id: str,
           restarting: bool = False) -> ConnectorStateInfo:
    state: StateName = "RESTARTING" if restarting else state_of(row, running)
    trace = row.trace if state == "FAILED" else None
    return ConnectorStateInfo(
        name=row.name,
        connector=ConnectorState(state=state, worker_id=worker_id, trace=trace),
        tasks=[TaskState(id=t.task, state=state, worker_id=worker_id, trace=trace)
               for t in tasks_of(row)])


def task_infos(row: ConnectorRow, data_dir: Path) -> list[TaskInfo]:
    config = hidden(effective(data_dir, row.name, row.config))
    return [TaskInfo(id=t, config=config) for t in tasks_of(row)]


def offsets_path(row: ConnectorRow, data_dir: Path) -> Path:
    return Path(effective(data_dir, row.name, row.config)["offset.storage.file.filename"])


def read_offsets(row: ConnectorRow, data_dir: Path) -> ConnectorOffsets:
    """The stored offset as Kafka Connect lists source offsets (one partition)."""
    from headwater.engine.offsets import read_offset_file

    doc = read_offset_file(offsets_path(row, data_dir))  # its format checked
    if doc is None or not isinstance(doc.get("offset"), dict):
        return ConnectorOffsets(offsets=[])
    return ConnectorOffsets(offsets=[ConnectorOffset(partition=doc.get("partition") or {},
                                                     offset=doc["offset"])])


def write_offsets(row: ConnectorRow, data_dir: Path, wanted: ConnectorOffsets) -> str | None:
    """Alter the stored offset (a problem as a message, else None).  The partition must be
    the connector's (when one is stored); a null offset removes it."""
    from headwater.engine.offsets import FileOffsetStore

    path = offsets_path(row, data_dir)
    current = read_offsets(row, data_dir).offsets
    for entry in wanted.offsets:
        if current and entry.partition != current[0].partition:
            return (f"unknown partition {orjson.dumps(entry.partition).decode()}: connector "
                    f"{row.name} has partition "
                    f"{orjson.dumps(current[0].partition).decode()}")
    for entry in wanted.offsets:
        store = FileOffsetStore(path, entry.partition)
        if entry.offset is None:
            store.clear()
        else:
            store.save(entry.offset)
    return None


def topics(row: ConnectorRow, data_dir: Path) -> list[str]:
    """The topics in the connector's topic log that carry its prefix."""
    from headwater.topics.segment import list_topic_names

    props = effective(data_dir, row.name, row.config)
    root = Path(props["headwater.topics.dir"]) if props.get("headwater.topics.dir") else None
    if root is None:
        return []
    prefix = props.get("topic.prefix", "")
    return [t for t in list_topic_names(root) if not prefix or t == prefix
            or t.startswith(prefix + ".") or t.startswith("__")]
