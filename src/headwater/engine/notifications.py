"""Snapshot progress notifications in Debezium 3.x's format, over its channels.

Debezium's `InitialSnapshotNotificationService` sends, for aggregate type "Initial Snapshot",
STARTED, IN_PROGRESS (per table: `current_collection_in_progress`, `data_collections`),
TABLE_SCAN_COMPLETED (`scanned_collection`, `total_rows_scanned`, `status` SUCCEEDED),
COMPLETED and ABORTED, each `{id, aggregateType, type, additionalData, timestamp}`.  Channels
(`notification.enabled.channels`): `log` (one INFO line per notification, as Debezium's
LogNotificationChannel), `sink` (a record on `notification.sink.topic.name`, as Debezium's
SinkNotificationChannel: key `{id}`, value with snake_case fields), `jmx`/`rest` (the last
notifications kept in memory; `headwater serve` answers them at
GET /connectors/{name}/notifications).

Why hooked on the metrics: every snapshot source already reports its tables there (the
metrics object reaches all of them, serial, parallel and MongoDB), so one hook covers all.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from headwater.model.topic import TopicRecord

log = logging.getLogger("headwater.notifications")
INITIAL_SNAPSHOT: Final = "Initial Snapshot"
KEPT: Final = 200  # notifications the rest/jmx channel keeps


@dataclass(frozen=True, slots=True)
class Notification:
    id: str
    aggregate_type: str
    type: str
    additional_data: dict[str, str]
    timestamp: int

    def as_dict(self) -> dict[str, Any]:
        """Debezium's JSON (LogNotificationChannel, JmxNotificationChannel)."""
        return {"id": self.id, "aggregateType": self.aggregate_type, "type": self.type,
                "additionalData": dict(self.additional_data), "timestamp": self.timestamp}


SinkWrite = Callable[[str, TopicRecord], None]


@dataclass
class Notifier:
    """Sends notifications to the enabled channels; a failing channel never stops a capture."""

    connector_name: str
    channels: tuple[str, ...]
    sink_topic: str | None = None
    sink: SinkWrite | None = None  # bound by the runtime (records go through its queue)
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=KEPT))

    def notify(self, type_: str, data: dict[str, str] | None = None,
               aggregate_type: str = INITIAL_SNAPSHOT) -> Notification:
        n = Notification(str(uuid.uuid4()), aggregate_type, type_,
                         {"connector_name": self.connector_name, **(data or {})},
                         int(time.time() * 1000))
        if "log" in self.channels:
            log.info("Notification %s", orjson.dumps(n.as_dict()).decode())
        if "jmx" in self.channels or "rest" in self.channels:
            self.recent.append(n.as_dict())
        if "sink" in self.channels and self.sink is not None and self.sink_topic:
            try:
                self.sink(self.sink_topic, sink_record(n))
            except Exception as exc:
                log.warning("notification not written to %s: %s", self.sink_topic, exc)
        return n

    # -- Debezium's initial snapshot notifications ---------------------------------------------
    def started(self) -> None:
        self.notify("STARTED")

    def table_in_progress(self, table: str, tables: Sequence[str]) -> None:
        self.notify("IN_PROGRESS", {"current_collection_in_progress": table,
                                    "data_collections": ",".join(tables)})

    def table_completed(self, table: str, rows: int, tables: Sequence[str]) -> None:
        self.notify("TABLE_SCAN_COMPLETED", {"scanned_collection": table,
                                             "data_collections": ",".join(tables),
                                             "total_rows_scanned": str(rows),
                                             "status": "SUCCEEDED"})

    def completed(self) -> None:
        self.notify("COMPLETED")

    def aborted(self) -> None:
        self.notify("ABORTED")


def sink_record(n: Notification) -> TopicRecord:
    """Debezium's SinkNotificationChannel record: key {id}, value with its field names."""
    key = orjson.dumps({"id": n.id})
    value = orjson.dumps({"id": n.id, "aggregate_type": n.aggregate_type, "type": n.type,
                          "additional_data": n.additional_data, "timestamp": n.timestamp})
    return TopicRecord(key, value, n.timestamp)
