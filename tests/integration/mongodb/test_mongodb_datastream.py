"""MongoDB as a Datastream source against a real replica set: the events a change stream and a
backfill give (canonical Extended JSON, a transaction's operations told apart by their resume
tokens), and the end-to-end run: a random workload with an incremental snapshot, `headwater
run` writing Datastream files and `headwater pipeline` reading them into Delta, each killed
with SIGKILL and restarted; at the end the Delta table equals the collection document by
document."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from bson import json_util
from bson.json_util import CANONICAL_JSON_OPTIONS

from .conftest import MongoEnv, wait
from .test_mongodb_kill9_e2e import SENTINEL, Procs, Workload, _cli, _doc

pytestmark = pytest.mark.integration

STREAM = "projects/p/locations/l/streams/mongo-ds"


def file_events(root: Path) -> list[dict[str, Any]]:
    """Every event of the published JSON files (files being written are left out)."""
    out: list[dict[str, Any]] = []
    for path in sorted(root.rglob("*.jsonl")) if root.exists() else []:
        if ".inflight" in path.parts:
            continue
        out.extend(orjson.loads(line) for line in path.read_bytes().splitlines() if line)
    return out


def canonical(value: Any) -> Any:
    """A document (or _id) as canonical Extended JSON, parsed."""
    return json.loads(json_util.dumps(value, json_options=CANONICAL_JSON_OPTIONS))


def _props(env: MongoEnv, root: Path, **extra: Any) -> dict[str, Any]:
    return {"headwater.event.format": "datastream", "headwater.datastream.stream.name": STREAM,
            "headwater.destination": "files", "headwater.destination.files.dir": str(root),
            "headwater.destination.files.max.ms": 200,
            "collection.include.list": f"{env.db_name}\\.c", **extra}


def test_backfill_and_change_stream_events(env: MongoEnv) -> None:
    env.db.c.insert_many([{"_id": 1, "a": 1.5, "n": 2**40}, {"_id": 2, "s": "x"}])
    root = env.tmp / "files"
    cap = env.capture(_props(env, root))
    try:
        wait(lambda: env.offset().get("snapshot_completed"), "the snapshot", 60, cap)
        env.db.c.insert_one({"_id": 3, "sub": {"k": [1, "two"]}})
        env.db.c.update_one({"_id": 1}, {"$inc": {"a": 1}})
        with env.client.start_session() as s:
            s.with_transaction(lambda s: [env.db.c.update_one({"_id": 2}, {"$set": {"v": i}},
                                                              session=s) for i in range(3)])
        env.db.c.delete_one({"_id": 3})
        wait(lambda: any(e["source_metadata"]["is_deleted"] for e in file_events(root)),
             "the delete's file", 60, cap)
    finally:
        cap.stop()
    events = file_events(root)
    assert {e["object"] for e in events} == {f"{env.db_name}_c"}
    assert {e["stream_name"] for e in events} == {STREAM}
    backfill = [e for e in events if e["read_method"] == "mongodb-backfill"]
    assert sorted(orjson.loads(e["payload"]["_id"])["$numberInt"] for e in backfill) == [
        "1", "2"]
    assert backfill[0]["payload"]["payload"] == canonical(
        {"_id": 1, "a": 1.5, "n": 2**40}) or backfill[1]["payload"]["payload"] == canonical(
        {"_id": 1, "a": 1.5, "n": 2**40})
    log = [e for e in events if e["read_method"] == "mongodb-change-streams"]
    assert [e["source_metadata"]["change_type"] for e in log] == [
        "INSERT", "UPDATE", "UPDATE", "UPDATE", "UPDATE", "DELETE"]
    for e in events:
        assert e["source_metadata"]["database"] == env.db_name
        assert e["source_metadata"]["collection"] == "c"
        assert e["source_metadata"]["primary_keys"] == ["_id"]
    assert log[0]["payload"]["payload"] == canonical({"_id": 3, "sub": {"k": [1, "two"]}})
    assert log[1]["payload"]["payload"]["a"] == {"$numberDouble": "2.5"}
    tx = log[2:5]
    # one cluster time, ordered by the operation index of the resume token, distinct uuids
    assert len({tuple(e["sort_keys"][:2]) for e in tx}) == 1
    assert [e["sort_keys"][2] for e in tx] == [0, 1, 2]
    assert len({e["uuid"] for e in tx}) == 3
    # updateLookup (capture.mode.full.update.type=lookup) reads the document after the commit
    assert [e["payload"]["payload"]["v"] for e in tx] == [{"$numberInt": "2"}] * 3
    assert log[5]["payload"] == {"_id": json.dumps({"$numberInt": "3"}), "payload": None}
    assert len({e["uuid"] for e in events}) == len(events)


def _has_sentinel(root: Path) -> bool:
    wanted = json.dumps(canonical(SENTINEL))
    return any(e["payload"]["_id"] == wanted for e in file_events(root))


def compare(source: dict[Any, dict[str, Any]], target: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    rows = {row["_id"]: row for row in target}
    if len(rows) != len(target):
        problems.append("duplicate _id rows in the target")
    expected = {json.dumps(canonical(k)): d for k, d in source.items()}
    for key in sorted(set(expected) - set(rows)):
        problems.append(f"document {key} missing from the target")
    for key in sorted(set(rows) - set(expected)):
        problems.append(f"row {key} in the target is no document of the collection")
    for key in sorted(set(expected) & set(rows)):
        got = rows[key]["payload"]
        want = canonical(expected[key])
        if got is None or json.loads(got) != want:
            problems.append(f"_id {key}: expected {want!r}, got {got!r}")
    return problems


@pytest.mark.slow
def test_kill9_capture_and_pipeline_end_with_the_collection_in_delta(env: MongoEnv) -> None:
    seed = int(os.environ.get("HEADWATER_E2E_SEED", "23"))
    rng = random.Random(seed)
    initial = 1000
    seeding = random.Random(seed + 1)
    env.db.c.insert_many([_doc(seeding, k) for k in range(initial)])
    root = env.tmp / "files"
    config = env.config(_props(
        env, root, **{
            "max.batch.size": 200, "snapshot.fetch.size": 200,
            "signal.data.collection": f"{env.db_name}.signals",
            "incremental.snapshot.chunk.size": 100,
            "headwater.pipeline.source": "datastream-files",
            "headwater.pipeline.datastream.files.dir": str(root),
            "headwater.pipeline.datastream.max.files.per.trigger": 20,
            "headwater.pipeline.delta.path": env.tmp / "delta",
            "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
            "headwater.pipeline.trigger.interval.ms": 500}))
    procs = Procs(env, config)
    workload = Workload(env, seed, initial)
    delta = env.tmp / "delta" / env.db_name / "c"
    try:
        procs.start_capture()
        wait(procs.until(lambda: env.offset().get("snapshot_completed")), "the snapshot",
             120, interval=0.05)
        workload.start()
        procs.start_pipeline()
        # an incremental snapshot interleaved with the kills: its backfill rows, ordered among
        # the change stream's events by their window's position, must not undo a later change
        env.db.signals.insert_one({"_id": "again", "type": "execute-snapshot",
                                   "data": {"data-collections": [f"{env.db_name}.c"]}})
        for _ in range(rng.randint(1, 2)):  # the capture, at random moments of the stream
            time.sleep(rng.uniform(0.5, 3.0))
            procs.alive()
            procs.kill(procs.capture)
            procs.start_capture()
        # the pipeline: once its first batch is in the table, inside or between batches
        wait(procs.until((delta / "_delta_log").is_dir), "the first batch",
             600, interval=0.05)  # a Spark session starts slowly on a loaded machine
        time.sleep(rng.uniform(0.0, 4.0))
        procs.alive()
        procs.kill(procs.pipeline)
        procs.start_pipeline()
        time.sleep(2)
        workload.stop.set()
        workload.join()
        assert workload.error is None, workload.error
        env.db.c.insert_one(_doc(random.Random(0), SENTINEL))  # after every other write
        wait(procs.until(lambda: _has_sentinel(root)), "the capture to catch up", 120,
             interval=0.2)
        procs.kill(procs.capture, signal.SIGTERM)
        procs.kill(procs.pipeline)
        out = subprocess.run(_cli("pipeline", str(config), "--once", "--log-level", "WARNING"),
                             capture_output=True, text=True, timeout=600, check=False)
        assert out.returncode == 0, out.stderr[-3000:]
    finally:
        workload.stop.set()
        procs.stop()
    from headwater.pipeline.delta_target import read_table

    source = {d["_id"]: d for d in env.db.c.find()}
    table = read_table(delta)
    assert table.column_names == ["_id", "payload"]
    problems = compare(source, table.to_pylist())
    assert not problems, (f"{len(problems)} differences after {workload.ops} operations "
                          f"({procs.starts} process starts): " + json.dumps(problems[:20]))
    assert workload.ops > 100
    incremental = [e for e in file_events(root) if e["read_method"] == "mongodb-backfill"
                   and e["sort_keys"][0] != -1]
    assert incremental, "no backfill row of the incremental snapshot"
