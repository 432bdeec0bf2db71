"""Debezium MongoDB change events read from a topic: what each one does to which document.

A MongoDB event carries documents as Extended JSON *text* inside its payload (`after`,
`before`, `updateDescription.updatedFields`), so there is no Connect schema to drive decoding
as for the relational connectors; the event kinds are:

- a full image (`after` set: reads, inserts, replacements, updates captured with the full
  document): the document's new state;
- a patch (an update with `after` null, capture.mode=change_streams): `updateDescription`,
  applied to the previous state (`patch`);
- a delete (`before` when a pre-image mode sends one); its tombstone is skipped.

The document is named by the record key's `id` (the `_id` as Extended JSON text), normalized
so that two spellings of one `_id` are one key.  Order and re-deliveries follow MONGODB_ORDER;
the de-duplication id adds the event's own content to its position because two changes of one
document in one transaction share the position, while a re-delivery is the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import orjson

from headwater.connectors.mongodb.ordering import MONGODB_ORDER
from headwater.pipeline.connect_types import UndecodableValueError
from headwater.pipeline.documents.patch import Update, parse_update

CONNECTOR = "mongodb"
Record = tuple[int, bytes | str | None, bytes | str | None]


class DocEvent(NamedTuple):
    op: str  # c u d r
    id: str  # the `_id`'s normalized Extended JSON text: the target's key
    doc: dict[str, Any] | None  # full image (c/r/u with after), before image (d) or None
    update: Update | None  # a patch (u without after)
    sequence: str
    dedup: tuple[Any, ...]
    offset: int
    source_ts_ms: int | None
    ts_ms: int | None
    tx_id: str | None
    snapshot: str | None
    update_text: str | None  # the updateDescription as JSON text (changelog)


class DocBatch(NamedTuple):
    topic: str
    db: str | None
    collection: str | None
    events: list[DocEvent]


def payload_of(value: bytes | str) -> dict[str, Any]:
    """The payload of a Kafka Connect JSON value, with or without its embedded schema."""
    doc = orjson.loads(value)
    if isinstance(doc, dict) and "payload" in doc and "schema" in doc:
        doc = doc["payload"]
    if not isinstance(doc, dict):
        raise UndecodableValueError(f"value is not a change event: {str(value)[:80]!r}")
    return doc


def is_document_event(value: bytes | str) -> bool:
    """Whether a record value is a MongoDB change event (`source.connector` "mongodb")."""
    try:
        source = payload_of(value).get("source") or {}
    except (orjson.JSONDecodeError, UndecodableValueError):
        return False
    return isinstance(source, dict) and source.get("connector") == CONNECTOR


def normalized_id(text: str) -> str:
    return orjson.dumps(orjson.loads(text)).decode()


def _key_id(key: bytes | str | None, where: str) -> str | None:
    if key is None:
        return None
    k = payload_of(key)
    raw = k.get("id")
    if not isinstance(raw, str):
        raise UndecodableValueError(f"{where}: the key has no `id` string: {str(key)[:80]!r}")
    return normalized_id(raw)


def _json(text: Any, what: str, where: str) -> dict[str, Any] | None:
    if text is None:
        return None
    value = orjson.loads(text) if isinstance(text, str) else text
    if not isinstance(value, dict):
        raise UndecodableValueError(f"{where}: {what} is not a document")
    return value


def decode_documents(topic: str, records: Iterable[Record]) -> DocBatch:
    """The change events of a range of one MongoDB topic (tombstones skipped)."""
    db: str | None = None
    collection: str | None = None
    events: list[DocEvent] = []
    for offset, key, value in records:
        if value is None:
            continue
        where = f"topic {topic} offset {offset}"
        try:
            p = payload_of(value)
            op = p.get("op")
            if op not in ("c", "u", "d", "r"):
                raise UndecodableValueError(f"{where}: unknown op {op!r}")
            source = p.get("source") or {}
            db = db or source.get("db")
            collection = collection or source.get("collection")
            after = _json(p.get("after"), "after", where)
            before = _json(p.get("before"), "before", where)
            description = p.get("updateDescription")
            update = parse_update(description) if op == "u" and after is None else None
            doc_id = _key_id(key, where)
            image = before if op == "d" else after
            if doc_id is None and image is not None and "_id" in image:
                doc_id = orjson.dumps(image["_id"]).decode()
            if doc_id is None:
                raise UndecodableValueError(f"{where}: no key and no _id: cannot name the "
                                            "document")
            tx = p.get("transaction") or {}
            update_text = (orjson.dumps(description).decode()
                           if description is not None else None)
            txn = source.get("txnNumber")
            events.append(DocEvent(
                op, doc_id, image, update,
                MONGODB_ORDER.sequence(source, tx.get("total_order"), offset),
                (doc_id, *MONGODB_ORDER.position(source), op, p.get("after"), update_text),
                offset, source.get("ts_ms"), p.get("ts_ms"),
                tx.get("id") or (None if txn is None else str(txn)),
                None if source.get("snapshot") is None else str(source.get("snapshot")),
                update_text,
            ))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, UndecodableValueError):
                raise
            raise UndecodableValueError(f"{where}: not a MongoDB change event: {exc}") from exc
    return DocBatch(topic, db, collection, events)


def dedup(events: list[DocEvent]) -> list[DocEvent]:
    """The events without re-deliveries (the first copy by offset is kept)."""
    seen: set[tuple[Any, ...]] = set()
    out: list[DocEvent] = []
    for e in sorted(events, key=lambda e: e.offset):
        if e.dedup not in seen:
            seen.add(e.dedup)
            out.append(e)
    return out
