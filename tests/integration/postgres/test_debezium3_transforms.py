"""Debezium 3.x's newer transforms and the CloudEvents converter on a real PostgreSQL capture
(issue 30, Must show 4): TimezoneConverter, HeaderToValue (the `__debezium.oldkey` header a
primary-key change writes), EnforceRecordSize, chained as a connector configures them, into
the topic log; and `value.converter=io.debezium.converters.CloudEventsConverter`.  Each
transform's rules are unit-tested against Debezium's own tests (tests/unit/test_transform_*);
here they run on the records a real capture makes.  PartitionRouting needs partitions:
tests/kafka/test_partition_routing_kafka.py."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from headwater.topics import reader

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration

CHAIN = {
    "transforms": "tz,h2v,size",
    "transforms.tz.type": "io.debezium.transforms.TimezoneConverter",
    "transforms.tz.converted.timezone": "Asia/Kolkata",  # +05:30, no daylight saving
    "transforms.h2v.type": "io.debezium.transforms.HeaderToValue",
    "transforms.h2v.headers": "__debezium.oldkey",
    "transforms.h2v.fields": "old_key",
    "transforms.h2v.operation": "copy",
    "transforms.size.type": "io.debezium.transforms.EnforceRecordSize",
    "transforms.size.max.bytes": "20000",
}
CLOUDEVENTS = {
    "value.converter": "io.debezium.converters.CloudEventsConverter",
    "value.converter.serializer.type": "json",
    "value.converter.data.serializer.type": "json",
}
BIG = 40_000


def _run(env: Env, extra: dict[str, str]) -> list[tuple[dict[str, bytes | None], Any]]:
    """The workload: a snapshot row, its primary key changed, a row too big for max.bytes;
    the table topic's records as (headers, value)."""
    env.sql("CREATE TABLE orders (id int PRIMARY KEY, at timestamptz, note text)")
    env.sql("INSERT INTO orders VALUES (1, '2024-01-02 03:04:05.25+00', 'short')")
    topic = f"{env.prefix}.public.orders"

    def count() -> int:
        if not env.topics.exists():
            return 0
        return sum(t.record_count for t in reader.list_topics(env.topics) if t.name == topic)

    cap = env.capture(extra)
    try:
        wait_for(lambda: count() >= 1 or cap.error, what="the snapshot")
        env.sql("UPDATE orders SET id = 10 WHERE id = 1")  # delete, tombstone, create
        env.sql(f"INSERT INTO orders VALUES (2, '2024-06-01 00:00:00+00', repeat('n', {BIG}))")
        wait_for(lambda: count() >= 5 or cap.error, what="the streamed events")
    finally:
        cap.stop()
    assert cap.error is None
    return [(dict(r.headers), None if r.value is None else orjson.loads(r.value))
            for r in reader.read(env.topics, topic, from_offset=0)]


def test_timezone_header_to_value_and_record_size_on_a_real_capture(env: Env) -> None:
    records = _run(env, CHAIN)
    values = [v["payload"] if v is not None else None for _, v in records]
    assert [v["op"] if v else None for v in values] == ["r", "d", None, "c", "c"]
    snap, delete, _, moved, big = values
    assert snap and delete and moved and big
    # TimezoneConverter: ZonedTimestamp (UTC from the connector) in Asia/Kolkata
    assert snap["after"]["at"] == "2024-01-02T08:34:05.25+05:30"
    assert moved["after"]["at"] == "2024-01-02T08:34:05.25+05:30"
    assert big["after"]["at"] == "2024-06-01T05:30:00+05:30"
    # HeaderToValue: the create of a key change carries __debezium.oldkey; the others have
    # no such header and pass unchanged
    assert "__debezium.oldkey" in records[3][0]
    assert moved["old_key"] == {"id": 1}
    assert "old_key" not in snap and "old_key" not in delete and "old_key" not in big
    moved_doc = records[3][1]
    assert moved_doc is not None
    schema = moved_doc["schema"]
    assert [f["field"] for f in schema["fields"]][-1] == "old_key"
    # EnforceRecordSize: the big row's only column above min.field.size (25000) is cut to
    # fit max.bytes, from the start; the small one and the other records are whole
    note = big["after"]["note"]
    assert 10_000 < len(note) < 20_000 and note == "n" * len(note)
    assert snap["after"]["note"] == "short"


def test_cloudevents_converter_on_a_real_capture(env: Env) -> None:
    records = _run(env, CLOUDEVENTS)
    values = [v for _, v in records]
    assert values[2] is None  # the tombstone stays a tombstone
    events = [v for v in values if v is not None]
    assert [e["iodebeziumop"] for e in events] == ["r", "d", "c", "c"]
    for e in events:
        assert e["specversion"] == "1.0"
        assert e["type"] == "io.debezium.connector.postgresql.DataChangeEvent"
        assert e["source"] == f"/debezium/postgresql/{env.prefix}"
        assert e["datacontenttype"] == "application/json"
        assert e["id"].startswith(f"name:{env.prefix};lsn:") and ";txId:" in e["id"]
        assert e["iodebeziumtable"] == "orders" and e["iodebeziumdb"] == env.db
        assert e["time"].endswith("Z")
        # data: the envelope's before/after with their schema (data.serializer.type=json)
        assert set(e["data"]) == {"schema", "payload"}
        assert set(e["data"]["payload"]) == {"before", "after"}
    # no TimezoneConverter here: the connector's ZonedTimestamp, UTC
    assert events[0]["data"]["payload"]["after"]["at"] == "2024-01-02T03:04:05.250000Z"
    assert events[2]["data"]["payload"]["after"]["id"] == 10
    assert len(events[3]["data"]["payload"]["after"]["note"]) == BIG
