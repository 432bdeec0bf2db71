"""Datastream events end to end from a real PostgreSQL: backfill then WAL events written as
JSON and Avro files, every field checked; kill -9 of a capture writing files, then a restart:
no partial file visible, every row present, re-deliveries only with identical uuids."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastavro import reader

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration

STREAM = "projects/hw/locations/local/streams/pg-orders"


def files_config(env: Env, fmt: str, **extra: Any) -> dict[str, Any]:
    return {"headwater.event.format": "datastream", "headwater.datastream.stream.name": STREAM,
            "headwater.destination": "files",
            "headwater.destination.files.dir": str(env.tmp / "files"),
            "headwater.destination.files.format": fmt,
            "headwater.destination.files.max.ms": 300, **extra}


def read_events(env: Env) -> list[dict[str, Any]]:
    base = env.tmp / "files" / "pg-orders"
    out: list[dict[str, Any]] = []
    for path in sorted(base.rglob("*")) if base.exists() else []:
        if not path.is_file():
            continue
        assert not path.name.startswith("."), f"temporary file visible: {path}"
        if path.suffix == ".avro":
            with path.open("rb") as fh:
                out.extend(dict(r) for r in reader(fh))  # type: ignore[arg-type]
        else:
            out.extend(orjson.loads(line) for line in path.read_bytes().splitlines())
    return out


def _lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def _setup(env: Env) -> None:
    env.sql("CREATE TABLE orders (id int PRIMARY KEY, note text, amount numeric(10,2), "
            "placed timestamp, paid timestamptz, day date, blob bytea, doc jsonb, ok boolean)")
    env.sql("INSERT INTO orders VALUES (1, 'first', 12.30, '2024-01-02 03:04:05.123456', "
            "'2024-01-02 03:04:05+00', '2024-01-02', '\\x0001', '{\"a\": 1}', true)")


def _changes(env: Env) -> int:
    env.sql("BEGIN")
    txid = int(env.sql("SELECT txid_current()")[0][0])
    env.sql("INSERT INTO orders (id, note, amount) VALUES (2, 'second', 1.5)")
    env.sql("COMMIT")
    env.sql("UPDATE orders SET note = 'changed' WHERE id = 1")
    env.sql("UPDATE orders SET id = 3 WHERE id = 2")  # a primary-key change
    env.sql("DELETE FROM orders WHERE id = 1")
    return txid


def test_json_files_every_field_from_a_real_capture(env: Env) -> None:
    _setup(env)
    cap = env.capture(files_config(env, "json"))
    try:
        wait_for(lambda: len(read_events(env)) >= 1, what="backfill file", timeout=60)
        txid = _changes(env)
        wait_for(lambda: len(read_events(env)) >= 6, what="WAL events", timeout=60)
    finally:
        cap.stop()
    events = read_events(env)
    back, ins, upd, key_del, key_ins, dele = sorted(events, key=lambda e: e["sort_keys"])
    assert len(events) == 6
    assert {e["stream_name"] for e in events} == {STREAM}
    assert {e["object"] for e in events} == {"public_orders"}
    assert len({e["schema_key"] for e in events}) == 1
    assert len({e["uuid"] for e in events}) == 6
    assert back["read_method"] == "postgresql-backfill"
    assert back["source_metadata"] == {
        "schema": "public", "table": "orders", "is_deleted": False, "change_type": "INSERT",
        "tx_id": None, "lsn": None, "primary_keys": ["id"]}
    assert back["payload"] == {
        "id": 1, "note": "first", "amount": 12.3, "placed": "2024-01-02T03:04:05.123456",
        "paid": "2024-01-02T03:04:05.000000Z", "day": "2024-01-02", "blob": "AAE=",
        "doc": {"a": 1}, "ok": True}
    assert [e["read_method"] for e in (ins, upd, key_del, key_ins, dele)] == [
        "postgres-cdc-wal"] * 5
    assert [(e["source_metadata"]["change_type"], e["source_metadata"]["is_deleted"],
             e["payload"]["id"]) for e in (ins, upd, key_del, key_ins, dele)] == [
        ("INSERT", False, 2), ("UPDATE", False, 1), ("DELETE", True, 2), ("INSERT", False, 3),
        ("DELETE", True, 1)]
    assert ins["source_metadata"]["tx_id"] == str(txid)
    assert upd["payload"]["note"] == "changed" and upd["payload"]["doc"] == {"a": 1}
    lsns = [_lsn(e["source_metadata"]["lsn"]) for e in (ins, upd, key_del, dele)]
    assert lsns == sorted(lsns)
    assert ins["sort_keys"][1] == _lsn(ins["source_metadata"]["lsn"])
    for e in events:
        assert e["read_timestamp"].endswith("Z") and e["source_timestamp"].endswith("Z")
    # the folder is the event's source minute
    stamp = ins["source_timestamp"]
    minute = f"{stamp[:4]}/{stamp[5:7]}/{stamp[8:10]}/{stamp[11:13]}/{stamp[14:16]}"
    assert list((env.tmp / "files" / "pg-orders" / "public_orders").glob(f"{minute}/*.jsonl"))


def test_avro_files_from_a_real_capture(env: Env) -> None:
    _setup(env)
    cap = env.capture(files_config(env, "avro"))
    try:
        wait_for(lambda: len(read_events(env)) >= 1, what="backfill file", timeout=60)
        _changes(env)
        wait_for(lambda: len(read_events(env)) >= 6, what="WAL events", timeout=60)
    finally:
        cap.stop()
    events = sorted(read_events(env), key=lambda e: e["sort_keys"])
    back = events[0]
    assert back["read_method"] == "postgresql-backfill"
    payload = back["payload"]
    assert payload["amount"] == Decimal("12.30")
    # Google's tables: timestamp is TIMESTAMP (timestamp-micros), timestamptz the timestampTz
    # record {timestamp, offset} (was DATETIME and a plain timestamp-micros)
    assert payload["placed"].isoformat() == "2024-01-02T03:04:05.123456+00:00"
    assert payload["paid"]["timestamp"].isoformat() == "2024-01-02T03:04:05+00:00"
    assert payload["paid"]["offset"].isoformat() == "00:00:00"
    assert payload["blob"] == b"\x00\x01" and payload["doc"] == '{"a": 1}'
    assert [e["source_metadata"]["change_type"] for e in events[1:]] == [
        "INSERT", "UPDATE", "DELETE", "INSERT", "DELETE"]


def _start(config: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _final_state(events: list[dict[str, Any]]) -> dict[int, int]:
    """Per key the event with the greatest sort_keys (duplicates by uuid dropped)."""
    latest: dict[int, dict[str, Any]] = {}
    for e in {e["uuid"]: e for e in events}.values():
        key = e["payload"]["id"]
        if key not in latest or e["sort_keys"] > latest[key]["sort_keys"]:
            latest[key] = e
    return {k: e["payload"]["ver"] for k, e in latest.items()
            if not e["source_metadata"]["is_deleted"]}


@pytest.mark.slow
def test_kill_minus_nine_then_restart_loses_nothing(env: Env) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver bigint NOT NULL)")
    env.sql("ALTER TABLE t REPLICA IDENTITY FULL")
    env.sql("INSERT INTO t SELECT g, 0 FROM generate_series(1, 500) g")
    config = env.config(files_config(env, "json", **{"headwater.destination.files.max.ms": 200,
                                                     "max.batch.size": 64}))
    rng = random.Random(5)
    ver = 0
    for cycle in range(3):
        proc = _start(config)
        if cycle == 0:
            # The backfill must end once: a backfill killed in every cycle is redone from the
            # start, and rows it wrote that were deleted meanwhile stay in the files (as they
            # would in Datastream's), which is not what this test is about.
            wait_for(lambda: len(read_events(env)) >= 500, timeout=120, what="the backfill")
        deadline = time.monotonic() + rng.uniform(1.0, 2.5)
        while time.monotonic() < deadline:
            ver += 1
            key = rng.randint(1, 600)
            if rng.random() < 0.15:
                env.sql("DELETE FROM t WHERE id = %s", (key,))
            else:
                env.sql("INSERT INTO t VALUES (%s, %s) ON CONFLICT (id) DO UPDATE "
                        "SET ver = EXCLUDED.ver", (key, ver))
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        read_events(env)  # every visible file is complete (JSON lines parse), none hidden
    want = dict((int(k), int(v)) for k, v in env.sql("SELECT id, ver FROM t"))
    cap = env.capture(files_config(env, "json", **{"headwater.destination.files.max.ms": 200}))
    try:
        wait_for(lambda: _final_state(read_events(env)) == want, timeout=90,
                 what="files to catch up with the table")
    finally:
        cap.stop()
    events = read_events(env)
    assert _final_state(events) == want
    by_uuid: dict[str, bytes] = {}
    by_place: dict[tuple[Any, ...], str] = {}
    for e in events:
        body = orjson.dumps({k: v for k, v in e.items() if k != "read_timestamp"},
                            option=orjson.OPT_SORT_KEYS)
        # a re-delivered event is identical, uuid included
        assert by_uuid.setdefault(e["uuid"], body) == body
        place = (e["object"], tuple(e["sort_keys"]), e["payload"]["id"])
        assert by_place.setdefault(place, e["uuid"]) == e["uuid"]
    assert not list((env.tmp / "files" / ".inflight").iterdir())
