"""Signals and incremental snapshots of the MongoDB connector against a real replica set: under
concurrent writes the topic replays to the collection; mixed `_id` types; stop; a restart in
the middle resumes; the file channel; additional conditions."""

from __future__ import annotations

import datetime
import json
import random
import threading
import uuid
from typing import Any

import pytest
from bson import Binary, ObjectId

from headwater.connectors.mongodb.extended_json import document_json, id_json

from .conftest import MongoEnv, wait

pytestmark = pytest.mark.integration

SIGNALS = "dbz_signals"


def _props(env: MongoEnv, **extra: Any) -> dict[str, Any]:
    """The signal collection is left out of the captured ones: it is watched all the same."""
    return {"snapshot.mode": "no_data", "signal.data.collection": f"{env.db_name}.{SIGNALS}",
            "collection.include.list": f"{env.db_name}\\.c", **extra}


def _signal(env: MongoEnv, ident: str, kind: str, data: Any = None) -> None:
    env.db[SIGNALS].insert_one({"_id": ident, "type": kind, "data": data})


def _reads(env: MongoEnv) -> list[str]:
    return [key["id"] for _, key, v in env.records("c")
            if v is not None and v["op"] == "r" and v["source"]["snapshot"] == "incremental"]


def _replayed(env: MongoEnv) -> dict[str, Any]:
    docs: dict[str, Any] = {}
    for _, key, value in env.records("c"):
        if value is None:
            continue
        if value["op"] == "d":
            docs.pop(key["id"], None)
        else:
            docs[key["id"]] = json.loads(value["after"])
    return docs


def _source(env: MongoEnv) -> dict[str, Any]:
    return {id_json(d["_id"]): json.loads(document_json(d)) for d in env.db.c.find()}


def _done(env: MongoEnv) -> bool:
    off = env.offset()
    return bool(off) and "incremental_snapshot_collections" not in off and bool(_reads(env))


class Writer(threading.Thread):
    """Inserts, updates, deletes and two-document transactions on `c` until stopped."""

    def __init__(self, env: MongoEnv, keys: int) -> None:
        super().__init__(daemon=True)
        self.env, self.keys = env, keys
        self.stop = threading.Event()
        self.count = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        rnd = random.Random(7)
        coll = self.env.db.c
        try:
            while not self.stop.is_set():
                self.count += 1
                k = rnd.randrange(self.keys + self.count // 5 + 1)
                roll = rnd.random()
                if roll < 0.15:
                    coll.delete_one({"_id": k})
                elif roll < 0.3:
                    coll.replace_one({"_id": k}, {"v": self.count, "r": True}, upsert=True)
                elif roll < 0.4:
                    with self.env.client.start_session() as s:
                        s.with_transaction(lambda s, k=k: (
                            coll.update_one({"_id": k}, {"$inc": {"v": 1}}, session=s),
                            coll.insert_one({"_id": self.keys * 10 + self.count, "v": 0},
                                            session=s)))
                else:
                    coll.update_one({"_id": k}, {"$set": {"v": self.count, "n.x": k}},
                                    upsert=roll > 0.9)
        except BaseException as exc:
            self.error = exc


def test_incremental_snapshot_under_writes_replays_to_the_collection(env: MongoEnv) -> None:
    env.db.c.insert_many([{"_id": i, "v": 0} for i in range(3000)])
    cap = env.capture(_props(env, **{"incremental.snapshot.chunk.size": 200}))
    writer = Writer(env, 3000)
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        writer.start()
        wait(lambda: writer.count > 100, "the writer")
        # data-collections are regular expressions
        _signal(env, "s1", "execute-snapshot", {"data-collections": [f"{env.db_name}\\.c.*"]})
        wait(lambda: _done(env), "the incremental snapshot", 120, cap)
        writer.stop.set()
        writer.join()
        assert writer.error is None
        wait(lambda: _replayed(env) == _source(env), "the topic to converge", 60, cap)
    finally:
        writer.stop.set()
        cap.stop()
    reads = _reads(env)
    assert len(reads) == len(set(reads)) and len(reads) > 1000
    values = [v for v in env.values("c") if v["op"] == "r"]
    assert {v["source"]["snapshot"] for v in values} == {"incremental"}
    assert not env.records(SIGNALS)  # watched, not captured


def test_mixed_id_types_in_bson_order(env: MongoEnv) -> None:
    ids: list[Any] = [3, 1.5, -2, 2**40, "b", "a", "", {"k": 1}, {"a": [1]},
                      Binary(uuid.UUID(int=5).bytes, 4), ObjectId(), ObjectId(), False, True,
                      datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC), None]
    env.db.c.insert_many([{"_id": i, "n": n} for n, i in enumerate(ids)])
    cap = env.capture(_props(env, **{"incremental.snapshot.chunk.size": 2}))
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        _signal(env, "s1", "execute-snapshot", {"data-collections": [f"{env.db_name}.c"]})
        wait(lambda: _done(env), "the incremental snapshot", 60, cap)
    finally:
        cap.stop()
    expected = [id_json(d["_id"]) for d in env.db.c.find().sort("_id", 1)]
    assert _reads(env) == expected and len(expected) == len(ids)


def test_stop_snapshot_and_additional_conditions(env: MongoEnv) -> None:
    env.db.c.insert_many([{"_id": i, "v": i % 10} for i in range(5000)])
    cap = env.capture(_props(env, **{"incremental.snapshot.chunk.size": 20}))
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        _signal(env, "go", "execute-snapshot", {"data-collections": [f"{env.db_name}.c"]})
        wait(lambda: len(_reads(env)) >= 200, "first chunks", capture=cap, interval=0.02)
        _signal(env, "stop", "stop-snapshot",
                {"data-collections": [f"{env.db_name}.c"], "type": "INCREMENTAL"})
        wait(lambda: "incremental_snapshot_collections" not in env.offset(), "stopped",
             capture=cap)
        stopped = len(_reads(env))
        assert stopped < 5000
        # additional-conditions: a MongoDB filter in the shell's syntax, as Debezium reads it
        env.db.c.delete_many({})
        env.db.c.insert_many([{"_id": i, "v": i % 10} for i in range(100)])
        _signal(env, "cond", "execute-snapshot", {
            "data-collections": [f"{env.db_name}.c"], "type": "incremental",
            "additional-conditions": [{"data-collection": f"{env.db_name}.c",
                                       "filter": "{ v: { $lt: 2 }, _id: {'$gte': 50} }"}]})
        wait(lambda: len(_reads(env)) > stopped and "incremental_snapshot_collections"
             not in env.offset(), "the filtered snapshot", capture=cap)
    finally:
        cap.stop()
    filtered = _reads(env)[stopped:]
    assert filtered == [str(i) for i in range(50, 100) if i % 10 < 2]


def test_restart_in_the_middle_resumes_the_snapshot(env: MongoEnv) -> None:
    env.db.c.insert_many([{"_id": i, "v": 0} for i in range(4000)])
    props = _props(env, **{"incremental.snapshot.chunk.size": 50})
    cap = env.capture(props)
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        _signal(env, "go", "execute-snapshot", {"data-collections": [f"{env.db_name}.c"]})
        wait(lambda: (env.offset().get("incremental_snapshot_primary_key") or [0])[0] >= 500,
             "some chunks", capture=cap, interval=0.02)
    finally:
        cap.stop()
    off = env.offset()
    assert off["incremental_snapshot_maximum_key"] == [3999]
    assert [c["id"] for c in off["incremental_snapshot_collections"]] == [f"{env.db_name}.c"]
    before = len(_reads(env))
    assert before < 4000
    env.db.c.update_one({"_id": 3990}, {"$set": {"v": 1}})
    cap = env.capture(props)
    try:
        wait(lambda: _done(env) and "incremental_snapshot_collections" not in env.offset(),
             "the resumed snapshot", 120, cap)
        wait(lambda: _replayed(env) == _source(env), "the topic to converge", 30, cap)
    finally:
        cap.stop()
    reads = [int(k) for k in _reads(env)]
    assert sorted(set(reads)) == list(range(4000))
    assert len(reads) - len(set(reads)) <= 50  # at most the chunk in flight is read again


def test_file_channel(env: MongoEnv) -> None:
    env.db.c.insert_many([{"_id": i} for i in range(30)])
    signals = env.tmp / "signals.txt"
    signals.write_text(json.dumps({"id": "l", "type": "log", "data": {"message": "hello"}})
                       + "\n")
    props = _props(env, **{"signal.enabled.channels": "source,file",
                           "signal.file": str(signals), "signal.poll.interval.ms": 100,
                           "incremental.snapshot.chunk.size": 7})
    cap = env.capture(props)
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        with signals.open("a") as f:
            f.write(json.dumps({"id": "f1", "type": "execute-snapshot",
                                "data": {"data-collections": [f"{env.db_name}\\.c"]}}) + "\n")
        wait(lambda: _done(env), "the snapshot from the file", 60, cap)
        wait(lambda: env.offset().get("signal_file_position") == signals.stat().st_size,
             "the file position", capture=cap)
    finally:
        cap.stop()
    assert sorted(int(k) for k in _reads(env)) == list(range(30))
    cap = env.capture(props)  # lines already consumed are not run again
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        env.db.c.insert_one({"_id": 99})
        wait(lambda: any(v["op"] == "c" for v in env.values("c")), "streaming", capture=cap)
    finally:
        cap.stop()
    assert len(_reads(env)) == 30


def test_chunk_documents_are_encoded_from_their_bytes(env: MongoEnv) -> None:
    """Chunk reads are exact like the initial snapshot's: a symbol, an undefined, a DBPointer,
    regex options as stored and dates beyond year 9999 (a decoded read loses the first ones
    and fails on the last), `_id`s of dates included."""
    import struct

    from bson.datetime_ms import DatetimeMS
    from bson.raw_bson import RawBSONDocument

    from headwater.connectors.mongodb.extended_json import document_json_raw, id_json_raw

    def bstr(s: str) -> bytes:
        b = s.encode()
        return struct.pack("<i", len(b) + 1) + b + b"\0"

    body = (b"\x02_id\x00" + bstr("deprecated") + b"\x0esym\x00" + bstr("s")
            + b"\x06undef\x00" + b"\x0cptr\x00" + bstr("db.c") + bytes(range(12))
            + b"\x0bre\x00a\x00xi\x00")
    deprecated = RawBSONDocument(struct.pack("<i", len(body) + 5) + body + b"\0")
    raw = env.client[env.db_name].get_collection(
        "c", codec_options=env.db.c.codec_options.with_options(document_class=RawBSONDocument))
    raw.insert_one(deprecated)
    env.db.c.insert_many([{"_id": DatetimeMS(2**62), "late": DatetimeMS(253402300800000)},
                          {"_id": 1, "dates": [DatetimeMS(-2**63), DatetimeMS(0)]}])
    cap = env.capture(_props(env, **{"incremental.snapshot.chunk.size": 2}))
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        _signal(env, "s1", "execute-snapshot", {"data-collections": [f"{env.db_name}.c"]})
        wait(lambda: _done(env), "the incremental snapshot", 60, cap)
    finally:
        cap.stop()
    expected = {id_json_raw(d.raw): document_json_raw(d.raw) for d in raw.find()}
    reads = {key["id"]: v["after"] for _, key, v in env.records("c")
             if v is not None and v["op"] == "r"}
    assert reads == expected and len(expected) == 3
