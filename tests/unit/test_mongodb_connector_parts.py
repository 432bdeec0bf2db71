"""The MongoDB connector's pieces without a server: configuration, field rules, the change
stream pipeline, resume tokens and the document envelope."""

from __future__ import annotations

import base64

import bson
import pytest

from headwater.config.loader import ConfigError
from headwater.connectors.mongodb.config import mask_connection_string, validate_mongodb_config
from headwater.connectors.mongodb.documents import CollectionCodec, collection_schema
from headwater.connectors.mongodb.fields import FieldSelector
from headwater.connectors.mongodb.pipeline import change_stream_pipeline
from headwater.connectors.mongodb.position import (
    MongoDbSourceBlock,
    MongoPosition,
    lsid_json,
    token_from_offset,
    token_time,
    token_to_base64,
)
from headwater.connectors.registry import registration_for_class
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from tests.record_json import json_of

URI = "mongodb://user:pa55word@127.0.0.1:27017/?replicaSet=rs0"


def _config(**extra: str) -> dict[str, str]:
    return {"connector.class": "mongodb", "topic.prefix": "p",
            "mongodb.connection.string": URI, **extra}


def test_defaults_and_registration() -> None:
    cfg, warnings = validate_mongodb_config(_config())
    assert (cfg.capture_mode, cfg.snapshot_mode, cfg.capture_scope) == (
        "change_streams_update_full", "initial", "deployment")
    assert cfg.skipped_operations == frozenset({"t"}) and not warnings
    for name in ("io.debezium.connector.mongodb.MongoDbConnector", "mongodb", "Mongo"):
        assert registration_for_class(name).source_connectors == ("mongodb",)


def test_credentials_are_masked() -> None:
    cfg, _ = validate_mongodb_config(_config())
    assert "pa55word" not in repr(cfg) + repr(cfg.redacted())
    assert cfg.redacted()["mongodb_connection_string"] == (
        "mongodb://user:********@127.0.0.1:27017/?replicaSet=rs0")
    assert mask_connection_string("mongodb://h:1/") == "mongodb://h:1/"
    with pytest.raises(ConfigError) as err:
        validate_mongodb_config(_config(**{"mongodb.connection.string": "pa55word@h"}))
    assert "pa55word" not in str(err.value)


def test_unknown_unimplemented_and_refused_properties() -> None:
    unsupported = {"cursor.pipeline": "[]", "mongodb.hosts": "rs0/h:1", "capture.mdoe": "x"}
    with pytest.raises(ConfigError, match="remove it") as info:
        validate_mongodb_config(_config(**unsupported))
    assert "'cursor.pipeline' is not supported by Headwater" in str(info.value)
    _, warnings = validate_mongodb_config(_config(**{
        **unsupported, "headwater.config.unsupported.properties": "warn"}))
    text = "\n".join(warnings)
    assert "'cursor.pipeline' is not supported by Headwater" in text
    assert "use mongodb.connection.string" in text and "did you mean 'capture.mode'" in text
    for bad in ({"json.serialization.mode": "relaxed"}, {"capture.scope": "collection"},
                {"snapshot.mode": "custom"}, {"capture.scope": "database"},
                {"field.renames": "db.c.a"}):
        with pytest.raises(ConfigError):
            validate_mongodb_config(_config(**bad))
    cfg, warnings = validate_mongodb_config(_config(**{"snapshot.mode": "never"}))
    assert cfg.snapshot_mode == "no_data" and warnings


def test_snapshot_filter_overrides() -> None:
    cfg, _ = validate_mongodb_config(_config(**{
        "snapshot.collection.filter.overrides": "db.a",
        "snapshot.collection.filter.overrides.db.a": '{"n": {"$gt": 1}}'}))
    assert cfg.snapshot_collection_filter_overrides == {"db.a": '{"n": {"$gt": 1}}'}


def test_collection_filters_match_whole_names() -> None:
    cfg, _ = validate_mongodb_config(_config(**{"collection.include.list": "db\\.a.*"}))
    assert cfg.collection_filter("db", "ab") and not cfg.collection_filter("xdb", "a")
    cfg, _ = validate_mongodb_config(_config(**{"collection.include.list": "db.a",
                                                "filters.match.mode": "literal"}))
    assert cfg.collection_filter("db", "a") and not cfg.collection_filter("dbxa", "a")


def test_pipeline_filters_operations_and_namespaces() -> None:
    cfg, _ = validate_mongodb_config(_config(**{"skipped.operations": "u",
                                                "database.include.list": "db"}))
    (stage,) = change_stream_pipeline(cfg)
    assert stage["$match"]["$and"][0] == {"operationType": {"$in": ["insert", "delete"]}}
    assert stage["$match"]["$and"][1] == {"ns.db": {"$regex": "^(?:db)$", "$options": "i"}}
    cfg, _ = validate_mongodb_config(_config(**{"collection.include.list": "db.a"}))
    _wrap, match, unwrap = change_stream_pipeline(cfg, "db.signals")
    assert unwrap == {"$replaceRoot": {"newRoot": "$event"}}
    assert match["$match"]["$or"][1] == {
        "namespace": "db.signals", "event.operationType": {"$in": ["insert", "delete"]}}


def test_field_rules_as_debezium_applies_them() -> None:
    fields = FieldSelector("db.c.secret,*.*.nested.x", "db.c.name:full").for_collection(
        "db", "c")
    doc = {"_id": 1, "name": "a", "secret": 1, "nested": {"x": 1, "y": 2},
           "arr": [{"x": 1}]}
    assert fields.document(doc) == {"_id": 1, "full": "a", "nested": {"y": 2},
                                    "arr": [{"x": 1}]}
    # a key equal to the rule's path is handled alone (FieldSelector returns there)
    assert fields.change({"name": "b", "nested.x": 5, "nested": {"x": 1}, "secret": 2}) == {
        "full": "b", "nested": {"x": 1}}
    assert fields.change({"nested": {"x": 1, "y": 2}, "name.first": "n"}) == {
        "nested": {"y": 2}, "full.first": "n"}
    assert [fields.path(p) for p in ("secret", "name", "nested", "other")] == [
        None, "full", None, "other"]
    assert not FieldSelector("db.c.secret", None).for_collection("db", "d")


def test_resume_tokens_round_trip_and_time() -> None:
    token = {"_data": "8263B2D6C1000000012B022C0100296E5A1004"}
    text = token_to_base64(token)
    assert bson.decode(base64.b64decode(text)) == token
    assert token_from_offset(text) == token and token_from_offset(token["_data"]) == token
    assert token_time(token) == (0x63B2D6C1, 1)


def test_document_envelope_rendering() -> None:
    schema = collection_schema("db", "c")
    codec = CollectionCodec(schema, FieldSelector(None, None).for_collection("db", "c"))
    op, before, after = codec.change({
        "operationType": "update", "documentKey": {"_id": 7},
        "fullDocument": {"_id": 7, "a": 2},
        "updateDescription": {"updatedFields": {"a": 2}, "removedFields": [],
                              "truncatedArrays": []}})
    context = SourceContext("mongodb", "p", "v")
    fmt = DebeziumJsonFormat(MongoDbSourceBlock(), context_headers=False)
    position = MongoPosition(10, 3, "tok", wall_time=10_500)
    rec = ChangeRecord(context, schema, op, before, after, 10_500, 11_000,
                       SnapshotMarker.FALSE, position)
    out = fmt.render_batch([rec, rec._replace(op=Op.DELETE, before=after, after=None)])
    records = out["p.db.c"]
    assert len(records) == 3 and records[2].value is None  # delete, then its tombstone
    key = json_of(records[0].key)
    assert key["payload"] == {"id": "7"} and key["schema"]["name"] == "p.db.c.Key"
    value = json_of(records[0].value)["payload"]
    assert list(value) == ["before", "after", "updateDescription", "source", "op", "ts_ms",
                           "transaction"]
    assert (value["before"], value["after"], value["op"]) == (None, '{"_id": 7,"a": 2}', "u")
    assert value["updateDescription"] == {"removedFields": None, "updatedFields": '{"a": 2}',
                                          "truncatedArrays": None}
    source = value["source"]
    assert (source["collection"], source["ord"], source["wallTime"], source["ts_ms"]) == (
        "c", 3, 10_500, 10_500)


def test_datastream_configuration() -> None:
    """Datastream events need whole documents on updates; the JSON mode is Datastream's
    option only; the files destination still needs the Datastream format."""
    cfg, _ = validate_mongodb_config(_config(**{"headwater.event.format": "datastream"}))
    assert (cfg.output.event_format, cfg.headwater_datastream_mongodb_json_mode) == (
        "datastream", "canonical")
    cfg, _ = validate_mongodb_config(_config(**{
        "headwater.event.format": "datastream", "headwater.destination": "files",
        "headwater.datastream.mongodb.json.mode": "relaxed"}))
    assert (cfg.output.destination, cfg.headwater_datastream_mongodb_json_mode) == (
        "files", "relaxed")
    for mode in ("change_streams", "change_streams_with_pre_image"):
        with pytest.raises(ConfigError) as err:
            validate_mongodb_config(_config(**{"headwater.event.format": "datastream",
                                               "capture.mode": mode}))
        assert f"capture.mode={mode}: Datastream events carry the whole document" in str(
            err.value)
    with pytest.raises(ConfigError) as err:
        validate_mongodb_config(_config(**{"headwater.datastream.mongodb.json.mode":
                                           "relaxed"}))
    assert "only used with headwater.event.format=datastream" in str(err.value)
    cfg, _ = validate_mongodb_config(_config(**{
        "headwater.event.format": "datastream",
        "headwater.datastream.mongodb.json.mode": "strict"}))
    assert cfg.headwater_datastream_mongodb_json_mode == "strict"
    with pytest.raises(ConfigError) as err:
        validate_mongodb_config(_config(**{"headwater.event.format": "datastream",
                                           "headwater.datastream.mongodb.json.mode":
                                           "legacy"}))
    assert "headwater.datastream.mongodb.json.mode" in str(err.value)
    with pytest.raises(ConfigError) as err:
        validate_mongodb_config(_config(**{"headwater.destination": "files"}))
    assert "needs headwater.event.format=datastream" in str(err.value)
    cfg, _ = validate_mongodb_config(_config(**{"headwater.event.format": "debezium"}))
    assert cfg.output.event_format == "debezium"


def test_lsid_as_debezium_writes_it() -> None:
    """`source.lsid` (and the transaction id) in Debezium 3.6's dialect, from the raw event."""
    import base64
    import json
    from pathlib import Path

    from bson.raw_bson import RawBSONDocument

    fixture = json.loads((Path(__file__).parent / "mongodb" / "fixtures" / "transaction.json")
                         .read_text())
    expected = {r["value"]["payload"]["source"]["lsid"] for r in fixture["records"]
                if r["value"] and "source" in r["value"]["payload"]} - {None}
    events = [RawBSONDocument(base64.b64decode(e)) for e in fixture["change_events"]]
    ours = {lsid_json(e["lsid"]) for e in events if "lsid" in e}
    assert len(expected) == 1 and ours == expected


@pytest.mark.parametrize(("uri_query", "selection_s", "connect_s"), [
    ("replicaSet=rs0", 30.0, 10.0),  # the properties' defaults
    ("replicaSet=rs0&serverSelectionTimeoutMS=1500", 1.5, 10.0),
    ("serverselectiontimeoutms=2000;connectTimeoutMS=700", 2.0, 0.7),  # any case, `;` too
])
def test_options_in_the_connection_string_win_over_the_properties(
        uri_query: str, selection_s: float, connect_s: float) -> None:
    from headwater.connectors.mongodb.connection import client

    cfg, _ = validate_mongodb_config(_config(**{
        "mongodb.connection.string": f"mongodb://127.0.0.1:1/?{uri_query}"}))
    mongo = client(cfg)  # pymongo connects lazily: nothing is contacted
    try:
        assert mongo.options.server_selection_timeout == selection_s
        assert mongo.options.pool_options.connect_timeout == connect_s
    finally:
        mongo.close()


def test_a_property_set_beside_the_uri_still_applies_where_the_uri_is_silent() -> None:
    from headwater.connectors.mongodb.connection import client

    cfg, _ = validate_mongodb_config(_config(**{
        "mongodb.connection.string": "mongodb://127.0.0.1:1/?connectTimeoutMS=700",
        "mongodb.server.selection.timeout.ms": "4000"}))
    mongo = client(cfg)
    try:
        assert mongo.options.server_selection_timeout == 4.0
        assert mongo.options.pool_options.connect_timeout == 0.7
    finally:
        mongo.close()
