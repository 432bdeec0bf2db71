"""Seed 000 (Debezium's SQL Server change event values) reproduced field by field: the same
create, update and delete of `customers`, from the same change-table rows (LSNs as in the
seed), through the poller and the source block.

Differences from the seed are current Debezium's, on purpose: `event_serial_no` is an int64
number (the seed's 1.9 text shows "1"), and the block carries Debezium 2.x/3.x's `sequence`,
`ts_us`, `ts_ns`; the seed's `version` is Debezium's own string.
"""

from __future__ import annotations

from datetime import UTC, datetime

from headwater.connectors.sqlserver.lsn import lsn_bytes, lsn_text
from headwater.connectors.sqlserver.position import (
    SQLSERVER_SOURCE_SCHEMA,
    SqlServerPosition,
    SqlServerSourceBlock,
)
from headwater.connectors.sqlserver.streaming import epoch_us
from headwater.model.record import ChangeRecord, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, STRING, Column, ConnectSchema, TableId, TableSchema
from headwater.relational.changetables.poller import ChangeRow, merge_changes

TABLE = TableSchema(TableId("testDB", "dbo", "customers"), tuple(
    Column(name, i, t, ConnectSchema(INT32 if t == "int" else STRING, optional=False))
    for i, (name, t) in enumerate((("id", "int"), ("first_name", "varchar"),
                                   ("last_name", "varchar"), ("email", "varchar")))), ("id",))
JOHN = (1005, "john", "doe", "john.doe@example.org")
NOREPLY = (1005, "john", "doe", "noreply@example.org")


def _row(commit: str, change: str, op: int, values: tuple[object, ...], ms: int) -> ChangeRow:
    commit_lsn, change_lsn = lsn_bytes(commit), lsn_bytes(change)
    assert commit_lsn is not None and change_lsn is not None
    return ChangeRow(commit_lsn, change_lsn, op, values,
                     datetime.fromtimestamp(ms / 1000, UTC))


def test_seed_000_create_update_delete() -> None:
    rows = [
        _row("00000027:00000758:0005", "00000027:00000758:0003", 2, JOHN, 1559729468470),
        _row("00000027:00000ac0:0007", "00000027:00000ac0:0002", 3, JOHN, 1559729995937),
        _row("00000027:00000ac0:0007", "00000027:00000ac0:0002", 4, NOREPLY, 1559729995937),
        _row("00000027:00000db0:0007", "00000027:00000db0:0005", 1, NOREPLY, 1559730445243),
    ]
    block = SqlServerSourceBlock()
    context = SourceContext("sqlserver", "server1", "1.9.5.Final")
    payloads = []
    for change in merge_changes([("customers", rows)]):
        ts_us = epoch_us(change.commit_time)
        position = SqlServerPosition(lsn_text(change.commit), lsn_text(change.change),
                                     change.serial, ts_us)
        record = ChangeRecord(context, TABLE, change.op, change.before, change.after,
                              ts_us // 1000, 0, SnapshotMarker.FALSE, position)
        payloads.append((change.op.value, change.before, change.after, block.payload(record)))
    common = {"version": "1.9.5.Final", "connector": "sqlserver", "name": "server1",
              "snapshot": SnapshotMarker.FALSE, "db": "testDB", "sequence": None,
              "schema": "dbo", "table": "customers"}
    expected = [
        ("c", None, JOHN, 1559729468470, "00000027:00000758:0003", "00000027:00000758:0005", 1),
        ("u", JOHN, NOREPLY, 1559729995937, "00000027:00000ac0:0002",
         "00000027:00000ac0:0007", 2),
        ("d", NOREPLY, None, 1559730445243, "00000027:00000db0:0005",
         "00000027:00000db0:0007", 1),
    ]
    assert len(payloads) == 3
    for (op, before, after, source), (e_op, e_before, e_after, ms, change_lsn, commit_lsn,
                                      serial) in zip(payloads, expected, strict=True):
        assert (op, before, after) == (e_op, e_before, e_after)
        assert source == {**common, "ts_ms": ms, "ts_us": ms * 1000, "ts_ns": ms * 1_000_000,
                          "change_lsn": change_lsn, "commit_lsn": commit_lsn,
                          "event_serial_no": serial}


def test_source_schema_field_order_is_current_debeziums() -> None:
    assert [f.name for f in SQLSERVER_SOURCE_SCHEMA.fields] == [
        "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns",
        "schema", "table", "change_lsn", "commit_lsn", "event_serial_no"]
    assert SQLSERVER_SOURCE_SCHEMA.name == "io.debezium.connector.sqlserver.Source"
