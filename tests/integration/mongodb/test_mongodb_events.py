"""MongoDB change events as Debezium 3.x writes them: the envelope per capture.mode, deletes
and tombstones, transaction metadata, skipped operations, filters and field rules."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from headwater.testing.replay import events
from headwater.topics import reader
from tests.record_json import json_of

from .conftest import MongoEnv, wait

pytestmark = pytest.mark.integration


def _stream_changes(env: MongoEnv, mode: str) -> list[dict[str, Any]]:
    env.db.create_collection("c", changeStreamPreAndPostImages={"enabled": True})
    env.db.c.insert_one({"_id": 1, "name": "a", "gone": True})
    cap = env.capture({"capture.mode": mode})
    try:
        wait(lambda: len(env.values("c")) >= 1, "the snapshot read", capture=cap)
        env.db.c.insert_one({"_id": 2, "name": "b"})
        env.db.c.update_one({"_id": 1}, {"$set": {"name": "A"}, "$unset": {"gone": ""}})
        env.db.c.delete_one({"_id": 2})
        wait(lambda: len(env.values("c")) >= 4, "three streamed events", capture=cap)
    finally:
        cap.stop()
    return env.values("c")


@pytest.mark.parametrize("mode", ["change_streams", "change_streams_update_full",
                                  "change_streams_with_pre_image",
                                  "change_streams_update_full_with_pre_image"])
def test_capture_modes(env: MongoEnv, mode: str) -> None:
    read, create, update, delete = _stream_changes(env, mode)
    full, pre = "update_full" in mode, mode.endswith("pre_image")
    assert (read["op"], json.loads(read["after"]), read["before"]) == (
        "r", {"_id": 1, "name": "a", "gone": True}, None)
    assert read["source"]["snapshot"] == "last" and read["source"]["ord"] == -1
    assert (create["op"], json.loads(create["after"]), create["before"]) == (
        "c", {"_id": 2, "name": "b"}, None)
    assert create["updateDescription"] is None
    assert update["op"] == "u"
    desc = update["updateDescription"]
    assert json.loads(desc["updatedFields"]) == {"name": "A"}
    assert desc["removedFields"] == ["gone"] and desc["truncatedArrays"] is None
    assert (json.loads(update["after"]) if update["after"] else None) == (
        {"_id": 1, "name": "A"} if full else None)
    assert (json.loads(update["before"]) if update["before"] else None) == (
        {"_id": 1, "name": "a", "gone": True} if pre else None)
    assert delete["op"] == "d" and delete["after"] is None
    assert (json.loads(delete["before"]) if delete["before"] else None) == (
        {"_id": 2, "name": "b"} if pre else None)
    for v in (create, update, delete):
        src = v["source"]
        assert (src["connector"], src["name"], src["db"], src["collection"]) == (
            "mongodb", env.prefix, env.db_name, "c")
        assert src["snapshot"] == "false" and src["ord"] >= 1 and src["wallTime"] > 0
        assert src["ts_ms"] == src["wallTime"] and src["lsid"] is None
        assert v["transaction"] is None and "ts_us" not in v


def test_envelope_and_key_schemas(env: MongoEnv) -> None:
    env.db.c.insert_one({"_id": "k1", "n": 1})
    cap = env.capture()
    try:
        wait(lambda: env.records("c"), "the snapshot read", capture=cap)
    finally:
        cap.stop()
    rec = next(iter(reader.read(env.topics, env.topic("c"))))
    key, value = json_of(rec.key), json_of(rec.value)
    topic = env.topic("c")
    assert key["schema"]["name"] == f"{topic}.Key"
    assert key["schema"]["fields"] == [{"type": "string", "optional": False, "field": "id"}]
    assert key["payload"] == {"id": '"k1"'}
    schema = value["schema"]
    assert schema["name"] == f"{topic}.Envelope" and "version" not in schema
    assert [f["field"] for f in schema["fields"]] == [
        "before", "after", "updateDescription", "source", "op", "ts_ms", "transaction"]
    assert schema["fields"][0]["name"] == "io.debezium.data.Json"
    source = schema["fields"][3]
    assert source["name"] == "io.debezium.connector.mongo.Source"
    assert [f["field"] for f in source["fields"]] == [
        "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us",
        "ts_ns", "collection", "ord", "lsid", "txnNumber", "wallTime"]
    assert list(value["payload"]) == [f["field"] for f in schema["fields"]]
    headers = dict(rec.headers)
    assert "__debezium.context.connectorLogicalName" in headers


@pytest.mark.parametrize("tombstones", [True, False])
def test_deletes_and_tombstones(env: MongoEnv, tombstones: bool) -> None:
    env.db.c.insert_many([{"_id": i} for i in range(3)])
    cap = env.capture({"tombstones.on.delete": str(tombstones).lower()})
    try:
        wait(lambda: len(env.records("c")) >= 3, "snapshot", capture=cap)
        env.db.c.delete_many({"_id": {"$in": [0, 2]}})
        wait(lambda: len(env.values("c")) >= 5, "two deletes", capture=cap)
        time.sleep(0.5)
    finally:
        cap.stop()
    recs = [(k["id"], v["op"] if v else None) for _, k, v in env.records("c")]
    deleted = [("0", "d"), ("0", None), ("2", "d"), ("2", None)] if tombstones else [
        ("0", "d"), ("2", "d")]
    assert recs == [("0", "r"), ("1", "r"), ("2", "r"), *deleted]
    assert env.replayed("c") == {1: {"_id": 1}}


def test_transactions_carry_metadata(env: MongoEnv) -> None:
    env.db.create_collection("a")
    env.db.create_collection("b")
    cap = env.capture({"provide.transaction.metadata": "true"})
    tx_topic = f"{env.prefix}.transaction"
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        with env.client.start_session() as s, s.start_transaction():
            env.db.a.insert_one({"_id": 1}, session=s)
            env.db.b.insert_one({"_id": 1}, session=s)
            env.db.a.insert_one({"_id": 2}, session=s)
        env.db.a.insert_one({"_id": 3})  # no transaction
        wait(lambda: len(env.records_of(tx_topic)) >= 2 and len(env.values("a")) >= 3,
             "BEGIN, END and the events", capture=cap)
        time.sleep(0.5)
    finally:
        cap.stop()
    tx = [v for _, _, v in env.records_of(tx_topic)]
    assert [v["status"] for v in tx] == ["BEGIN", "END"]
    begin, end = tx
    tx_id = begin["id"]
    assert tx_id == end["id"] and end["event_count"] == 3
    assert sorted((c["data_collection"], c["event_count"]) for c in end["data_collections"]) == [
        (f"{env.db_name}.a", 2), (f"{env.db_name}.b", 1)]
    a, b = env.values("a"), env.values("b")
    lsid, txn = a[0]["source"]["lsid"], a[0]["source"]["txnNumber"]
    assert tx_id == f"{lsid}:{txn}" and '"$binary"' in lsid and isinstance(txn, int)
    assert [(v["transaction"]["total_order"], v["transaction"]["data_collection_order"])
            for v in (a[0], b[0], a[1])] == [(1, 1), (2, 1), (3, 2)]
    assert a[2]["transaction"] is None and a[2]["source"]["lsid"] is None


def test_skipped_operations(env: MongoEnv) -> None:
    cap = env.capture({"skipped.operations": "u,d", "snapshot.mode": "no_data"})
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        env.db.c.insert_one({"_id": 1, "n": 1})
        env.db.c.update_one({"_id": 1}, {"$set": {"n": 2}})
        env.db.c.delete_one({"_id": 1})
        env.db.c.insert_one({"_id": 2, "n": 1})
        wait(lambda: len(env.values("c")) >= 2, "the inserts", capture=cap)
        time.sleep(0.5)
    finally:
        cap.stop()
    assert [(v["op"], json.loads(v["after"])["_id"]) for v in env.values("c")] == [
        ("c", 1), ("c", 2)]


@pytest.mark.parametrize(("extra", "captured"), [
    ({"collection.include.list": "{db}\\.a,{db}\\.c"}, {"a", "c"}),
    ({"collection.exclude.list": "{db}\\.b"}, {"a", "c"}),
    ({"collection.include.list": "{db}\\.[ab]", "filters.match.mode": "regex"}, {"a", "b"}),
    ({"collection.include.list": "{db}.a", "filters.match.mode": "literal"}, {"a"}),
])
def test_include_exclude_filters(env: MongoEnv, extra: dict[str, str],
                                 captured: set[str]) -> None:
    for name in "abc":
        env.db[name].insert_one({"_id": 0})
    props = {k: v.replace("{db}", env.db_name) for k, v in extra.items()}
    cap = env.capture(props)
    try:
        wait(lambda: cap.runtime.metrics.snapshot_completed, "snapshot", capture=cap)
        for name in "abc":
            env.db[name].insert_one({"_id": 1})
        wait(lambda: all(len(env.values(n)) >= 2 for n in captured), "streamed inserts",
             capture=cap)
        time.sleep(0.5)
    finally:
        cap.stop()
    topics = {t.name for t in reader.list_topics(env.topics)}
    assert topics == {env.topic(n) for n in captured}
    for name in captured:
        assert [v["op"] for v in env.values(name)] == ["r", "c"]


def test_database_exclude_list(env: MongoEnv) -> None:
    other = env.client[env.db_name + "_x"]
    try:
        env.db.c.insert_one({"_id": 0})
        other.c.insert_one({"_id": 0})
        cap = env.capture({"database.include.list": "",
                           "database.exclude.list": f"{env.db_name}_x"})
        try:
            wait(lambda: cap.runtime.metrics.snapshot_completed, "snapshot", capture=cap)
            env.db.c.insert_one({"_id": 1})
            other.c.insert_one({"_id": 1})
            wait(lambda: len(env.values("c")) >= 2, "the insert", capture=cap)
            time.sleep(0.5)
        finally:
            cap.stop()
        assert not (env.topics / f"{env.prefix}.{env.db_name}_x.c").exists()
    finally:
        env.client.drop_database(env.db_name + "_x")


def test_field_exclude_and_rename(env: MongoEnv) -> None:
    db = env.db_name
    env.db.c.insert_one({"_id": 1, "name": "a", "secret": "s", "nested": {"x": 1, "y": 2}})
    cap = env.capture({
        "field.exclude.list": f"{db}.c.secret,{db}.*.nested.x",
        "field.renames": f"{db}.c.name:full_name",
        "capture.mode": "change_streams_update_full",
    })
    try:
        wait(lambda: env.values("c"), "snapshot", capture=cap)
        env.db.c.update_one({"_id": 1}, {"$set": {"secret": "t", "name": "b",
                                                  "nested.x": 5, "nested.y": 6}})
        # update_full looks the document up when the event is read: the second update must
        # wait until the first event is out, or its lookup sees the second (as Debezium's).
        wait(lambda: len(env.values("c")) >= 2, "the first update", capture=cap)
        env.db.c.update_one({"_id": 1}, {"$unset": {"secret": "", "name": ""}})
        wait(lambda: len(env.values("c")) >= 3, "updates", capture=cap)
    finally:
        cap.stop()
    read, first, second = env.values("c")
    assert json.loads(read["after"]) == {"_id": 1, "full_name": "a", "nested": {"y": 2}}
    assert json.loads(first["after"]) == {"_id": 1, "full_name": "b", "nested": {"y": 6}}
    assert json.loads(first["updateDescription"]["updatedFields"]) == {
        "full_name": "b", "nested.y": 6}
    assert json.loads(second["after"]) == {"_id": 1, "nested": {"y": 6}}
    assert second["updateDescription"]["removedFields"] == ["full_name"]


def test_heartbeats(env: MongoEnv) -> None:
    cap = env.capture({"heartbeat.interval.ms": 200, "snapshot.mode": "no_data"})
    topic = f"__debezium-heartbeat.{env.prefix}"
    try:
        wait(lambda: len(env.records_of(topic)) >= 2, "heartbeats", capture=cap)
    finally:
        cap.stop()
    _, key, value = next(iter(events(env.topics, topic)))
    assert key == {"serverName": env.prefix} and value["ts_ms"] > 0
