"""The Db2 connector end to end against the ASN EMULATION (not a live Db2): snapshot in the
seed's seven steps, then inserts, updates, deletes in commit order, resume from stored
offsets."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from headwater.connectors.db2.config import validate_db2_config
from headwater.connectors.db2.connector import Db2Connector
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord
from headwater.relational.snapshot import SNAPSHOT_STEPS
from headwater.testing.localpg import wait_for
from tests.changetables import emulation
from tests.db2.conftest import add_table, sql

CUSTOMERS = ("CREATE TABLE db2inst1.customers (id INTEGER NOT NULL PRIMARY KEY, first_name "
             "VARCHAR(255) NOT NULL, last_name VARCHAR(255) NOT NULL, email VARCHAR(255) NOT "
             "NULL, balance DECIMAL(10,2), seen TIMESTAMP(3))")


def config(db: dict[str, Any], **extra: str) -> Any:
    props = {"topic.prefix": "db2server", "database.hostname": db["host"],
             "database.port": str(db["port"]), "database.user": db["user"],
             "database.dbname": db["database"], "poll.interval.ms": "50",
             "headwater.db2.driver": "headwater.testing.db2_emulation.dbapi",
             "schema.history.internal.file.filename": db["history"], **extra}
    return validate_db2_config(props)[0]


class Capture(emulation.Capture):
    def __init__(self, cfg: Any) -> None:
        super().__init__(Db2Connector(cfg))


def setup_customers(db: dict[str, Any]) -> None:
    sql(db, "CREATE SCHEMA db2inst1", CUSTOMERS,
        "INSERT INTO db2inst1.customers VALUES (1001, 'sally', 'thomas', "
        "'sally@example.com', 12.5, '2020-01-02 03:04:05.678')")
    add_table(db, "DB2INST1", "CUSTOMERS")


def test_snapshot_steps_are_logged_in_the_seeds_order(db2_db: dict[str, Any],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    setup_customers(db2_db)
    caplog.set_level(logging.INFO, logger="headwater.connectors.db2")
    plan = Db2Connector(config(db2_db)).start(None)
    assert plan.snapshot is not None
    batches: list[Batch] = []
    offset = plan.snapshot.execute(SourceRunContext(batches.append, threading.Event()))
    steps = [r.getMessage() for r in caplog.records
             if r.getMessage().startswith("snapshot step ")]
    named = [next(i for i, s in enumerate(SNAPSHOT_STEPS, 1)
                  if m.startswith(f"snapshot step {i}/7: {s}")) for m in steps
             if "done" not in m]
    assert named == [1, 2, 3, 4, 5, 6, 7]
    assert offset is not None and offset["snapshot_completed"]
    reads = [r for b in batches for r in b.records if isinstance(r, ChangeRecord)]
    assert [r.op.value for r in reads] == ["r"]
    assert reads[0].position.commit_lsn == offset["commit_lsn"]
    assert reads[0].position.change_lsn is None


def test_snapshot_then_stream_in_commit_order(db2_db: dict[str, Any]) -> None:
    db = db2_db
    setup_customers(db)
    capture = Capture(config(db, **{"provide.transaction.metadata": "true"}))
    capture.run()
    try:
        sql(db, "INSERT INTO db2inst1.customers VALUES (1005, 'john', 'doe', "
            "'john.doe@example.org', NULL, NULL)",
            "UPDATE db2inst1.customers SET email = 'noreply@example.org' WHERE id = 1005",
            "DELETE FROM db2inst1.customers WHERE id = 1005")
        wait_for(lambda: len(capture.records()) >= 4, 20, what="4 records")
    finally:
        capture.stop()
    records = capture.records()
    assert [r.op.value for r in records] == ["r", "c", "u", "d"]
    read, create, update, delete = records
    assert read.table.id.schema == "DB2INST1" and read.table.id.table == "CUSTOMERS"
    assert [c.name for c in read.table.columns] == [
        "ID", "FIRST_NAME", "LAST_NAME", "EMAIL", "BALANCE", "SEEN"]
    assert read.after is not None and read.after[5] == 1577934245678
    assert read.position.commit_lsn < create.position.commit_lsn
    emulation.check_insert_update_delete(capture, [create, update, delete])


def test_restart_resumes_after_stored_offset(db2_db: dict[str, Any]) -> None:
    db = db2_db
    setup_customers(db)
    first = Capture(config(db, **{"snapshot.mode": "no_data"}))
    first.run()
    try:
        sql(db, "INSERT INTO db2inst1.customers (id, first_name, last_name, email) "
            "VALUES (1, 'a', 'b', 'c')")
        wait_for(lambda: len(first.records()) >= 1, 20, what="1 record")
    finally:
        first.stop()
    offset = first.last_offset()
    assert offset is not None and offset["snapshot_completed"]
    sql(db, "UPDATE db2inst1.customers SET email = 'd' WHERE id = 1",
        "INSERT INTO db2inst1.customers (id, first_name, last_name, email) "
        "VALUES (2, 'x', 'y', 'z')")
    second = Capture(config(db, **{"db2.platform": "ZOS"}))
    second.run(offset)
    try:
        wait_for(lambda: len(second.records()) >= 2, 20, what="2 records")
    finally:
        second.stop()
    assert [(r.op.value, (r.after or r.before or ())[0]) for r in second.records()] == [
        ("u", 1), ("c", 2)]


def snapshot_of(db: dict[str, Any], *tables: tuple[str, str], **extra: str
                ) -> tuple[list[Batch], dict[str, Any] | None]:
    """A snapshot of the given (name, INSERT values or "") tables, read straight (no runtime)."""
    sql(db, "CREATE SCHEMA db2inst1", *(f"CREATE TABLE db2inst1.{name} (id INTEGER NOT NULL "
                                        "PRIMARY KEY)" for name, _ in tables),
        *(f"INSERT INTO db2inst1.{name} VALUES {values}" for name, values in tables if values))
    for name, _ in tables:
        add_table(db, "DB2INST1", name.upper())
    plan = Db2Connector(config(db, **extra)).start(None)
    assert plan.snapshot is not None
    batches: list[Batch] = []
    return batches, plan.snapshot.execute(SourceRunContext(batches.append, threading.Event()))


def test_snapshot_markers_are_debeziums_per_table_with_empty_first_and_last_tables(
        db2_db: dict[str, Any]) -> None:
    """Debezium 3.x's RelationalSnapshotChangeEventSource markers: `first` only on the first
    table's first row (the first table is empty here: no `first`), a table's first and last
    rows `first_in_data_collection` / `last_in_data_collection`, and the snapshot's last
    record `last` although the last table is empty; batches of max.batch.size keep them."""
    batches, offset = snapshot_of(db2_db, ("t1", ""), ("t2", "(1), (2), (3)"), ("t3", "(4)"),
                                  ("t4", ""), **{"max.batch.size": "2"})
    reads = [(r.table.id.table, r.after[0] if r.after else None, r.snapshot.value)
             for b in batches for r in b.records if isinstance(r, ChangeRecord)]
    assert reads == [("T2", 1, "first_in_data_collection"), ("T2", 2, "true"),
                     ("T2", 3, "last_in_data_collection"), ("T3", 4, "last")]
    assert offset is not None and batches[-1].offset == offset
    assert all(b.offset is None for b in batches[:-1])


def test_snapshot_delay_ms_delays_the_snapshot_and_a_stop_ends_the_wait(
        db2_db: dict[str, Any]) -> None:
    db = db2_db
    sql(db, "CREATE SCHEMA db2inst1", "CREATE TABLE db2inst1.t1 (id INTEGER NOT NULL "
        "PRIMARY KEY)", "INSERT INTO db2inst1.t1 VALUES (1)")
    add_table(db, "DB2INST1", "T1")
    for delay, stop_after in ((300, None), (60_000, 0.2)):
        connector = Db2Connector(config(db, **{"snapshot.delay.ms": str(delay)}))
        plan = connector.start(None)
        assert plan.snapshot is not None
        connected: list[float] = []
        connect = connector.connect

        def recording_connect(connect: Any = connect, connected: list[float] = connected) -> Any:
            connected.append(time.monotonic())
            return connect()

        connector.connect = recording_connect  # type: ignore[method-assign]
        stopping = threading.Event()
        if stop_after is not None:
            threading.Timer(stop_after, stopping.set).start()
        batches: list[Batch] = []
        started = time.monotonic()
        offset = plan.snapshot.execute(SourceRunContext(batches.append, stopping))
        if stop_after is None:  # the first read is no earlier than the delay
            assert offset is not None and connected[0] - started >= delay / 1000
        else:  # stopped during the delay: promptly, nothing read, no offset
            assert offset is None and connected == [] and batches == []
            assert time.monotonic() - started < 10
