"""Decodes Debezium JSON topic records into typed change events, driven by their own schemas.

Each event carries its Connect schema; a table's column set is the union of the row schemas
seen (later schemas win on type), so a column added at the source appears as soon as the first
event with it arrives.  Every event gets:

- a *sequence*: a fixed-width hex string whose lexical order is the source's change order for
  one key, so that Delta MERGE predicates can compare it as a string;
- a *dedup id* (topic key, position, op): equal for the re-deliveries of at-least-once capture.

Both come from the order its connector registers for its `source.connector`
(headwater.connectors.registry; e.g. connectors/postgres/ordering.py).  An event whose
`source.connector` has no registered order is an error, never ordered by another connector's
rules: with the wrong position two different changes of a key can look like one re-delivery.
The events of one table all come from one connector, so two layouts are never compared.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterable
from typing import Any, NamedTuple

import orjson

from headwater.connectors.registry import REGISTRY, EventOrder, event_order
from headwater.pipeline.connect_types import FieldType, UndecodableValueError, field_type

PLACEHOLDER = "__debezium_unavailable_value"


@functools.lru_cache(maxsize=8)
def placeholder_forms(placeholder: str) -> frozenset[str]:
    """The JSON values that mean "not sent": the placeholder text, and its bytes in base64, the
    form a BYTES column carries it in (MySQL's binlog_row_image=NOBLOB BLOB columns, as
    Debezium writes them with binary.handling.mode=bytes)."""
    return frozenset({placeholder, base64.b64encode(placeholder.encode()).decode()})


PLACEHOLDERS: frozenset[str] = placeholder_forms(PLACEHOLDER)


class Column(NamedTuple):
    name: str
    type: FieldType
    optional: bool


class ChangeEvent(NamedTuple):
    op: str  # c u d r t
    key: tuple[Any, ...] | None
    row: dict[str, Any] | None  # after image (c/u/r), before image (d), None (t)
    sequence: str
    dedup: tuple[Any, ...]
    offset: int
    unavailable: frozenset[str]  # columns whose value was not sent (unchanged TOAST)
    source_ts_ms: int | None
    ts_ms: int | None
    lsn: int | None
    tx_id: Any
    snapshot: str | None


class TableChanges:
    """The decoded events of one topic in one batch, plus the table shape they imply."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.schema_name: str | None = None  # source schema (PostgreSQL) or database
        self.table_name: str | None = None
        self.key_columns: tuple[str, ...] = ()
        self.columns: dict[str, Column] = {}
        self.events: list[ChangeEvent] = []
        self.target: str | None = None  # a flow's target table (path or name), else derived

    @property
    def column_list(self) -> list[Column]:
        return list(self.columns.values())


class UnknownSourceConnectorError(UndecodableValueError):
    """An event whose `source.connector` no registered connector orders."""


def source_order(source: dict[str, Any], where: str) -> EventOrder:
    """The registered order of the event's `source.connector` (`where` names topic/offset)."""
    order = event_order(source.get("connector"))
    if order is None:
        known = ", ".join(REGISTRY.known_source_connectors())
        raise UnknownSourceConnectorError(
            f"{where}: source.connector {source.get('connector')!r} has no registered event "
            f"order (known: {known}); register its connector (headwater.connectors entry "
            "point or headwater.connectors.registry.register)"
        )
    return order


def sequence_key(source: dict[str, Any], total_order: int | None, offset: int) -> str:
    """Sortable sequence of an event (see the module docstring)."""
    return source_order(source, f"offset {offset}").sequence(source, total_order, offset)


class _RowDecoder:
    """Decodes a row struct with a given Connect schema (cached per distinct schema)."""

    def __init__(self, row_schema: dict[str, Any]) -> None:
        self.fields = [
            (f["field"], field_type(f), bool(f.get("optional", True)))
            for f in row_schema.get("fields", [])
        ]

    def decode(
        self, row: dict[str, Any], where: str, placeholder: str = PLACEHOLDER
    ) -> tuple[dict[str, Any], frozenset[str]]:
        out: dict[str, Any] = {}
        unavailable: list[str] = []
        unsent = placeholder_forms(placeholder)
        for name, ftype, _ in self.fields:
            v = row.get(name)
            if v is None:
                out[name] = None
            elif isinstance(v, str) and v in unsent:
                # An unchanged TOASTed value the source did not send: keep the target's value.
                out[name] = None
                unavailable.append(name)
            else:
                try:
                    out[name] = ftype.decode(v)
                except (ValueError, TypeError, KeyError, ArithmeticError) as exc:
                    raise UndecodableValueError(
                        f"{where}: column {name!r}: cannot decode {v!r} as "
                        f"{ftype.arrow}: {exc}"
                    ) from exc
        return out, frozenset(unavailable)


_SCHEMA_HEAD = '{"schema":'
_PAYLOAD_SEP = ',"payload":'


Document = bytes | str | tuple[str, str]


def _envelope(doc: Document, cache: dict[str, Any], where: str) -> tuple[Any, Any]:
    """(schema, payload) of a JsonConverter document, parsing each distinct schema once.

    The schema is most of an event's bytes and the same for every event of a table, so the
    text before `,"payload":` is looked up in a cache instead of being parsed again; any
    document of another layout takes the plain path.  A document may also come already split
    as (schema text, payload text), which is how the Spark runner ships it to the driver.
    """
    if isinstance(doc, tuple):
        schema_text, payload_text = doc
        schema = cache.get(schema_text)
        if schema is None:
            schema = cache[schema_text] = orjson.loads(schema_text)
        try:
            return schema, orjson.loads(payload_text)
        except orjson.JSONDecodeError as exc:
            raise UndecodableValueError(f"{where}: payload is not JSON: {exc}") from exc
    # Fast path: the document starts with the same schema as the previous one of the table.
    last: Any = cache.get("")  # ("" is never a schema text) (head, schema, tail) of the last
    same: Any = doc
    if (last is not None and type(same) is type(last[0]) and same.startswith(last[0])
            and same.endswith(last[2])):
        try:
            return last[1], orjson.loads(same[len(last[0]):-1])
        except orjson.JSONDecodeError:
            pass
    text = doc if isinstance(doc, str) else doc.decode("utf-8")
    if text.startswith(_SCHEMA_HEAD):
        i = text.find(_PAYLOAD_SEP)
        if i > 0 and text.endswith("}"):
            schema_text = text[len(_SCHEMA_HEAD):i]
            schema = cache.get(schema_text)
            try:
                if schema is None:
                    schema = orjson.loads(schema_text)
                    if not isinstance(schema, dict):
                        raise ValueError("schema is not an object")
                    cache[schema_text] = schema
                payload = orjson.loads(text[i + len(_PAYLOAD_SEP):-1])
                head = text[:i + len(_PAYLOAD_SEP)]
                if isinstance(doc, bytes):
                    cache[""] = (head.encode("utf-8"), schema, b"}")
                else:
                    cache[""] = (head, schema, "}")
                return schema, payload
            except (orjson.JSONDecodeError, ValueError):
                pass  # not the plain layout: parse the whole document below
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise UndecodableValueError(f"{where}: value is not JSON: {exc}") from exc
    if not isinstance(value, dict) or "schema" not in value or "payload" not in value:
        raise UndecodableValueError(
            f"{where}: value has no embedded schema; the pipeline decodes events by their "
            "Connect schema (value.converter.schemas.enable=true on the connector)"
        )
    return value["schema"], value["payload"]


def decode_topic(
    topic: str,
    records: Iterable[tuple[int, bytes | str | None, Document | None]],
    placeholder: str = PLACEHOLDER,
) -> TableChanges:
    """Decodes (offset, key JSON, value JSON) records of one topic; tombstones are skipped."""
    changes = TableChanges(topic)
    schema_cache: dict[str, Any] = {}
    key_cache: dict[str, Any] = {}
    # Decoders per schema object: `_envelope` returns the same object for the same schema text.
    decoders: dict[int, tuple[Any, _RowDecoder | None]] = {}
    key_decoders: dict[int, tuple[Any, _RowDecoder]] = {}
    last_connector: Any = None
    order: EventOrder | None = None
    for offset, key_doc, value_doc in records:
        if value_doc is None:
            continue  # tombstone: compaction marker, no change
        where = f"topic {topic} offset {offset}"
        schema, payload = _envelope(value_doc, schema_cache, where)
        op = payload.get("op")
        if op == "m":
            continue  # a logical decoding message (<topic.prefix>.message): no row change
        if op not in ("c", "u", "d", "r", "t"):
            raise UndecodableValueError(f"{where}: unknown op {op!r}")
        source = payload.get("source") or {}
        if changes.table_name is None:
            changes.schema_name = source.get("schema") or source.get("db")
            changes.table_name = source.get("table")
        cached = decoders.get(id(schema))
        if cached is None or cached[0] is not schema:
            row_schema = next(
                (f for f in schema.get("fields", []) if f.get("field") == "after"), None
            )
            decoder = _RowDecoder(row_schema) if row_schema is not None else None
            decoders[id(schema)] = (schema, decoder)
            if decoder is not None:
                for name, ftype, optional in decoder.fields:
                    changes.columns.pop(name, None)
                    changes.columns[name] = Column(name, ftype, optional)
        else:
            decoder = cached[1]
        row: dict[str, Any] | None = None
        unavailable: frozenset[str] = frozenset()
        if decoder is not None:
            image = payload.get("before") if op == "d" else payload.get("after")
            if image is not None:
                row, unavailable = decoder.decode(image, where, placeholder)
        key: tuple[Any, ...] | None = None
        if key_doc is not None and op != "t":
            try:
                kschema, kpayload = _envelope(key_doc, key_cache, where)
            except UndecodableValueError:
                raise UndecodableValueError(f"{where}: key has no embedded schema") from None
            kcached = key_decoders.get(id(kschema))
            if kcached is None or kcached[0] is not kschema:
                kdec = _RowDecoder(kschema)
                key_decoders[id(kschema)] = (kschema, kdec)
                changes.key_columns = tuple(n for n, _, _ in kdec.fields)
            else:
                kdec = kcached[1]
            decoded, _ = kdec.decode(kpayload, where)
            key = tuple(decoded[n] for n, _, _ in kdec.fields)
        tx = payload.get("transaction") or {}
        lsn = source.get("lsn")
        tx_id = source.get("txId")
        if tx_id is None:
            tx_id = source.get("gtid")  # MySQL/MariaDB: the transaction's GTID
        connector = source.get("connector")
        if order is None or connector != last_connector:
            order = source_order(source, where)
            last_connector = connector
        changes.events.append(ChangeEvent(  # positional: the hot loop of the pipeline
            op, key, row, order.sequence(source, tx.get("total_order"), offset),
            (key, *order.position(source), op), offset, unavailable, source.get("ts_ms"),
            payload.get("ts_ms"), lsn, tx_id, source.get("snapshot"),
        ))
    return changes
