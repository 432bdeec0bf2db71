"""Datastream events from the SQL Server connector, end to end on the CDC EMULATION (not a live
server): a backfill then CDC events (insert, update, a primary-key change, delete) written as
Datastream JSON files, every field checked against what the emulated server's change table
and lsn_time_mapping hold; then the same changes as Avro files applied by the Datastream files
pipeline (SCD1 into Delta), which must equal the source table.

What SQL Server's `source_metadata` carries (docs/datastream.md): `lsn` is the change's LSN
(`__$seqval`), `tx_id` its transaction's commit LSN (`__$start_lsn`, the id of Debezium's
transaction metadata), `physical_location` the change LSN's three parts, `replication_index`
the key columns.  `sort_keys` is (commit LSN parts, change LSN parts, event serial number,
backfill 0 / CDC 1, key-change half): a backfill row carries its snapshot's LSN, so it sorts
before every CDC event of a later transaction of the same key.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastavro import reader

from headwater.connectors.sqlserver.lsn import lsn_text
from headwater.formats.datastream.renderer import UUID_NAMESPACE, iso_millis
from headwater.relational.changetables.position import lsn_parts
from headwater.testing.capture_thread import Capture
from headwater.testing.localpg import wait_for
from tests.conformance.driver import properties_text
from tests.sqlserver.conftest import enable_cdc, tsql

pytestmark = pytest.mark.integration

STREAM = "projects/hw/locations/local/streams/ss-orders"
TABLE = ("CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, name NVARCHAR(40) NULL, "
         "amount DECIMAL(10,2) NULL, placed DATETIME2(3) NULL)")
SEED = ("INSERT INTO dbo.orders VALUES (1, 'one', 12.30, '2016-11-04 13:51:30.123'), "
        "(2, 'two', NULL, NULL)")
CHANGES = ("INSERT INTO dbo.orders VALUES (3, 'three', -0.50, '2020-01-02 03:04:05.678')",
           "UPDATE dbo.orders SET name = 'uno' WHERE id = 1",
           "UPDATE dbo.orders SET id = 20 WHERE id = 2",  # a primary-key change
           "DELETE FROM dbo.orders WHERE id = 3")
META_FIELDS = ["table", "database", "schema", "is_deleted", "lsn", "tx_id", "physical_location",
               "replication_index", "change_type"]


def _capture(db: dict[str, Any], tmp: Path, fmt: str) -> Path:
    """Seeds the table, captures its backfill and CHANGES into `fmt` files; their root."""
    tsql(db, TABLE, SEED)
    enable_cdc(db, "dbo", "orders")
    root = tmp / "files"
    config = tmp / "connector.properties"
    config.write_text(properties_text({
        "name": "ss-ds", "connector.class": "sqlserver", "topic.prefix": "ss",
        "database.hostname": db["server"], "database.port": str(db["port"]),
        "database.user": db["user"], "database.names": db["database"],
        "database.encrypt": "false",
        "headwater.sqlserver.driver": "headwater.testing.sqlserver_emulation.dbapi",
        "offset.storage.file.filename": str(tmp / "offsets.json"),
        "schema.history.internal.file.filename": str(tmp / "history.jsonl"),
        "headwater.topics.dir": str(tmp / "topics"), "poll.interval.ms": "100",
        "headwater.event.format": "datastream", "headwater.datastream.stream.name": STREAM,
        "headwater.destination": "files", "headwater.destination.files.dir": str(root),
        "headwater.destination.files.format": fmt,
        "headwater.destination.files.max.ms": "200"}))
    cap = Capture(config).start()
    try:
        wait_for(lambda: len(_events(root)) >= 2, 60, what="the backfill files")
        tsql(db, *CHANGES)
        wait_for(lambda: len(_events(root)) >= 7, 60, what="the CDC events' files")
    finally:
        cap.stop()
    return root


def _events(root: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(root.rglob("*")) if root.exists() else []:
        if not path.is_file() or ".inflight" in path.parts:
            continue
        if path.suffix == ".avro":
            with path.open("rb") as fh:
                out.extend(dict(r) for r in reader(fh))  # type: ignore[arg-type]
        else:
            out.extend(orjson.loads(line) for line in path.read_bytes().splitlines())
    return out


def _change_rows(db: dict[str, Any]) -> list[tuple[bytes, bytes, int, int, datetime]]:
    """(commit LSN, change LSN, __$operation, id, commit time) of the change table, in
    change order; an update's before images (operation 3) left out."""
    import psycopg2

    conn = psycopg2.connect(host=db["server"], port=db["port"], user=db["user"],
                            dbname=db["database"])
    try:
        with conn.cursor() as cur:
            cur.execute('SELECT c."__$start_lsn", c."__$seqval", c."__$operation", c.id, '
                        "m.tran_end_time FROM cdc.\"dbo_orders_CT\" c JOIN cdc.lsn_time_mapping m "
                        'ON m.start_lsn = c."__$start_lsn" WHERE c."__$operation" <> 3 '
                        'ORDER BY c."__$start_lsn", c."__$seqval", c."__$operation"')
            return [(bytes(a), bytes(b), op, key, at) for a, b, op, key, at in cur.fetchall()]
    finally:
        conn.close()


def test_json_events_every_field_against_the_change_table(
        sqlserver_db: dict[str, Any], tmp_path: Path) -> None:
    db = sqlserver_db
    events = sorted(_events(_capture(db, tmp_path, "json")), key=lambda e: e["sort_keys"])
    assert len(events) == 7 and len({e["uuid"] for e in events}) == 7
    back1, back2, *cdc = events
    assert [list(e) for e in events] == [[
        "stream_name", "read_method", "object", "schema_key", "uuid", "read_timestamp",
        "source_timestamp", "sort_keys", "source_metadata", "payload"]] * 7
    assert {(e["stream_name"], e["object"], e["schema_key"]) for e in events} == {
        (STREAM, "dbo_orders", events[0]["schema_key"])}
    assert len(events[0]["schema_key"]) == 40
    for event in events:
        assert list(event["source_metadata"]) == META_FIELDS
        assert event["read_timestamp"].endswith("Z")
    table = {"table": "orders", "database": db["database"], "schema": "dbo",
             "replication_index": ["id"]}
    # backfill: the snapshot's rows, no log position, the snapshot's LSN in sort_keys
    snapshot = back1["sort_keys"][:3]
    for back, payload in ((back1, {"id": 1, "name": "one", "amount": 12.3,
                                   "placed": "2016-11-04T13:51:30.123000"}),
                          (back2, {"id": 2, "name": "two", "amount": None, "placed": None})):
        assert back["read_method"] == "sqlserver-backfill"
        assert back["source_metadata"] == {
            **table, "is_deleted": False, "lsn": None, "tx_id": None,
            "physical_location": None, "change_type": "INSERT"}
        assert back["sort_keys"] == [*snapshot, 0, 0, 0, 0, 0, 0]
        assert back["payload"] == payload
    # CDC: positions, times and kinds as the change table has them; the key change is a split
    # update there (a delete and an insert at one change LSN, as SQL Server logs an update of
    # a primary-key column), so it is two plain events, each with serial number 1
    rows = _change_rows(db)
    assert [(op, key) for _c, _s, op, key, _t in rows] == [
        (2, 3), (4, 1), (1, 2), (2, 20), (1, 3)]
    assert rows[2][:2] == rows[3][:2]
    positions = rows
    kinds = [("INSERT", False, 1, 0), ("UPDATE", False, 2, 0), ("DELETE", True, 1, 0),
             ("INSERT", False, 1, 0), ("DELETE", True, 1, 0)]
    payloads = [{"id": 3, "name": "three", "amount": -0.5,
                 "placed": "2020-01-02T03:04:05.678000"},
                {"id": 1, "name": "uno", "amount": 12.3, "placed": "2016-11-04T13:51:30.123000"},
                {"id": 2, "name": "two", "amount": None, "placed": None},
                {"id": 20, "name": "two", "amount": None, "placed": None},
                {"id": 3, "name": "three", "amount": -0.5,
                 "placed": "2020-01-02T03:04:05.678000"}]
    for event, (commit, change, _op, _key, at), (kind, deleted, serial, half), payload in zip(
            cdc, positions, kinds, payloads, strict=True):
        order = (*lsn_parts(lsn_text(commit)), *lsn_parts(lsn_text(change)), serial)
        assert event["read_method"] == "sqlserver-cdc"
        assert event["source_metadata"] == {
            **table, "is_deleted": deleted, "lsn": lsn_text(change), "tx_id": lsn_text(commit),
            "physical_location": list(lsn_parts(lsn_text(change))), "change_type": kind}
        assert event["sort_keys"] == [*order, 1, half]
        assert event["uuid"] == str(uuid.uuid5(UUID_NAMESPACE, f"{STREAM}\x1fdbo_orders\x1f"
                                                               f"{order}\x1f{kind}"))
        assert event["source_timestamp"] == iso_millis(
            int((at - datetime(1970, 1, 1)).total_seconds() * 1000))
        assert event["payload"] == payload
        assert event["sort_keys"][:3] > snapshot
    # one key's backfill row sorts before its CDC events
    assert back1["sort_keys"] < cdc[1]["sort_keys"]


def test_avro_files_through_the_datastream_pipeline_equal_the_source(
        sqlserver_db: dict[str, Any], tmp_path: Path) -> None:
    db = sqlserver_db
    root = _capture(db, tmp_path, "avro")
    config = tmp_path / "pipeline.properties"
    config.write_text(properties_text({
        "topic.prefix": "ss", "headwater.pipeline.source": "datastream-files",
        "headwater.pipeline.datastream.files.dir": str(root),
        "headwater.pipeline.delta.path": str(tmp_path / "delta"),
        "headwater.pipeline.checkpoint.dir": str(tmp_path / "checkpoint"),
        "headwater.pipeline.mode": "scd1"}))
    out = subprocess.run([sys.executable, "-m", "headwater.cli", "pipeline", str(config),
                          "--once", "--log-level", "WARNING"],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    from headwater.pipeline.delta_target import read_table

    rows = read_table(tmp_path / "delta" / "dbo" / "orders").to_pylist()
    assert sorted((r["id"], r["name"], r["amount"], r["placed"]) for r in rows) == [
        (1, "uno", Decimal("12.30"), datetime(2016, 11, 4, 13, 51, 30, 123000)),
        (20, "two", None, None)]
