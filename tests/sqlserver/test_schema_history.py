"""SQL Server schema history and schema change events, on the CDC EMULATION (not a live server).

The expected values are written from Debezium 3.x's Java: HistoryRecord and
JsonTableChangeSerializer (the history file), EventDispatcher's SchemaChangeEventReceiver,
SchemaFactory and ConnectTableChangeSerializer (the event), SqlServerSnapshotChangeEventSource
(snapshot CREATEs: all tables by default, `ddl` null), SqlServerSchemaChangeEventEmitter
(streamed: `ddl` "N/A"), SqlServerOffsetContext (the position's keys), SqlServerPartition (the
record's `source`).  The column facts (jdbcType, length, scale) are mssql-jdbc's getColumns
values, which could not be checked against a live server here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.model.record import ChangeRecord, SchemaChangeEvent, SnapshotMarker
from headwater.relational.history_file import SchemaHistoryError
from headwater.testing.localpg import wait_for
from tests.sqlserver.conftest import enable_cdc, tsql
from tests.sqlserver.test_emulated_capture import Capture, config

CUSTOMERS = ("CREATE TABLE dbo.customers (id INT NOT NULL PRIMARY KEY, first_name VARCHAR(255) "
             "NOT NULL, email NVARCHAR(255) NULL, balance MONEY NULL, seen DATETIME2(3) NULL)")
NOTES = "CREATE TABLE dbo.notes (id INT NOT NULL PRIMARY KEY, body NVARCHAR(MAX) NULL)"


def column(name: str, jdbc: int, type_name: str, position: int, optional: bool,
           length: int, scale: int | None = None) -> dict[str, Any]:
    """One column as JsonTableChangeSerializer writes it (`scale` only when set)."""
    doc: dict[str, Any] = {"name": name, "jdbcType": jdbc, "typeName": type_name,
                           "typeExpression": type_name, "charsetName": None, "length": length}
    if scale is not None:
        doc["scale"] = scale
    doc.update({"position": position, "optional": optional, "autoIncremented": False,
                "generated": False, "comment": None, "hasDefaultValue": optional,
                "enumValues": []})
    return doc


def as_struct(doc: dict[str, Any]) -> dict[str, Any]:
    """The same column as ConnectTableChangeSerializer puts it in the event."""
    return {"name": doc["name"], "jdbcType": doc["jdbcType"], "nativeType": None,
            "typeName": doc["typeName"], "typeExpression": doc["typeExpression"],
            "charsetName": None, "length": doc["length"], "scale": doc.get("scale"),
            "position": doc["position"], "optional": doc["optional"],
            "autoIncremented": False, "generated": False, "comment": None,
            "defaultValueExpression": None, "enumValues": None}


CUSTOMER_COLUMNS = [
    column("id", 4, "int", 1, False, 10, 0),
    column("first_name", 12, "varchar", 2, False, 255),
    column("email", -9, "nvarchar", 3, True, 255),
    column("balance", 3, "money", 4, True, 19, 4),
    column("seen", 93, "datetime2", 5, True, 23, 3),
]
NOTE_COLUMNS = [column("id", 4, "int", 1, False, 10, 0),
                column("body", -16, "nvarchar", 2, True, 1_073_741_823)]


def all_events(capture: Capture) -> list[Any]:
    return [e for b in list(capture.batches) for e in b.records
            if isinstance(e, (ChangeRecord, SchemaChangeEvent))]


def history(db: dict[str, Any]) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in Path(db["history"]).read_bytes().splitlines()]


def without(record: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in keys}


def test_snapshot_records_a_create_per_table_before_the_reads(
        sqlserver_db: dict[str, Any]) -> None:
    db = sqlserver_db
    name = db["database"]
    tsql(db, CUSTOMERS, NOTES, "INSERT INTO dbo.customers VALUES (1, 'sally', NULL, NULL, NULL)")
    enable_cdc(db, "dbo", "customers")
    capture = Capture(config(db))
    capture.run()
    try:
        wait_for(lambda: len(capture.records()) >= 1, 20, what="the snapshot")
    finally:
        capture.stop()
    events = all_events(capture)
    # Every table of the database (store.only.captured.tables.ddl is false), in TableId order,
    # before the first READ; the READ keeps the snapshot's `first`... `last` marker.
    assert [type(e).__name__ for e in events] == ["SchemaChangeEvent", "SchemaChangeEvent",
                                                  "ChangeRecord"]
    customers, notes, read = events
    lsn = read.position.commit_lsn
    position = {"event_serial_no": 1, "commit_lsn": lsn, "change_lsn": None,
                "snapshot": "INITIAL", "snapshot_completed": False}
    records = history(db)
    assert [without(r, "ts_ms") for r in records] == [
        {"source": {"server": "server1", "database": name}, "position": position,
         "databaseName": name, "schemaName": "dbo",
         "tableChanges": [{"type": "CREATE", "id": f'"{name}"."dbo"."{table}"',
                           "table": {"defaultCharsetName": None, "primaryKeyColumnNames": ["id"],
                                     "columns": columns, "attributes": []},
                           "comment": None}]}
        for table, columns in (("customers", CUSTOMER_COLUMNS), ("notes", NOTE_COLUMNS))]
    assert customers.key == {"databaseName": name}
    assert customers.key_schema.name == "io.debezium.connector.sqlserver.SchemaChangeKey"
    assert customers.value_schema.name == "io.debezium.connector.sqlserver.SchemaChangeValue"
    value = dict(customers.value)
    source, ts_ms = value.pop("source"), value.pop("ts_ms")
    assert ts_ms >= records[0]["ts_ms"]
    assert value == {
        "databaseName": name, "schemaName": "dbo", "ddl": None,
        "tableChanges": [{"type": "CREATE", "id": f'"{name}"."dbo"."customers"', "table": {
            "defaultCharsetName": None, "primaryKeyColumnNames": ["id"],
            "columns": [as_struct(c) for c in CUSTOMER_COLUMNS], "comment": None}}]}
    assert without(source, "version", "ts_ms", "ts_us", "ts_ns") == {
        "connector": "sqlserver", "name": "server1", "snapshot": SnapshotMarker.TRUE,
        "db": name, "sequence": None, "schema": "dbo", "table": "customers",
        "change_lsn": None, "commit_lsn": lsn, "event_serial_no": None}
    assert source["ts_us"] == source["ts_ms"] * 1000
    assert notes.value["source"]["table"] == "notes"
    assert read.snapshot is SnapshotMarker.LAST


def test_store_only_captured_tables_and_no_data(sqlserver_db: dict[str, Any]) -> None:
    """Only the table the filters capture is recorded (with no include list every table is
    captured, as in Debezium); without data the last CREATE is the snapshot's last event and
    streaming starts at the maximum LSN (rows before it are not streamed)."""
    db = sqlserver_db
    tsql(db, CUSTOMERS, NOTES, "INSERT INTO dbo.customers VALUES (1, 'sally', NULL, NULL, NULL)")
    enable_cdc(db, "dbo", "customers")
    tsql(db, "INSERT INTO dbo.customers VALUES (2, 'before', NULL, NULL, NULL)")
    capture = Capture(config(db, **{
        "snapshot.mode": "no_data", "table.include.list": "dbo.customers",
        "schema.history.internal.store.only.captured.tables.ddl": "true"}))
    capture.run()
    try:
        tsql(db, "INSERT INTO dbo.customers VALUES (3, 'after', NULL, NULL, NULL)")
        wait_for(lambda: len(capture.records()) >= 1, 20, what="the insert")
    finally:
        capture.stop()
    events = all_events(capture)
    assert [type(e).__name__ for e in events] == ["SchemaChangeEvent", "ChangeRecord"]
    assert events[0].value["source"]["snapshot"] is SnapshotMarker.LAST
    assert events[1].after[0] == 3
    assert [r["tableChanges"][0]["id"] for r in history(db)] == [
        f'"{db["database"]}"."dbo"."customers"']


def test_alter_sits_between_the_data_events_where_the_new_instance_starts(
        sqlserver_db: dict[str, Any]) -> None:
    db = sqlserver_db
    name = db["database"]
    tsql(db, "CREATE TABLE dbo.items (id INT NOT NULL PRIMARY KEY, a INT NULL)",
         "INSERT INTO dbo.items VALUES (1, 10)")
    enable_cdc(db, "dbo", "items", "dbo_items")
    capture = Capture(config(db))
    capture.run()
    try:
        tsql(db, "INSERT INTO dbo.items VALUES (2, 20)")
        wait_for(lambda: len(capture.records()) >= 2, 20, what="the first insert")
        tsql(db, "ALTER TABLE dbo.items ADD b NVARCHAR(10) NULL",
             "INSERT INTO dbo.items (id, a, b) VALUES (3, 30, 'lost')",
             "UPDATE dbo.items SET a = 11 WHERE id = 1")
        wait_for(lambda: len(capture.records()) >= 4, 20, what="the old instance's changes")
        enable_cdc(db, "dbo", "items", "dbo_items_v2")
        tsql(db, "INSERT INTO dbo.items (id, a, b) VALUES (4, 40, 'kept')")
        wait_for(lambda: len(capture.records()) >= 5, 20, what="the new instance's insert")
    finally:
        capture.stop()
    events = all_events(capture)
    kinds = [e.value["tableChanges"][0]["type"] if isinstance(e, SchemaChangeEvent)
             else e.op.value for e in events]
    assert kinds == ["CREATE", "r", "c", "c", "u", "ALTER", "c"]
    update, alter, insert = events[4], events[5], events[6]
    value = alter.value
    assert (value["databaseName"], value["schemaName"], value["ddl"]) == (name, "dbo", "N/A")
    change = value["tableChanges"][0]
    assert change["id"] == f'"{name}"."dbo"."items"'
    assert [c["name"] for c in change["table"]["columns"]] == ["id", "a", "b"]
    assert change["table"]["columns"][2] == as_struct(column("b", -9, "nvarchar", 3, True, 10))
    source = value["source"]
    assert source["snapshot"] is SnapshotMarker.FALSE and source["table"] == "items"
    # Where the ALTER took effect: after the update (the old instance's last change), before
    # the insert (the new instance's first).
    at = (source["commit_lsn"], source["change_lsn"] or "~")
    assert (update.position.commit_lsn, update.position.change_lsn) <= at
    assert at < (insert.position.commit_lsn, insert.position.change_lsn)
    assert [c.name for c in update.table.columns] == ["id", "a"]
    assert [c.name for c in insert.table.columns] == ["id", "a", "b"]
    records = history(db)
    assert [r["tableChanges"][0]["type"] for r in records] == ["CREATE", "ALTER"]
    assert records[1]["position"] == {"event_serial_no": source["event_serial_no"],
                                      "commit_lsn": source["commit_lsn"],
                                      "change_lsn": source["change_lsn"]}
    assert (records[1]["ddl"], records[1]["schemaName"]) == ("N/A", "dbo")


def test_restart_decodes_pending_old_instance_rows_with_the_recorded_schema(
        sqlserver_db: dict[str, Any]) -> None:
    """Rows of the old capture instance still unread at a restart carry the column the table
    no longer has (dropped since): their definition comes from the history, not the catalog."""
    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, a INT NULL, note NVARCHAR(20) "
         "NULL)", "INSERT INTO dbo.t VALUES (1, 10, 'n1')")
    enable_cdc(db, "dbo", "t", "dbo_t")
    first = Capture(config(db))
    first.run()
    try:
        tsql(db, "INSERT INTO dbo.t VALUES (2, 20, 'n2')")
        wait_for(lambda: len(first.records()) >= 2, 20, what="the first insert")
    finally:
        first.stop()
    offset = first.last_offset()
    tsql(db, "INSERT INTO dbo.t VALUES (3, 30, 'n3')",
         "ALTER TABLE dbo.t DROP COLUMN note", "ALTER TABLE dbo.t ADD b INT NULL",
         "INSERT INTO dbo.t (id, a, b) VALUES (4, 40, 7)")
    enable_cdc(db, "dbo", "t", "dbo_t_v2")
    tsql(db, "INSERT INTO dbo.t (id, a, b) VALUES (5, 50, 8)")
    second = Capture(config(db))
    second.run(offset)
    try:
        wait_for(lambda: len(second.records()) >= 3, 20, what="the pending rows")
    finally:
        second.stop()
    events = all_events(second)
    kinds = [e.value["tableChanges"][0]["type"] if isinstance(e, SchemaChangeEvent)
             else e.op.value for e in events]
    assert kinds == ["c", "c", "ALTER", "c"]
    three, four, alter, five = events
    assert [c.name for c in three.table.columns] == ["id", "a", "note"]
    assert (three.after, four.after) == ((3, 30, "n3"), (4, 40, None))
    assert [c["name"] for c in alter.value["tableChanges"][0]["table"]["columns"]] == [
        "id", "a", "b"]
    assert [c.name for c in five.table.columns] == ["id", "a", "b"]
    assert five.after == (5, 50, 8)

    # The contrast: snapshot.mode=recovery rebuilds the history from today's catalog, which no
    # longer has `note`: the same pending rows then lose it (as Debezium's recovery does).
    third = Capture(config(db, **{"snapshot.mode": "recovery"}))
    third.run(offset)
    try:
        wait_for(lambda: len(third.records()) >= 3, 20, what="the pending rows again")
    finally:
        third.stop()
    rebuilt = third.records()
    assert [c.name for c in rebuilt[0].table.columns] == ["id", "a"]
    assert rebuilt[0].after == (3, 30)


def test_restart_at_the_snapshot_offset_keeps_the_recorded_schema_of_the_instance_it_read(
        sqlserver_db: dict[str, Any]) -> None:
    """A capture instance enabled after the last change starts past the maximum LSN, so a
    snapshot taken then sits before its start.  A restart from that snapshot's offset (a kill
    before any change was streamed) reads the instance's rows with the definition the snapshot
    recorded, as Debezium's current change table does: the instance is not a later schema
    change, and today's catalog (without the dropped `note`) must not replace it."""
    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, a INT NULL, note NVARCHAR(20) "
         "NULL)", "INSERT INTO dbo.t VALUES (1, 10, 'n1')")
    enable_cdc(db, "dbo", "t", "dbo_t")
    first = Capture(config(db))
    first.run()
    first.stop()
    offset = first.last_offset()
    assert offset is not None and offset["snapshot_completed"]
    tsql(db, "INSERT INTO dbo.t VALUES (2, 20, 'n2')", "INSERT INTO dbo.t VALUES (3, 30, 'n3')",
         "ALTER TABLE dbo.t DROP COLUMN note", "ALTER TABLE dbo.t ADD b INT NULL",
         "INSERT INTO dbo.t (id, a, b) VALUES (4, 40, 7)")
    enable_cdc(db, "dbo", "t", "dbo_t_v2")
    tsql(db, "INSERT INTO dbo.t (id, a, b) VALUES (5, 50, 8)")
    second = Capture(config(db))
    second.run(offset)
    try:
        wait_for(lambda: len(second.records()) >= 4, 20, what="the rows after the snapshot")
    finally:
        second.stop()
    events = all_events(second)
    kinds = [e.value["tableChanges"][0]["type"] if isinstance(e, SchemaChangeEvent)
             else e.op.value for e in events]
    assert kinds == ["c", "c", "c", "ALTER", "c"]
    two, three, four, alter, five = events
    assert [c.name for c in two.table.columns] == ["id", "a", "note"]
    assert (two.after, three.after, four.after) == ((2, 20, "n2"), (3, 30, "n3"),
                                                    (4, 40, None))
    assert [c["name"] for c in alter.value["tableChanges"][0]["table"]["columns"]] == [
        "id", "a", "b"]
    assert five.after == (5, 50, 8)
    assert [r["tableChanges"][0]["type"] for r in history(db)] == ["CREATE", "ALTER"]


def test_a_stored_offset_without_its_history_stops_the_start(
        sqlserver_db: dict[str, Any]) -> None:
    """Decoding with today's catalog would be silently wrong for rows written before a schema
    change: the start fails and names the way out (as Debezium's BaseSourceTask does)."""
    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY)")
    enable_cdc(db, "dbo", "t")
    offset = {"snapshot_completed": True, "databases": {db["database"]: {
        "commit_lsn": "00000000:00000000:0000", "change_lsn": None, "event_serial_no": None}}}
    with pytest.raises(SchemaHistoryError, match=r"snapshot\.mode=recovery"):
        Capture(config(db)).connector.start(offset)
    with pytest.raises(SchemaHistoryError, match="there is no stored offset"):
        Capture(config(db, **{"snapshot.mode": "recovery"})).connector.start(None)
    plan = Capture(config(db, **{"snapshot.mode": "recovery"})).connector.start(offset)
    assert plan.snapshot is not None and not plan.data_snapshot
