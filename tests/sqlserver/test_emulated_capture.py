"""The SQL Server connector end to end against the CDC EMULATION (not a live server):
snapshot, then inserts, updates, deletes in LSN order, resume from stored offsets."""

from __future__ import annotations

import threading
from typing import Any

from headwater.connectors.sqlserver.config import validate_sqlserver_config
from headwater.connectors.sqlserver.connector import SqlServerConnector
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, TransactionEvent
from headwater.testing.localpg import wait_for
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


class Capture:
    def __init__(self, cfg: Any) -> None:
        self.batches: list[Batch] = []
        self.stopping = threading.Event()
        self.ctx = SourceRunContext(self.batches.append, self.stopping)
        self.connector = SqlServerConnector(cfg)
        self.thread: threading.Thread | None = None

    def run(self, offset: dict[str, Any] | None = None) -> None:
        plan = self.connector.start(offset)
        if plan.snapshot is not None:
            offset = plan.snapshot.execute(self.ctx)
        assert plan.streaming is not None
        streaming = plan.streaming
        self.thread = threading.Thread(target=streaming.execute, args=(self.ctx, offset))
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        assert self.thread is not None
        self.thread.join(10)

    def records(self) -> list[ChangeRecord]:
        return [e for b in list(self.batches) for e in b.records if isinstance(e, ChangeRecord)]

    def last_offset(self) -> dict[str, Any] | None:
        return next((b.offset for b in reversed(self.batches) if b.offset), None)


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
    assert create.after == (1005, "john", "doe", "john.doe@example.org", None, None)
    assert update.before is not None and update.before[3] == "john.doe@example.org"
    assert update.after is not None and update.after[3] == "noreply@example.org"
    assert delete.before is not None and delete.before[3] == "noreply@example.org"
    assert [r.position.event_serial_no for r in records[1:]] == [1, 2, 1]
    commits = [r.position.commit_lsn for r in records[1:]]
    assert commits == sorted(commits) and len(set(commits)) == 3
    for record in records[1:]:
        assert record.position.change_lsn < record.position.commit_lsn
    tx_events = [e for b in capture.batches for e in b.records
                 if isinstance(e, TransactionEvent)]
    assert [e.status for e in tx_events] == ["BEGIN", "END"] * 3
    assert tx_events[0].id == create.position.commit_lsn


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
