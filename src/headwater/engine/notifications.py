"""Snapshot progress notifications in Debezium 3.x's format, over its channels.

Debezium's `InitialSnapshotNotificationService` sends, for aggregate type "Initial Snapshot",
STARTED, IN_PROGRESS (per table: `current_collection_in_progress`, `data_collections`),
TABLE_SCAN_COMPLETED (`scanned_collection`, `total_rows_scanned`, `status` SUCCEEDED),
COMPLETED and ABORTED, or SKIPPED when a start takes no snapshot, each `{id, aggregateType,
type, additionalData, timestamp}`.

Its `IncrementalSnapshotNotificationService` sends, for aggregate type "Incremental Snapshot"
and with the id of the execute-snapshot signal (Debezium's correlation id) on every one:
STARTED, PAUSED, RESUMED (`data_collections`), IN_PROGRESS per chunk (`data_collections`,
`current_collection_in_progress`, `maximum_key`, `last_processed_key`), TABLE_SCAN_COMPLETED
(`data_collections`, `scanned_collection`, `total_rows_scanned`, `status` SUCCEEDED or
EMPTY), ABORTED (`data_collections`: the collections a stop signal removed) and COMPLETED.

Channels (`notification.enabled.channels`): `log` (one INFO line per notification, as
Debezium's LogNotificationChannel), `sink` (a record on `notification.sink.topic.name`, as
Debezium's SinkNotificationChannel: a Connect record with its key and value schemas, key
`{id}`, value `{id, type, aggregate_type, additional_data, timestamp}`, through the
connector's key and value converters as Debezium's records go through the worker's),
`jmx`/`rest` (the last notifications kept in memory; `headwater serve` answers them at
GET /connectors/{name}/notifications).

Why hooked on the metrics: every snapshot source already reports its tables there (the
metrics object reaches all of them, serial, parallel and MongoDB), so one hook covers all;
the incremental snapshot controller (engine/incremental.py), which every connector's incremental
snapshots run through, reaches the notifier through the same metrics.
"""

from __future__ import annotations

import base64
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from headwater.converters.base import Converter
from headwater.model.schema import INT64, MAP, STRING, STRUCT, ConnectField, ConnectSchema
from headwater.model.topic import TopicRecord

log = logging.getLogger("headwater.notifications")
INITIAL_SNAPSHOT: Final = "Initial Snapshot"
INCREMENTAL_SNAPSHOT: Final = "Incremental Snapshot"
KEPT: Final = 200  # notifications the rest/jmx channel keeps
_TEXT: Final = ConnectSchema(STRING, optional=False)
# Debezium's SchemaFactory.notificationKeySchema / notificationValueSchema
KEY_SCHEMA: Final = ConnectSchema(STRUCT, optional=False,
                                  name="io.debezium.connector.common.NotificationKey", version=1,
                                  fields=(ConnectField("id", _TEXT),))
VALUE_SCHEMA: Final = ConnectSchema(
    STRUCT, optional=False, name="io.debezium.connector.common.Notification", version=1,
    fields=(ConnectField("id", _TEXT), ConnectField("type", _TEXT),
            ConnectField("aggregate_type", _TEXT),
            ConnectField("additional_data",
                         ConnectSchema(MAP, optional=True, keys=_TEXT, values=_TEXT)),
            ConnectField("timestamp", ConnectSchema(INT64, optional=False))))


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
    # the connector's key.converter / value.converter (None: schemaless JSON)
    key_converter: Converter | None = None
    value_converter: Converter | None = None
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=KEPT))

    def notify(self, type_: str, data: dict[str, str] | None = None,
               aggregate_type: str = INITIAL_SNAPSHOT, id_: str | None = None) -> Notification:
        n = Notification(id_ or str(uuid.uuid4()), aggregate_type, type_,
                         {"connector_name": self.connector_name, **(data or {})},
                         int(time.time() * 1000))
        if "log" in self.channels:
            log.info("Notification %s", orjson.dumps(n.as_dict()).decode())
        if "jmx" in self.channels or "rest" in self.channels:
            self.recent.append(n.as_dict())
        if "sink" in self.channels and self.sink is not None and self.sink_topic:
            try:
                self.sink(self.sink_topic, sink_record(n, self.sink_topic,
                                                       self.key_converter,
                                                       self.value_converter))
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

    def skipped(self) -> None:
        """No initial snapshot at this start (e.g. snapshot.mode=no_data, or a restart)."""
        self.notify("SKIPPED")

    # -- Debezium's incremental snapshot notifications -----------------------------------------
    def incremental(self, type_: str, correlation_id: str | None,
                    data: dict[str, str] | None = None) -> None:
        """One incremental snapshot notification; its id is the execute-snapshot signal's id
        (Debezium's correlation id), a fresh UUID when there is none (e.g. an old offset)."""
        self.notify(type_, data, INCREMENTAL_SNAPSHOT, correlation_id)


def key_text(key: Sequence[Any] | None) -> str:
    """A key as Debezium's IN_PROGRESS shows it: values joined by ",", null as <null>."""
    return ",".join(_value_text(v) for v in key or ())


def _value_text(v: Any) -> str:
    """One key value as Java's `Objects.toString` shows Debezium's: a MongoDB `_id`, which
    offsets hold in canonical extended JSON (`{"$oid": ...}`, `{"$numberLong": ...}`), as the
    Java value it decodes to (ObjectId's hex, the number, a standard UUID's text)."""
    if v is None:
        return "<null>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict) and len(v) == 1:
        ((tag, inner),) = v.items()
        if tag.startswith("$") and isinstance(inner, str):
            return inner
        if tag == "$binary" and isinstance(inner, dict) and inner.get("subType") == "04":
            return str(uuid.UUID(bytes=base64.b64decode(str(inner.get("base64")))))
    return str(v)


def sink_record(n: Notification, topic: str = "", key_converter: Converter | None = None,
                value_converter: Converter | None = None) -> TopicRecord:
    """Debezium's SinkNotificationChannel record: key {id}, value with its field names and
    order, through the converters when given."""
    key = {"id": n.id}
    value = {"id": n.id, "type": n.type, "aggregate_type": n.aggregate_type,
             "additional_data": dict(n.additional_data), "timestamp": n.timestamp}
    return TopicRecord(
        key_converter.from_connect(topic, KEY_SCHEMA, key) if key_converter is not None
        else orjson.dumps(key),
        value_converter.from_connect(topic, VALUE_SCHEMA, value) if value_converter is not None
        else orjson.dumps(value),
        n.timestamp)
