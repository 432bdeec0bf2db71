"""Db2 schema history and schema change events, on the ASN EMULATION (not a live Db2).

Expected values from Debezium 3.x's Java: Db2SnapshotChangeEventSource (a CREATE per captured
table, `ddl` null, `databaseName` the snapshot's catalog), Db2SchemaChangeEventEmitter
(streamed: `ddl` "N/A", `databaseName` the table id's empty catalog), Db2Partition (`source`
{"server"}), Db2OffsetContext (a snapshot position without change LSN and serial number),
HistoryRecord / JsonTableChangeSerializer.  The column facts are db2jcc's getColumns values
(REAL 24, DECIMAL(p,s) p and s, VARCHAR(n) n from Db2ConnectorIT; the rest unverified).

Debezium's schema change procedure for Db2 is ASNCDC.REMOVETABLE, ALTER TABLE, ASNCDC.ADDTABLE:
the re-registered table gets a new CD table and CD_NEW_SYNCHPOINT, where its new definition
takes over.  Until then a CD table keeps the columns it was created with, whatever the catalog
says since, and so does the definition its rows are decoded with - across restarts too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from headwater.model.record import ChangeRecord, SchemaChangeEvent, SnapshotMarker
from headwater.testing.localpg import wait_for
from tests.db2.conftest import add_table, sql
from tests.db2.test_emulated_capture import Capture, config, setup_customers


def column(name: str, jdbc: int, type_name: str, position: int, optional: bool,
           length: int, scale: int | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "jdbcType": jdbc, "typeName": type_name,
                           "typeExpression": type_name, "charsetName": None, "length": length}
    if scale is not None:
        doc["scale"] = scale
    doc.update({"position": position, "optional": optional, "autoIncremented": False,
                "generated": False, "comment": None, "hasDefaultValue": optional,
                "enumValues": []})
    return doc


CUSTOMER_COLUMNS = [
    column("ID", 4, "INTEGER", 1, False, 10, 0),
    column("FIRST_NAME", 12, "VARCHAR", 2, False, 255),
    column("LAST_NAME", 12, "VARCHAR", 3, False, 255),
    column("EMAIL", 12, "VARCHAR", 4, False, 255),
    column("BALANCE", 3, "DECIMAL", 5, True, 10, 2),
    column("SEEN", 93, "TIMESTAMP", 6, True, 23, 3),
]


def all_events(capture: Capture) -> list[Any]:
    return [e for b in list(capture.batches) for e in b.records
            if isinstance(e, (ChangeRecord, SchemaChangeEvent))]


def history(db: dict[str, Any]) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in Path(db["history"]).read_bytes().splitlines()]


def kind(event: Any) -> str:
    if isinstance(event, SchemaChangeEvent):
        return str(event.value["tableChanges"][0]["type"])
    return str(event.op.value)


def test_snapshot_records_a_create_per_captured_table(db2_db: dict[str, Any]) -> None:
    db = db2_db
    setup_customers(db)
    capture = Capture(config(db))
    capture.run()
    try:
        wait_for(lambda: len(capture.records()) >= 1, 20, what="the snapshot")
    finally:
        capture.stop()
    events = all_events(capture)
    assert [kind(e) for e in events] == ["CREATE", "r"]
    create, read = events
    lsn = read.position.commit_lsn
    table = {"defaultCharsetName": None, "primaryKeyColumnNames": ["ID"],
             "columns": CUSTOMER_COLUMNS, "attributes": []}
    records = history(db)
    assert [{k: v for k, v in r.items() if k != "ts_ms"} for r in records] == [{
        "source": {"server": "db2server"},
        "position": {"commit_lsn": lsn, "snapshot": "INITIAL", "snapshot_completed": False},
        "databaseName": db["database"], "schemaName": "DB2INST1",
        "tableChanges": [{"type": "CREATE", "id": '"DB2INST1"."CUSTOMERS"', "table": table,
                          "comment": None}]}]
    assert create.key == {"databaseName": db["database"]}
    assert create.value_schema.name == "io.debezium.connector.db2.SchemaChangeValue"
    value = create.value
    assert (value["databaseName"], value["schemaName"], value["ddl"]) == (
        db["database"], "DB2INST1", None)
    change = value["tableChanges"][0]
    assert (change["type"], change["id"]) == ("CREATE", '"DB2INST1"."CUSTOMERS"')
    assert [c["name"] for c in change["table"]["columns"]] == [c["name"] for c in
                                                                CUSTOMER_COLUMNS]
    source = value["source"]
    assert (source["connector"], source["snapshot"], source["db"], source["schema"],
            source["table"], source["change_lsn"], source["commit_lsn"]) == (
        "db2", SnapshotMarker.TRUE, db["database"], "DB2INST1", "CUSTOMERS", None, lsn)
    assert "event_serial_no" not in source


def test_rows_keep_the_cd_tables_columns_until_the_table_is_registered_again(
        db2_db: dict[str, Any]) -> None:
    db = db2_db
    setup_customers(db)
    first = Capture(config(db))
    first.run()
    try:
        sql(db, "ALTER TABLE db2inst1.customers ADD COLUMN phone VARCHAR(20)",
            "INSERT INTO db2inst1.customers (id, first_name, last_name, email, phone) "
            "VALUES (2, 'a', 'b', 'c', '555')")
        wait_for(lambda: len(first.records()) >= 2, 20, what="the insert")
    finally:
        first.stop()
    offset = first.last_offset()
    two = first.records()[1]
    assert [c.name for c in two.table.columns] == [c["name"] for c in CUSTOMER_COLUMNS]
    sql(db, "INSERT INTO db2inst1.customers (id, first_name, last_name, email, phone) "
        "VALUES (3, 'd', 'e', 'f', '556')")
    second = Capture(config(db))
    second.run(offset)  # the catalog has PHONE now; the CD table (and the history) do not
    try:
        wait_for(lambda: len(second.records()) >= 1, 20, what="the pending insert")
        sql(db, "SELECT ASNCDC.REMOVETABLE('DB2INST1', 'CUSTOMERS')")
        add_table(db, "DB2INST1", "CUSTOMERS")
        sql(db, "INSERT INTO db2inst1.customers (id, first_name, last_name, email, phone) "
            "VALUES (4, 'g', 'h', 'i', '557')")
        wait_for(lambda: len(second.records()) >= 2, 20, what="the re-registered insert")
    finally:
        second.stop()
    events = all_events(second)
    assert [kind(e) for e in events] == ["c", "ALTER", "c"]
    three, alter, four = events
    assert three.after == (3, "d", "e", "f", None, None)
    assert four.after == (4, "g", "h", "i", None, None, "557")
    value = alter.value
    assert (value["databaseName"], value["schemaName"], value["ddl"]) == ("", "DB2INST1",
                                                                          "N/A")
    assert alter.key == {"databaseName": ""}
    columns = value["tableChanges"][0]["table"]["columns"]
    assert columns[-1]["name"] == "PHONE" and columns[-1]["position"] == 7
    source = value["source"]
    assert three.position.commit_lsn <= source["commit_lsn"] < four.position.commit_lsn
    records = history(db)
    assert [r["tableChanges"][0]["type"] for r in records] == ["CREATE", "ALTER"]
    position = records[1]["position"]  # a stream's offset: the serial number is in it
    assert list(position) == ["event_serial_no", "commit_lsn", "change_lsn"]
    assert (position["commit_lsn"], position["change_lsn"]) == (source["commit_lsn"],
                                                                source["change_lsn"])
    assert records[1]["databaseName"] == "" and records[1]["ddl"] == "N/A"
