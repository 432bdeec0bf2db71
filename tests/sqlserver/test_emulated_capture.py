"""The SQL Server connector end to end against the CDC EMULATION (not a live server):
snapshot, then inserts, updates, deletes in LSN order, resume from stored offsets."""

from __future__ import annotations

import threading
from typing import Any

from headwater.connectors.sqlserver.config import validate_sqlserver_config
from headwater.connectors.sqlserver.connector import SqlServerConnector
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord
from headwater.testing.localpg import wait_for
from tests.changetables import emulation
from tests.sqlserver.conftest import enable_cdc, tsql

CUSTOMERS = ("CREATE TABLE dbo.customers (id INT NOT NULL PRIMARY KEY, first_name "
             "VARCHAR(255) NOT NULL, last_name VARCHAR(255) NOT NULL, email NVARCHAR(255) NOT "
             "NULL, balance MONEY NULL, seen DATETIME2(3) NULL)")


def config(db: dict[str, Any], **extra: str) -> Any:
    props = {"topic.prefix": "server1", "database.hostname": db["server"],
             "database.port": str(db["port"]), "database.user": db["user"],
             "database.names": db["database"], "poll.interval.ms": "50",
             "headwater.sqlserver.driver": "headwater.testing.sqlserver_emulation.dbapi",
             "schema.history.internal.file.filename": db["history"], **extra}
    return validate_sqlserver_config(props)[0]


class Capture(emulation.Capture):
    def __init__(self, cfg: Any) -> None:
        super().__init__(SqlServerConnector(cfg))


def test_snapshot_then_stream_in_lsn_order(sqlserver_db: dict[str, Any]) -> None:
    db = sqlserver_db
    tsql(db, CUSTOMERS, "INSERT INTO dbo.customers VALUES (1001, 'sally', 'thomas', "
         "'sally@example.com', 12.5, '2020-01-02 03:04:05.678')")
    enable_cdc(db, "dbo", "customers")
    capture = Capture(config(db, **{"provide.transaction.metadata": "true"}))
    capture.run()
    try:
        tsql(db, "INSERT INTO dbo.customers VALUES (1005, 'john', 'doe', "
             "'john.doe@example.org', NULL, NULL)",
             "UPDATE dbo.customers SET email = 'noreply@example.org' WHERE id = 1005",
             "DELETE FROM dbo.customers WHERE id = 1005")
        wait_for(lambda: len(capture.records()) >= 4, 20, what="4 records")
    finally:
        capture.stop()
    records = capture.records()
    assert [r.op.value for r in records] == ["r", "c", "u", "d"]
    read, create, update, delete = records
    assert read.after is not None
    assert read.after == (1001, "sally", "thomas", "sally@example.com", read.after[4],
                          1577934245678)
    emulation.check_insert_update_delete(capture, [create, update, delete])


def test_restart_resumes_after_stored_offset(sqlserver_db: dict[str, Any]) -> None:
    db = sqlserver_db
    tsql(db, CUSTOMERS)
    enable_cdc(db, "dbo", "customers")
    first = Capture(config(db, **{"data.query.mode": "direct"}))
    first.run()
    try:
        tsql(db, "INSERT INTO dbo.customers (id, first_name, last_name, email) "
             "VALUES (1, 'a', 'b', 'c')")
        wait_for(lambda: len(first.records()) >= 1, 20, what="1 record")
    finally:
        first.stop()
    offset = first.last_offset()
    assert offset is not None and offset["snapshot_completed"]
    tsql(db, "UPDATE dbo.customers SET email = 'd' WHERE id = 1",
         "INSERT INTO dbo.customers (id, first_name, last_name, email) VALUES (2, 'x', 'y', 'z')")
    second = Capture(config(db, **{"max.iteration.transactions": "1"}))
    second.run(offset)
    try:
        wait_for(lambda: len(second.records()) >= 2, 20, what="2 records")
    finally:
        second.stop()
    assert [(r.op.value, (r.after or r.before or ())[0]) for r in second.records()] == [
        ("u", 1), ("c", 2)]


def test_a_primary_key_update_is_a_split_update(sqlserver_db: dict[str, Any]) -> None:
    """SQL Server logs an update of a primary-key column as a delete and an insert at one
    __$seqval (operations 1, 2), an update of other columns as 3 and 4: the emulation does the
    same, and the connector emits a delete and a create (no key headers: they are two changes
    to the server, as in Debezium)."""
    import psycopg2

    from headwater.model.record import Op

    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.k (id INT NOT NULL PRIMARY KEY, v INT NULL)",
         "INSERT INTO dbo.k VALUES (1, 1)")
    enable_cdc(db, "dbo", "k")
    capture = Capture(config(db))
    capture.run()
    try:
        wait_for(lambda: len(capture.records()) >= 1, 20, what="the snapshot")
        tsql(db, "UPDATE dbo.k SET v = 2 WHERE id = 1", "UPDATE dbo.k SET id = 5 WHERE id = 1")
        wait_for(lambda: len(capture.records()) >= 4, 20, what="the three changes")
    finally:
        capture.stop()
    assert [(r.op, (r.after or r.before or (None,))[0]) for r in capture.records()] == [
        (Op.READ, 1), (Op.UPDATE, 1), (Op.DELETE, 1), (Op.CREATE, 5)]
    conn = psycopg2.connect(host=db["server"], port=db["port"], user=db["user"],
                            dbname=db["database"])
    try:
        with conn.cursor() as cur:
            cur.execute('SELECT "__$seqval", "__$operation", id FROM cdc."dbo_k_CT" '
                        'ORDER BY "__$start_lsn", "__$seqval", "__$operation"')
            rows = cur.fetchall()
    finally:
        conn.close()
    assert [(op, key) for _seq, op, key in rows] == [(3, 1), (4, 1), (1, 1), (2, 5)]
    assert rows[2][0] == rows[3][0]


def test_a_restart_inside_a_split_update_emits_each_half_once(
        sqlserver_db: dict[str, Any]) -> None:
    """The delete and the insert of a split update share one (commit LSN, change LSN, serial)
    position, so only their ordinal at that position tells them apart on restart: an offset
    stored after the delete must bring back the insert alone, and one stored after the insert
    nothing at all (it used to bring the insert back a second time)."""
    from headwater.model.record import ChangeRecord, Op

    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.k (id INT NOT NULL PRIMARY KEY, v INT NULL)",
         "INSERT INTO dbo.k VALUES (1, 1)")
    enable_cdc(db, "dbo", "k")
    first = Capture(config(db, **{"max.batch.size": "1"}))
    first.run()
    try:
        wait_for(lambda: len(first.records()) >= 1, 20, what="the snapshot")
        tsql(db, "UPDATE dbo.k SET id = 5 WHERE id = 1")
        wait_for(lambda: len(first.records()) >= 3, 20, what="the split update")
    finally:
        first.stop()
    assert [(r.op, (r.after or r.before or (None,))[0]) for r in first.records()] == [
        (Op.READ, 1), (Op.DELETE, 1), (Op.CREATE, 5)]
    mid: dict[Op, dict[str, Any]] = {}
    for batch in first.batches:
        for record in batch.records:
            if (isinstance(record, ChangeRecord) and record.op in (Op.DELETE, Op.CREATE)
                    and batch.offset):
                mid[record.op] = dict(batch.offset)
    after_delete, after_insert = (mid[op]["databases"][db["database"]]
                                  for op in (Op.DELETE, Op.CREATE))
    assert after_delete["change_lsn"] == after_insert["change_lsn"] is not None
    assert after_delete["commit_lsn"] == after_insert["commit_lsn"]

    def restart(offset: dict[str, Any]) -> list[tuple[Op, Any]]:
        again = Capture(config(db))
        again.run(offset)
        try:
            tsql(db, "INSERT INTO dbo.k VALUES (9, 9)")  # a marker after the split update
            wait_for(lambda: any((r.after or (None,))[0] == 9 for r in again.records()), 20,
                     what="the marker insert")
        finally:
            again.stop()
        tsql(db, "DELETE FROM dbo.k WHERE id = 9")
        return [(r.op, (r.after or r.before or (None,))[0]) for r in again.records()
                if (r.after or r.before or (None,))[0] != 9]

    assert restart(mid[Op.DELETE]) == [(Op.CREATE, 5)]
    assert restart(mid[Op.CREATE]) == []


def test_snapshot_markers_are_debeziums_per_table(sqlserver_db: dict[str, Any]) -> None:
    """Debezium 3.x's RelationalSnapshotChangeEventSource markers, whatever max.batch.size
    cuts: `first`, a table's last row `last_in_data_collection` (also after an empty table),
    the next table's first `first_in_data_collection`, the snapshot's last `last`."""
    db = sqlserver_db
    tsql(db, *(f"CREATE TABLE dbo.{t} (id INT NOT NULL PRIMARY KEY)" for t in "abc"),
         "INSERT INTO dbo.a VALUES (1), (2)", "INSERT INTO dbo.c VALUES (3), (4), (5)")
    for t in "abc":
        enable_cdc(db, "dbo", t)
    plan = SqlServerConnector(config(db, **{"max.batch.size": "2"})).start(None)
    assert plan.snapshot is not None
    batches: list[Batch] = []
    offset = plan.snapshot.execute(SourceRunContext(batches.append, threading.Event()))
    reads = [(r.table.id.table, r.after[0] if r.after else None, r.snapshot.value)
             for b in batches for r in b.records if isinstance(r, ChangeRecord)]
    assert reads == [("a", 1, "first"), ("a", 2, "last_in_data_collection"),
                     ("c", 3, "first_in_data_collection"), ("c", 4, "true"), ("c", 5, "last")]
    assert offset is not None and batches[-1].offset == offset
