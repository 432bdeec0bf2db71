"""MongoDB as a stream source on a real replica set: discover in Datastream's mongodbCluster
shape (databases, collections, sampled fields with their BSON types, the event columns with
their unified types), and a stream into files that starts, backfills and streams Datastream
events of the included collection only, without an excluded field."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
from pathlib import Path
from typing import Any

import orjson
import pytest
from bson import Decimal128, Int64, ObjectId
from typer.testing import CliRunner

from headwater.cli import app
from headwater.streams.catalog import Catalog

from .conftest import MongoEnv, wait
from .test_mongodb_datastream import file_events

pytestmark = pytest.mark.integration


def _cli(tmp: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp)])
    assert result.exit_code == code, result.output
    return result.output


def _profile(env: MongoEnv, tmp: Path) -> None:
    _cli(tmp, "profiles", "create", "mg", "--kind", "mongodb", "--replace",
         "-p", f"mongodb.connection.string={env.server.connection_string}")


def test_discover(env: MongoEnv, tmp_path: Path) -> None:
    env.db.people.insert_many([
        {"_id": ObjectId(), "name": "a", "n": 1, "big": Int64(2), "when": dt.datetime(2024, 1, 1),
         "sub": {"x": [1]}, "dec": Decimal128("1.5")},
        {"_id": ObjectId(), "name": None, "n": 2.5, "re": {"$regex": "x"}}])
    env.db.create_collection("empty")
    _profile(env, tmp_path)
    doc: Any = orjson.loads(_cli(tmp_path, "profiles", "discover", "mg", "--json",
                                 "--object", env.db_name))
    (database,) = doc["mongodbCluster"]["databases"]
    assert database["database"] == env.db_name
    collections = {c["collection"]: c for c in database["collections"]}
    assert set(collections) == {"people", "empty"}
    fields = {f["field"]: f["dataTypes"] for f in collections["people"]["fields"]}
    assert next(iter(fields)) == "_id" and collections["people"]["fields"][0]["primaryKey"]
    assert fields == {"_id": ["OBJECTID"], "big": ["INT64"], "dec": ["DECIMAL128"],
                      "n": ["DOUBLE", "INT32"], "name": ["NULL", "STRING"],
                      "re": ["OBJECT"], "sub": ["OBJECT"], "when": ["DATE"]}
    assert collections["empty"]["fields"] == []
    assert [(c["column"], c["unifiedType"], c["primaryKey"])
            for c in collections["people"]["columns"]] == [
        ("_id", "STRING", True), ("payload", "JSON", False)]
    one = orjson.loads(_cli(tmp_path, "profiles", "discover", "mg", "--json", "--depth", "1"))
    names = {d["database"] for d in one["mongodbCluster"]["databases"]}
    assert env.db_name in names and not {"admin", "config", "local"} & names


def test_stream_into_files(env: MongoEnv, tmp_path: Path) -> None:
    env.db.keep.insert_one({"_id": 1, "a": 1, "secret": "s"})
    env.db.skip.insert_one({"_id": 1})
    _profile(env, tmp_path)
    out = tmp_path / "out"
    _cli(tmp_path, "profiles", "create", "out", "--kind", "files", "--dir", str(out))
    _cli(tmp_path, "streams", "create", "s", "--source", "mg", "--destination", "out",
         "--include", f"{env.db_name}.keep", "--exclude", f"{env.db_name}.keep.secret",
         "-p", "headwater.destination.files.max.ms=200")
    try:
        assert orjson.loads(_cli(tmp_path, "streams", "start", "s", "--wait", "60", "--json")
                            )["state"] == "RUNNING"
        env.db.keep.insert_one({"_id": 2, "a": 2, "secret": "t"})
        env.db.skip.insert_one({"_id": 2})
        events = wait(lambda: [e for e in file_events(out) if e["read_method"]
                               == "mongodb-change-streams"], "the stream's event", 60)
    finally:
        pid = Catalog(tmp_path).stream("s").pid
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    every = file_events(out)
    assert {e["object"] for e in every} == {f"{env.db_name}_keep"}
    assert [e["payload"]["payload"] for e in every if e["read_method"] == "mongodb-backfill"
            ] == [{"_id": {"$numberInt": "1"}, "a": {"$numberInt": "1"}}]
    assert [e["payload"]["payload"] for e in events] == [
        {"_id": {"$numberInt": "2"}, "a": {"$numberInt": "2"}}]
    assert {e["stream_name"] for e in every} == {"s"}


def test_rest_profile_discover_stream_and_backfill_refusals(env: MongoEnv, tmp_path: Path
                                                            ) -> None:
    """The service's Datastream routes on the replica set, in process: a `mongodbProfile`
    in Datastream's fields (hostAddresses, replicaSet), discover's `mongodbCluster`, a stream
    with `mongodbSourceConfig`, its objects, and startBackfillJob refused for a collection
    outside the include list (naming it and the stream) and, for an included one, refused
    without `signal.data.collection`, then queued with it."""
    from fastapi.testclient import TestClient

    from headwater.server.app import build_app
    from headwater.server.service import Service

    env.db.keep.insert_one({"_id": 1})
    env.db.skip.insert_one({"_id": 1})
    svc = Service.open(tmp_path / "svc", "127.0.0.1:0")
    try:
        c = TestClient(build_app(svc))
        r = c.post("/connectionProfiles", params={"connectionProfileId": "mg"}, json={
            "mongodbProfile": {"hostAddresses": [{"hostname": "127.0.0.1",
                                                  "port": env.server.port}],
                               "replicaSet": env.server.replica_set,
                               "standardConnectionFormat": {"directConnection": False}}})
        assert r.status_code == 201, r.text
        r = c.post("/connectionProfiles", params={"connectionProfileId": "out"}, json={
            "destinationProfile": {"kind": "files", "directory": str(tmp_path / "out")}})
        assert r.status_code == 201, r.text
        found = c.post("/connectionProfiles:discover", json={
            "connectionProfileName": "mg", "hierarchyDepth": 2})
        assert found.status_code == 200, found.text
        (database,) = [d for d in found.json()["mongodbCluster"]["databases"]
                       if d["database"] == env.db_name]
        assert sorted(x["collection"] for x in database["collections"]) == ["keep", "skip"]
        include = {"databases": [{"database": env.db_name,
                                  "collections": [{"collection": "keep"}]}]}
        for name, props in (("s", {}), ("w", {"signal.data.collection":
                                               f"{env.db_name}.signals"})):
            r = c.post("/streams", params={"streamId": name}, json={
                "sourceConfig": {"sourceConnectionProfile": "mg",
                                 "mongodbSourceConfig": {"includeObjects": include}},
                "destinationConfig": {"destinationConnectionProfile": "out"},
                "backfillNone": {}, "properties": props})
            assert r.status_code == 201, r.text
        objects = c.get("/streams/s/objects").json()["streamObjects"]
        assert [o["displayName"] for o in objects] == [f"{env.db_name}.keep"]
        r = c.post(f"/streams/w/objects/{env.db_name}.skip:startBackfillJob")
        assert r.status_code == 400, r.text
        assert r.json()["message"] == (
            f"backfill of {env.db_name}.skip: the object is not part of stream 'w' (its "
            f"include list: {env.db_name}.keep)")
        r = c.post(f"/streams/s/objects/{env.db_name}.keep:startBackfillJob")
        assert r.status_code == 400 and "signal.data.collection" in r.text, r.text
        r = c.post(f"/streams/w/objects/{env.db_name}.keep:startBackfillJob",
                   json={"filter": '{"_id": 1}'})
        assert r.json()["object"]["backfillJob"]["state"] == "PENDING", r.text
    finally:
        svc.close()
