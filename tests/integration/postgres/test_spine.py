"""The spine against a real PostgreSQL: snapshot, streaming, hand-over, key changes, restarts."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from headwater.testing.replay import events, replay
from headwater.topics import reader

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration

CUSTOMERS = """
CREATE TABLE public.customers (
  id SERIAL PRIMARY KEY,
  first_name VARCHAR(255) NOT NULL,
  last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE
)"""


def topic_events(env: Env, table: str) -> list[tuple[Any, Any, Any]]:
    return list(events(env.topics, f"{env.prefix}.public.{table}"))


def count(env: Env, table: str) -> int:
    topic = f"{env.prefix}.public.{table}"
    return sum(t.record_count for t in reader.list_topics(env.topics) if t.name == topic)


def test_snapshot_then_stream(env: Env) -> None:
    env.sql(CUSTOMERS)
    env.sql("INSERT INTO customers (first_name, last_name, email) VALUES "
            "('Sally','Thomas','sally@example.com'), ('George','Bailey','gb@example.com'), "
            "('Edward','Walker','ed@walker.com')")
    cap = env.capture()
    try:
        wait_for(lambda: count(env, "customers") >= 3, what="3 snapshot events")
        env.sql("INSERT INTO customers (first_name, last_name, email) "
                "VALUES ('Anne','Kretchmar','annek@noanswer.org')")
        env.sql("UPDATE customers SET first_name = 'Anne Marie' WHERE id = 4")
        env.sql("DELETE FROM customers WHERE id = 2")
        wait_for(lambda: count(env, "customers") >= 3 + 4, what="streamed events")
    finally:
        cap.stop()
    evs = topic_events(env, "customers")
    values = [v for _, _, v in evs]
    reads = [v for v in values if v and v["op"] == "r"]
    assert [v["after"]["id"] for v in reads] == [1, 2, 3]
    assert [v["source"]["snapshot"] for v in reads] == ["first", "true", "last"]
    snap_lsn = reads[0]["source"]["lsn"]
    assert all(v["source"]["lsn"] == snap_lsn for v in reads)

    streamed = values[3:]
    assert [v["op"] if v else None for v in streamed] == ["c", "u", "d", None]
    create, update, delete, tomb = streamed
    assert create["before"] is None
    assert create["after"] == {"id": 4, "first_name": "Anne", "last_name": "Kretchmar",
                               "email": "annek@noanswer.org"}
    assert update["before"] is None  # REPLICA IDENTITY DEFAULT, key unchanged: no old tuple
    assert update["after"]["first_name"] == "Anne Marie"
    assert delete["after"] is None
    # REPLICA IDENTITY DEFAULT delete: key present, NOT NULL columns get Debezium's fallback.
    assert delete["before"] == {"id": 2, "first_name": "", "last_name": "", "email": ""}
    assert evs[-1][1] == {"id": 2} and tomb is None
    lsns = [v["source"]["lsn"] for v in (create, update, delete)]
    assert lsns == sorted(lsns) and lsns[0] >= snap_lsn
    for v in (create, update, delete):
        src = v["source"]
        assert src["snapshot"] == "false"
        assert src["connector"] == "postgresql" and src["name"] == env.prefix
        assert src["db"] == env.db and src["schema"] == "public" and src["table"] == "customers"
        assert isinstance(src["txId"], int) and src["ts_ms"] > 0
    assert replay(env.topics, f"{env.prefix}.public.customers") == {
        (("id", 1),): {"id": 1, "first_name": "Sally", "last_name": "Thomas",
                       "email": "sally@example.com"},
        (("id", 3),): {"id": 3, "first_name": "Edward", "last_name": "Walker",
                       "email": "ed@walker.com"},
        (("id", 4),): {"id": 4, "first_name": "Anne Marie", "last_name": "Kretchmar",
                       "email": "annek@noanswer.org"},
    }


def test_primary_key_change_emits_delete_tombstone_create(env: Env) -> None:
    env.sql(CUSTOMERS)
    env.sql("INSERT INTO customers VALUES (1, 'A', 'B', 'a@b')")
    cap = env.capture()
    try:
        wait_for(lambda: count(env, "customers") >= 1, what="snapshot")
        env.sql("UPDATE customers SET id = 100 WHERE id = 1")
        wait_for(lambda: count(env, "customers") >= 4, what="key change events")
    finally:
        cap.stop()
    evs = topic_events(env, "customers")[1:]
    (r1, k1, v1), (_, k2, v2), (r3, k3, v3) = evs
    assert (v1["op"], k1) == ("d", {"id": 1})
    assert v1["before"]["id"] == 1
    assert (k2, v2) == ({"id": 1}, None)
    assert (v3["op"], k3) == ("c", {"id": 100})
    assert v3["after"] == {"id": 100, "first_name": "A", "last_name": "B", "email": "a@b"}
    # SimpleHeaderConverter text of the key struct (a Connect worker's default).
    assert dict(r1.headers)["__debezium.newkey"] == b'{"id":100}'
    assert dict(r3.headers)["__debezium.oldkey"] == b'{"id":1}'


def test_table_without_key_has_null_key(env: Env) -> None:
    env.sql("CREATE TABLE public.log (msg text)")
    env.sql("ALTER TABLE public.log REPLICA IDENTITY FULL")
    env.sql("INSERT INTO log VALUES ('one')")
    cap = env.capture()
    try:
        wait_for(lambda: count(env, "log") >= 1, what="snapshot")
        env.sql("DELETE FROM log")
        wait_for(lambda: count(env, "log") >= 2, what="delete")
    finally:
        cap.stop()
    evs = topic_events(env, "log")
    # Debezium 3.x sends the delete's tombstone for a keyless table too (null key and value).
    assert [(k, v is None) for _, k, v in evs] == [(None, False), (None, False), (None, True)]
    assert evs[1][2]["op"] == "d" and evs[1][2]["before"] == {"msg": "one"}


def test_writes_during_snapshot_are_neither_lost_nor_misordered(env: Env) -> None:
    env.sql("CREATE TABLE public.items (id int PRIMARY KEY, n int NOT NULL, pad text)")
    env.sql("INSERT INTO items SELECT g, 0, repeat('x', 200) FROM generate_series(1, 60000) g")
    stop = threading.Event()
    writes = [0]

    def writer() -> None:
        conn = env.pg.connect(env.db)
        cur = conn.cursor()
        i = 0
        while not stop.is_set():
            i += 1
            k = (i * 7919) % 60000 + 1
            cur.execute("UPDATE items SET n = n + 1 WHERE id = %s", (k,))
            if i % 10 == 0:
                cur.execute("INSERT INTO items VALUES (%s, 0, 'new')", (60000 + i,))
            if i % 15 == 0:
                cur.execute("DELETE FROM items WHERE id = %s", ((i * 31) % 60000 + 1,))
            writes[0] = i
        conn.close()

    t = threading.Thread(target=writer)
    t.start()
    cap = env.capture({"max.batch.size": 512, "max.queue.size": 2048,
                       "snapshot.fetch.size": 1024})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, timeout=120, what="snapshot")
        time.sleep(1.0)
        stop.set()
        t.join()
        final = {r[0]: r[1] for r in env.sql("SELECT id, n FROM items")}
        total = env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0]
        hi, lo = total.split("/")
        target = (int(hi, 16) << 32) | int(lo, 16)

        def caught_up() -> bool:
            off = cap.runtime.offsets.load() or {}
            return int(off.get("lsn", 0)) >= target or _replayed_equal(env, final)

        wait_for(caught_up, timeout=120, what="capture caught up with the writer")
    finally:
        cap.stop()
    assert writes[0] > 100, "the writer did not run concurrently with the snapshot"
    assert _replayed_equal(env, final)
    # Per key, snapshot reads precede stream events, and stream events are in commit order.
    seen_stream: set[int] = set()
    last_commit: dict[int, int] = {}
    for _, key, value in topic_events(env, "items"):
        if value is None:
            continue
        k = key["id"]
        if value["op"] == "r":
            assert k not in seen_stream, f"read for key {k} after a streamed change"
            continue
        seen_stream.add(k)
        seq = value["source"]["sequence"]
        assert seq is not None
        lsn = value["source"]["lsn"]
        assert lsn >= last_commit.get(k, 0)
        last_commit[k] = lsn


def _replayed_equal(env: Env, final: dict[int, int]) -> bool:
    table = replay(env.topics, f"{env.prefix}.public.items")
    got = {k[0][1]: row["n"] for k, row in table.items()}
    return got == final


def test_restart_resumes_without_loss_or_duplicates(env: Env) -> None:
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY, v text)")
    env.sql("INSERT INTO t VALUES (1, 'a')")
    cap = env.capture()
    wait_for(lambda: count(env, "t") >= 1, what="snapshot")
    env.sql("INSERT INTO t VALUES (2, 'b')")
    wait_for(lambda: count(env, "t") >= 2, what="first stream event")
    cap.stop()
    env.sql("INSERT INTO t VALUES (3, 'c')")  # while stopped
    cap = env.capture()
    try:
        wait_for(lambda: count(env, "t") >= 3, what="event made while stopped")
        env.sql("UPDATE t SET v = 'z' WHERE id = 1")
        wait_for(lambda: count(env, "t") >= 4, what="event after restart")
        time.sleep(0.5)
    finally:
        cap.stop()
    ops = [(v["op"], k["id"]) for _, k, v in topic_events(env, "t") if v]
    assert ops == [("r", 1), ("c", 2), ("c", 3), ("u", 1)]  # no second snapshot, no repeats


def slot_confirmed(env: Env) -> int:
    row = env.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                  "WHERE slot_name = %s", (env.slot,))[0][0]
    hi, lo = row.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def stored_lsn(cap: Any) -> int:
    return int((cap.runtime.offsets.load() or {})["lsn"])


def test_slot_confirmed_flush_follows_durable_offsets(env: Env) -> None:
    """The slot confirms the durable position, at most one byte below it (the confirmation
    stays below the start of the last message, the Commit at the stored end LSN, so that
    psycopg2 never forwards it), and never past it."""
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY)")
    cap = env.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("INSERT INTO t SELECT generate_series(1, 1000)")
        wait_for(lambda: count(env, "t") >= 1000, what="stream")
        wait_for(lambda: slot_confirmed(env) >= stored_lsn(cap) - 1,
                 what="slot confirmed the durable position")
        assert stored_lsn(cap) - 1 <= slot_confirmed(env) <= stored_lsn(cap)
    finally:
        cap.stop()


def test_slot_stays_at_durable_offset_while_other_databases_write(env: Env) -> None:
    """Keepalives carrying a WAL end past the stored offset (another database writes) must not
    move the slot: psycopg2 forwards the flush position to that WAL end when what we confirmed
    reaches the start of the last message, and a slot ahead of the stored offset fails the
    next start's log position check once its restart_lsn follows (PostgreSQL 17+ persists
    that at a shutdown checkpoint)."""
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY)")
    env.pg.create_database(env.db + "_busy")
    busy = env.pg.connect(env.db + "_busy")
    busy.cursor().execute("CREATE TABLE noise (id serial, pad text)")
    cap = env.capture({"status.update.interval.ms": 200})
    try:
        wait_for(lambda: cap.runtime.metrics.connected, what="streaming")
        env.sql("INSERT INTO t VALUES (1)")
        wait_for(lambda: count(env, "t") >= 1, what="stream")
        wait_for(lambda: slot_confirmed(env) >= stored_lsn(cap) - 1, what="slot confirmed")
        first = stored_lsn(cap)
        end = time.monotonic() + 4  # several keepalives and psycopg2 status updates
        while time.monotonic() < end:
            busy.cursor().execute("INSERT INTO noise (pad) SELECT repeat('x', 200) "
                                  "FROM generate_series(1, 500)")
            time.sleep(0.1)
            slot = slot_confirmed(env)  # first: the stored offset only grows
            assert slot <= stored_lsn(cap)
        # The other database kept the server's position moving: the offsets (no event, no
        # heartbeat) only follow a position that stood still, so they stayed where they were.
        assert stored_lsn(cap) == first
    finally:
        cap.stop()
        busy.close()
    assert slot_confirmed(env) <= stored_lsn(cap)  # nor at the final feedback


def test_initial_only_snapshots_and_stops(env: Env) -> None:
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY)")
    env.sql("INSERT INTO t SELECT generate_series(1, 10)")
    cap = env.capture({"snapshot.mode": "initial_only"})
    cap.thread.join(60)
    assert not cap.thread.is_alive()
    assert cap.error is None
    assert count(env, "t") == 10


def test_no_data_streams_without_snapshot(env: Env) -> None:
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY)")
    env.sql("INSERT INTO t SELECT generate_series(1, 10)")
    cap = env.capture({"snapshot.mode": "no_data"})
    try:
        wait_for(lambda: cap.runtime.metrics.connected, what="streaming")
        env.sql("INSERT INTO t VALUES (11)")
        wait_for(lambda: count(env, "t") >= 1, what="stream event")
    finally:
        cap.stop()
    assert [(v["op"], k["id"]) for _, k, v in topic_events(env, "t")] == [("c", 11)]


def test_dropped_slot_fails_clearly(env: Env) -> None:
    env.sql("CREATE TABLE public.t (id int PRIMARY KEY)")
    cap = env.capture()
    wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
    env.sql("INSERT INTO t VALUES (1)")
    wait_for(lambda: count(env, "t") >= 1, what="stream event")
    cap.stop()
    env.drop_slot()
    from .conftest import Capture

    cap = Capture(env.config())
    with pytest.raises(Exception, match="does not exist"):
        cap.runtime.run()
