"""MongoDB's Datastream events: the `_id`/`payload` row in canonical, strict and relaxed
Extended JSON (the reference's examples of each BSON type), the generic fields and
`source_metadata`, JSON and Avro forms, deletes, and transactions told apart by the resume
token's operation index."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import math
from typing import Any

import bson
import orjson
import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.raw_bson import RawBSONDocument
from fastavro import parse_schema, schemaless_reader

from headwater.connectors.mongodb.datastream import (
    DatastreamCodec,
    NonFiniteInStrictMode,
    datastream_collection_schema,
    json_options,
)
from headwater.connectors.mongodb.fields import FieldSelector
from headwater.connectors.mongodb.position import (
    MongoPosition,
    token_txn_op_index,
    txn_op_index,
)
from headwater.formats.datastream.renderer import AVRO_SCHEMA_HEADER, DatastreamFormat
from headwater.formats.datastream.sources import MONGODB, source_spec
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from tests.record_json import json_of

STREAM = "projects/p/locations/l/streams/mongo"
CTX = SourceContext("mongodb", "srv", "headwater-test")
OID = ObjectId("65f1a2b3c4d5e6f708192a3b")
WHEN = dt.datetime(2024, 12, 25, 10, 30, tzinfo=dt.UTC)
DOC = {"_id": OID, "i": 42, "l": Int64(7), "d": 3.5, "nan": math.nan, "s": "x",
       "when": WHEN, "bin": Binary(b"\x01\x02", 0), "dec": Decimal128("1.10"),
       "re": Regex("^a", "i"), "ts": Timestamp(1747888877, 1), "arr": [1, "two"],
       "sub": {"k": None, "t": True}}


def token(sec: int, inc: int, op_index: int) -> str:
    """A resume token as the offsets store it (base64 BSON of {_data: <KeyString hex>}):
    timestamp, version 1, token type 128 (an event), txnOpIndex."""
    index = b"\x29" if op_index == 0 else bytes((0x2B, op_index << 1))
    data = (b"\x82" + sec.to_bytes(4, "big") + inc.to_bytes(4, "big") + b"\x2b\x02"
            + b"\x2c\x01\x00" + index + b"\x04")
    return base64.b64encode(bson.encode({"_data": data.hex().upper()})).decode()


def codec(mode: str = "canonical", fields: str | None = None) -> DatastreamCodec:
    selector = FieldSelector(fields, None)
    return DatastreamCodec(datastream_collection_schema("shop", "orders"),
                           selector.for_collection("shop", "orders"), mode)


def raw(doc: dict[str, Any]) -> RawBSONDocument:
    return RawBSONDocument(bson.encode(doc))


def test_canonical_row_labels_every_type_as_the_reference_shows() -> None:
    key, payload = codec().read(raw(DOC))
    assert orjson.loads(key) == {"$oid": str(OID)}
    assert payload is not None
    doc = orjson.loads(payload)
    assert list(doc) == list(DOC)  # field order kept
    assert doc["i"] == {"$numberInt": "42"}
    assert doc["l"] == {"$numberLong": "7"}
    assert doc["d"] == {"$numberDouble": "3.5"}
    assert doc["nan"] == {"$numberDouble": "NaN"}  # kept, as canonical mode keeps it
    assert doc["when"] == {"$date": {"$numberLong": str(int(WHEN.timestamp() * 1000))}}
    assert doc["bin"] == {"$binary": {"base64": "AQI=", "subType": "00"}}
    assert doc["dec"] == {"$numberDecimal": "1.10"}
    assert doc["re"] == {"$regularExpression": {"pattern": "^a", "options": "i"}}
    assert doc["ts"] == {"$timestamp": {"t": 1747888877, "i": 1}}
    assert doc["arr"] == [{"$numberInt": "1"}, "two"]
    assert doc["sub"] == {"k": None, "t": True}
    # the text is Extended JSON: pymongo reads back the same document
    assert bson.json_util.loads(payload, json_options=json_options("canonical"))["l"] == 7


def test_relaxed_row_writes_plain_numbers() -> None:
    _, payload = codec("relaxed").read(raw(DOC))
    assert payload is not None
    doc = orjson.loads(payload)
    assert (doc["i"], doc["l"], doc["d"]) == (42, 7, 3.5)
    assert doc["nan"] == {"$numberDouble": "NaN"}  # relaxed keeps non-finite doubles labelled
    assert doc["when"] == {"$date": "2024-12-25T10:30:00Z"}


def test_strict_row_is_extended_json_v1_as_the_reference_shows() -> None:
    """Datastream's STRICT: the reference's strict examples, type by type."""
    finite = {k: v for k, v in DOC.items() if k != "nan"}
    _, payload = codec("strict").read(raw(finite))
    assert payload is not None
    doc = orjson.loads(payload)
    assert list(doc) == list(finite)
    assert (doc["i"], doc["d"]) == (42, 3.5)
    assert doc["l"] == {"$numberLong": "7"}
    assert doc["when"] == {"$date": int(WHEN.timestamp() * 1000)}
    assert doc["bin"] == {"$binary": "AQI=", "$type": "00"}
    assert doc["re"] == {"$regex": "^a", "$options": "i"}
    assert doc["dec"] == {"$numberDecimal": "1.10"}
    assert doc["ts"] == {"$timestamp": {"t": 1747888877, "i": 1}}
    assert doc["_id"] == {"$oid": str(OID)}
    assert bson.json_util.loads(payload, json_options=json_options("strict"))["l"] == 7


def test_strict_mode_stops_on_a_non_finite_double_naming_the_document() -> None:
    with pytest.raises(NonFiniteInStrictMode, match=r"shop\.orders: .*NaN or an infinity.*"
                       r"use canonical.*\$oid"):
        codec("strict").read(raw(DOC))
    with pytest.raises(NonFiniteInStrictMode):
        codec("strict").read(raw({"_id": 1, "x": {"y": [-math.inf]}}))


def test_field_exclude_list_applies_to_the_payload() -> None:
    _, payload = codec(fields="shop.orders.s,shop.orders.sub.k").read(raw(DOC))
    assert payload is not None
    doc = orjson.loads(payload)
    assert "s" not in doc and doc["sub"] == {"t": True}


def test_unknown_json_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="Extended JSON mode 'legacy'"):
        json_options("legacy")


def _record(op: Op, before: Any, after: Any, position: MongoPosition,
            snapshot: SnapshotMarker = SnapshotMarker.FALSE) -> ChangeRecord:
    return ChangeRecord(CTX, codec().schema, op, before, after, 1_000, 2_000, snapshot,
                        position)


def _events(fmt: DatastreamFormat, records: list[ChangeRecord]) -> list[dict[str, Any]]:
    batch = fmt.render_batch(records)
    return [orjson.loads(r.value) for rs in batch.values() for r in rs if r.value is not None]


def test_event_shape_generic_fields_and_source_metadata() -> None:
    c = codec()
    fmt = DatastreamFormat(STREAM)
    insert = _events(fmt, [_record(Op.CREATE, None, c.change(
        {"operationType": "insert", "documentKey": {"_id": OID}, "fullDocument": DOC})[2],
        MongoPosition(100, 1, token(100, 1, 0)))])[0]
    assert list(insert) == ["stream_name", "read_method", "object", "schema_key", "uuid",
                            "read_timestamp", "source_timestamp", "sort_keys",
                            "source_metadata", "payload"]
    assert (insert["stream_name"], insert["read_method"], insert["object"]) == (
        STREAM, "mongodb-change-streams", "shop_orders")
    assert insert["source_metadata"] == {
        "database": "shop", "collection": "orders", "is_deleted": False,
        "change_type": "INSERT", "primary_keys": ["_id"]}
    assert insert["sort_keys"] == [100, 1, 0, 1, 0]
    assert insert["payload"]["_id"] == json.dumps({"$oid": str(OID)})
    assert insert["payload"]["payload"]["i"] == {"$numberInt": "42"}  # a JSON value, not text
    delete = _events(fmt, [_record(Op.DELETE, c.change(
        {"operationType": "delete", "documentKey": {"_id": OID}})[1], None,
        MongoPosition(101, 1, token(101, 1, 0)))])[0]
    assert delete["source_metadata"]["is_deleted"] is True
    assert delete["source_metadata"]["change_type"] == "DELETE"
    assert delete["payload"] == {"_id": insert["payload"]["_id"], "payload": None}
    update = _events(fmt, [_record(Op.UPDATE, None, c.change(
        {"operationType": "update", "documentKey": {"_id": OID},
         "fullDocument": {**DOC, "i": 43}})[2], MongoPosition(102, 1, token(102, 1, 0)))])[0]
    assert update["source_metadata"]["change_type"] == "UPDATE"
    assert update["payload"]["payload"]["i"] == {"$numberInt": "43"}
    backfill = _events(fmt, [_record(Op.READ, None, c.read(raw(DOC)),
                                     MongoPosition(-1, -1, token(99, 5, 0)),
                                     SnapshotMarker.TRUE)])[0]
    assert backfill["read_method"] == "mongodb-backfill"
    assert backfill["sort_keys"] == [-1, -1, 0, 0, 0]
    assert source_spec("mongodb") is MONGODB


def test_transaction_operations_get_distinct_uuids_and_ordered_sort_keys() -> None:
    """The events of one transaction share their cluster time; the resume token's txnOpIndex
    orders them and keeps their uuids apart."""
    c = codec()
    fmt = DatastreamFormat(STREAM)
    row = c.change({"operationType": "update", "documentKey": {"_id": OID},
                    "fullDocument": DOC})[2]
    events = _events(fmt, [_record(Op.UPDATE, None, row, MongoPosition(200, 3, token(200, 3, i)))
                           for i in range(3)])
    assert [e["sort_keys"][:3] for e in events] == [[200, 3, 0], [200, 3, 1], [200, 3, 2]]
    assert len({e["uuid"] for e in events}) == 3
    again = _events(DatastreamFormat(STREAM), [_record(
        Op.UPDATE, None, row, MongoPosition(200, 3, token(200, 3, 1)))])[0]
    assert again["uuid"] == events[1]["uuid"]  # a re-delivery keeps its uuid


def test_token_operation_index_decoding() -> None:
    assert txn_op_index(None) == 0
    assert txn_op_index(token(1, 1, 0)) == 0
    assert txn_op_index(token(1, 1, 57)) == 57
    with pytest.raises(ValueError, match="does not start with a timestamp"):
        token_txn_op_index(b"\x01")
    with pytest.raises(ValueError, match="KeyString type 60"):
        token_txn_op_index(b"\x82" + bytes(8) + b"\x3c")


def test_avro_event_types_the_two_columns() -> None:
    c = codec()
    fmt = DatastreamFormat(STREAM, encoding="avro")
    record = _record(Op.CREATE, None, c.read(raw(DOC)), MongoPosition(5, 1, token(5, 1, 0)))
    batch = fmt.render_batch([record])
    (out,) = [r for rs in batch.values() for r in rs]
    schema = json_of(dict(out.headers)[AVRO_SCHEMA_HEADER])
    payload = next(f for f in schema["fields"] if f["name"] == "payload")["type"]
    assert [(f["name"], f["sourceName"], f["unifiedType"]) for f in payload["fields"]] == [
        ("_id", "_id", "STRING"), ("payload", "payload", "JSON")]
    meta = next(f for f in schema["fields"] if f["name"] == "source_metadata")["type"]
    assert [f["name"] for f in meta["fields"]] == [
        "database", "collection", "is_deleted", "change_type", "primary_keys"]
    assert out.value is not None
    event = schemaless_reader(io.BytesIO(out.value), parse_schema(schema), None)
    assert isinstance(event, dict)
    assert orjson.loads(event["payload"]["payload"])["l"] == {"$numberLong": "7"}
