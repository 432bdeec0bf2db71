"""MariaDB-specific connector scenarios against a real server: snapshot and stream (source
block), restarts (also in the middle of a transaction), DDL, schema history, purged binlogs.
Hand-over, key changes and truncates: tests/conformance."""

from __future__ import annotations

import shutil
from typing import Any

import orjson
import pytest

from headwater.testing.replay import events, replay
from headwater.topics import reader
from tests.record_json import json_of

from .conftest import MariaEnv, wait_for

pytestmark = pytest.mark.integration

CUSTOMERS = """
CREATE TABLE customers (
  id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
  first_name VARCHAR(255) NOT NULL,
  last_name VARCHAR(255) NOT NULL,
  email VARCHAR(255) NOT NULL UNIQUE KEY
) AUTO_INCREMENT=1001"""


def count(env: MariaEnv, table: str) -> int:
    topic = env.topic(table)
    return sum(t.record_count for t in reader.list_topics(env.topics) if t.name == topic)


def values(env: MariaEnv, table: str) -> list[Any]:
    return [v for _, _, v in events(env.topics, env.topic(table))]


def source_rows(env: MariaEnv, table: str, key: str = "id") -> dict[Any, dict[str, Any]]:
    with env.conn.cursor() as cur:
        cur.execute(f"SELECT * FROM `{table}`")
        names = [d[0] for d in cur.description]
        return {row[names.index(key)]: dict(zip(names, row, strict=True))
                for row in cur.fetchall()}


def replayed(env: MariaEnv, table: str, key: str = "id") -> dict[Any, dict[str, Any]]:
    return {dict(k)[key]: row for k, row in replay(env.topics, env.topic(table)).items()}


def schema_change_schemas(env: MariaEnv, connector: str) -> None:
    """Every schema change record's key and value schemas are Debezium 3.x's (SchemaFactory:
    named after the connector, version 1, the connector's source block, no `attributes`)."""
    records = list(reader.read(env.topics, env.prefix, from_offset=0))
    assert records
    for rec in records:
        assert rec.key is not None and rec.value is not None
        key, value = orjson.loads(rec.key)["schema"], orjson.loads(rec.value)["schema"]
        assert (key["name"], key["version"]) == (
            f"io.debezium.connector.{connector}.SchemaChangeKey", 1)
        assert (value["name"], value["version"]) == (
            f"io.debezium.connector.{connector}.SchemaChangeValue", 1)
        fields = {f["field"]: f for f in value["fields"]}
        assert fields["source"]["name"] == f"io.debezium.connector.{connector}.Source"
        table = fields["tableChanges"]["items"]["fields"][2]
        assert [f["field"] for f in table["fields"]] == [
            "defaultCharsetName", "primaryKeyColumnNames", "columns", "comment"]


def test_snapshot_then_stream(menv: MariaEnv) -> None:
    menv.sql(CUSTOMERS)
    menv.sql("INSERT INTO customers (first_name, last_name, email) VALUES "
             "('Sally','Thomas','sally@example.com'), ('George','Bailey','gb@example.com'), "
             "('Edward','Walker','ed@walker.com')")
    cap = menv.capture()
    try:
        wait_for(lambda: count(menv, "customers") >= 3, what="3 snapshot events")
        menv.sql("INSERT INTO customers (first_name, last_name, email) "
                 "VALUES ('Anne','Kretchmar','annek@noanswer.org')")
        menv.sql("UPDATE customers SET first_name = 'Anne Marie' WHERE id = 1004")
        menv.sql("DELETE FROM customers WHERE id = 1002")
        wait_for(lambda: count(menv, "customers") >= 3 + 4, what="streamed events")
    finally:
        cap.stop()
    evs = list(events(menv.topics, menv.topic("customers")))
    vals = [v for _, _, v in evs]
    reads = [v for v in vals if v and v["op"] == "r"]
    assert [v["after"]["id"] for v in reads] == [1001, 1002, 1003]
    assert [v["source"]["snapshot"] for v in reads] == ["first", "true", "last"]
    snap = reads[0]["source"]
    assert all((v["source"]["file"], v["source"]["pos"]) == (snap["file"], snap["pos"])
               for v in reads)
    create, update, delete, tomb = vals[3:]
    assert tomb is None and evs[-1][1] == {"id": 1002}
    assert [create["op"], update["op"], delete["op"]] == ["c", "u", "d"]
    assert create["before"] is None
    assert create["after"] == {"id": 1004, "first_name": "Anne", "last_name": "Kretchmar",
                               "email": "annek@noanswer.org"}
    assert update["before"]["first_name"] == "Anne"  # FULL row image: before is complete
    assert update["after"]["first_name"] == "Anne Marie"
    assert delete["before"]["email"] == "gb@example.com" and delete["after"] is None
    positions = []
    for v in (create, update, delete):
        src = v["source"]
        assert src["connector"] == "mysql" and src["name"] == menv.prefix
        assert src["db"] == menv.db and src["table"] == "customers"
        assert src["snapshot"] == "false" and src["server_id"] == 1
        assert src["gtid"] is not None and src["gtid"].startswith("0-1-")
        # MariaDB starts transactions with a GTID event, not a BEGIN query carrying the
        # thread id: thread stays null.
        assert src["thread"] is None and src["row"] == 0
        assert src["ts_ms"] > 0 and src["query"] is None
        positions.append((int(src["file"].rsplit(".", 1)[1]), src["pos"]))
    assert positions == sorted(positions) and positions[0] > (
        int(snap["file"].rsplit(".", 1)[1]), snap["pos"] - 1)
    assert replayed(menv, "customers") == {
        1001: {"id": 1001, "first_name": "Sally", "last_name": "Thomas",
               "email": "sally@example.com"},
        1003: {"id": 1003, "first_name": "Edward", "last_name": "Walker",
               "email": "ed@walker.com"},
        1004: {"id": 1004, "first_name": "Anne Marie", "last_name": "Kretchmar",
               "email": "annek@noanswer.org"},
    }
    # The key schema is Debezium's <prefix>.<db>.<table>.Key.
    raw_key = json_of(evs[0][0].key)
    assert raw_key["schema"]["name"] == f"{menv.prefix}.{menv.db}.customers.Key"


def test_schema_change_topic_and_ddl_mid_stream(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20))")
    menv.sql("INSERT INTO items VALUES (1, 'one')")
    cap = menv.capture()
    try:
        wait_for(lambda: count(menv, "items") >= 1, what="snapshot")
        menv.sql("ALTER TABLE items ADD COLUMN price DECIMAL(10,2) NOT NULL DEFAULT 0 AFTER id")
        menv.sql("INSERT INTO items VALUES (2, 9.50, 'two')")
        menv.sql("ALTER TABLE items DROP COLUMN name")
        menv.sql("UPDATE items SET price = 1.25 WHERE id = 1")
        menv.sql("RENAME TABLE items TO goods")
        menv.sql("INSERT INTO goods VALUES (3, 3.00)")
        wait_for(lambda: count(menv, "goods") >= 1, what="events of the renamed table")
    finally:
        cap.stop()
    items = values(menv, "items")
    assert [v["op"] for v in items] == ["r", "c", "u"]
    assert items[1]["after"] == {"id": 2, "price": "9.50", "name": "two"} or \
        items[1]["after"]["name"] == "two"
    assert set(items[2]["after"]) == {"id", "price"}
    assert values(menv, "goods")[0]["after"]["id"] == 3
    ddl = [v for _, _, v in events(menv.topics, menv.prefix)]
    statements = [v["ddl"] for v in ddl]
    assert any("CREATE TABLE" in s and "items" in s for s in statements)
    assert any("ADD COLUMN price" in s for s in statements)
    assert any("DROP COLUMN name" in s for s in statements)
    assert any("RENAME TABLE items TO goods" in s for s in statements)
    alter = next(v for v in ddl if "ADD COLUMN price" in v["ddl"])
    assert alter["databaseName"] == menv.db
    assert alter["source"]["snapshot"] == "false" and alter["source"]["file"]
    change = alter["tableChanges"][0]
    assert change["type"] == "ALTER"
    assert [c["name"] for c in change["table"]["columns"]] == ["id", "price", "name"]
    assert "attributes" not in change["table"]
    schema_change_schemas(menv, "mysql")


def test_restart_neither_loses_nor_repeats(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    menv.sql("INSERT INTO t VALUES (1, 1), (2, 2)")
    cap = menv.capture()
    wait_for(lambda: count(menv, "t") >= 2, what="snapshot")
    menv.sql("INSERT INTO t VALUES (3, 3)")
    wait_for(lambda: count(menv, "t") >= 3, what="stream")
    cap.stop()
    menv.sql("INSERT INTO t VALUES (4, 4)")
    menv.sql("UPDATE t SET v = 40 WHERE id = 4")
    menv.sql("ALTER TABLE t ADD COLUMN extra VARCHAR(5) DEFAULT 'x'")
    menv.sql("INSERT INTO t VALUES (5, 5, 'y')")
    cap = menv.capture()
    try:
        wait_for(lambda: count(menv, "t") >= 6, what="events after restart")
        # Events are written before their offset: past the last insert, the topic is final.
        last = values(menv, "t")[-1]["source"]
        wait_for(lambda: menv.offset_passed(last), what="the offset past the last insert")
    finally:
        cap.stop()
    vals = values(menv, "t")
    assert [(v["op"], (v["after"] or v["before"])["id"]) for v in vals] == [
        ("r", 1), ("r", 2), ("c", 3), ("c", 4), ("u", 4), ("c", 5)]
    assert vals[-1]["after"] == {"id": 5, "v": 5, "extra": "y"}
    assert replayed(menv, "t")[4] == {"id": 4, "v": 40}


def test_restart_in_the_middle_of_a_multi_row_event(menv: MariaEnv) -> None:
    """An offset pointing inside a transaction (event/row counters) resumes at that row."""
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(50))")
    cap = menv.capture({"max.batch.size": 100, "max.queue.size": 1000})
    try:
        wait_for(menv.snapshot_completed, what="the snapshot completed")
        with menv.conn.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("INSERT INTO t SELECT seq, REPEAT('a', 40) FROM seq_1_to_3000")
            cur.execute("UPDATE t SET v = 'b' WHERE id <= 1500")
            cur.execute("COMMIT")
        wait_for(lambda: count(menv, "t") >= 4500, what="the big transaction")
    finally:
        cap.stop()
    vals = values(menv, "t")
    assert len(vals) == 4500
    # Rows of one event share (file, pos) and are numbered by `row`.
    first = vals[0]["source"]
    multi = [v for v in vals if v["source"]["pos"] == first["pos"]]
    assert len(multi) > 10 and [v["source"]["row"] for v in multi] == list(range(len(multi)))
    # Replay from a crafted offset: the transaction's start, two events and 7 rows done.
    stored = orjson.loads(menv.offsets.read_bytes())
    offset = stored["offset"]
    assert offset["gtids"].startswith("0-1-") and offset["event"] == offset["row"] == 0
    events_seen: list[tuple[int, int]] = []
    for v in vals:
        key = (v["source"]["pos"], v["source"]["row"])
        if not events_seen or events_seen[-1][0] != key[0]:
            events_seen.append((key[0], 0))
    target_event = 2
    target_row = 7
    expected_first = next(
        v for v in vals
        if v["source"]["pos"] == events_seen[target_event][0] and v["source"]["row"] == target_row
    )
    gtid = vals[0]["source"]["gtid"]
    domain, server, seq = gtid.split("-")
    before = f"{domain}-{server}-{int(seq) - 1}"
    crafted = dict(offset)
    crafted.update({"gtids": before, "event": target_event, "row": target_row})
    shutil.rmtree(menv.topics)
    menv.offsets.write_bytes(orjson.dumps({**stored, "offset": crafted}))
    cap = menv.capture({"max.batch.size": 100, "max.queue.size": 1000})
    try:
        remaining = len(vals) - vals.index(expected_first)
        wait_for(lambda: count(menv, "t") >= remaining, what="rows after the crafted offset")
        # Events are written before their offset: past the transaction, the topic is final.
        wait_for(lambda: menv.offset_passed(vals[-1]["source"]),
                 what="the offset past the big transaction")
    finally:
        cap.stop()
    again = values(menv, "t")
    assert len(again) == remaining
    assert again[0]["source"]["pos"] == expected_first["source"]["pos"]
    assert again[0]["source"]["row"] == target_row
    assert again == vals[vals.index(expected_first):] or [
        (v["op"], v["after"], v["before"]) for v in again
    ] == [(v["op"], v["after"], v["before"]) for v in vals[vals.index(expected_first):]]


def test_purged_binlog_stops_with_a_clear_error_or_resnapshots(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO t VALUES (1)")
    cap = menv.capture()
    wait_for(lambda: count(menv, "t") >= 1, what="snapshot")
    cap.stop()
    root = menv.server.connect()
    with root.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        menv.sql("INSERT INTO t VALUES (2)")
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW MASTER STATUS")
        current = cur.fetchone()[0]
        stored = orjson.loads(menv.offsets.read_bytes())["offset"]["file"]

        def purged() -> bool:
            # MariaDB keeps files its binlog checkpoint still needs: retry until it lets go.
            cur.execute(f"PURGE BINARY LOGS TO '{current}'")
            cur.execute("SHOW BINARY LOGS")
            return stored not in {row[0] for row in cur.fetchall()}

        wait_for(purged, timeout=30, interval=0.5, what=f"{stored} purged")
    root.close()
    cap = menv.capture()
    cap.thread.join(60)
    with pytest.raises(Exception, match=r"no longer available.*when_needed"):
        cap.stop()
    cap = menv.capture({"snapshot.mode": "when_needed"})
    try:
        wait_for(lambda: sum(1 for v in values(menv, "t") if v and v["op"] == "r") >= 3,
                 what="a new snapshot")
    finally:
        cap.stop()
    assert set(replayed(menv, "t")) == {1, 2}


def test_no_data_snapshot_streams_only_new_changes(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO t VALUES (1)")
    cap = menv.capture({"snapshot.mode": "no_data"})
    try:
        wait_for(menv.snapshot_completed, what="the schema snapshot completed")
        menv.sql("INSERT INTO t VALUES (2)")
        wait_for(lambda: count(menv, "t") >= 1, what="the streamed insert")
    finally:
        cap.stop()
    assert [(v["op"], v["after"]["id"]) for v in values(menv, "t")] == [("c", 2)]


def test_missing_history_is_an_error_that_says_what_to_do(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    cap = menv.capture()
    wait_for(menv.snapshot_completed, what="the snapshot completed")
    cap.stop()
    menv.history.unlink()
    cap = menv.capture()
    cap.thread.join(60)
    with pytest.raises(Exception, match=r"schema history .* missing.*recovery"):
        cap.stop()
    menv.sql("INSERT INTO t VALUES (7)")
    cap = menv.capture({"snapshot.mode": "recovery"})
    try:
        wait_for(lambda: count(menv, "t") >= 1, what="streaming after recovery")
    finally:
        cap.stop()
    assert values(menv, "t")[-1]["after"] == {"id": 7}


def test_include_query_puts_the_statement_in_source(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    cap = menv.capture({"include.query": "true"})
    try:
        wait_for(menv.snapshot_completed, what="the snapshot completed")
        menv.sql("INSERT INTO t VALUES (1, 10), (2, 20)")
        menv.sql("UPDATE t SET v = v + 1 WHERE id = 2")
        wait_for(lambda: count(menv, "t") >= 3, what="events")
    finally:
        cap.stop()
    queries = [v["source"]["query"] for v in values(menv, "t")]
    assert queries == ["INSERT INTO t VALUES (1, 10), (2, 20)"] * 2 + [
        "UPDATE t SET v = v + 1 WHERE id = 2"]


@pytest.mark.parametrize("locking", ["extended", "none"])
def test_snapshot_locking_modes(menv: MariaEnv, locking: str) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO t SELECT seq FROM seq_1_to_500")
    cap = menv.capture({"snapshot.locking.mode": locking})
    try:
        wait_for(menv.snapshot_completed, what="the snapshot completed")
        menv.sql("INSERT INTO t VALUES (501)")
        wait_for(lambda: count(menv, "t") >= 501, what="stream after the snapshot")
    finally:
        cap.stop()
    vals = values(menv, "t")
    assert [v["op"] for v in vals].count("r") == 500 and vals[-1]["op"] == "c"
    assert set(replayed(menv, "t")) == set(range(1, 502))
    offset = orjson.loads(menv.offsets.read_bytes())["offset"]
    # Without a lock the GTID set at the snapshot point cannot be read consistently: the
    # offsets then resume by file and position, also after streaming.
    assert ("gtids" in offset) == (locking == "extended")


def test_heartbeats_on_an_idle_database(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    cap = menv.capture({"heartbeat.interval.ms": 200})
    topic = f"__debezium-heartbeat.{menv.prefix}"
    try:
        wait_for(lambda: any(t.name == topic and t.record_count >= 3
                             for t in reader.list_topics(menv.topics)), what="3 heartbeats")
    finally:
        cap.stop()
    beats = [v for _, _, v in events(menv.topics, topic)]
    assert all(isinstance(b["ts_ms"], int) for b in beats)


def test_initial_only_and_never(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO t VALUES (1)")
    cap = menv.capture({"snapshot.mode": "initial_only"})
    cap.thread.join(60)
    cap.stop()
    assert [v["op"] for v in values(menv, "t")] == ["r"]
    # never: no snapshot, the binlog from its oldest file (which holds this test's DDL too).
    shutil.rmtree(menv.topics)
    menv.offsets.unlink()
    menv.history.unlink()
    cap = menv.capture({"snapshot.mode": "never"})
    try:
        wait_for(lambda: count(menv, "t") >= 1, timeout=60, what="the binlog's insert")
    finally:
        cap.stop()
    assert [(v["op"], v["after"]["id"]) for v in values(menv, "t")] == [("c", 1)]


def test_restart_before_a_recorded_ddl_replays_it_once(menv: MariaEnv) -> None:
    """Offsets older than the history's last DDL (a crash between the two writes): the DDL
    is re-read from the binlog, decoded rows use the right definition on both sides of it,
    and the history keeps one record of it."""
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY, a INT)")
    cap = menv.capture()
    try:
        wait_for(menv.snapshot_completed, what="the snapshot completed")
        menv.sql("INSERT INTO t VALUES (1, 1)")
        wait_for(lambda: count(menv, "t") >= 1, what="first insert")
        first = values(menv, "t")[0]["source"]
        wait_for(lambda: menv.offset_passed(first), what="the offset past the first insert")
        early = menv.offsets.read_bytes()
        menv.sql("ALTER TABLE t ADD COLUMN b VARCHAR(5) DEFAULT 'z'")
        menv.sql("INSERT INTO t VALUES (2, 2, 'x')")
        wait_for(lambda: count(menv, "t") >= 2, what="insert after the DDL")
    finally:
        cap.stop()
    history_lines = menv.history.read_bytes().count(b"\n")
    menv.offsets.write_bytes(early)
    cap = menv.capture()
    try:
        menv.sql("INSERT INTO t VALUES (3, 3, 'y')")
        wait_for(lambda: count(menv, "t") >= 4, what="re-read and new events")
    finally:
        cap.stop()
    assert menv.history.read_bytes().count(b"\n") == history_lines
    after = [v["after"] for v in values(menv, "t")]
    assert after == [{"id": 1, "a": 1}, {"id": 2, "a": 2, "b": "x"},
                     {"id": 2, "a": 2, "b": "x"}, {"id": 3, "a": 3, "b": "y"}]


def test_mariadb_connector_class_names_itself_in_source(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO t VALUES (1)")
    cap = menv.capture({"connector.class": "io.debezium.connector.mariadb.MariaDbConnector"})
    try:
        wait_for(lambda: count(menv, "t") >= 1, what="snapshot")
        menv.sql("INSERT INTO t VALUES (2)")
        wait_for(lambda: count(menv, "t") >= 2, what="stream")
    finally:
        cap.stop()
    assert [v["source"]["connector"] for v in values(menv, "t")] == ["mariadb", "mariadb"]
    ddl = [v for _, _, v in events(menv.topics, menv.prefix)]
    assert ddl and all(v["source"]["connector"] == "mariadb" for v in ddl)
    schema_change_schemas(menv, "mariadb")


def test_skipped_updates_still_emit_a_key_change_as_delete_and_create(menv: MariaEnv) -> None:
    """skipped.operations applies to each emitted operation (the dispatcher): with u skipped,
    a key-changing update still emits its delete and create (MySQL used to drop it whole)."""
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    cap = menv.capture({"skipped.operations": "u"})
    try:
        wait_for(menv.snapshot_completed, what="the snapshot completed")
        menv.sql("INSERT INTO t VALUES (1, 10)")
        menv.sql("UPDATE t SET v = 11 WHERE id = 1")
        menv.sql("UPDATE t SET id = 2 WHERE id = 1")
        menv.sql("INSERT INTO t VALUES (3, 30)")
        wait_for(lambda: count(menv, "t") >= 5, what="events")  # with the tombstone
    finally:
        cap.stop()
    vals = [v for v in values(menv, "t") if v is not None]
    assert [v["op"] for v in vals] == ["c", "d", "c", "c"]
    assert vals[1]["before"] == {"id": 1, "v": 11} and vals[2]["after"] == {"id": 2, "v": 11}


def test_ddl_under_ansi_quotes_is_read_as_the_server_ran_it(menv: MariaEnv) -> None:
    """A session with sql_mode ANSI_QUOTES writes `CREATE TABLE "q" ("id" ...)` to the binlog;
    its QUERY event carries the mode, and the statement must be parsed with it (double
    quotes as identifiers), both while streaming and when the schema history is replayed
    after a restart."""
    menv.sql("CREATE TABLE seed (id INT PRIMARY KEY)")
    cap = menv.capture()
    try:
        wait_for(menv.snapshot_completed, what="snapshot")
        with menv.server.connect(menv.db) as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_mode = 'ANSI_QUOTES'")
            cur.execute('CREATE TABLE "q" ("id" INT PRIMARY KEY, "v" VARCHAR(10) '
                        "DEFAULT 'd')")
            cur.execute("SET SESSION sql_mode = 'ANSI'")
            cur.execute('ALTER TABLE "q" ADD COLUMN "w" INT')
        menv.sql("INSERT INTO q VALUES (1, 'one', 10)")
        wait_for(lambda: count(menv, "q") >= 1, what="the row of the ANSI-quoted table")
    finally:
        cap.stop()
    menv.sql("INSERT INTO q VALUES (2, 'two', 20)")
    cap = menv.capture()  # recovers the history: the ANSI statements replayed as such
    try:
        wait_for(lambda: count(menv, "q") >= 2, what="the row after the restart")
    finally:
        cap.stop()
    assert [v["after"] for v in values(menv, "q")] == [
        {"id": 1, "v": "one", "w": 10}, {"id": 2, "v": "two", "w": 20}]
    recorded = [orjson.loads(line) for line in menv.history.read_bytes().splitlines()]
    ansi = [r for r in recorded if r.get("ansiQuotes")]
    assert [r["ddl"].split()[0] for r in ansi] == ["CREATE", "ALTER"], recorded
    assert all("ansiQuotes" not in r for r in recorded if '"q"' not in r["ddl"])


def test_snapshot_of_a_server_whose_global_sql_mode_has_ansi_quotes(menv: MariaEnv) -> None:
    """Such a server prints SHOW CREATE TABLE with double-quoted names; the snapshot reads
    them as names (the session's mode says how), and the stream after it goes on."""
    menv.sql("CREATE TABLE a (id INT PRIMARY KEY, `select` VARCHAR(5) DEFAULT 'x')")
    menv.sql("INSERT INTO a VALUES (1, 'one')")
    (mode,), = menv.sql("SELECT @@GLOBAL.sql_mode")
    menv.sql("SET GLOBAL sql_mode = 'ANSI_QUOTES,STRICT_TRANS_TABLES'")
    try:
        cap = menv.capture()
        try:
            wait_for(lambda: count(menv, "a") >= 1, what="the snapshot's row")
            menv.sql("INSERT INTO a VALUES (2, 'two')")
            wait_for(lambda: count(menv, "a") >= 2, what="the streamed row")
        finally:
            cap.stop()
    finally:
        menv.sql("SET GLOBAL sql_mode = %s", (mode,))
    assert [(v["op"], v["after"]) for v in values(menv, "a")] == [
        ("r", {"id": 1, "select": "one"}), ("c", {"id": 2, "select": "two"})]
