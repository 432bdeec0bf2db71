"""Signals, ad hoc and incremental snapshots of the Db2 connector against the ASN EMULATION (not
a live Db2): the signal table is registered for capture like any table, its rows reach the
connector through its CD table, and the watermarks the connector writes come back the same way.

Seed 004's ad hoc snapshot steps are logged by name, in its order."""

from __future__ import annotations

import json
import logging
import random
import re
import threading
from typing import Any

import pytest

from headwater.config.definition import ConfigError
from headwater.connectors.db2.connector import Db2Connector
from headwater.engine.incremental import IncrementalSnapshotError
from headwater.model.record import ChangeRecord, Op, SnapshotMarker
from headwater.relational.changetables.adhoc_steps import AD_HOC_STEPS
from headwater.testing.db2_emulation import dbapi
from headwater.testing.localpg import wait_for
from tests.db2.conftest import add_table, sql
from tests.db2.test_emulated_capture import Capture, config

ITEMS = ("CREATE TABLE db2inst1.items (id INTEGER NOT NULL PRIMARY KEY, ver BIGINT NOT NULL, "
         "pad VARCHAR(20))")
SIGNAL = ("CREATE TABLE db2inst1.debezium_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, "
          "type VARCHAR(32) NOT NULL, data VARCHAR(2048))")
SIGNAL_TABLE = "DB2INST1.DEBEZIUM_SIGNAL"


def setup(db: dict[str, Any], rows: int, *, register_signal: bool = True) -> None:
    sql(db, "CREATE SCHEMA db2inst1", ITEMS, SIGNAL)
    add_table(db, "DB2INST1", "ITEMS")
    if register_signal:
        add_table(db, "DB2INST1", "DEBEZIUM_SIGNAL")
    sql(db, "INSERT INTO db2inst1.items VALUES "
        + ",".join(f"({k}, 0, 'p')" for k in range(1, rows + 1)))


def signal_config(db: dict[str, Any], **extra: str) -> Any:
    return config(db, **{"snapshot.mode": "no_data", "signal.data.collection": SIGNAL_TABLE,
                         "incremental.snapshot.chunk.size": "20", **extra})


def send(db: dict[str, Any], ident: str, kind: str, data: dict[str, Any] | None = None) -> None:
    text = "NULL" if data is None else "'" + json.dumps(data).replace("'", "''") + "'"
    sql(db, f"INSERT INTO db2inst1.debezium_signal VALUES ('{ident}', '{kind}', {text})")


def items(capture: Capture) -> list[ChangeRecord]:
    return [r for r in capture.records() if r.table.id.table == "ITEMS"]


def reads(capture: Capture) -> list[int]:
    return [r.after[0] for r in items(capture) if r.op is Op.READ and r.after is not None
            and r.snapshot is SnapshotMarker.INCREMENTAL]


def seen_signal(capture: Capture, ident: str) -> bool:
    """The stream has passed the signal row `ident` (the signal table is captured)."""
    return any(r.table.id.table == "DEBEZIUM_SIGNAL" and r.after is not None
               and r.after[0] == ident for r in capture.records())


def progress(capture: Capture) -> dict[str, Any]:
    return capture.last_offset() or {}


def done(capture: Capture) -> bool:
    return bool(reads(capture)) and "incremental_snapshot_collections" not in progress(capture)


def replayed(records: list[ChangeRecord]) -> dict[int, int]:
    state: dict[int, int] = {}
    for r in records:
        if r.op is Op.DELETE and r.before is not None:
            state.pop(r.before[0], None)
        elif r.after is not None:
            state[r.after[0]] = r.after[1]
    return state


def _connect(db: dict[str, Any]) -> Any:
    return dbapi.connect(f"DATABASE={db['database']};HOSTNAME={db['host']};PORT={db['port']};"
                         f"UID={db['user']};")


def table_rows(db: dict[str, Any]) -> dict[int, int]:
    conn = _connect(db)
    try:
        cur = conn.cursor()
        cur.execute("SELECT id, ver FROM db2inst1.items")
        return {int(k): int(v) for k, v in cur.fetchall()}
    finally:
        conn.close()


class Writer(threading.Thread):
    """Updates, deletes and inserts on the table, one per transaction, most of them on the
    lower keys so that chunk windows see them."""

    def __init__(self, db: dict[str, Any], rows: int) -> None:
        super().__init__(daemon=True)
        self.db, self.live, self.next_key = db, set(range(1, rows + 1)), rows + 1
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        rng = random.Random(7)
        conn = _connect(self.db)  # autocommit: one transaction per statement
        try:
            while not self.stop.is_set():
                ver = self.transactions + 1
                r = rng.random()
                key = rng.choice(sorted(self.live)[:120])
                if r < 0.2:
                    key, self.next_key = self.next_key, self.next_key + 1
                    statement = f"INSERT INTO db2inst1.items VALUES ({key}, {ver}, 'n')"
                    self.live.add(key)
                elif r < 0.85:
                    statement = f"UPDATE db2inst1.items SET ver = {ver} WHERE id = {key}"
                else:
                    statement = f"DELETE FROM db2inst1.items WHERE id = {key}"
                    self.live.discard(key)
                cur = conn.cursor()
                cur.execute(statement)
                cur.close()
                self.transactions += 1
        except BaseException as exc:
            self.error = exc
        finally:
            conn.close()


def _step_numbers(caplog: pytest.LogCaptureFixture) -> list[int]:
    numbers = []
    for record in caplog.records:
        match = re.match(r"ad hoc snapshot step (\d)/6: (.*)", record.getMessage())
        if match:
            number = int(match.group(1))
            assert match.group(2).startswith(AD_HOC_STEPS[number - 1])
            numbers.append(number)
    return numbers


def test_incremental_snapshot_under_concurrent_changes_replays_to_the_table(
        db2_db: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    db, rows = db2_db, 300
    setup(db, rows)
    caplog.set_level(logging.INFO, logger="headwater.connectors.db2")
    capture = Capture(signal_config(db))
    capture.run()
    writer = Writer(db, rows)
    try:
        writer.start()
        wait_for(lambda: writer.transactions > 10, 20, what="the writer")
        send(db, "ad-hoc-1", "execute-snapshot",
             {"data-collections": [SIGNAL_TABLE.replace("DEBEZIUM_SIGNAL", "ITEMS")],
              "type": "incremental"})
        wait_for(lambda: done(capture), 60, what="the incremental snapshot")
        writer.stop.set()
        writer.join(10)
        assert writer.error is None
        sql(db, "INSERT INTO db2inst1.items VALUES (100000, 0, 'end')")
        wait_for(lambda: any(r.after and r.after[0] == 100000 for r in items(capture)), 20,
                 what="the last insert")
    finally:
        writer.stop.set()
        capture.stop()
    keys = reads(capture)
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert keys[0] <= 20 and keys[-1] > rows - 20
    assert replayed(items(capture)) == table_rows(db)
    # the seed's steps, in its order: the signal, the table's first and last keys, then per
    # chunk the window (a last chunk may find no row left and need no window)
    steps = _step_numbers(caplog)
    assert steps[:2] == [1, 2]
    chunks = steps[2:]
    if chunks[-2:] == [3, 4] and len(chunks) % 4 == 2:
        chunks = chunks[:-2]
    assert chunks == [3, 4, 5, 6] * (len(chunks) // 4) and chunks


def test_pause_resume_and_stop(db2_db: dict[str, Any]) -> None:
    """Pause holds the snapshot (no chunk starts), stop ends it (sent while paused, so the
    outcome does not depend on how fast chunks go), and resume lets the next snapshot run.
    The table is large enough (300 chunks) that the pause lands mid-snapshot."""
    db, rows = db2_db, 3000
    setup(db, rows)
    capture = Capture(signal_config(db, **{"incremental.snapshot.chunk.size": "10"}))
    capture.run()

    def pause(name: str) -> int:  # the reads when the pause has taken effect
        send(db, name, "pause-snapshot")
        wait_for(lambda: progress(capture).get("incremental_snapshot_paused") is True, 20,
                 what="paused")
        # every watermark was written before the pause took effect, so before this signal:
        # once the stream passed it, the chunk in flight is emitted and no other starts
        send(db, name + "-log", "log", {"message": "paused"})
        wait_for(lambda: seen_signal(capture, name + "-log"), 20, what=name + "-log")
        return len(reads(capture))

    try:
        send(db, "go", "execute-snapshot", {"data-collections": ["DB2INST1.ITEMS"]})
        wait_for(lambda: len(reads(capture)) >= 20, 20, what="first chunks")
        paused = pause("p1")
        send(db, "l2", "log", {"message": "still paused"})
        wait_for(lambda: seen_signal(capture, "l2"), 20, what="l2")
        assert len(reads(capture)) == paused < rows
        send(db, "s", "stop-snapshot", {"data-collections": ["DB2INST1.ITEMS"],
                                        "type": "incremental"})
        send(db, "l3", "log", {"message": "stopped"})
        wait_for(lambda: seen_signal(capture, "l3"), 20, what="l3")
        wait_for(lambda: not progress(capture).get("incremental_snapshot_collections"), 20,
                 what="stopped")
        assert len(reads(capture)) == paused
        assert reads(capture) == list(range(1, paused + 1))
        sql(db, "INSERT INTO db2inst1.items VALUES (5000, 1, 'x')")
        wait_for(lambda: any(r.op is Op.CREATE for r in items(capture)), 20, what="streaming")
        # As in Debezium, the pause outlives the stop: a new snapshot waits for a resume, and
        # then reads every row once, in key order.
        send(db, "go2", "execute-snapshot", {"data-collections": ["DB2INST1.ITEMS"]})
        send(db, "l4", "log", {"message": "queued"})
        wait_for(lambda: seen_signal(capture, "l4"), 20, what="l4")
        assert len(reads(capture)) == paused
        send(db, "r", "resume-snapshot")
        wait_for(lambda: len(reads(capture)) > paused, 20, what="resumed")
        wait_for(lambda: not progress(capture).get("incremental_snapshot_collections"), 60,
                 what="the second snapshot's end")
    finally:
        capture.stop()
    second = reads(capture)[paused:]
    assert second == [*range(1, rows + 1), 5000]


def test_restart_mid_snapshot_resumes_after_the_last_durable_chunk(
        db2_db: dict[str, Any]) -> None:
    db, rows = db2_db, 3000  # 300 chunks: the capture is stopped mid-snapshot
    setup(db, rows)
    cfg = signal_config(db, **{"incremental.snapshot.chunk.size": "10"})
    first = Capture(cfg)
    first.run()
    try:
        send(db, "go", "execute-snapshot", {"data-collections": ["DB2INST1.ITEMS"]})
        wait_for(lambda: (progress(first).get("incremental_snapshot_primary_key") or [0])[0]
                 >= 40, 20, what="four chunks")
    finally:
        first.stop()
    offset = first.last_offset()
    assert offset is not None
    stored = offset["incremental_snapshot_primary_key"][0]
    assert offset["incremental_snapshot_collections"][0]["id"] == "DB2INST1.ITEMS"
    durable: list[int] = []  # the READ events of the batches up to the stored offset
    for batch in first.batches:
        durable += [r.after[0] for r in batch.records if isinstance(r, ChangeRecord)
                    and r.op is Op.READ and r.after is not None]
        if batch.offset is offset:
            break
    assert durable == list(range(1, stored + 1))
    second = Capture(cfg)
    second.run(offset)
    try:
        wait_for(lambda: done(second), 30, what="the resumed snapshot")
    finally:
        second.stop()
    assert reads(second) == list(range(stored + 1, rows + 1))


def test_ad_hoc_snapshots_with_a_filter_and_blocking(db2_db: dict[str, Any]) -> None:
    db = db2_db
    setup(db, 30)
    capture = Capture(signal_config(db))
    capture.run()
    try:
        send(db, "f", "execute-snapshot", {
            "data-collections": ["DB2INST1.ITEMS"], "type": "incremental",
            "additional-conditions": [{"data-collection": "DB2INST1.ITEMS",
                                       "filter": "ID <= 5 OR ID > 27"}]})
        wait_for(lambda: done(capture), 20, what="the filtered snapshot")
        assert reads(capture) == [1, 2, 3, 4, 5, 28, 29, 30]
        send(db, "b", "execute-snapshot", {"data-collections": ["db2inst1.items"],
                                           "type": "blocking"})
        wait_for(lambda: len([r for r in items(capture) if r.snapshot in (
            SnapshotMarker.TRUE, SnapshotMarker.LAST)]) == 30, 20, what="the blocking snapshot")
    finally:
        capture.stop()
    blocking = [r for r in items(capture) if r.op is Op.READ
                and r.snapshot is not SnapshotMarker.INCREMENTAL]
    assert sorted(r.after[0] for r in blocking if r.after) == list(range(1, 31))
    assert [r.snapshot for r in blocking][-1] is SnapshotMarker.LAST
    assert blocking[0].position.commit_lsn is not None and blocking[0].position.change_lsn is None


def test_signal_configuration_errors(db2_db: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"read\.only=true"):
        signal_config(db2_db, **{"read.only": "true"})
    with pytest.raises(ConfigError, match=r"<schema>\.<table>"):
        config(db2_db, **{"signal.data.collection": "TESTDB.DB2INST1.DEBEZIUM_SIGNAL"})
    setup(db2_db, 1, register_signal=False)
    with pytest.raises(IncrementalSnapshotError, match=r"DEBEZIUM_SIGNAL.*not captured"):
        Db2Connector(signal_config(db2_db)).start(None)


def test_keys_for_tables_without_a_primary_key(db2_db: dict[str, Any],
                                               caplog: pytest.LogCaptureFixture) -> None:
    """A table without a primary key is chunked by `message.key.columns` or the signal's
    `surrogate-key`; with neither, the signal is refused with the reason in the log."""
    db = db2_db
    setup(db, 1)
    sql(db, "CREATE TABLE db2inst1.nokey (k INTEGER NOT NULL, v INTEGER)",
        "CREATE TABLE db2inst1.bare (k INTEGER NOT NULL, v INTEGER)",
        "INSERT INTO db2inst1.nokey VALUES " + ",".join(f"({k}, {k})" for k in range(9, 0, -1)),
        "INSERT INTO db2inst1.bare VALUES " + ",".join(f"({k}, {k})" for k in range(5, 0, -1)))
    add_table(db, "DB2INST1", "NOKEY")
    add_table(db, "DB2INST1", "BARE")
    capture = Capture(signal_config(db, **{"message.key.columns": "DB2INST1.NOKEY:K",
                                           "incremental.snapshot.chunk.size": "4"}))
    capture.run()

    def table_reads(table: str) -> list[Any]:
        return [r.after for r in capture.records() if r.table.id.table == table
                and r.op is Op.READ and r.after is not None]

    try:
        send(db, "a", "execute-snapshot", {"data-collections": ["DB2INST1.BARE"]})
        send(db, "b", "execute-snapshot", {"data-collections": ["DB2INST1.NOKEY"]})
        wait_for(lambda: len(table_reads("NOKEY")) == 9, 20, what="message.key.columns chunks")
        send(db, "c", "execute-snapshot", {"data-collections": ["DB2INST1.BARE"],
                                           "surrogate-key": "K"})
        wait_for(lambda: len(table_reads("BARE")) == 5, 20, what="surrogate-key chunks")
    finally:
        capture.stop()
    assert table_reads("NOKEY") == [(k, k) for k in range(1, 10)]
    assert table_reads("BARE") == [(k, k) for k in range(1, 6)]
    assert "DB2INST1.BARE has no primary key" in caplog.text
