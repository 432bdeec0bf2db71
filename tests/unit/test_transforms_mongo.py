"""ExtractNewDocumentState on MongoDB events as Headwater renders them (Debezium's envelope),
against the behaviour Debezium 3.x's ExtractNewDocumentState and MongoDataConverter have."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from bson import Binary, Decimal128, Int64, ObjectId, Regex, Timestamp

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord, TransformError
from headwater.connectors.mongodb.documents import CollectionCodec, collection_schema
from headwater.connectors.mongodb.fields import FieldSelector
from headwater.connectors.mongodb.position import MongoDbSourceBlock, MongoPosition
from headwater.converters.json import JsonConverter
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.formats.structured import StructuredRenderer
from headwater.model.record import ChangeRecord, SnapshotMarker, SourceContext
from headwater.transforms.chain import TransformChain, build_chain

UNWRAP = "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState"
SCHEMA = collection_schema("inv", "orders")
CODEC = CollectionCodec(SCHEMA, FieldSelector(None, None).for_collection("inv", "orders"))
CONTEXT = SourceContext("mongodb", "hw", "3.6.3.Final")
OID = ObjectId("65a1b2c3d4e5f60718293a4b")
TS = "org.apache.kafka.connect.data.Timestamp"


def event(kind: str, _id: Any = 7, full: dict[str, Any] | None = None,
          pre: dict[str, Any] | None = None, updated: dict[str, Any] | None = None,
          removed: list[str] | None = None) -> ChangeRecord:
    change: dict[str, Any] = {"operationType": kind, "documentKey": {"_id": _id}}
    if full is not None:
        change["fullDocument"] = full
    if pre is not None:
        change["fullDocumentBeforeChange"] = pre
    if kind == "update":
        change["updateDescription"] = {"updatedFields": updated or {},
                                       "removedFields": removed or [], "truncatedArrays": []}
    op, before, after = CODEC.change(change)
    return ChangeRecord(CONTEXT, SCHEMA, op, before, after, 10_500, 11_000,
                        SnapshotMarker.FALSE, MongoPosition(10, 3, "tok", wall_time=10_500))


def run(props: dict[str, str], *events: ChangeRecord) -> list[ConnectRecord]:
    chain = build_chain({"transforms": "unwrap", "transforms.unwrap.type": UNWRAP,
                         **{f"transforms.unwrap.{k}": v for k, v in props.items()}})
    fmt = DebeziumJsonFormat(MongoDbSourceBlock(), run_id="r")
    return StructuredRenderer(fmt, chain, JsonConverter(), JsonConverter()).transformed(
        list(events))


def shape(schema: Any) -> Any:
    """A schema as (type, name, fields/items) for comparisons."""
    if schema is None:
        return None
    if schema.type == "struct":
        return ("struct", schema.name, [(f.name, shape(f.schema)) for f in schema.fields])
    if schema.type == "array":
        return ("array", shape(schema.items))
    return schema.type if schema.name is None else (schema.type, schema.name)


def test_structured_path_renders_mongodb_events_as_the_fast_path() -> None:
    events = [event("insert", full={"_id": 7, "a": 1}), event("delete")]
    fmt = DebeziumJsonFormat(MongoDbSourceBlock(), run_id="r")
    structured = StructuredRenderer(fmt, TransformChain([]), JsonConverter(), JsonConverter())
    assert structured.render_batch(events) == fmt.render_batch(events)


def test_insert_becomes_the_document_with_bson_types_mapped_as_debezium() -> None:
    doc = {"_id": OID, "name": "x", "n": 5, "big": Int64(5), "price": Decimal128("12.50"),
           "ratio": 1.5, "ok": True, "none": None, "at": dt.datetime(2024, 1, 2, 3, 4, 5,
                                                                        123000),
           "ts": Timestamp(1700000000, 3), "blob": Binary(b"\x00\x01"),
           "re": Regex("^a", "i"), "addr": {"city": "P", "geo": {"lat": 1.0}}, "empty": {}}
    [out] = run({}, event("insert", _id=OID, full=doc))
    assert out.key == {"id": "65a1b2c3d4e5f60718293a4b"}
    assert shape(out.key_schema) == ("struct", None, [("id", "string")])
    assert out.value_schema is not None and out.value_schema.name == "hw.inv.orders"
    assert shape(out.value_schema)[2] == [
        ("_id", "string"), ("name", "string"), ("n", "int32"), ("big", "int64"),
        ("price", "string"), ("ratio", "float64"), ("ok", "boolean"), ("none", "string"),
        ("at", ("int64", TS)), ("ts", ("int64", TS)), ("blob", "bytes"),
        ("re", ("struct", "io.debezium.mongodb.regex", [("regex", "string"),
                                                        ("options", "string")])),
        ("addr", ("struct", "hw.inv.orders.addr", [
            ("city", "string"), ("geo", ("struct", "hw.inv.orders.addr.geo",
                                         [("lat", "float64")]))])),
        ("empty", ("struct", None, []))]
    utc = dt.UTC
    assert out.value == {
        "_id": "65a1b2c3d4e5f60718293a4b", "name": "x", "n": 5, "big": 5, "price": "12.50",
        "ratio": 1.5, "ok": True, "none": None,
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=utc),
        "ts": dt.datetime.fromtimestamp(1700000000, utc), "blob": b"\x00\x01",
        "re": {"regex": "^a", "options": "i"},
        "addr": {"city": "P", "geo": {"lat": 1.0}}, "empty": {}}
    assert all(f.schema.optional for f in out.value_schema.fields)
    assert not out.value_schema.optional
    # Serializable by the JSON converter (Timestamp as epoch millis).
    assert b'"at":1704164645123' in (JsonConverter().from_connect(
        out.topic, out.value_schema, out.value) or b"")


def test_arrays_array_encoding_and_document_encoding() -> None:
    doc = {"_id": 1, "tags": ["a", "b"], "items": [{"sku": "x", "q": 1}, {"sku": "y"}],
           "none": [], "grid": [[1, 2], [3]]}
    [out] = run({}, event("insert", _id=1, full=doc))
    assert shape(out.value_schema)[2] == [
        ("_id", "int32"), ("tags", ("array", "string")),
        ("items", ("array", ("struct", "hw.inv.orders.items", [("sku", "string"),
                                                                ("q", "int32")]))),
        ("none", ("array", "string")), ("grid", ("array", ("array", "int32")))]
    assert out.value["items"] == [{"sku": "x", "q": 1}, {"sku": "y", "q": None}]
    assert out.value["grid"] == [[1, 2], [3]] and out.value["none"] == []
    mixed = {"_id": 1, "m": [1, "a"]}
    with pytest.raises(TransformError, match="different Bson types"):
        run({}, event("insert", _id=1, full=mixed))
    [doc_out] = run({"array.encoding": "document"}, event("insert", _id=1, full=mixed))
    assert shape(doc_out.value_schema)[2][1] == (
        "m", ("struct", "hw.inv.orders.m", [("_0", "int32"), ("_1", "string")]))
    assert doc_out.value["m"] == {"_0": 1, "_1": "a"}
    [docs] = run({"array.encoding": "document"},
                 event("insert", _id=1, full={"_id": 1, "it": [{"a": 1}, {"b": "x"}]}))
    assert shape(docs.value_schema)[2][1] == ("it", ("struct", "hw.inv.orders.it", [
        ("_0", ("struct", "hw.inv.orders.it._0", [("a", "int32")])),
        ("_1", ("struct", "hw.inv.orders.it._1", [("b", "string")]))]))
    assert docs.value["it"] == {"_0": {"a": 1}, "_1": {"b": "x"}}


def test_update_without_full_document_is_a_patch_with_the_id() -> None:
    [out] = run({}, event("update", updated={"n": 2, "addr.city": "Q"}, removed=["name"]))
    assert out.value == {"n": 2, "addr.city": "Q", "_id": 7}
    [flat] = run({"flatten.struct": "true"},
                 event("update", updated={"n": 2, "addr.city": "Q"}))
    assert flat.value == {"n": 2, "addr_city": "Q", "_id": 7}
    # With a full document (change_streams_update_full): the document.
    [full] = run({}, event("update", full={"_id": 7, "n": 2}, updated={"n": 2}))
    assert full.value == {"_id": 7, "n": 2}


def test_delete_and_tombstone_modes() -> None:
    deleted = event("delete", pre={"_id": 7, "n": 1})
    assert run({"delete.tombstone.handling.mode": "drop"}, deleted) == []
    # tombstone (default): Mongo's value is no struct, so the delete is a real tombstone and
    # the connector's own tombstone is dropped.
    [tomb] = run({}, deleted)
    assert (tomb.value, tomb.value_schema, tomb.key) == (None, None, {"id": 7})
    rewrite = run({"delete.tombstone.handling.mode": "rewrite"}, deleted,
                  event("insert", full={"_id": 7, "n": 1}))
    assert [r.value for r in rewrite] == [{"_id": 7, "n": 1, "__deleted": True},
                                          {"_id": 7, "n": 1, "__deleted": False}]
    assert shape(rewrite[0].value_schema)[2][-1] == ("__deleted", "boolean")
    no_pre = event("delete")
    [only] = run({"delete.tombstone.handling.mode": "rewrite"}, no_pre)
    assert only.value == {"__deleted": True}
    [with_id] = run({"delete.tombstone.handling.mode": "rewrite",
                     "delete.tombstone.handling.mode.rewrite-with-id": "true"}, no_pre)
    assert with_id.value == {"__deleted": True, "_id": 7}
    kept = run({"delete.tombstone.handling.mode": "rewrite-with-tombstone"}, no_pre)
    assert [r.value for r in kept] == [{"__deleted": True}, None]
    assert kept[1].key == {"id": 7}
    legacy = run({"drop.tombstones": "false", "delete.handling.mode": "rewrite"}, no_pre)
    assert [r.value for r in legacy] == [{"__deleted": True}, None]


def test_add_fields_and_headers_and_flatten() -> None:
    out = run({"add.fields": "op,collection,ord,updateDescription.updatedFields",
               "add.headers": "op,db", "flatten.struct": "true",
               "flatten.struct.delimiter": "-"},
              event("update", full={"_id": 7, "a": {"b": 1}}, updated={"a.b": 1}), event(
                  "delete"))
    first = out[0]
    assert first.value == {"_id": 7, "a-b": 1, "__op": "u", "__collection": "orders",
                           "__ord": 3, "__updateDescription_updatedFields": '{"a.b": 1}'}
    assert {h.key: h.value for h in first.headers if h.key.startswith("__")
            and not h.key.startswith("__debezium")} == {"__op": "u", "__db": "inv"}
    assert out[1].value is None  # the delete (tombstone mode)
    assert [h.value for h in out[1].headers if h.key == "__op"] == ["d"]


def test_field_name_adjustment() -> None:
    [out] = run({"field.name.adjustment.mode": "avro"},
                event("insert", full={"_id": 7, "a-b": 1, "1x": 2, "e": []}))
    assert out.value_schema is not None
    assert [f.name for f in out.value_schema.fields] == ["_id", "a_b", "_1x", "e"]
    assert out.value["e"] is None  # sanitized values leave empty arrays out
    [legacy] = run({"sanitize.field.names": "true"}, event("insert", full={"_id": 7, "a-b": 1}))
    assert legacy.value_schema is not None
    assert [f.name for f in legacy.value_schema.fields] == ["_id", "a_b"]


def test_non_change_records_pass_and_refusals() -> None:
    heartbeat = ConnectRecord("hb", None, None, None, None, {"ts_ms": 1}, 1)
    chain = build_chain({"transforms": "u", "transforms.u.type": UNWRAP})
    assert chain.apply(heartbeat) is heartbeat
    with pytest.raises(PluginConfigError, match=r"array\.encoding"):
        build_chain({"transforms": "u", "transforms.u.type": UNWRAP,
                     "transforms.u.array.encoding": "list"})
    with pytest.raises(PluginConfigError, match=r"transforms\.u\.nope"):
        build_chain({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.nope": "1"})
