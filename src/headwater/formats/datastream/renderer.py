"""Datastream events from ChangeRecords: the runtime's renderer for `headwater.event.format=
datastream`.

One record becomes one event: the full row in `payload` (a delete carries the deleted row and
`is_deleted: true`), the generic metadata and the source's `source_metadata`.  The two halves
of a primary-key change stay two events (DELETE + INSERT, or UPDATE-DELETE + UPDATE-INSERT
where the source has them).  Transaction boundaries, heartbeats, schema changes and
truncates have no Datastream event and are not rendered (their offsets still advance).

Identity and order come from the source position, never from a clock or a counter that a
restart would reset: `uuid` is a UUIDv5 of (stream, object, position, change type[, row]), so
a re-delivered event keeps its uuid; `sort_keys` is the position's order key followed by a
rank (backfill 0, log 1) and the half of a key change (docs/datastream.md).

`encoding` chooses the value bytes: "json" (one JSON object, what the topic log and JSON
files store) or "avro" (the binary Avro datum of the event, framed by the file destination
with the schema of its `datastream.avro.schema` header).
"""

from __future__ import annotations

import io
import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any

import orjson
from fastavro import parse_schema, schemaless_writer

from headwater.formats.datastream.plan import TablePlan
from headwater.formats.datastream.sources import SourceSpec, change_type, source_spec
from headwater.formats.datastream.unified import json_default
from headwater.model.record import ABSENT, UNCHANGED_TOAST, ChangeRecord, Op, SourceEvent
from headwater.model.schema import TableSchema
from headwater.model.topic import TopicBatch, TopicRecord
from headwater.model.topic_naming import DEFAULT_STRATEGY, SCHEMA_STRATEGY, TopicNaming

log = logging.getLogger("headwater.formats.datastream")

# Namespace of the event uuids (a fixed UUIDv5 of the format's name).
UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "headwater:datastream-event")

OBJECT_HEADER = "datastream.object"
SCHEMA_KEY_HEADER = "datastream.schema_key"
AVRO_SCHEMA_HEADER = "datastream.avro.schema"

ENCODINGS = ("json", "avro")


def iso_millis(ms: int) -> str:
    """`2019-11-07T07:37:16.808Z`: the JSON form of both event timestamps."""
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


class DatastreamFormat:
    """Renders change records as Datastream events (JSON objects or Avro datums)."""

    def __init__(
        self,
        stream_name: str,
        *,
        encoding: str = "json",
        topic_naming: TopicNaming | None = None,
        file_headers: bool = False,
        toasted_value_placeholder: str = "__debezium_unavailable_value",
    ) -> None:
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, not {encoding!r}")
        self.stream_name = stream_name
        self.encoding = encoding
        self.topic_naming = topic_naming
        # Headers naming object, schema key (and the Avro schema) for the file destination;
        # the topic log needs none (the JSON event names its object).
        self.file_headers = file_headers or encoding == "avro"
        self.toasted_value_placeholder = toasted_value_placeholder
        self._plans: dict[int, tuple[TableSchema, TablePlan, SourceSpec, Any]] = {}
        self._ordinals: dict[tuple[int, Any], int] = {}
        self._last_ms: list[Any] = [None, None, None, None]
        self._warned: set[str] = set()

    def __getstate__(self) -> dict[str, Any]:
        # Sent to snapshot worker processes: plans (parsed schemas, getters) are rebuilt there.
        state = dict(self.__dict__)
        state["_plans"] = {}
        state["_ordinals"] = {}
        return state

    # -- plans --------------------------------------------------------------------------------
    def plan(self, record: ChangeRecord) -> tuple[TablePlan, SourceSpec, Any]:
        table = record.table
        cached = self._plans.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1], cached[2], cached[3]
        spec = source_spec(record.context.kind)
        plan = TablePlan(table, spec, self._topic(record))
        parsed = parse_schema(plan.avro_schema) if self.encoding == "avro" else None
        if self.file_headers:
            headers = [(OBJECT_HEADER, plan.object.encode()),
                       (SCHEMA_KEY_HEADER, plan.schema_key.encode())]
            if self.encoding == "avro":
                headers.append((AVRO_SCHEMA_HEADER, orjson.dumps(plan.avro_schema)))
            plan.headers = tuple(headers)
        self._plans[id(table)] = (table, plan, spec, parsed)
        return plan, spec, parsed

    def _topic(self, record: ChangeRecord) -> str:
        tid = record.table.id
        naming = self.topic_naming
        if naming is None:
            strategy = DEFAULT_STRATEGY if tid.schema is None else SCHEMA_STRATEGY
            naming = TopicNaming(record.context.server_name, strategy)
        return naming.data_change_topic(tid)

    # -- rendering ----------------------------------------------------------------------------
    def render_batch(self, records: Sequence[SourceEvent]) -> TopicBatch:
        out: TopicBatch = {}
        for record in records:
            if type(record) is not ChangeRecord:
                continue  # no Datastream event (module docstring)
            if record.op is Op.TRUNCATE or record.op is Op.MESSAGE:
                self._skip_once(record)
                continue
            plan, spec, parsed = self.plan(record)
            event = self.event(record, plan, spec, avro=parsed is not None)
            if parsed is not None:
                buffer = io.BytesIO()
                schemaless_writer(buffer, parsed, event)
                value = buffer.getvalue()
            else:
                value = orjson.dumps(event, default=json_default)
            row = record.before if record.op is Op.DELETE else record.after
            key = None
            if plan.key_names and row is not None:
                key = orjson.dumps({n: row[p] for n, p in zip(plan.key_names, plan.key_positions,
                                                              strict=True)},
                                   default=json_default)
            out.setdefault(plan.topic, []).append(
                TopicRecord(key, value, record.source_ts_ms, plan.headers))
        return out

    def event(self, record: ChangeRecord, plan: TablePlan, spec: SourceSpec, *,
              avro: bool = False) -> dict[str, Any]:
        """The event of one record as a dict: JSON values, or Avro values with `avro`."""
        op = record.op
        backfill = op is Op.READ
        key_change = record.other_key is not None
        kind = change_type(spec, op.value, key_change)
        row = record.before if op is Op.DELETE else record.after
        if row is None:
            raise ValueError(f"{plan.object}: a {op.name} record without its row image")
        if ABSENT in row or UNCHANGED_TOAST in row:
            row = self._fill(plan, row)
        position = record.position
        order = position.order_key
        if backfill:
            read_method = (spec.incremental_backfill if record.snapshot.value == "incremental"
                           else spec.backfill)
            identity = self._backfill_identity(plan, record, row, order)
            name = f"{self.stream_name}\x1f{plan.object}\x1f{order}\x1f{kind}\x1f{identity}"
        else:
            read_method = spec.cdc
            name = f"{self.stream_name}\x1f{plan.object}\x1f{order}\x1f{kind}"
        meta = plan.meta_template.copy()
        for field, what, getter, convert, backfill_value in plan.dynamic:
            if what == "is_deleted":
                meta[field] = op is Op.DELETE
            elif what == "change_type":
                meta[field] = kind
            elif backfill:
                meta[field] = backfill_value
            else:
                value = getter(position)  # type: ignore[misc]
                meta[field] = convert(value) if convert is not None and value is not None else (
                    value)
        values = list(row)
        for index, conv in (plan.avro_to if avro else plan.json_to):
            v = values[index]
            if v is not None:
                values[index] = conv(v)
        return {
            "stream_name": self.stream_name,
            "read_method": read_method,
            "object": plan.object,
            "schema_key": plan.schema_key,
            "uuid": str(uuid.uuid5(UUID_NAMESPACE, name)),
            "read_timestamp": (record.processed_ts_ms if avro
                               else self._iso(0, record.processed_ts_ms)),
            "source_timestamp": (record.source_ts_ms if avro
                                 else self._iso(2, record.source_ts_ms)),
            # position order key, then backfill (0) before log events (1) at one position,
            # then the delete half of a key change before its insert half
            "sort_keys": [*order, 0 if backfill else 1,
                          1 if key_change and op is not Op.DELETE else 0],
            "source_metadata": meta,
            "payload": dict(zip(plan.avro_names if avro else plan.column_names, values,
                                strict=True)),
        }

    def _iso(self, slot: int, ms: int) -> str:
        # Consecutive events mostly share their timestamps: remember the last of each.
        last = self._last_ms
        if last[slot] != ms:
            last[slot] = ms
            last[slot + 1] = iso_millis(ms)
        text: str = last[slot + 1]
        return text

    def _backfill_identity(self, plan: TablePlan, record: ChangeRecord,
                           row: tuple[Any, ...], order: Any) -> str:
        """What tells two backfill rows of one snapshot apart: the key, else the row's ordinal
        in the table's backfill at that position (keyless tables)."""
        if plan.key_positions:
            return repr(tuple(row[p] for p in plan.key_positions))
        slot = (id(record.table), order)
        ordinal = self._ordinals.get(slot, 0)
        if ordinal == 0 and len(self._ordinals) > 1024:
            self._ordinals.clear()
        self._ordinals[slot] = ordinal + 1
        return f"#{ordinal}"

    def _fill(self, plan: TablePlan, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """Values the source did not send: null, or the placeholder for an unchanged TOASTed
        text or bytes value (a null there would erase the value in a merge)."""
        out = []
        for value, unified in zip(row, plan.unified, strict=True):
            out.append(self._missing(unified.name) if value is UNCHANGED_TOAST else (
                None if value is ABSENT else value))
        return tuple(out)

    def _missing(self, unified: str) -> Any:
        if unified == "STRING":
            return self.toasted_value_placeholder
        if unified == "JSON":
            return orjson.dumps(self.toasted_value_placeholder).decode()
        if unified == "BYTES":
            return self.toasted_value_placeholder.encode()
        return None

    def _skip_once(self, record: ChangeRecord) -> None:
        name = str(record.table.id)
        if name not in self._warned:
            self._warned.add(name)
            log.warning("%s: %s has no Datastream event; not rendered", name, record.op.name)
