"""Debezium change events in Kafka Connect JsonConverter form: a pure function of a ChangeRecord.

For each record the format returns the topic records Debezium 3.x would produce: the change
event itself (key + value envelope, version 2), a tombstone after a delete, the
`__debezium.newkey` / `__debezium.oldkey` headers on the two halves of a primary-key change and
the `__debezium.context.*` headers of every data event.  Header values are the bytes the
configured `header.converter` writes (headwater.converters.headers; SimpleHeaderConverter, the
Kafka Connect default, unless the caller passes another).

Rendering the Connect schemas is the expensive part and identical for every event of a table,
so a `_TablePlan` is computed once per `TableSchema` object (connectors replace the object when
the table's structure changes) and holds the schema JSON already serialized, in a `%`
template of the whole value with the envelope's constant parts.  Per event only the row images
are built (dicts from zip over a tuple) and serialized with orjson, then filled into the
template with the source block's JSON (its table's constants rendered once too, where the
block can: `SourceBlock`) and the event's numbers.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol

import orjson

from headwater.connect.record import ConnectRecord, Header
from headwater.converters.base import Converter
from headwater.converters.connect_json import avro_name, json_default, schema_to_json
from headwater.converters.headers import SimpleHeaderConverter
from headwater.formats.message_events import MessagePlan
from headwater.model.record import (
    ABSENT,
    UNCHANGED_TOAST,
    ChangeRecord,
    HeartbeatEvent,
    Op,
    SchemaChangeEvent,
    SourceContext,
    SourceEvent,
    TransactionEvent,
)
from headwater.model.schema import (
    ARRAY,
    INT32,
    INT64,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    STRING,
    STRUCT,
    ConnectField,
    ConnectSchema,
    TableId,
    TableSchema,
)
from headwater.model.topic import HeaderBytes, TopicBatch, TopicRecord
from headwater.model.topic_naming import DEFAULT_STRATEGY, SCHEMA_STRATEGY, TopicNaming

TRANSACTION_BLOCK_SCHEMA = ConnectSchema(
    STRUCT,
    optional=True,
    name="event.block",
    version=1,
    fields=(
        ConnectField("id", ConnectSchema(STRING, optional=False)),
        ConnectField("total_order", ConnectSchema(INT64, optional=False)),
        ConnectField("data_collection_order", ConnectSchema(INT64, optional=False)),
    ),
)



_TX_KEY_SCHEMA = ConnectSchema(
    STRUCT, optional=False, name="io.debezium.connector.common.TransactionMetadataKey",
    version=1, fields=(ConnectField("id", ConnectSchema(STRING, optional=False)),),
)
_TX_VALUE_SCHEMA = ConnectSchema(
    STRUCT, optional=False, name="io.debezium.connector.common.TransactionMetadataValue",
    version=1, fields=(
        ConnectField("status", ConnectSchema(STRING, optional=False)),
        ConnectField("id", ConnectSchema(STRING, optional=False)),
        ConnectField("event_count", OPTIONAL_INT64),
        ConnectField("data_collections", ConnectSchema(
            ARRAY, optional=True,
            items=ConnectSchema(STRUCT, optional=True, name="event.collection", version=1,
                                fields=(
                ConnectField("data_collection", ConnectSchema(STRING, optional=False)),
                ConnectField("event_count", ConnectSchema(INT64, optional=False)),
            )),
        )),
        ConnectField("ts_ms", ConnectSchema(INT64, optional=False)),
    ),
)
# `TableSchema.attributes` of a collection rendered with the document envelope
# (connectors/mongodb/documents.py sets it).
_ENVELOPE, _DOCUMENT = "envelope", "document"
_CONTEXT_HEADER_SCHEMA = ConnectSchema(STRING, optional=False)
_HEARTBEAT_KEY_SCHEMA = ConnectSchema(
    STRUCT, optional=False, name="io.debezium.connector.common.ServerNameKey",
    fields=(ConnectField("serverName", ConnectSchema(STRING, optional=False)),),
)
_HEARTBEAT_VALUE_SCHEMA = ConnectSchema(
    STRUCT, optional=False, name="io.debezium.connector.common.Heartbeat",
    fields=(ConnectField("ts_ms", ConnectSchema(INT64, optional=False)),),
)


def _envelope(schema: ConnectSchema, payload: Any, with_schema: bool) -> bytes:
    body = orjson.dumps(payload)
    if not with_schema:
        return body
    return b'{"schema":' + orjson.dumps(schema_to_json(schema)) + b',"payload":' + body + b"}"


class SourceBlock(Protocol):
    """A connector's `source` struct: its schema and its payload for one record.

    A block may also have `json_renderer(table, context)`, giving a function from a record of
    that table version to the payload's JSON bytes (what `orjson.dumps(payload(record),
    default=json_default)` gives) with the fields that depend only on the table and the
    context rendered once (PostgresSourceBlock); without it the payload dict is serialized.
    """

    @property
    def schema(self) -> ConnectSchema: ...

    def payload(self, record: ChangeRecord) -> dict[str, Any]: ...


SourceJson = Callable[[ChangeRecord], bytes]
# Each Op's JSON, by the member's `_value_` (a str: an Enum's own hash and `.value` are Python
# calls, one per event otherwise).
_OP_JSON = {op._value_: orjson.dumps(op.value) for op in Op}
# The envelope's processing time in ms, µs and ns, after `"ts_ms":`.  A batch's events mostly
# share their millisecond: formatted once for them (three large `%d` cost ~0.3 µs an event).
_TS_TEMPLATE = b'%d,"ts_us":%d,"ts_ns":%d'


def _source_json(block: SourceBlock, table: TableSchema, context: SourceContext) -> SourceJson:
    """The `source` payload's JSON for the events of one table version (see SourceBlock)."""
    make: Callable[[TableSchema, SourceContext], SourceJson] | None = getattr(
        block, "json_renderer", None)
    if make is not None:
        return make(table, context)
    payload = block.payload
    dumps = orjson.dumps
    return lambda record: dumps(payload(record), default=json_default)


class _TablePlan:
    """Everything about a table's events that does not change from one event to the next."""

    __slots__ = (
        "absent",
        "column_names",
        "envelope_schema",
        "key_names",
        "key_positions",
        "key_prefix",
        "key_schema",
        "key_template",
        "source_json",
        "topic",
        "value_prefix",
        "value_template",
    )

    def __init__(self, table: TableSchema, context: SourceContext, fmt: DebeziumJsonFormat):
        tid = table.id
        middle = tid.schema if tid.schema is not None else tid.database
        self.topic = fmt.naming(context, tid).data_change_topic(tid)
        base = ".".join(
            (avro_name(context.server_name, first=True), avro_name(middle), avro_name(tid.table))
        )
        value_fields = tuple(ConnectField(c.name, c.schema) for c in table.columns)
        row_schema = ConnectSchema(STRUCT, optional=True, name=f"{base}.Value", fields=value_fields)
        # Debezium 3.x's envelope (version 2): `transaction` before `op`, then the processing
        # time in ms, µs and ns.
        envelope_fields = [
            ConnectField("before", row_schema),
            ConnectField("after", row_schema),
            ConnectField("source", fmt.source_block.schema),
            ConnectField("transaction", TRANSACTION_BLOCK_SCHEMA),
            ConnectField("op", ConnectSchema(STRING, optional=False)),
            ConnectField("ts_ms", OPTIONAL_INT64),
            ConnectField("ts_us", OPTIONAL_INT64),
            ConnectField("ts_ns", OPTIONAL_INT64),
        ]
        envelope = ConnectSchema(
            STRUCT, optional=False, name=f"{base}.Envelope", version=2,
            fields=tuple(envelope_fields),
        )
        self.envelope_schema = envelope
        self.column_names = table.column_names
        self.key_positions = table.key_positions
        self.key_names = table.key_columns
        if fmt.value_schemas:
            self.value_prefix = (
                b'{"schema":' + orjson.dumps(schema_to_json(envelope)) + b',"payload":'
            )
        else:
            self.value_prefix = b""
        # The whole value but the per-event parts: the row images, the source block, the
        # transaction block, the op and the processing time (one `%` per event).  The schema
        # JSON is its first argument, not part of it: `%` reads its template byte by byte.
        # The processing time is `_TS_TEMPLATE`'s bytes, formatted once per distinct time.
        self.value_template = (
            b'%s{"before":%s,"after":%s,"source":%s,"transaction":%s,"op":%s,'
            b'"ts_ms":%s}' + (b"}" if self.value_prefix else b""))
        # A row image's values where the source sent none (`_row`): null, or for a NOT NULL
        # column the type's fallback (0, "", false...), as Debezium renders them
        # (docs/decisions.md).
        self.absent = tuple(None if c.optional else c.fallback for c in table.columns)
        self.source_json = _source_json(fmt.source_block, table, context)
        self.key_schema: ConnectSchema | None = None
        if self.key_names:
            key_fields = tuple(
                ConnectField(c.name, c.schema_in_key.with_optional(False))
                for c in (table.columns[p] for p in self.key_positions)
            )
            self.key_schema = ConnectSchema(
                STRUCT, optional=False, name=f"{base}.Key", fields=key_fields
            )
        if self.key_schema is not None and fmt.key_schemas:
            self.key_prefix = (
                b'{"schema":' + orjson.dumps(schema_to_json(self.key_schema)) + b',"payload":'
            )
        else:
            self.key_prefix = b""
        # A one-column key's whole JSON but its value, a `%` template: per event the value
        # alone is serialized (the same bytes as the dict `_key` serializes).
        self.key_template: bytes | None = None
        if len(self.key_names) == 1:
            head = self.key_prefix + b"{" + orjson.dumps(self.key_names[0]) + b":"
            self.key_template = (head.replace(b"%", b"%%") + b"%s}"
                                 + (b"}" if self.key_prefix else b""))


_JSON = ConnectSchema(STRING, optional=True, name="io.debezium.data.Json", version=1)
_UPDATE_DESCRIPTION_SCHEMA = ConnectSchema(
    STRUCT, optional=True, name="io.debezium.connector.mongodb.changestream.updatedescription",
    version=1, fields=(
        ConnectField("removedFields", ConnectSchema(
            ARRAY, optional=True, items=ConnectSchema(STRING, optional=False))),
        ConnectField("updatedFields", _JSON),
        ConnectField("truncatedArrays", ConnectSchema(
            ARRAY, optional=True, items=ConnectSchema(
                STRUCT, optional=False,
                name="io.debezium.connector.mongodb.changestream.truncatedarray", version=1,
                fields=(ConnectField("field", ConnectSchema(STRING, optional=False)),
                        ConnectField("size", ConnectSchema(INT32, optional=False)))))),
    ),
)


class _DocumentPlan:
    """A document collection's events (Debezium's MongoDB envelope, MongoDbSchema): the key
    ``{"id": <_id as Extended JSON>}`` named ``<topic>.Key``; the value ``before``, ``after``
    (JSON text), ``updateDescription``, ``source``, ``op``, ``ts_ms``, ``transaction``, named
    ``<topic>.Envelope`` - no ``ts_us``/``ts_ns``, which that schema does not have.  Images are
    (id, JSON text, updateDescription) tuples built by the connector."""

    __slots__ = ("envelope_schema", "key_prefix", "key_schema", "topic", "value_prefix")

    def __init__(self, table: TableSchema, context: SourceContext, fmt: DebeziumJsonFormat):
        self.topic = fmt.naming(context, table.id).data_change_topic(table.id)
        self.envelope_schema = envelope = ConnectSchema(
            STRUCT, optional=False, name=f"{self.topic}.Envelope", fields=(
            ConnectField("before", _JSON),
            ConnectField("after", _JSON),
            ConnectField("updateDescription", _UPDATE_DESCRIPTION_SCHEMA),
            ConnectField("source", fmt.source_block.schema),
            ConnectField("op", OPTIONAL_STRING),
            ConnectField("ts_ms", OPTIONAL_INT64),
            ConnectField("transaction", TRANSACTION_BLOCK_SCHEMA),
        ))
        self.key_schema = key = ConnectSchema(
            STRUCT, optional=False, name=f"{self.topic}.Key",
            fields=(ConnectField("id", ConnectSchema(STRING, optional=False)),))
        self.value_prefix = (b'{"schema":' + orjson.dumps(schema_to_json(envelope))
                             + b',"payload":') if fmt.value_schemas else b""
        self.key_prefix = (b'{"schema":' + orjson.dumps(schema_to_json(key))
                           + b',"payload":') if fmt.key_schemas else b""

    def render(self, record: ChangeRecord, source: dict[str, Any], with_tx: bool,
               tombstones: bool, headers: HeaderBytes,
               out: list[TopicRecord]) -> None:
        before, after, tx = record.before, record.after, record.tx
        ts = record.processed_ts_ms
        body = orjson.dumps({
            "before": before[1] if before is not None else None,
            "after": after[1] if after is not None else None,
            "updateDescription": after[2] if after is not None else None,
            "source": source,
            "op": record.op,
            "ts_ms": ts,
            "transaction": tx.block() if with_tx and tx is not None else None,
        })
        value = self.value_prefix + body + b"}" if self.value_prefix else body
        image = after if after is not None else before
        key: bytes | None = None
        if image is not None:
            key = orjson.dumps({"id": image[0]})
            if self.key_prefix:
                key = self.key_prefix + key + b"}"
        out.append(TopicRecord(key, value, ts, headers))
        if record.op is Op.DELETE and tombstones:
            out.append(TopicRecord(key, None, ts, headers))

    def connect(self, record: ChangeRecord, source: dict[str, Any], with_tx: bool,
                tombstones: bool, headers: tuple[Header, ...], out: list[ConnectRecord]
                ) -> None:
        """The same event as `render`, as Connect records (the structured path)."""
        before, after, tx = record.before, record.after, record.tx
        ts = record.processed_ts_ms
        value = {
            "before": before[1] if before is not None else None,
            "after": after[1] if after is not None else None,
            "updateDescription": after[2] if after is not None else None,
            "source": source,
            "op": record.op.value,
            "ts_ms": ts,
            "transaction": tx.block() if with_tx and tx is not None else None,
        }
        image = after if after is not None else before
        key = {"id": image[0]} if image is not None else None
        out.append(ConnectRecord(self.topic, None, self.key_schema, key, self.envelope_schema,
                                 value, ts, headers))
        if record.op is Op.DELETE and tombstones:
            out.append(ConnectRecord(self.topic, None, self.key_schema, key, None, None, ts,
                                     headers))


@dataclass(eq=False, repr=False)
class DebeziumJsonFormat:
    """Renders change records as Debezium JSON topic records."""

    # A capability (read by column-wise snapshots, connectors/postgres/snapshot_columnar.py):
    # a row event's key and value are each column's JSON (orjson, `json_default`) spliced
    # between bytes that depend only on the table, the read time and the snapshot marker.
    splices_values = True

    source_block: SourceBlock
    _: KW_ONLY
    key_schemas: bool = True
    value_schemas: bool = True
    tombstones_on_delete: bool = True
    toasted_value_placeholder: str = "__debezium_unavailable_value"
    provide_transaction_metadata: bool = False
    # The connector's topic names (`topic.*`, capture.topic_naming); without one (tools and
    # tests rendering without a configuration) Debezium's defaults: each connector's
    # strategy, per table, and the default transaction topic and heartbeat prefix.
    topic_naming: TopicNaming | None = None
    # Debezium 3.x puts `__debezium.context.*` headers (logical name, task, connector,
    # run id) on every data event; `run_id` identifies this run (a fresh UUID by default).
    context_headers: bool = True
    run_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    # Every header's bytes, as a Kafka Connect worker's `header.converter` writes them.
    header_converter: Converter = field(default_factory=SimpleHeaderConverter)
    # what is derived once per naming, context and table
    _namings: dict[tuple[str, str], TopicNaming] = field(default_factory=dict, init=False)
    _context_cache: dict[SourceContext, HeaderBytes] = field(default_factory=dict, init=False)
    _connect_headers: dict[SourceContext, tuple[Header, ...]] = field(
        default_factory=dict, init=False)
    _plans: dict[int, tuple[TableSchema, _TablePlan]] = field(default_factory=dict, init=False)
    _document_plans: dict[int, tuple[TableSchema, _DocumentPlan]] = field(
        default_factory=dict, init=False)
    _message_plans: dict[int, tuple[TableSchema, MessagePlan]] = field(
        default_factory=dict, init=False)

    def naming(self, context: SourceContext, table: TableId | None = None) -> TopicNaming:
        if self.topic_naming is not None:
            return self.topic_naming
        strategy = DEFAULT_STRATEGY if table is not None and table.schema is None else (
            SCHEMA_STRATEGY)
        naming = self._namings.get((context.server_name, strategy))
        if naming is None:
            naming = self._namings[(context.server_name, strategy)] = TopicNaming(
                context.server_name, strategy)
        return naming

    def _context_headers(self, context: SourceContext) -> HeaderBytes:
        """Debezium 3.x's `__debezium.context.*` headers of every data event (computed once)."""
        if not self.context_headers:
            return ()
        cached = self._context_cache.get(context)
        if cached is None:
            convert = self.header_converter.from_connect
            cached = tuple(
                (h.key, convert(context.server_name, h.schema, h.value))
                for h in self._connect_context_headers(context))
            self._context_cache[context] = cached
        return cached

    def _key_header(self, plan: _TablePlan, record: ChangeRecord) -> tuple[str, bytes | None]:
        """`__debezium.newkey` on the delete half of a key change, `oldkey` on the create half:
        the other half's key struct with the table's key schema, as Debezium adds it."""
        name = "__debezium.newkey" if record.op is Op.DELETE else "__debezium.oldkey"
        return name, self.header_converter.from_connect(
            plan.topic, plan.key_schema, self._connect_key(plan, record.other_key))

    def plan(self, table: TableSchema, context: SourceContext) -> _TablePlan:
        cached = self._plans.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        plan = _TablePlan(table, context, self)
        self._plans[id(table)] = (table, plan)
        return plan

    def document_plan(self, table: TableSchema, context: SourceContext) -> _DocumentPlan:
        cached = self._document_plans.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        plan = _DocumentPlan(table, context, self)
        self._document_plans[id(table)] = (table, plan)
        return plan

    def message_plan(self, table: TableSchema, context: SourceContext) -> MessagePlan:
        """The plan of logical decoding message events (op ``m``, formats/message_events.py)."""
        cached = self._message_plans.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1]
        plan = MessagePlan(table, context, self.source_block.schema, TRANSACTION_BLOCK_SCHEMA,
                           self.key_schemas, self.value_schemas)
        self._message_plans[id(table)] = (table, plan)
        return plan

    def _row(self, plan: _TablePlan, values: tuple[Any, ...] | None) -> dict[str, Any] | None:
        """A row image as a dict, with ABSENT and UNCHANGED_TOAST rendered as Debezium does."""
        if values is None:
            return None
        if ABSENT in values or UNCHANGED_TOAST in values:
            toast = self.toasted_value_placeholder
            values = tuple([
                absent if v is ABSENT else toast if v is UNCHANGED_TOAST else v
                for v, absent in zip(values, plan.absent, strict=True)])
        names = plan.column_names
        if len(values) == len(names):
            # Any keyword argument (strict=True or False) takes zip's slow path, ~0.2 us a
            # call: the widths are checked here, and by zip only to raise its ValueError.
            return dict(zip(names, values))  # noqa: B905
        return dict(zip(names, values, strict=True))

    def _key(self, plan: _TablePlan, values: tuple[Any, ...] | None) -> bytes | None:
        if not plan.key_names or values is None:
            return None
        if len(plan.key_names) == 1:
            payload = orjson.dumps(
                {plan.key_names[0]: values[plan.key_positions[0]]}, default=json_default
            )
        else:
            payload = orjson.dumps(
                {n: values[p] for n, p in zip(plan.key_names, plan.key_positions, strict=True)},
                default=json_default,
            )
        if plan.key_prefix:
            return plan.key_prefix + payload + b"}"
        return payload

    def render(self, record: SourceEvent) -> list[tuple[str, TopicRecord]]:
        """The topic records of one change, in order (event, then tombstone if any)."""
        return [(topic, r) for topic, recs in self.render_batch([record]).items() for r in recs]

    def _render_other(self, event: SourceEvent, out: TopicBatch) -> None:
        """Transaction boundaries and heartbeats (rare: no hot-path care needed)."""
        server = event.context.server_name
        if isinstance(event, TransactionEvent):
            topic = self.naming(event.context).transaction_topic()
            key = _envelope(_TX_KEY_SCHEMA, {"id": event.id}, self.key_schemas)
            collections = (
                [{"data_collection": n, "event_count": c} for n, c in event.data_collections]
                if event.data_collections is not None else None
            )
            value = _envelope(_TX_VALUE_SCHEMA, {
                "status": event.status, "id": event.id, "event_count": event.event_count,
                "data_collections": collections, "ts_ms": event.ts_ms,
            }, self.value_schemas)
            out.setdefault(topic, []).append(TopicRecord(key, value, event.ts_ms))
        elif isinstance(event, HeartbeatEvent):
            topic = self.naming(event.context).heartbeat_topic()
            key = _envelope(_HEARTBEAT_KEY_SCHEMA, {"serverName": server}, self.key_schemas)
            value = _envelope(_HEARTBEAT_VALUE_SCHEMA, {"ts_ms": event.ts_ms}, self.value_schemas)
            out.setdefault(topic, []).append(TopicRecord(key, value, event.ts_ms))
        elif isinstance(event, SchemaChangeEvent):
            key = _envelope(event.key_schema, event.key, self.key_schemas)
            value = _envelope(event.value_schema, event.value, self.value_schemas)
            topic = self.naming(event.context).schema_change_topic()
            out.setdefault(topic, []).append(TopicRecord(key, value, event.ts_ms))
        else:  # pragma: no cover - the union is exhaustive
            raise TypeError(f"cannot render {type(event).__name__}")

    def render_batch(self, records: Sequence[SourceEvent]) -> TopicBatch:
        """Renders records grouped by topic, each topic's list in the records' order.

        This is the capture hot path: per record it serializes the row images (dicts from
        zip over their tuples) with orjson and fills them, the source block's JSON and the
        few per-event numbers into the table's value template.
        """
        out: TopicBatch = {}
        dumps = orjson.dumps
        source_payload = self.source_block.payload
        row = self._row
        key_of = self._key
        with_tx = self.provide_transaction_metadata
        tombstones = self.tombstones_on_delete
        delete = Op.DELETE
        update = Op.UPDATE
        message_op = Op.MESSAGE
        absent, toast = ABSENT, UNCHANGED_TOAST
        op_json = _OP_JSON
        null = b"null"
        ts_template = _TS_TEMPLATE
        last_ts: int | None = None
        ts_json = b""
        # tuple.__new__ skips the NamedTuple's Python-level __new__ (~0.2 µs an event).
        new = tuple.__new__
        context_headers = self._context_headers(records[0].context) if records else ()
        last_table: TableSchema | None = None
        plan: _TablePlan | None = None
        document_plan: _DocumentPlan | None = None
        document = False
        topic_list: list[TopicRecord] = []
        for record in records:
            if type(record) is not ChangeRecord:
                self._render_other(record, out)
                last_table = None  # the topic list may have been switched
                continue
            if record.op is message_op:
                message = self.message_plan(record.table, record.context)
                out.setdefault(message.topic, []).append(message.render(
                    record, source_payload(record), with_tx))
                last_table = None  # the topic list was switched
                continue
            table = record.table
            if table is not last_table:
                last_table = table
                document = table.attributes.get(_ENVELOPE) == _DOCUMENT
                if document:
                    document_plan = self.document_plan(table, record.context)
                    topic_list = out.setdefault(document_plan.topic, [])
                else:
                    plan = self.plan(table, record.context)
                    topic_list = out.setdefault(plan.topic, [])
            if document:
                assert document_plan is not None
                document_plan.render(record, source_payload(record), with_tx, tombstones,
                                     context_headers, topic_list)
                continue
            assert plan is not None
            op = record.op
            names = plan.column_names
            before = record.before
            after = record.after
            if op is update or op is delete:
                # `_row`, its common case inline: a full image of the table's width
                width = len(names)
                before_row = (
                    dict(zip(names, before))  # noqa: B905 (`_row`)
                    if before is not None and len(before) == width and absent not in before
                    and toast not in before else row(plan, before))
                after_row = (
                    dict(zip(names, after))  # noqa: B905 (`_row`)
                    if after is not None and len(after) == width and absent not in after
                    and toast not in after else row(plan, after))
            else:
                before_row = None
                after_row = None if after is None else (
                    dict(zip(names, after)) if len(after) == len(names)  # noqa: B905 (`_row`)
                    else dict(zip(names, after, strict=True)))
            tx = record.tx
            ts = record.processed_ts_ms
            if ts != last_ts:
                last_ts = ts
                ts_json = ts_template % (ts, ts * 1000, ts * 1_000_000)
            value = plan.value_template % (
                plan.value_prefix,
                null if before_row is None else dumps(before_row, default=json_default),
                null if after_row is None else dumps(after_row, default=json_default),
                plan.source_json(record),
                dumps(tx.block()) if with_tx and tx is not None else null,
                op_json[op._value_],
                ts_json,
            )
            if op is Op.TRUNCATE:
                topic_list.append(TopicRecord(None, value, ts, context_headers))
                continue
            key_values = before if op is delete else after
            key_template = plan.key_template
            key: bytes | None
            if key_template is not None and key_values is not None:
                key = key_template % dumps(key_values[plan.key_positions[0]],
                                           default=json_default)
            else:
                key = key_of(plan, key_values)
            headers = context_headers
            if record.other_key is not None:
                headers = (self._key_header(plan, record), *context_headers)
            topic_list.append(new(TopicRecord, (key, value, ts, headers, None)))
            if op is delete and tombstones:
                # Debezium sends the tombstone of a keyless table's delete too (null key), with
                # the delete's headers (EventDispatcher copies `record.headers()`): a key
                # change's tombstone carries `__debezium.newkey` as well.
                topic_list.append(new(TopicRecord, (key, None, ts, headers, None)))
        return out

    # -- the structured path (transforms and non-JSON converters) ------------------------------

    def _connect_context_headers(self, context: SourceContext) -> tuple[Header, ...]:
        """The context headers as Connect headers: the same objects for every event of a
        context, so that converters can cache their bytes."""
        if not self.context_headers:
            return ()
        cache = self._connect_headers
        cached = cache.get(context)
        if cached is not None:
            return cached
        cached = cache[context] = (
            Header("__debezium.context.connectorLogicalName", _CONTEXT_HEADER_SCHEMA,
                   context.server_name),
            Header("__debezium.context.taskId", _CONTEXT_HEADER_SCHEMA, "0"),
            Header("__debezium.context.connectorName", _CONTEXT_HEADER_SCHEMA, context.kind),
            Header("__debezium.context.runId", _CONTEXT_HEADER_SCHEMA, self.run_id),
        )
        return cached

    def _connect_key(self, plan: _TablePlan, values: tuple[Any, ...] | None) -> Any:
        if not plan.key_names or values is None:
            return None
        return {n: values[p] for n, p in zip(plan.key_names, plan.key_positions, strict=True)}

    def _connect_other(self, event: SourceEvent, ctx_headers: tuple[Header, ...]
                       ) -> ConnectRecord:
        """Transaction boundaries, heartbeats and schema changes as Connect records."""
        naming = self.naming(event.context)
        if isinstance(event, TransactionEvent):
            collections = (
                [{"data_collection": n, "event_count": c} for n, c in event.data_collections]
                if event.data_collections is not None else None
            )
            return ConnectRecord(
                naming.transaction_topic(), None, _TX_KEY_SCHEMA, {"id": event.id},
                _TX_VALUE_SCHEMA, {
                    "status": event.status, "id": event.id, "event_count": event.event_count,
                    "data_collections": collections, "ts_ms": event.ts_ms,
                }, event.ts_ms)
        if isinstance(event, HeartbeatEvent):
            return ConnectRecord(
                naming.heartbeat_topic(), None, _HEARTBEAT_KEY_SCHEMA,
                {"serverName": event.context.server_name}, _HEARTBEAT_VALUE_SCHEMA,
                {"ts_ms": event.ts_ms}, event.ts_ms)
        if isinstance(event, SchemaChangeEvent):
            return ConnectRecord(
                naming.schema_change_topic(), None, event.key_schema, event.key,
                event.value_schema, event.value, event.ts_ms)
        raise TypeError(f"cannot render {type(event).__name__}")  # pragma: no cover

    def render_connect(self, records: Sequence[SourceEvent]) -> list[ConnectRecord]:
        """The same events as `render_batch`, as Kafka Connect records (schema + value).

        Serialized by `JsonConverter` with the format's `schemas.enable` settings they are
        byte for byte what `render_batch` writes (tests/unit/test_connect_path.py); this path
        exists for transforms and other converters and is not the hot path.
        """
        out: list[ConnectRecord] = []
        source_payload = self.source_block.payload
        with_tx = self.provide_transaction_metadata
        delete = Op.DELETE
        for record in records:
            if type(record) is not ChangeRecord:
                out.append(self._connect_other(record, ()))
                continue
            assert isinstance(record, ChangeRecord)
            ctx_headers = self._connect_context_headers(record.context)
            if record.op is Op.MESSAGE:
                out.append(self.message_plan(record.table, record.context).connect(
                    record, {k: v.value if isinstance(v, enum.Enum) else v
                             for k, v in source_payload(record).items()},
                    with_tx))
                continue
            if record.table.attributes.get(_ENVELOPE) == _DOCUMENT:
                self.document_plan(record.table, record.context).connect(
                    record, {k: v.value if isinstance(v, enum.Enum) else v
                             for k, v in source_payload(record).items()},
                    with_tx, self.tombstones_on_delete, ctx_headers, out)
                continue
            plan = self.plan(record.table, record.context)
            op = record.op
            if op is Op.UPDATE or op is delete:
                before_row = self._row(plan, record.before)
                after_row = self._row(plan, record.after)
            else:
                before_row = None
                after_row = (dict(zip(plan.column_names, record.after, strict=True))
                             if record.after is not None else None)
            tx = record.tx
            ts = record.processed_ts_ms
            value = {
                "before": before_row,
                "after": after_row,
                "source": {k: v.value if isinstance(v, enum.Enum) else v
                           for k, v in source_payload(record).items()},
                "transaction": tx.block() if with_tx and tx is not None else None,
                "op": op.value,
                "ts_ms": ts,
                "ts_us": ts * 1000,
                "ts_ns": ts * 1_000_000,
            }
            if op is Op.TRUNCATE:
                out.append(ConnectRecord(plan.topic, None, None, None, plan.envelope_schema,
                                         value, ts, ctx_headers))
                continue
            key = self._connect_key(plan, record.before if op is delete else record.after)
            key_schema = plan.key_schema
            headers = ctx_headers
            if record.other_key is not None:
                name = "__debezium.newkey" if op is delete else "__debezium.oldkey"
                headers = (Header(name, key_schema, self._connect_key(plan, record.other_key)),
                           *ctx_headers)
            out.append(ConnectRecord(plan.topic, None, key_schema, key, plan.envelope_schema,
                                     value, ts, headers))
            if op is delete and self.tombstones_on_delete:  # with the delete's headers
                out.append(ConnectRecord(plan.topic, None, key_schema, key, None, None, ts,
                                         headers))
        return out
