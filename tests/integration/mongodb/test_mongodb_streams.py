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
