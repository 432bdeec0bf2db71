"""`transaction.id`, `source.sequence` and `source.ts_us`/`ts_ns` of streamed PostgreSQL events
as Debezium 3.6 writes them, against a scripted replication cursor.

Debezium's PostgresTransactionMonitor.adjustTxId writes `<txId>:<LSN>` with the LSN of the
offset when the event is built: the WAL position the server sent the BEGIN message at for the
BEGIN event, each change's own for its `transaction` block, the Commit message's (its end LSN)
for the END event.  SourceInfo.sequence() is `[lastCommitLsn, lsn]`, lastCommitLsn being the
position of the last Commit message, or of a non-transactional logical decoding message read
since (commitMessage runs before the message is dispatched).  `source.ts_us` is the commit
time's microseconds.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from headwater.config.connector_common import NameFilter
from headwater.connectors.postgres.messages import MessageCapture
from headwater.connectors.postgres.pgoutput import PG_EPOCH_OFFSET_US
from headwater.connectors.postgres.position import PostgresSourceBlock
from headwater.model.record import ChangeRecord, TransactionEvent
from tests.unit.postgres.test_streaming_v2_loop import insert, relation, run

TS1 = 1_700_000_000_123_456  # commit times with a sub-millisecond part (Unix microseconds)
TS2 = 1_700_000_001_000_789


def begin(final_lsn: int, xid: int, ts: int) -> bytes:
    return b"B" + struct.pack("!QqI", final_lsn, ts - PG_EPOCH_OFFSET_US, xid)


def commit(commit_lsn: int, end_lsn: int, ts: int) -> bytes:
    return b"C" + struct.pack("!BQQq", 0, commit_lsn, end_lsn, ts - PG_EPOCH_OFFSET_US)


def plain_message(lsn: int) -> bytes:  # a non-transactional logical decoding message
    return b"M" + b"\0" + struct.pack("!Q", lsn) + b"p\0" + struct.pack("!I", 2) + b"hi"


SCRIPT = [
    # transaction 801: BEGIN sent at its first LSN 1400, changes at 1401/1402, commit record
    # at 1500 ending at 1510
    (begin(1500, 801, TS1), 1400), (relation(), 1400), (insert("1", "a"), 1401),
    (insert("2", "b"), 1402), (commit(1500, 1510, TS1), 1510),
    (plain_message(1600), 1600),
    (begin(1800, 802, TS2), 1700), (insert("3", "c"), 1701), (commit(1800, 1820, TS2), 1820),
]


def test_transaction_ids_carry_the_lsn_of_each_event(tmp_path: Path) -> None:
    capture = MessageCapture("db", "bytes", NameFilter((), ()))
    r = run(SCRIPT, tmp_path, metadata=True, streaming_on=False, messages=capture)
    ids = [(e.status, e.id) if isinstance(e, TransactionEvent) else (e.op.value, e.tx and e.tx.id)
           for e in r.records]
    assert ids == [
        ("BEGIN", "801:1400"), ("c", "801:1401"), ("c", "801:1402"), ("END", "801:1510"),
        ("m", None),
        ("BEGIN", "802:1700"), ("c", "802:1701"), ("END", "802:1820"),
    ]


def test_sequence_and_microsecond_source_time(tmp_path: Path) -> None:
    capture = MessageCapture("db", "bytes", NameFilter((), ()))
    # an offset of a run that streamed a transaction: its Commit's end LSN is where we resume
    r = run(SCRIPT, tmp_path, metadata=True, streaming_on=False, messages=capture,
            offset={"lsn": 10, "lsn_commit": 5, "tx_index": 1})
    block = PostgresSourceBlock()
    sources = [block.payload(e) for e in r.records if isinstance(e, ChangeRecord)]
    assert [json.loads(s["sequence"]) for s in sources] == [
        ["10", "1401"], ["10", "1402"],  # first transaction: the resume position
        ["1600", "1600"],  # the message commits its own position first
        ["1600", "1701"],  # then is the last "commit" the next transaction follows
    ]
    streamed = [sources[i] for i in (0, 1, 3)]
    assert [(s["ts_ms"], s["ts_us"], s["ts_ns"]) for s in streamed] == [
        (TS1 // 1000, TS1, TS1 * 1000), (TS1 // 1000, TS1, TS1 * 1000),
        (TS2 // 1000, TS2, TS2 * 1000)]
    # the non-transactional message has no commit time: read time, in milliseconds
    assert sources[2]["ts_us"] == sources[2]["ts_ms"] * 1000


def test_sequence_after_a_commit_is_its_end_lsn(tmp_path: Path) -> None:
    script = [SCRIPT[i] for i in (0, 1, 2, 3, 4, 6, 7, 8)]  # without the message
    # the snapshot's offset: Debezium's lastCommitLsn is null, Headwater keeps the consistent
    # point (a deliberate difference: docs/compatibility.md)
    r = run(script, tmp_path, streaming_on=False, offset={"lsn": 10})
    block = PostgresSourceBlock()
    assert [json.loads(block.payload(e)["sequence"]) for e in r.records] == [
        ["10", "1401"], ["10", "1402"], ["1510", "1701"]]
