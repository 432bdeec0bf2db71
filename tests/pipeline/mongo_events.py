"""Debezium 3.x MongoDB change events built by hand, in the topic log's form (Kafka Connect
JSON with schemas), as the MongoDB connector writes them (see Debezium's MongoDB connector
documentation: key {"id": <_id as Extended JSON>}, documents as Extended JSON text)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from headwater.model.topic import TopicRecord
from headwater.topics.log import TopicLog

TOPIC = "m.shop.people"

_JSON = {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}
VALUE_SCHEMA = {"type": "struct", "optional": False, "name": "m.shop.people.Envelope", "fields": [
    {**_JSON, "field": "before"}, {**_JSON, "field": "after"},
    {"type": "struct", "optional": True, "field": "updateDescription",
     "name": "io.debezium.connector.mongodb.changestream.updatedescription", "fields": [
         {"type": "array", "items": {"type": "string", "optional": False}, "optional": True,
          "field": "removedFields"},
         {**_JSON, "field": "updatedFields"},
         {"type": "array", "optional": True, "field": "truncatedArrays", "items": {
             "type": "struct", "optional": False, "fields": [
                 {"type": "string", "optional": False, "field": "field"},
                 {"type": "int32", "optional": False, "field": "size"}]}}]},
    {"type": "struct", "optional": False, "field": "source",
     "name": "io.debezium.connector.mongo.Source", "fields": []},
    {"type": "string", "optional": True, "field": "op"},
    {"type": "int64", "optional": True, "field": "ts_ms"},
]}
KEY_SCHEMA = {"type": "struct", "optional": False, "name": "m.shop.people.Key",
              "fields": [{"type": "string", "optional": False, "field": "id"}]}


def source(ts_ms: int, ord: int = 1, snapshot: str = "false", txn: int | None = None
           ) -> dict[str, Any]:
    return {"version": "3.2.0.Final", "connector": "mongodb", "name": "m", "ts_ms": ts_ms,
            "snapshot": snapshot, "db": "shop", "sequence": None, "ts_us": ts_ms * 1000,
            "ts_ns": ts_ms * 1_000_000, "collection": "people", "ord": ord,
            "lsid": None if txn is None else '{"id": {"$binary": "x"}}', "txnNumber": txn,
            "wallTime": ts_ms}


def event(op: str, doc_id: Any, ts_ms: int, *, after: dict[str, Any] | None = None,
          updated: dict[str, Any] | None = None, removed: list[str] | None = None,
          truncated: list[tuple[str, int]] | None = None, ord: int = 1,
          snapshot: str = "false", before: dict[str, Any] | None = None,
          ) -> tuple[bytes, bytes]:
    """(key, value) of one event; `after` None with op u: a patch (change_streams mode)."""
    description = None
    if op == "u" and after is None:
        description = {
            "removedFields": removed,
            "updatedFields": None if updated is None else orjson.dumps(updated).decode(),
            "truncatedArrays": None if truncated is None else [
                {"field": f, "size": n} for f, n in truncated]}
    payload = {
        "before": None if before is None else orjson.dumps(before).decode(),
        "after": None if after is None else orjson.dumps({"_id": doc_id, **after}).decode(),
        "updateDescription": description, "source": source(ts_ms, ord, snapshot),
        "op": op, "ts_ms": ts_ms + 5, "transaction": None}
    key = {"schema": KEY_SCHEMA, "payload": {"id": orjson.dumps(doc_id).decode()}}
    return orjson.dumps(key), orjson.dumps({"schema": VALUE_SCHEMA, "payload": payload})


def tombstone(doc_id: Any) -> tuple[bytes, None]:
    key = {"schema": KEY_SCHEMA, "payload": {"id": orjson.dumps(doc_id).decode()}}
    return orjson.dumps(key), None


def write(root: Path, records: Sequence[tuple[bytes | None, bytes | None]],
          topic: str = TOPIC) -> None:
    with TopicLog(root) as log:
        log.append({topic: [TopicRecord(k, v, 0) for k, v in records]})


def oid(n: int) -> dict[str, str]:
    return {"$oid": f"{n:024x}"}
