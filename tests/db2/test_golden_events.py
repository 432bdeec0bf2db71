"""Golden Db2 change events: an insert, an update (a 'D' and an 'I' CD row, as SQL Replication
writes it with CHG_UPD_TO_DEL_INS='Y') and a delete, from change-query rows through the Db2
normalization, the poller and the source block, field by field.

There is no Db2 event in the seeds (seed 004 covers snapshots only); the expected values are
Debezium's Db2 rules: `connector` "db2", `sequence` null, `change_lsn`/`commit_lsn` as
Lsn.toString writes them, no `event_serial_no` in the block (it is in the offsets), and an
update reported at its after row's INTENTSEQ.
"""

from __future__ import annotations

from headwater.connectors.db2.catalog import ChangeTable
from headwater.connectors.db2.lsn import increment, lsn_bytes, lsn_text
from headwater.connectors.db2.ordering import db2_sequence_key
from headwater.connectors.db2.position import DB2_SOURCE_SCHEMA, Db2Position, Db2SourceBlock
from headwater.connectors.db2.streaming import normalized
from headwater.model.record import ChangeRecord, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, STRING, Column, ConnectSchema, TableId, TableSchema
from headwater.relational.changetables.poller import merge_changes
from headwater.relational.codec import RelationalTableCodec

TABLE = TableSchema(TableId("TESTDB", "DB2INST1", "CUSTOMERS"), tuple(
    Column(name, i, t, ConnectSchema(INT32 if t == "INTEGER" else STRING, optional=False))
    for i, (name, t) in enumerate((("ID", "INTEGER"), ("FIRST_NAME", "VARCHAR"),
                                   ("LAST_NAME", "VARCHAR"), ("EMAIL", "VARCHAR")))), ("ID",))
CODEC = RelationalTableCodec(TABLE, (int, str, str, str), (0, 1, 2, 3), 4)
CD = ChangeTable(TABLE.id, "CDC_DB2INST1_CUSTOMERS", None, None,
                 ("ID", "FIRST_NAME", "LAST_NAME", "EMAIL"), CODEC)
JOHN = (1005, "john", "doe", "john.doe@example.org")
NOREPLY = (1005, "john", "doe", "noreply@example.org")


def _seq(n: int) -> bytes:
    return n.to_bytes(10, "big")


def test_insert_update_delete_golden() -> None:
    # (OPCODE, IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ, IBMSNAP_OPERATION, columns...) as the LUW
    # change query returns them.
    raw = [
        (2, _seq(0x1_ffff), _seq(0x1_0001), "I", *JOHN),
        (3, _seq(0x2_ffff), _seq(0x2_0001), "D", *JOHN),
        (4, _seq(0x2_ffff), _seq(0x2_0002), "I", *NOREPLY),
        (1, _seq(0x3_ffff), _seq(0x3_0001), "D", *NOREPLY),
    ]
    context = SourceContext("db2", "db2server", "3.0.0.Final")
    block = Db2SourceBlock()
    events = []
    for change in merge_changes([(CD, normalized(raw, CD))]):
        position = Db2Position(lsn_text(change.commit), lsn_text(change.change), change.serial,
                               1_700_000_000_123_000)
        record = ChangeRecord(context, TABLE, change.op, change.before, change.after,
                              1_700_000_000_123, 0, SnapshotMarker.FALSE, position)
        events.append((change.op.value, change.before, change.after, change.serial,
                       block.payload(record)))
    common = {"version": "3.0.0.Final", "connector": "db2", "name": "db2server",
              "ts_ms": 1_700_000_000_123, "snapshot": SnapshotMarker.FALSE, "db": "TESTDB",
              "sequence": None, "ts_us": 1_700_000_000_123_000,
              "ts_ns": 1_700_000_000_123_000_000, "schema": "DB2INST1", "table": "CUSTOMERS"}
    assert events == [
        ("c", None, JOHN, 1, {**common, "change_lsn": "00000000:00000001:0001",
                              "commit_lsn": "00000000:00000001:ffff"}),
        ("u", JOHN, NOREPLY, 2, {**common, "change_lsn": "00000000:00000002:0002",
                                 "commit_lsn": "00000000:00000002:ffff"}),
        ("d", NOREPLY, None, 1, {**common, "change_lsn": "00000000:00000003:0001",
                                 "commit_lsn": "00000000:00000003:ffff"}),
    ]


def test_source_schema_is_debeziums_db2_source() -> None:
    assert DB2_SOURCE_SCHEMA.name == "io.debezium.connector.db2.Source"
    assert [f.name for f in DB2_SOURCE_SCHEMA.fields] == [
        "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns",
        "schema", "table", "change_lsn", "commit_lsn"]


def test_lsn_text_round_trip_and_increment() -> None:
    assert lsn_text(_seq(0x2a)) == "00000000:00000000:002a"
    assert lsn_bytes("00000000:00000000:002a") == _seq(0x2a)
    assert lsn_bytes("NULL") is None and lsn_text(None) is None
    assert increment(_seq(0xff)) == _seq(0x100)
    assert lsn_text(bytes(16)) == "00000000:00000000:" + "0" * 16


def test_ordering_puts_snapshot_reads_before_later_transactions() -> None:
    read = {"snapshot": "true", "commit_lsn": "00000000:00000001:ffff", "change_lsn": None}
    change = {"snapshot": "false", "commit_lsn": "00000000:00000002:ffff",
              "change_lsn": "00000000:00000002:0001"}
    assert db2_sequence_key(read, None, 9) < db2_sequence_key(change, None, 0)
