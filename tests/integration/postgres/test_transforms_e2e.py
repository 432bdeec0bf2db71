"""Transforms end to end: the Debezium tutorial's `unwrap` configuration on a real PostgreSQL
capture, into the topic log; and a configuration error naming an unknown transform."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest

from headwater.capture import build_runtime, load_connector_config
from headwater.config import ConfigError
from headwater.converters.headers import header_value
from headwater.topics import reader
from tests.record_json import json_of

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration

TUTORIAL = {
    "transforms": "unwrap",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.drop.tombstones": "false",
    "transforms.unwrap.delete.handling.mode": "rewrite",
    "transforms.unwrap.add.fields": "op,table,lsn,source.ts_ms",
}


def test_tutorial_unwrap_gives_flattened_events(env: Env) -> None:
    env.sql("CREATE TABLE public.customers (id int PRIMARY KEY, name text NOT NULL, "
            "score numeric(6,2))")
    env.sql("INSERT INTO customers VALUES (1, 'Sally', 1.50), (2, 'George', NULL)")
    topic = f"{env.prefix}.public.customers"

    def count() -> int:
        return sum(t.record_count for t in reader.list_topics(env.topics) if t.name == topic)

    cap = env.capture(TUTORIAL)
    try:
        wait_for(lambda: count() >= 2, what="snapshot")
        env.sql("INSERT INTO customers VALUES (3, 'Anne', 2.25)")
        env.sql("UPDATE customers SET name = 'Anne Marie' WHERE id = 3")
        env.sql("DELETE FROM customers WHERE id = 1")
        wait_for(lambda: count() >= 2 + 4, what="streamed events")
    finally:
        cap.stop()
    records = list(reader.read(env.topics, topic, from_offset=0))
    values: list[Any] = [orjson.loads(r.value) if r.value is not None else None for r in records]
    keys = [json_of(r.key)["payload"] for r in records]
    payloads: list[Any] = [v["payload"] if v is not None else None for v in values]
    assert [p["__op"] if p else None for p in payloads] == ["r", "r", "c", "u", "d", None]
    first = payloads[0]
    assert list(first) == ["id", "name", "score", "__deleted", "__op", "__table", "__lsn",
                           "__source_ts_ms"]
    assert first["id"] == 1 and first["name"] == "Sally" and first["__deleted"] == "false"
    assert first["__table"] == "customers" and isinstance(first["__lsn"], int)
    assert isinstance(first["__source_ts_ms"], int)
    schema = values[0]["schema"]
    assert schema["name"] == f"{env.prefix}.public.customers.Value"
    assert [f["field"] for f in schema["fields"]][-5:] == [
        "__deleted", "__op", "__table", "__lsn", "__source_ts_ms"]
    assert payloads[3]["name"] == "Anne Marie" and payloads[3]["__deleted"] == "false"
    delete = payloads[4]
    assert delete["id"] == 1 and delete["__deleted"] == "true" and delete["__op"] == "d"
    assert payloads[5] is None and keys[5] == {"id": 1}  # drop.tombstones=false keeps it
    assert keys[:5] == [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 3}, {"id": 1}]


def test_unknown_transform_is_an_error_at_start(env: Env) -> None:
    path = env.config({"transforms": "x", "transforms.x.type": "com.example.Custom"})
    with pytest.raises(ConfigError, match=r"com\.example\.Custom"):
        build_runtime(load_connector_config(path))


def test_outbox_event_router_on_a_real_outbox_table(env: Env) -> None:
    """Debezium's outbox pattern: rows inserted (and purged) in the application's
    transaction become events on `outbox.event.<aggregatetype>`; updates are not events."""
    env.sql("CREATE TABLE public.outbox (id uuid PRIMARY KEY, aggregatetype varchar NOT NULL, "
            "aggregateid varchar NOT NULL, type varchar NOT NULL, payload jsonb)")
    topic = "outbox.event.Order"

    def count() -> int:
        return sum(t.record_count for t in reader.list_topics(env.topics) if t.name == topic)

    def insert(n: int, kind: str, total: str) -> str:
        return (f"INSERT INTO outbox VALUES ('6c5e1f0e-0000-4000-8000-00000000000{n}', 'Order', "
                f"'o-{n}', '{kind}', '{{\"id\": {n}, \"total\": {total}}}')")

    env.sql(insert(1, "OrderCreated", "2.5"))  # a snapshot read is an event too
    cap = env.capture({
        "table.include.list": "public.outbox",
        "transforms": "outbox",
        "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
        "transforms.outbox.table.fields.additional.placement": "type:header:eventType",
        "transforms.outbox.table.expand.json.payload": "true",
    })
    try:
        wait_for(lambda: count() >= 1, what="snapshot")
        env.sql("UPDATE outbox SET type = 'X'")  # not an event (table.op.invalid.behavior)
        env.sql(f"BEGIN; {insert(2, 'OrderPaid', '3.0')}; DELETE FROM outbox; COMMIT")
        env.sql(insert(3, "OrderShipped", "1.0"))
        wait_for(lambda: count() >= 3, what="outbox events")
    finally:
        cap.stop()
    records = list(reader.read(env.topics, topic, from_offset=0))
    assert [json_of(r.key)["payload"] for r in records] == ["o-1", "o-2", "o-3"]
    values = [json_of(r.value) for r in records]
    assert [v["payload"] for v in values] == [{"id": 1, "total": 2.5}, {"id": 2, "total": 3.0},
                                              {"id": 3, "total": 1.0}]
    assert values[0]["schema"]["name"] == "payload"
    assert [f["type"] for f in values[0]["schema"]["fields"]] == ["int32", "double"]
    headers = [dict(r.headers) for r in records]
    # SimpleHeaderConverter text, a Kafka Connect worker's default header.converter.
    assert [h["eventType"] for h in headers] == [b"OrderCreated", b"OrderPaid", b"OrderShipped"]
    assert uuid.UUID(header_value(headers[0]["id"])).version == 4
    # Nothing else was written: no envelopes, no tombstones, no update event.
    assert not [t.name for t in reader.list_topics(env.topics)
                if t.name.startswith(f"{env.prefix}.public.")]
