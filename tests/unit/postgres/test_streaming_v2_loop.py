"""The reader loop with pgoutput protocol 2 streaming, against a scripted replication cursor.

A streamed transaction must come out exactly like the same transaction sent by protocol 1
(positions, tx_index, metadata, chunks, acks), only at its Stream Commit; aborts leave nothing;
the confirmed LSN respects the FlushGuard; spill files are cleaned up.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import psycopg2
import pytest

from headwater.config.connector_common import NameFilter
from headwater.connectors.postgres import streaming
from headwater.connectors.postgres.catalog import TableInfo
from headwater.connectors.postgres.messages import MessageCapture
from headwater.connectors.postgres.pgoutput import PG_EPOCH_OFFSET_US
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.streaming import PostgresStreamingSource, StreamingOptions
from headwater.connectors.postgres.tables import IncomingColumn, TableCodec, build_codec
from headwater.convert import TypeModes
from headwater.engine.dispatcher import DispatchOptions
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.model.record import ChangeRecord, SourceContext, TransactionEvent

CTX = SourceContext("postgresql", "srv", "test")
T = 42  # relation oid of table t (id int4 key, v text)
TS = 1_700_000_000_000_000  # commit time, Unix microseconds

# -- pgoutput message builders ---------------------------------------------------------------


def _x(xid: int | None) -> bytes:
    return b"" if xid is None else struct.pack("!I", xid)


def _tup(*values: str | None) -> bytes:
    out = struct.pack("!H", len(values))
    for v in values:
        if v is None:
            out += b"n"
        else:
            raw = v.encode()
            out += b"t" + struct.pack("!I", len(raw)) + raw
    return out


def begin(final_lsn: int, xid: int) -> bytes:
    return b"B" + struct.pack("!QqI", final_lsn, TS - PG_EPOCH_OFFSET_US, xid)


def commit(commit_lsn: int, end_lsn: int) -> bytes:
    return b"C" + struct.pack("!BQQq", 0, commit_lsn, end_lsn, TS - PG_EPOCH_OFFSET_US)


def relation(cols: tuple[str, ...] = ("id", "v"), xid: int | None = None, oid: int = T) -> bytes:
    out = b"R" + _x(xid) + struct.pack("!I", oid) + b"public\0" + b"t\0" + b"d"
    out += struct.pack("!H", len(cols))
    for i, name in enumerate(cols):
        out += struct.pack("!B", 1 if i == 0 else 0) + name.encode() + b"\0"
        out += struct.pack("!Ii", 23 if i == 0 else 25, -1)
    return out


def insert(*values: str | None, xid: int | None = None) -> bytes:
    return b"I" + _x(xid) + struct.pack("!I", T) + b"N" + _tup(*values)


def update(*values: str | None, xid: int | None = None) -> bytes:
    return b"U" + _x(xid) + struct.pack("!I", T) + b"N" + _tup(*values)


def delete(key: str, xid: int | None = None) -> bytes:
    return b"D" + _x(xid) + struct.pack("!I", T) + b"K" + _tup(key, None)


def truncate(xid: int | None = None) -> bytes:
    return b"T" + _x(xid) + struct.pack("!IBI", 1, 0, T)


def s_start(xid: int, first: bool) -> bytes:
    return b"S" + struct.pack("!IB", xid, 1 if first else 0)


S_STOP = b"E"


def s_commit(xid: int, commit_lsn: int, end_lsn: int) -> bytes:
    return b"c" + struct.pack("!IBQQq", xid, 0, commit_lsn, end_lsn, TS - PG_EPOCH_OFFSET_US)


def s_abort(xid: int, subxid: int) -> bytes:
    return b"A" + struct.pack("!II", xid, subxid)


def s_abort_v4(xid: int, subxid: int, abort_lsn: int) -> bytes:  # streaming 'parallel'
    return b"A" + struct.pack("!IIQq", xid, subxid, abort_lsn, TS - PG_EPOCH_OFFSET_US)


def message(prefix: bytes, xid: int) -> bytes:  # a transactional logical decoding message
    return b"M" + struct.pack("!I", xid) + b"\1" + struct.pack("!Q", 1) + prefix + b"\0" + \
        struct.pack("!I", 2) + b"hi"


# -- fakes ------------------------------------------------------------------------------------

IDLE = None  # in a script: read_message returns None once (the server has nothing right now)


class Msg(NamedTuple):
    payload: bytes
    data_start: int


class Keepalive(NamedTuple):
    """A primary keepalive in a script: the server's WAL end."""

    wal_end: int


class FakeCursor:
    """psycopg2's replication cursor as far as the reader uses it, including its automatic
    flush (pq_read_replication_message): on a keepalive, the flush position it reports moves
    to the keepalive's WAL end when the flush position we set is at or after the start of
    the last message (`forwarded` records each such move)."""

    def __init__(self, script: list[Any], stop: threading.Event) -> None:
        self.script: deque[Any] = deque(script)
        self.stop = stop
        self.started: dict[str, Any] = {}
        self.feedback: list[int] = []
        self.explicit = 0  # psycopg2's explicitly_flushed_lsn
        self.flush = 0  # psycopg2's flush_lsn: what the server is told
        self.last_start = 0  # psycopg2's last_msg_data_start
        self.forwarded: list[int] = []
        self.reads: list[bytes] = []
        self.wal_end = 0
        self.on_read: Callable[[FakeCursor, bytes], None] | None = None
        self._r, w = os.pipe()
        os.write(w, b"x")  # always readable: idle() does not wait
        os.close(w)

    def fileno(self) -> int:
        return self._r

    def execute(self, sql: str) -> None:
        assert sql == "IDENTIFY_SYSTEM"

    def fetchone(self) -> tuple[str, int, str, str]:
        return ("7312345678901234567", 1, "0/1000000", "db")

    def start_replication(self, **kw: Any) -> None:
        self.started = kw

    def read_message(self) -> Msg | None:
        if not self.script:
            self.stop.set()
            return None
        item = self.script.popleft()
        if item is None:
            return None
        if isinstance(item, BaseException):  # the connection ends (e.g. a fast shutdown)
            raise item
        if isinstance(item, Keepalive):
            self.wal_end = item.wal_end
            if (self.explicit >= self.last_start and item.wal_end > self.explicit
                    and item.wal_end > self.flush):
                self.flush = item.wal_end
                self.forwarded.append(item.wal_end)
            return None
        if self.on_read is not None:
            self.on_read(self, item[0])
        self.reads.append(item[0])
        self.last_start = self.wal_end = item[1]  # a logical walsender's XLogData: both
        return Msg(*item)

    def send_feedback(self, write_lsn: int = 0, flush_lsn: int = 0, apply_lsn: int = 0,
                      reply: bool = False, force: bool = False) -> None:
        self.feedback.append(flush_lsn)
        self.explicit = max(self.explicit, flush_lsn)
        self.flush = max(self.flush, flush_lsn)

    def close(self) -> None:
        os.close(self._r)


class FakeConn:
    def __init__(self, cur: FakeCursor, server_version: int = 150004) -> None:
        self.cur = cur
        self.server_version = server_version

    def cursor(self) -> FakeCursor:
        return self.cur


def codec_factory(calls: list[tuple[int, int]]) -> Callable[..., TableCodec | None]:
    def make(oid: int, ns: str, name: str, incoming: tuple[IncomingColumn, ...]) -> TableCodec:
        calls.append((oid, len(incoming)))
        info = TableInfo(oid, ns, name, (), ("id",), "d", ())
        return build_codec("db", info, incoming, TypeModes(), lambda *_: True)

    return make


class Run(NamedTuple):
    batches: list[Batch]
    cur: FakeCursor
    source: PostgresStreamingSource
    codec_calls: list[tuple[int, int]]

    @property
    def records(self) -> list[Any]:
        return [r for b in self.batches for r in b.records]

    @property
    def changes(self) -> list[tuple[Any, ...]]:
        """Everything of each event except the processing time."""
        out: list[tuple[Any, ...]] = []
        for r in self.records:
            if isinstance(r, ChangeRecord):
                out.append((r.op, r.table.id.table, r.before, r.after, r.source_ts_ms,
                            r.position, r.tx, r.other_key))
            elif isinstance(r, TransactionEvent):
                out.append((r.status, r.id, r.ts_ms, r.event_count, r.data_collections,
                            r.position))
        return out


def run(
    script: list[Any],
    tmp_path: Path,
    *,
    offset: dict[str, Any] | None = None,
    max_batch: int = 100,
    server_version: int = 150004,
    streaming_on: bool = True,
    metadata: bool = False,
    skipped: frozenset[str] = frozenset(),
    ack: Callable[[PostgresStreamingSource, Batch], None] | None = None,
    on_read: Callable[[FakeCursor, bytes], None] | None = None,
    messages: MessageCapture | None = None,
    confirm_flush: bool = True,
) -> Run:
    stop = threading.Event()
    cur = FakeCursor(script, stop)
    cur.on_read = on_read
    calls: list[tuple[int, int]] = []
    source = PostgresStreamingSource(
        repl_conn=FakeConn(cur, server_version),
        context=CTX,
        slot_name="slot",
        publication_name="pub",
        codec_factory=codec_factory(calls),
        options=StreamingOptions(
            dispatch=DispatchOptions(max_batch_size=max_batch, skipped_operations=skipped,
                                     transaction_metadata=metadata),
            status_interval_s=60, pgoutput_streaming=streaming_on,
            spill_dir=tmp_path / "spill", messages=messages, confirm_flush=confirm_flush),
        metrics=CaptureMetrics(),
    )
    batches: list[Batch] = []

    def emit(batch: Batch) -> None:
        batches.append(batch)
        if ack is not None:
            ack(source, batch)
        elif batch.ack is not None:
            source.acknowledge(batch.ack)  # durable at once

    try:
        source.execute(SourceRunContext(emit, stop), offset or {"lsn": 10})
    finally:
        cur.close()
    return Run(batches, cur, source, calls)


def spill_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "spill").rglob("*.spill"))


# -- scripts ---------------------------------------------------------------------------------

X = 700  # a big transaction's xid


def big_tx_v1(n: int, base: int = 1000) -> list[tuple[bytes, int] | None]:
    """The transaction as protocol 1 sends it: at commit, Begin ... Commit."""
    out: list[tuple[bytes, int] | None] = [(begin(9000, X), base), (relation(), base)]
    for i in range(n):
        out.append((insert(str(i), f"v{i}"), base + 10 + i))
    out += [(update("1", "changed"), base + 10 + n), (delete("2"), base + 11 + n),
            (truncate(), base + 12 + n), (commit(9000, 9100), 9100)]
    return out


def big_tx_v2(n: int, base: int = 1000, segment: int = 4) -> list[tuple[bytes, int] | None]:
    """The same transaction streamed in segments of `segment` messages."""
    data: list[tuple[bytes, int]] = [(relation(xid=X), base)]
    for i in range(n):
        data.append((insert(str(i), f"v{i}", xid=X), base + 10 + i))
    data += [(update("1", "changed", xid=X), base + 10 + n), (delete("2", xid=X), base + 11 + n),
             (truncate(xid=X), base + 12 + n)]
    out: list[tuple[bytes, int] | None] = []
    for k in range(0, len(data), segment):
        chunk = data[k:k + segment]
        out.append((s_start(X, k == 0), chunk[0][1]))
        out += chunk
        out.append((S_STOP, chunk[-1][1]))
    out.append((s_commit(X, 9000, 9100), 9100))
    return out


# -- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("metadata", [False, True])
def test_streamed_transaction_comes_out_exactly_like_protocol_1(
    tmp_path: Path, metadata: bool
) -> None:
    v1 = run(big_tx_v1(10), tmp_path / "v1", server_version=130000, metadata=metadata,
             max_batch=4)
    v2 = run(big_tx_v2(10), tmp_path / "v2", metadata=metadata, max_batch=4)
    assert v1.cur.started["options"]["proto_version"] == "1"
    assert v2.cur.started["options"] == {
        "proto_version": "2", "publication_names": "pub", "streaming": "on"}
    assert len(v2.changes) == 13 + (2 if metadata else 0)  # 10 inserts, update, delete, truncate
    assert v2.changes == v1.changes
    assert [(b.offset, b.ack, len(b.records)) for b in v2.batches] == [
        (b.offset, b.ack, len(b.records)) for b in v1.batches]
    assert v2.source.protocol == 2 and v1.source.protocol == 1
    first = v2.records[1 if metadata else 0]
    assert first.position == PostgresPosition(1010, 9000, 10, X, None, TS)  # resume point
    # The transaction block exists only with provide.transaction.metadata (the dispatcher).
    assert first.tx.total_order == 1 if metadata else first.tx is None
    assert spill_files(tmp_path) == []


def test_chunks_carry_the_ack_only_with_the_commit(tmp_path: Path) -> None:
    r = run(big_tx_v2(10), tmp_path, max_batch=3)
    sizes = [len(b.records) for b in r.batches if b.records]
    assert max(sizes) <= 3 and sum(sizes) == 13
    acked = [b for b in r.batches if b.ack is not None]
    assert [b.ack for b in acked] == [9100]
    for b in r.batches:
        if b.ack is None and b.offset is not None:
            assert b.offset["lsn"] == 10  # resume where the stream started until the commit
            assert b.offset["lsn_commit"] == 9000


def test_restart_in_the_middle_of_a_replayed_transaction_skips_what_is_out(
    tmp_path: Path,
) -> None:
    offset = {"lsn": 10, "lsn_commit": 9000, "tx_index": 6}  # rows 1-6 were written
    full = run(big_tx_v2(10), tmp_path / "a")
    resumed = run(big_tx_v2(10), tmp_path / "b", offset=offset)
    resumed_v1 = run(big_tx_v1(10), tmp_path / "c", offset=offset, server_version=130000)
    assert resumed.changes == resumed_v1.changes  # the same skip rule as protocol 1
    assert [r.after for r in resumed.records] == [r.after for r in full.records[6:]]
    # With transaction metadata, the rows re-read and skipped still count: the resumed run
    # numbers the rest as the first run did, sends no second BEGIN, and its END counts all.
    full_tx = run(big_tx_v2(10), tmp_path / "d", metadata=True)
    resumed_tx = run(big_tx_v2(10), tmp_path / "e", offset=offset, metadata=True)
    changes = [r for r in full_tx.records if isinstance(r, ChangeRecord)]
    resumed_changes = [r for r in resumed_tx.records if isinstance(r, ChangeRecord)]
    assert [r.tx for r in resumed_changes] == [r.tx for r in changes[6:]]
    assert [r.tx and r.tx.total_order for r in resumed_changes] == list(
        range(7, len(changes) + 1))
    ends = [r for r in resumed_tx.records if isinstance(r, TransactionEvent)]
    assert [e.status for e in ends] == ["END"]
    assert ends[0].event_count == len(changes)


def test_interleaved_transactions_come_out_in_commit_order(tmp_path: Path) -> None:
    y1 = [(begin(1500, 801), 1400), (relation(), 1400), (insert("100", "y1"), 1401),
          (commit(1500, 1510), 1510)]
    y2 = [(begin(9500, 802), 9400), (insert("101", "y2"), 9401), (commit(9500, 9510), 9510)]
    seg = big_tx_v2(6)
    cut = seg.index((S_STOP, 1012)) + 1  # after the first segment
    script = [*seg[:cut], *y1, *seg[cut:], *y2]

    emitted_at_commit: list[int] = []

    def on_read(cur: FakeCursor, payload: bytes) -> None:
        if payload[:1] == b"c":
            emitted_at_commit.append(len(batches_ref[0]))

    batches_ref: list[list[Batch]] = []
    r = run(script, tmp_path, on_read=on_read, ack=_sync_ack(batches_ref))
    values = [rec.after[1] if rec.after else None for rec in r.records]
    assert values[0] == "y1"
    assert values[1:7] == [f"v{i}" for i in range(6)]
    assert values[-1] == "y2"
    # Before Stream Commit was read, only y1 had been emitted.
    assert emitted_at_commit and all(
        isinstance(rec, ChangeRecord) and rec.after is not None and rec.after[1] == "y1"
        for b in r.batches[:emitted_at_commit[0]] for rec in b.records)
    commits = [rec.position.commit_lsn for rec in r.records]
    assert commits == sorted(commits)
    # the end LSN of the Commit before the streamed one (Debezium's lastCommitLsn)
    assert r.records[1].position.last_commit_lsn == 1510


def _sync_ack(ref: list[list[Batch]]) -> Callable[[PostgresStreamingSource, Batch], None]:
    seen: list[Batch] = []
    ref.append(seen)

    def ack(source: PostgresStreamingSource, batch: Batch) -> None:
        seen.append(batch)
        if batch.ack is not None:
            source.acknowledge(batch.ack)

    return ack


def test_aborted_transaction_emits_nothing(tmp_path: Path) -> None:
    seg = big_tx_v2(8)[:-1]  # without the Stream Commit
    y = [(begin(9500, 802), 9400), (relation(), 9400), (insert("100", "y"), 9401),
         (commit(9500, 9510), 9510)]
    r = run([*seg, (s_abort(X, X), 9300), *y], tmp_path)
    assert [rec.after[1] for rec in r.records] == ["y"]
    assert r.source.guard.open_streams == 0
    assert spill_files(tmp_path) == []


def test_aborted_subtransaction_drops_only_its_changes(tmp_path: Path) -> None:
    # BEGIN; INSERT 1; SAVEPOINT a (701); INSERT 2, 3; SAVEPOINT b (702) INSERT 4; RELEASE b;
    # ROLLBACK TO a; INSERT 5 (new subxact 703 under the same savepoint); COMMIT
    script: list[tuple[bytes, int] | None] = [
        (s_start(X, True), 100), (relation(xid=X), 100), (insert("1", "a", xid=X), 101),
        (insert("2", "b", xid=701), 102), (S_STOP, 102),
        (s_start(X, False), 103), (insert("3", "c", xid=701), 103),
        (insert("4", "d", xid=702), 104), (message(b"m", X), 104), (S_STOP, 104),
        (s_abort(X, 702), 110), (s_abort(X, 701), 110),
        (s_start(X, False), 111), (insert("5", "e", xid=703), 111), (S_STOP, 111),
        (s_commit(X, 200, 210), 210),
    ]
    r = run(script, tmp_path, metadata=True)
    changes = [rec for rec in r.records if isinstance(rec, ChangeRecord)]
    assert [rec.after for rec in changes] == [(1, "a"), (5, "e")]
    # as protocol 1 numbers them
    assert [rec.tx and rec.tx.total_order for rec in changes] == [1, 2]


def test_messages_follow_their_subtransaction(tmp_path: Path) -> None:
    # BEGIN; INSERT 1; emit 'keep'; SAVEPOINT a (701); INSERT 2; emit 'drop'; ROLLBACK TO a;
    # emit 'late'; COMMIT.  The server sends every message with the top-level xid.
    script: list[tuple[bytes, int] | None] = [
        (s_start(X, True), 100), (relation(xid=X), 100), (insert("1", "a", xid=X), 101),
        (message(b"keep", X), 102), (insert("2", "b", xid=701), 103),
        (message(b"drop", X), 104), (S_STOP, 104),
        (s_abort(X, 701), 110),
        (s_start(X, False), 111), (message(b"late", X), 111), (S_STOP, 111),
        (s_commit(X, 200, 210), 210),
    ]
    capture = MessageCapture("db", "bytes", NameFilter((), ()))
    r = run(script, tmp_path, metadata=True, messages=capture)
    changes = [rec for rec in r.records if isinstance(rec, ChangeRecord)]
    assert [(rec.op.value, rec.after) for rec in changes] == [
        ("c", (1, "a")), ("m", ("keep", b"hi")), ("m", ("late", b"hi"))]
    assert [rec.tx.total_order for rec in changes if rec.tx] == [1, 2, 3]
    assert {rec.position.tx_id for rec in changes} == {X}


def test_relation_inside_a_stream_applies_at_its_place_in_the_replay(tmp_path: Path) -> None:
    # The streamed transaction adds a column; a small transaction committed meanwhile still
    # has the old shape, and so has the codec it is converted with.
    script: list[tuple[bytes, int] | None] = [
        (begin(90, 800), 80), (relation(), 80), (insert("1", "old"), 81), (commit(90, 95), 95),
        (s_start(X, True), 100), (insert("2", "before alter", xid=X), 100),
        (relation(("id", "v", "w"), xid=X), 101), (insert("3", "after", "w1", xid=X), 102),
        (S_STOP, 102),
        (begin(300, 801), 110), (insert("4", "meanwhile"), 290), (commit(300, 310), 310),
        (s_commit(X, 400, 410), 410),
        (begin(500, 802), 490), (relation(("id", "v", "w")), 490),
        (insert("5", "later", "w2"), 491), (commit(500, 510), 510),
    ]
    r = run(script, tmp_path)
    assert [rec.after for rec in r.records] == [
        (1, "old"), (4, "meanwhile"), (2, "before alter"), (3, "after", "w1"), (5, "later", "w2")]
    assert r.codec_calls == [(T, 2), (T, 3)]  # the last Relation has the same shape: no rebuild


def test_messages_of_interest_only_reach_the_spill_file(tmp_path: Path) -> None:
    origin = b"O" + struct.pack("!Q", 5) + b"somewhere\0"
    type_msg = b"Y" + struct.pack("!II", X, 99) + b"public\0mood\0"
    script: list[tuple[bytes, int] | None] = [
        (s_start(X, True), 100), (origin, 100), (type_msg, 100), (relation(xid=X), 100),
        (message(b"p", X), 101), (insert("1", "a", xid=X), 102), (S_STOP, 102),
        (s_commit(X, 200, 210), 210)]
    r = run(script, tmp_path)
    assert [rec.after for rec in r.records] == [(1, "a")]


def test_unexpected_message_inside_a_segment_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="inside a stream segment"):
        run([(s_start(X, True), 100), (begin(200, X), 100)], tmp_path)


def test_stream_messages_on_protocol_1_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="protocol 1"):
        run([(s_start(X, True), 100)], tmp_path, streaming_on=False)


def test_streaming_off_or_old_server_uses_protocol_1(tmp_path: Path) -> None:
    for version, on in ((150004, False), (130011, True)):
        r = run(big_tx_v1(3), tmp_path / f"{version}{on}", server_version=version,
                streaming_on=on)
        assert r.cur.started["options"] == {"proto_version": "1", "publication_names": "pub"}
        assert len(r.records) == 6
        assert not (tmp_path / f"{version}{on}" / "spill").exists()


def test_postgresql_16_and_later_stream_with_protocol_4_parallel(tmp_path: Path) -> None:
    """Protocol 4 (streaming 'parallel') on 16+: its Stream Abort carries the abort's LSN and
    time; the transaction after it comes out as on protocol 2."""
    seg = big_tx_v2(8)[:-1]
    y = [(begin(9500, 802), 9400), (relation(), 9400), (insert("100", "y"), 9401),
         (commit(9500, 9510), 9510)]
    for version in (160004, 180001):
        r = run([*seg, (s_abort_v4(X, X, 9300), 9300), *y], tmp_path / str(version),
                server_version=version)
        assert r.cur.started["options"] == {
            "proto_version": "4", "publication_names": "pub", "streaming": "parallel"}
        assert r.source.protocol == 4
        assert [rec.after[1] for rec in r.records] == ["y"]
        assert spill_files(tmp_path / str(version)) == []


def test_manual_flush_mode_confirms_nothing(tmp_path: Path) -> None:
    """lsn.flush.mode=manual: status updates go out (wal_sender_timeout) but never a flush
    position; the connector's mode confirms the durable commit."""
    manual = run(big_tx_v1(3), tmp_path / "manual", confirm_flush=False)
    connector = run(big_tx_v1(3), tmp_path / "connector")
    assert manual.cur.feedback and set(manual.cur.feedback) == {0}
    assert max(connector.cur.feedback) == 9099  # below the Commit message (at 9100)
    assert len(manual.records) == len(connector.records) == 6


def test_stale_spill_files_are_deleted_at_start_and_none_are_left(tmp_path: Path) -> None:
    d = tmp_path / "spill" / "slot-7312345678901234567"
    d.mkdir(parents=True)
    (d / "555.spill").write_bytes(b"left by a crashed run")
    seen: list[list[Path]] = []
    r = run(big_tx_v2(5)[:-1], tmp_path,  # stops with the transaction still open
            on_read=lambda cur, p: seen.append(spill_files(tmp_path)))
    assert r.source.spill_dir == d
    assert not (d / "555.spill").exists()
    assert seen[0] == []  # deleted before the first message was read
    assert seen[-1] == [d / f"{X}.spill"]
    assert spill_files(tmp_path) == []  # the open transaction's file is gone after the run


def test_confirmed_lsn_stays_below_an_open_streamed_transaction(tmp_path: Path) -> None:
    y = [(begin(1500, 801), 1400), (relation(), 1400), (insert("100", "y"), 1401),
         (commit(1500, 1510), 1510)]
    seg = big_tx_v2(6, base=1000)
    cut = seg.index((S_STOP, 1012)) + 1
    flushed_while_open: list[int] = []

    def on_read(cur: FakeCursor, payload: bytes) -> None:
        if payload[:1] == b"c":
            flushed_while_open.extend(cur.feedback)

    r = run([*seg[:cut], *y, IDLE, IDLE, *seg[cut:], IDLE], tmp_path, on_read=on_read)
    assert flushed_while_open and max(flushed_while_open) <= 999  # first segment at 1000
    assert max(r.cur.feedback) == 9099  # all durable in the end (Commit message at 9100)


def test_reader_settles_before_reading_when_psycopg2_would_forward(tmp_path: Path) -> None:
    # y1 is durable and confirmed (2009: below its Commit message at 2010); y2 is received,
    # not durable yet; then a stream
    # segment whose changes lie before 2010: psycopg2's forwarding condition holds, so the
    # reader must not read (a keepalive could be next) until y2 is durable.
    y1 = [(begin(2000, 801), 1900), (relation(), 1900), (insert("1", "y1"), 1901),
          (commit(2000, 2010), 2010)]
    y2 = [(begin(3000, 802), 2900), (insert("2", "y2"), 2901), (commit(3000, 3010), 3010)]
    segment = [(s_start(X, True), 1500), (insert("3", "x", xid=X), 1501), (S_STOP, 1501)]
    rest = [(s_commit(X, 4000, 4010), 4010)]
    pending: deque[int] = deque()
    state: dict[str, Any] = {"after_segment": []}

    def ack(source: PostgresStreamingSource, batch: Batch) -> None:
        if batch.ack is None:
            return
        if batch.ack == 2010:
            source.acknowledge(2010)
            return
        pending.append(batch.ack)

        def later() -> None:
            time.sleep(0.2)
            source.acknowledge(pending.popleft())

        threading.Thread(target=later, daemon=True).start()

    def on_read(cur: FakeCursor, payload: bytes) -> None:
        src = state["source"]
        if payload[:1] in (b"I", b"E", b"c") and cur.reads and cur.reads[-1][:1] in b"SIE":
            state["after_segment"].append((payload[:1], src._durable, src._confirmed))

    original = streaming.PostgresStreamingSource.stream

    def stream(self: PostgresStreamingSource, ctx: SourceRunContext,
               offset: dict[str, Any]) -> None:
        state["source"] = self
        original(self, ctx, offset)

    streaming.PostgresStreamingSource.stream = stream  # type: ignore[method-assign]
    try:
        r = run([*y1, IDLE, *y2, *segment, *rest, IDLE], tmp_path, ack=ack, on_read=on_read)
    finally:
        streaming.PostgresStreamingSource.stream = original  # type: ignore[method-assign]
    assert 2009 in r.cur.feedback
    # every read inside and right after the segment happened with y2 (3010) durable
    assert state["after_segment"]
    assert all(durable >= 3010 for _, durable, _ in state["after_segment"])
    assert [rec.after[1] for rec in r.records] == ["y1", "y2", "x"]


def test_long_replay_sends_status_updates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []
    original = streaming._Loop.keepalive

    def keepalive(self: Any) -> None:
        calls.append(time.monotonic())
        original(self)

    monkeypatch.setattr(streaming._Loop, "keepalive", keepalive)
    r = run(big_tx_v2(3000, segment=500), tmp_path, max_batch=1000)
    assert len(r.records) == 3003  # inserts, update, delete, truncate
    assert len(calls) >= 2  # every 1024 replayed messages


def test_replay_handles_an_empty_streamed_transaction(tmp_path: Path) -> None:
    # every change was in a rolled-back subtransaction
    script: list[tuple[bytes, int] | None] = [
        (s_start(X, True), 100), (insert("1", "a", xid=701), 100), (S_STOP, 100),
        (s_abort(X, 701), 105), (s_commit(X, 200, 210), 210)]
    r = run(script, tmp_path, metadata=True)
    assert r.records == []
    assert r.batches[-1].ack == 210 and r.batches[-1].offset["lsn"] == 210  # type: ignore[index]


def y_tx(final_lsn: int, end_lsn: int, xid: int, key: str) -> list[tuple[bytes, int]]:
    return [(begin(final_lsn, xid), final_lsn - 100), (relation(), final_lsn - 100),
            (insert(key, "v"), final_lsn - 99), (commit(final_lsn, end_lsn), end_lsn)]


def test_psycopg2_never_forwards_the_flush_position(tmp_path: Path) -> None:
    """The cause of the PostgreSQL 17+ restart failure: a keepalive past the last message must
    not move the flush position the server is told beyond what is durable and stored."""
    r = run([*y_tx(2000, 2010, 801, "1"), IDLE, Keepalive(5000), IDLE, IDLE], tmp_path)
    assert r.cur.forwarded == []
    assert r.cur.flush == 2009
    assert [b.offset["lsn"] for b in r.batches if b.offset] == [2010]
    r.source.close()  # reading is over: the stored offset itself is confirmed
    assert r.cur.feedback[-1] == 2010


def test_offsets_follow_a_still_server_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A still position past the last message is stored, then confirmed (a walsender that
    shuts down waits for it); psycopg2 may then forward to a later keepalive, and the offsets
    follow that at once, so the slot never stays ahead of the stored offset."""
    monkeypatch.setattr(streaming, "FOLLOW_STILL_S", 0.0)
    stored: list[int] = []

    def ack(source: PostgresStreamingSource, batch: Batch) -> None:
        if batch.offset:
            stored.append(int(batch.offset["lsn"]))
        if batch.ack is not None:
            source.acknowledge(batch.ack)

    r = run([*y_tx(2000, 2010, 801, "1"), IDLE, Keepalive(5000), IDLE, IDLE, Keepalive(6000),
             IDLE, IDLE, *y_tx(7000, 7010, 802, "2"), IDLE, IDLE], tmp_path, ack=ack)
    # Still at once (FOLLOW_STILL_S 0): 2010 itself is confirmed, so psycopg2 forwards to each
    # later keepalive; each forwarded position is stored right after.
    assert r.cur.forwarded == [5000, 6000]
    assert stored == [2010, 5000, 6000, 7010]
    assert r.cur.feedback == stored  # each confirmed once stored (durable), never before
    assert [rec.after[0] for rec in r.records] == [1, 2]


def _storing_ack(stored: list[int]) -> Callable[[PostgresStreamingSource, Batch], None]:
    def ack(source: PostgresStreamingSource, batch: Batch) -> None:
        if batch.offset:
            stored.append(int(batch.offset["lsn"]))
        if batch.ack is not None:
            source.acknowledge(batch.ack)

    return ack


def test_a_position_forwarded_as_the_connection_ends_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fast shutdown's walsender exits once psycopg2 answers its last keepalive by
    forwarding: the reader never sees that position in `follow`, so it is stored when the
    connection is found lost (else the slot's restart_lsn can pass the stored offset and the
    next start takes the slot for a re-created one)."""
    monkeypatch.setattr(streaming, "FOLLOW_STILL_S", 0.0)
    stored: list[int] = []
    lost = psycopg2.OperationalError("no COPY in progress")
    with pytest.raises(RetriableError, match="no COPY in progress"):
        run([*y_tx(2000, 2010, 801, "1"), IDLE, Keepalive(5000), lost], tmp_path,
            ack=_storing_ack(stored))
    assert stored == [2010, 5000]


def test_a_connection_lost_inside_a_transaction_stores_nothing_more(tmp_path: Path) -> None:
    stored: list[int] = []
    lost = psycopg2.OperationalError("server closed the connection unexpectedly")
    script = [*y_tx(2000, 2010, 801, "1"), IDLE, *y_tx(3000, 3010, 802, "2")[:3],
              Keepalive(5000), lost]
    with pytest.raises(RetriableError):
        run(script, tmp_path, ack=_storing_ack(stored))
    assert set(stored) == {2010}  # 802 is open: the end of 801 stays where a restart resumes


def test_before_the_first_message_a_keepalive_position_is_stored_at_once(
    tmp_path: Path
) -> None:
    """psycopg2 forwards every keepalive before a session's first message (its last message
    start is 0), so the offsets follow each at once, without waiting for a still position."""
    stored: list[int] = []
    r = run([Keepalive(5000), IDLE, IDLE], tmp_path, ack=_storing_ack(stored))
    assert r.cur.forwarded == [5000]
    assert stored == [5000]
