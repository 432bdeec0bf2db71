"""ExtractNewDocumentState end to end: a real MongoDB capture (change_streams mode) through the
transform into the topic log, as Debezium's documented flattening gives it."""

from __future__ import annotations

import datetime as dt

import orjson
import pytest
from bson import Decimal128, ObjectId

from headwater.topics import reader

from .conftest import MongoEnv, wait

pytestmark = pytest.mark.integration

OID = ObjectId("65a1b2c3d4e5f60718293a4b")


def test_extract_new_document_state_flattens_mongodb_events(env: MongoEnv) -> None:
    at = dt.datetime(2024, 1, 2, 3, 4, 5, 123000)
    env.db.c.insert_one({"_id": OID, "name": "a", "at": at, "price": Decimal128("1.50"),
                         "addr": {"city": "P"}, "tags": ["x", "y"]})
    topic = env.topic("c")

    def records() -> list[reader.Record]:
        if not (env.topics / topic).exists():
            return []
        return list(reader.read(env.topics, topic, from_offset=0))

    cap = env.capture({
        "capture.mode": "change_streams",
        "transforms": "unwrap",
        "transforms.unwrap.type":
            "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState",
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
        "transforms.unwrap.add.fields": "op,collection",
        "transforms.unwrap.flatten.struct": "true",
    })
    try:
        wait(lambda: len(records()) >= 1, "the snapshot read", capture=cap)
        env.db.c.insert_one({"_id": 2, "name": "b", "n": 5})
        env.db.c.update_one({"_id": 2}, {"$set": {"n": 6}, "$unset": {"name": ""}})
        env.db.c.delete_one({"_id": 2})
        wait(lambda: len(records()) >= 4, "three streamed events", capture=cap)
    finally:
        cap.stop()
    out = records()
    assert len(out) == 4  # rewrite mode: the connector's tombstone is dropped
    keys = [orjson.loads(r.key or b"") for r in out]
    values = [orjson.loads(r.value or b"") for r in out]
    assert [k["payload"] for k in keys] == [{"id": str(OID)}, {"id": 2}, {"id": 2}, {"id": 2}]
    assert keys[0]["schema"] == {"type": "struct", "optional": False, "fields": [
        {"type": "string", "optional": True, "field": "id"}]}
    read = values[0]
    assert read["payload"] == {"_id": str(OID), "name": "a", "at": 1704164645123,
                               "price": "1.50", "addr_city": "P", "tags": ["x", "y"],
                               "__deleted": False, "__op": "r", "__collection": "c"}
    assert read["schema"]["name"] == topic
    fields = {f["field"]: f for f in read["schema"]["fields"]}
    assert fields["at"]["name"] == "org.apache.kafka.connect.data.Timestamp"
    assert fields["tags"]["type"] == "array" and fields["__deleted"]["type"] == "boolean"
    assert [v["payload"] for v in values[1:]] == [
        {"_id": 2, "name": "b", "n": 5, "__deleted": False, "__op": "c", "__collection": "c"},
        # change_streams mode: an update is its patch (updatedFields minus removedFields)
        {"n": 6, "_id": 2, "__deleted": False, "__op": "u", "__collection": "c"},
        # no pre-image: only the marker
        {"__deleted": True, "__op": "d", "__collection": "c"},
    ]
