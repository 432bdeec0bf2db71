"""PostgreSQL connector features against a real server: heartbeats, replica identities, TOAST,
schema changes.  Truncates and transaction metadata: tests/conformance."""

from __future__ import annotations

import time
from typing import Any

import pytest

from headwater.testing.replay import events
from headwater.topics import reader
from tests.record_json import json_of

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration


def count(env: Env, topic: str) -> int:
    return sum(t.record_count for t in reader.list_topics(env.topics) if t.name == topic)


def table_events(env: Env, table: str) -> list[tuple[Any, Any, Any]]:
    return list(events(env.topics, f"{env.prefix}.public.{table}"))


def lsn(text: str) -> int:
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def test_heartbeats_advance_the_slot_on_an_idle_captured_database(env: Env) -> None:
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY)")
    env.pg.create_database(env.db + "_busy")
    busy = env.pg.connect(env.db + "_busy")
    busy.cursor().execute("CREATE TABLE noise (id serial, pad text)")
    cap = env.capture({"heartbeat.interval.ms": 200,
                       "heartbeat.action.query": "SELECT 1"})
    try:
        wait_for(lambda: cap.runtime.metrics.connected, what="streaming")

        def confirmed() -> int:
            rows = env.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                           "WHERE slot_name = %s", (env.slot,))
            return lsn(rows[0][0])

        start = confirmed()
        busy.cursor().execute("INSERT INTO noise (pad) SELECT repeat('x', 500) "
                              "FROM generate_series(1, 20000)")
        target = lsn(env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0])
        wait_for(lambda: confirmed() >= target, timeout=30,
                 what="slot confirmed past the other database's writes")
        assert confirmed() > start
        # The heartbeat stores that position too, so a restart resumes past the noise.
        wait_for(lambda: int((cap.runtime.offsets.load() or {}).get("lsn", 0)) >= target,
                 timeout=30, what="heartbeat offset stored")
        assert count(env, f"__debezium-heartbeat.{env.prefix}") >= 1
    finally:
        cap.stop()
        busy.close()
    hb = list(events(env.topics, f"__debezium-heartbeat.{env.prefix}"))
    assert hb[0][1] == {"serverName": env.prefix} and isinstance(hb[0][2]["ts_ms"], int)


@pytest.mark.parametrize(
    ("identity", "update_before", "delete_before"),
    [
        ("FULL", {"id": 1, "v": "a", "n": 1}, {"id": 1, "v": "b", "n": 1}),
        ("DEFAULT", None, {"id": 1, "v": "", "n": 0}),
    ],
)
def test_replica_identity_before_images(
    env: Env, identity: str, update_before: Any, delete_before: Any
) -> None:
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY, v text NOT NULL, n int NOT NULL)")
    env.sql(f"ALTER TABLE t REPLICA IDENTITY {identity}")
    env.sql("INSERT INTO t VALUES (1, 'a', 1)")
    cap = env.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("UPDATE t SET v = 'b' WHERE id = 1")
        env.sql("DELETE FROM t WHERE id = 1")
        wait_for(lambda: count(env, f"{env.prefix}.public.t") >= 4, what="events")
    finally:
        cap.stop()
    evs = [v for _, _, v in table_events(env, "t") if v]
    assert evs[1]["op"] == "u" and evs[1]["before"] == update_before
    assert evs[2]["op"] == "d" and evs[2]["before"] == delete_before


@pytest.mark.parametrize("setup", [
    "CREATE TABLE public.t (id int PRIMARY KEY, v text); ALTER TABLE t REPLICA IDENTITY NOTHING",
    "CREATE TABLE public.t (id int, v text)",
])
def test_tables_whose_updates_cannot_carry_a_key_are_warned_about(
    env: Env, setup: str, caplog: pytest.LogCaptureFixture
) -> None:
    env.sql(setup)
    env.sql("INSERT INTO t VALUES (1, 'a')")
    with caplog.at_level("WARNING", logger="headwater.connectors.postgres"):
        cap = env.capture()
        try:
            wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        finally:
            cap.stop()
    warnings = [r.getMessage() for r in caplog.records if "REPLICA IDENTITY" in r.getMessage()]
    assert warnings and "public.t" in warnings[0] and "FULL" in warnings[0]


def test_replica_identity_index_keys_a_table_without_primary_key(env: Env) -> None:
    env.sql("CREATE TABLE public.t (code text NOT NULL, v int)")
    env.sql("CREATE UNIQUE INDEX t_code ON t (code)")
    env.sql("ALTER TABLE t REPLICA IDENTITY USING INDEX t_code")
    cap = env.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("INSERT INTO t VALUES ('x', 1)")
        env.sql("DELETE FROM t WHERE code = 'x'")
        wait_for(lambda: count(env, f"{env.prefix}.public.t") >= 3, what="events")
    finally:
        cap.stop()
    evs = table_events(env, "t")
    assert evs[0][1] == {"code": "x"} and evs[1][1] == {"code": "x"}
    assert evs[1][2]["before"] == {"code": "x", "v": None}
    assert evs[2][2] is None  # tombstone


def test_unchanged_toast_gets_the_placeholder(env: Env) -> None:
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY, big text, n int)")
    env.sql("ALTER TABLE t ALTER COLUMN big SET STORAGE EXTERNAL")  # no compression: toasted
    cap = env.capture({"unavailable.value.placeholder": "__unavailable"})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("INSERT INTO t VALUES (1, repeat('x', 20000), 1)")
        env.sql("UPDATE t SET n = 2 WHERE id = 1")
        wait_for(lambda: count(env, f"{env.prefix}.public.t") >= 2, what="events")
    finally:
        cap.stop()
    create, update = (v for _, _, v in table_events(env, "t"))
    assert create["after"]["big"] == "x" * 20000
    assert update["after"] == {"id": 1, "big": "__unavailable", "n": 2}


def test_schema_changes_mid_stream(env: Env) -> None:
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY, a text, b int)")
    cap = env.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("INSERT INTO t VALUES (1, 'one', 1)")
        env.sql("ALTER TABLE t ADD COLUMN c numeric(5,2)")
        env.sql("INSERT INTO t VALUES (2, 'two', 2, 1.5)")
        env.sql("ALTER TABLE t DROP COLUMN b")
        env.sql("INSERT INTO t VALUES (3, 'three', 2.5)")
        env.sql("ALTER TABLE t RENAME COLUMN a TO title")
        env.sql("INSERT INTO t VALUES (4, 'four', 3.5)")
        env.sql("ALTER TABLE t ALTER COLUMN title TYPE varchar(20)")
        env.sql("INSERT INTO t VALUES (5, 'five', 4.5)")
        wait_for(lambda: count(env, f"{env.prefix}.public.t") >= 5, what="events")
        time.sleep(0.2)
    finally:
        cap.stop()
    values = []
    for rec in reader.read(env.topics, f"{env.prefix}.public.t"):
        doc = json_of(rec.value)
        after_schema = next(f for f in doc["schema"]["fields"] if f["field"] == "after")
        values.append(([f["field"] for f in after_schema["fields"]], doc["payload"]["after"]))
    assert [v[0] for v in values] == [
        ["id", "a", "b"], ["id", "a", "b", "c"], ["id", "a", "c"], ["id", "title", "c"],
        ["id", "title", "c"]]
    assert values[1][1]["c"] == "AJY="  # 1.50 as Connect Decimal (unscaled 150)
    assert values[4][1]["title"] == "five"


def test_skipped_updates_still_emit_a_key_change_as_delete_and_create(env: Env) -> None:
    """skipped.operations per emitted operation, as in Debezium 3.x and the MySQL connector."""
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY, v int)")
    cap = env.capture({"skipped.operations": "u,t"})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("INSERT INTO t VALUES (1, 10)")
        env.sql("UPDATE t SET v = 11 WHERE id = 1")
        env.sql("UPDATE t SET id = 2 WHERE id = 1")
        env.sql("INSERT INTO t VALUES (3, 30)")
        wait_for(lambda: count(env, f"{env.prefix}.public.t") >= 5, what="events")
    finally:
        cap.stop()
    evs = [v for _, _, v in table_events(env, "t") if v is not None]
    assert [v["op"] for v in evs] == ["c", "d", "c", "c"]
    assert evs[2]["after"] == {"id": 2, "v": 11}
    assert cap.runtime.metrics.events_filtered == 1
