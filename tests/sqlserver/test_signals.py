"""SQL Server signals and ad hoc snapshots on the CDC EMULATION (not a live server), beyond the
conformance scenarios (tests/conformance/test_incremental_snapshot.py): one signal table per
database of `database.names`, Debezium 3.x's three-part names, `insert_delete` watermarks with
OPTION(RECOMPILE), a blocking snapshot, and the configuration errors."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from headwater.config.definition import ConfigError
from headwater.model.record import ChangeRecord, Op, SnapshotMarker
from headwater.testing.localpg import LocalPostgres, wait_for
from headwater.testing.sqlserver_emulation import dbapi
from tests.sqlserver.conftest import enable_cdc, tsql
from tests.sqlserver.test_emulated_capture import Capture, config

SIGNAL = ("CREATE TABLE dbo.debezium_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, "
          "type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL)")


def setup(db: dict[str, Any], table: str, rows: int) -> None:
    tsql(db, SIGNAL, f"CREATE TABLE dbo.{table} (id INT NOT NULL PRIMARY KEY, v INT NULL)",
         f"INSERT INTO dbo.{table} VALUES " + ",".join(f"({k}, {k})" for k in range(1, rows + 1)))
    enable_cdc(db, "dbo", "debezium_signal")
    enable_cdc(db, "dbo", table)


def send(db: dict[str, Any], ident: str, kind: str, data: dict[str, Any]) -> None:
    text = json.dumps(data).replace("'", "''")
    tsql(db, f"INSERT INTO dbo.debezium_signal VALUES ('{ident}', '{kind}', '{text}')")


def signal_rows(db: dict[str, Any]) -> list[tuple[Any, ...]]:
    conn = dbapi.connect(**db)
    try:
        cur = conn.cursor()
        cur.execute("SELECT id, type, data FROM dbo.debezium_signal ORDER BY id")
        return list(cur.fetchall())
    finally:
        conn.close()


def reads(capture: Capture, table: str, marker: SnapshotMarker = SnapshotMarker.INCREMENTAL
          ) -> list[ChangeRecord]:
    return [r for r in capture.records() if r.table.id.table == table and r.op is Op.READ
            and (r.snapshot is marker or (marker is SnapshotMarker.TRUE
                                          and r.snapshot is SnapshotMarker.LAST))]


@pytest.fixture
def second_db(emulated_pg: LocalPostgres, sqlserver_db: dict[str, Any]
              ) -> Iterator[dict[str, Any]]:
    """Another emulated database on the same server."""
    name = sqlserver_db["database"] + "_b"
    emulated_pg.create_database(name)
    raw = emulated_pg.connect(name)
    dbapi.install(raw)
    raw.close()
    yield {**sqlserver_db, "database": name}


def test_one_signal_table_per_database(sqlserver_db: dict[str, Any], second_db: dict[str, Any],
                                       caplog: pytest.LogCaptureFixture) -> None:
    a, b = sqlserver_db, second_db
    setup(a, "ta", 5)
    setup(b, "tb", 7)
    signals = f"{a['database']}.dbo.debezium_signal,{b['database']}.dbo.debezium_signal"
    capture = Capture(config(a, **{
        "database.names": f"{a['database']},{b['database']}", "snapshot.mode": "no_data",
        "signal.data.collection": signals, "incremental.snapshot.chunk.size": "3"}))
    capture.run()
    try:
        # a signal in database a's table asks for tables of both databases; a two-part name
        # (Debezium 1.x's form) is refused with the reason in the log
        send(a, "go", "execute-snapshot", {"data-collections": [
            f"{a['database']}.dbo.ta", f"{b['database']}.dbo.tb", "dbo.ta"]})
        wait_for(lambda: len(reads(capture, "ta")) == 5 and len(reads(capture, "tb")) == 7, 20,
                 what="both tables")
        wait_for(lambda: "incremental_snapshot_collections" not in (
            capture.last_offset() or {}), 20, what="the end of the snapshot")
    finally:
        capture.stop()
    assert [r.after for r in reads(capture, "ta")] == [(k, k) for k in range(1, 6)]
    assert [r.after for r in reads(capture, "tb")] == [(k, k) for k in range(1, 8)]
    assert "name the table as <database>.<schema>.<table>" in caplog.text
    # each table's watermarks are in the signal table of its own database, with Debezium
    # 3.x's window metadata
    for db, table, chunks in ((a, "ta", 2), (b, "tb", 3)):
        marks = [r for r in signal_rows(db) if r[1].startswith("snapshot-window")]
        assert len(marks) == 2 * chunks
        for ident, kind, data in marks:
            meta = json.loads(data)
            assert meta["dataCollectionId"] == f"{db['database']}.dbo.{table}"
            assert meta["openWindowTimestamp"].endswith("Z")
            assert ("closeWindowTimestamp" in meta) == ident.endswith("-close")
            assert kind == ("snapshot-window-close" if ident.endswith("-close")
                            else "snapshot-window-open")
    # the READ events sit at their close watermark's place in the stream
    positions = [r.position for r in reads(capture, "tb")]
    assert all(p.commit_lsn is not None and p.change_lsn is not None for p in positions)


def test_insert_delete_watermarks_recompile_and_a_blocking_snapshot(
        sqlserver_db: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    db = sqlserver_db
    setup(db, "t", 10)
    caplog.set_level(logging.WARNING)
    capture = Capture(config(db, **{
        "snapshot.mode": "no_data",
        "signal.data.collection": f"{db['database']}.dbo.debezium_signal",
        "incremental.snapshot.chunk.size": "4",
        "incremental.snapshot.watermarking.strategy": "insert_delete",
        "incremental.snapshot.option.recompile": "true"}))
    capture.run()
    try:
        send(db, "go", "execute-snapshot", {"data-collections": [f"{db['database']}.dbo.t"]})
        wait_for(lambda: len(reads(capture, "t")) == 10, 20, what="the incremental snapshot")
        send(db, "b", "execute-snapshot", {"data-collections": [f"{db['database']}.dbo.t"],
                                           "type": "blocking"})
        wait_for(lambda: len(reads(capture, "t", SnapshotMarker.TRUE)) == 10, 20,
                 what="the blocking snapshot")
    finally:
        capture.stop()
    # insert_delete: every open row was deleted again, only the two signals are left
    assert [r[0] for r in signal_rows(db)] == ["b", "go"]
    assert "Unsupported query option" not in caplog.text
    hint = capture.connector.chunk_source().chunk_sql("SELECT TOP 4 [id] FROM [d].[dbo].[t]")
    assert hint.endswith(" OPTION(RECOMPILE)")
    blocking = reads(capture, "t", SnapshotMarker.TRUE)
    assert [r.after for r in blocking] == [(k, k) for k in range(1, 11)]
    assert blocking[-1].snapshot is SnapshotMarker.LAST
    assert blocking[0].position.change_lsn is None  # the database's maximum LSN, as a snapshot


@pytest.mark.parametrize(("extra", "error"), [
    ({"signal.data.collection": "dbo.debezium_signal"}, "<database>.<schema>.<table>"),
    ({"signal.data.collection": "other.dbo.debezium_signal"}, "not in database.names"),
    ({"signal.data.collection": "d.dbo.s1,d.dbo.s2"}, "two signal tables in database"),
    ({"read.only": "true"}, "no read-only incremental snapshots"),
])
def test_signal_configuration_errors(extra: dict[str, str], error: str) -> None:
    db = {"server": "h", "port": 1, "user": "u", "database": "d", "history": "h.jsonl"}
    with pytest.raises(ConfigError, match=re.escape(error)):
        config(db, **extra)


def test_a_signal_table_without_cdc_stops_the_start(sqlserver_db: dict[str, Any]) -> None:
    db = sqlserver_db
    tsql(db, SIGNAL, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY)")
    enable_cdc(db, "dbo", "t")
    capture = Capture(config(db, **{
        "signal.data.collection": f"{db['database']}.dbo.debezium_signal"}))
    with pytest.raises(RuntimeError, match=r"debezium_signal.*not captured"):
        capture.run()


def test_the_file_channel_with_watermarks_in_the_signal_table(
        sqlserver_db: dict[str, Any], tmp_path: Any) -> None:
    """Signals from `signal.file` only: the signal table still holds the watermarks, but a row
    inserted there is no signal (the source channel is not enabled)."""
    db = sqlserver_db
    setup(db, "t", 6)
    signal_file = tmp_path / "signals.txt"
    capture = Capture(config(db, **{
        "snapshot.mode": "no_data", "signal.enabled.channels": "file",
        "signal.file": str(signal_file), "signal.poll.interval.ms": "50",
        "signal.data.collection": f"{db['database']}.dbo.debezium_signal",
        "incremental.snapshot.chunk.size": "4"}))
    capture.run()
    try:
        send(db, "ignored", "execute-snapshot", {"data-collections": [f"{db['database']}.dbo.t"]})
        tsql(db, "INSERT INTO dbo.t VALUES (7, 7)")
        wait_for(lambda: any(r.op is Op.CREATE and r.table.id.table == "t"
                             for r in capture.records()), 20, what="the insert after the row")
        # acted on, the row would have started a chunk (watermarks written) at its commit,
        # before the stream went on to the insert
        assert [r[0] for r in signal_rows(db)] == ["ignored"] and reads(capture, "t") == []
        signal_file.write_text(json.dumps({"id": "f1", "type": "execute-snapshot", "data": {
            "data-collections": [f"{db['database']}.dbo.t"]}}) + "\n")
        wait_for(lambda: len(reads(capture, "t")) == 7, 20, what="the snapshot")
    finally:
        capture.stop()
    assert [r.after for r in reads(capture, "t")] == [(k, k) for k in range(1, 8)]
    assert (capture.last_offset() or {}).get("signal_file_position") == len(
        signal_file.read_bytes())
