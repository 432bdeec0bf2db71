"""Streams changes from a logical replication slot with pgoutput: the replication session
(slot, protocol, spill directory), its read loop (`_Loop`: pgoutput messages to change records,
in chunks of up to `max.batch.size`) and what is confirmed to the slot.

A chunk goes to the runtime when it is full or the server has nothing more to send right now,
with the offset to store once it is durable - `lsn` (end of the last complete transaction,
where a restart resumes) and `lsn_commit`/`tx_index` (the last event written, so a restart in
a replayed transaction skips what is out) - and as its ack the end LSN of the last transaction
it completes.  Only `acknowledge` (the writer, after the topic log's fsync) moves what is
confirmed to the server, so `confirmed_flush_lsn` never passes what is durable; it stays below
the last message's start so that psycopg2 never forwards it (`_flush_ceiling`), and with
nothing of ours in flight the server's own position is stored and confirmed (a heartbeat,
`_Loop.follow`).  Why, and what was measured: docs/postgres.md, "Server versions".

Row messages are read into runs (`_Loop._flush_run`): consecutive Inserts, Updates without an
old tuple or Deletes of one table version, converted column by column and made into records in
one pass (`EventDispatcher.changes`) where the dispatcher takes them plain (no transaction
block, no skipped operation); any other message, an idle read or a full chunk ends a run
first, so the events, their order and the chunks are those of row by row dispatch, which
stays for everything else (and for a run with a value that does not convert: the failure
modes, the event's LSN in the error).

Large transactions arrive while they run (pgoutput protocol 2 and 4, PostgreSQL 14+): their
segments are spilled undecoded (spill.py) and replayed at Stream Commit through the protocol 1
path, so their events and offsets are those of the same transaction sent whole
(docs/postgres.md, "Streamed transactions").
"""

from __future__ import annotations

import functools
import logging
import select
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import psycopg2
import psycopg2.errors
from psycopg2.extras import REPLICATION_LOGICAL

from headwater.connectors.postgres import pgoutput
from headwater.connectors.postgres.flush_guard import FlushGuard
from headwater.connectors.postgres.incremental import PostgresIncrementalHook
from headwater.connectors.postgres.messages import (
    MESSAGE_COLLECTION,
    MESSAGES_MIN_SERVER_VERSION,
    MessageCapture,
)
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.spill import SpillBuffer, SpillError, default_spill_root
from headwater.connectors.postgres.tables import CodecFactory, RelationCodecs, TableCodec
from headwater.engine.dispatcher import DispatchOptions, EventDispatcher
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import QueueClosed
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.model.record import UNCHANGED_TOAST, ChangeRecord, Op, SourceContext
from headwater.relational.streaming import LogSession, LogStreamingSource

log = logging.getLogger("headwater.connectors.postgres.streaming")

# pgoutput protocol 4 (streaming 'parallel'): PostgreSQL 16+.
PARALLEL_STREAMING_MIN_SERVER_VERSION = 160000

# How long the server's position must stay still, with nothing of ours in flight, before the
# offsets follow it without a heartbeat (see `_Loop.follow`).
FOLLOW_STILL_S = 1.0

class StreamingOptions(NamedTuple):
    """What the streaming source does beyond rows: all from the connector configuration."""

    dispatch: DispatchOptions  # what the engine's dispatcher does with the decoded changes
    status_interval_s: float  # status.update.interval.ms (0.5 s at least: `status_s`)
    heartbeat_action: Callable[[], None] | None = None
    # headwater.pgoutput.streaming: protocol 2 with streaming 'on' where the server has it.
    pgoutput_streaming: bool = True
    # Parent of the spill directories (one per slot and server); None: the temp directory.
    spill_dir: Path | None = None
    # Logical decoding messages (op m); None: the slot is read without them.
    messages: MessageCapture | None = None
    # lsn.flush.mode=manual: the slot's confirmed position is never moved by us.
    confirm_flush: bool = True

    @property
    def status_s(self) -> float:
        return max(0.5, self.status_interval_s)


class PostgresStreamingSource(LogStreamingSource):
    START_KEY = "lsn"
    # Once streaming, any error of the replication connection (server shutdown, lost socket,
    # COPY ended) is worth a reconnect; what cannot be fixed by one (a lost slot) is caught by
    # the checks at start-up.
    connection_errors = (psycopg2.DatabaseError, psycopg2.InterfaceError)

    def __init__(
        self,
        *,
        repl_conn: Any,
        context: SourceContext,
        slot_name: str,
        publication_name: str,
        codec_factory: CodecFactory,
        options: StreamingOptions,
        metrics: CaptureMetrics,
        incremental: PostgresIncrementalHook | None = None,
    ) -> None:
        self.conn = repl_conn
        # signals and incremental snapshots (None: no signal channel configured)
        self.incremental = incremental
        self.context = context
        self.slot_name = slot_name
        self.publication_name = publication_name
        self.options = options
        self.metrics = metrics
        self._durable = 0  # set by the writer thread (a plain int store is atomic)
        self._confirmed = 0
        # WAL position of the last message read in this replication session (0: none yet), and
        # the highest quiet position stored (heartbeat or `_Loop.follow`; see `_flush_ceiling`).
        self.last_start = 0
        self.quiet_lsn = 0
        self._cur: Any = None
        self.guard = FlushGuard()
        self._codecs = RelationCodecs(codec_factory)
        self.protocol = 1  # of the current (or last) replication session
        self.spill_dir: Path | None = None  # this session's spill directory (protocol 2)
        self._spill: SpillBuffer | None = None  # this session's spill buffer (protocol 2)
        self._loop: _Loop | None = None  # this session's reader, once streaming

    # -- called by the writer thread ----------------------------------------------------------
    def acknowledge(self, token: Any) -> None:
        lsn = int(token)
        self._durable = max(self._durable, lsn)

    # -- reader thread -------------------------------------------------------------------------
    def _flush_ceiling(self, safe: int) -> int:
        """The flush position to confirm: `safe`, capped one byte below the last message's
        start, so that psycopg2's automatic flush (it forwards a keepalive's WAL end whenever
        what we confirmed reaches that start) never moves the slot past the stored offset; a
        stored quiet position (`_Loop.follow`, heartbeats) is confirmed anyway.  Before a
        session's first message psycopg2 forwards whatever is set: nothing to cap.  Why:
        docs/postgres.md, "Server versions"."""
        last = self.last_start
        if last <= 0:
            return safe
        return min(safe, max(last - 1, self.quiet_lsn))

    def confirmable(self) -> int:
        """The highest LSN to confirm now (see `FlushGuard.safe` and `_flush_ceiling`)."""
        safe = self.guard.safe(self._durable)
        return self._flush_ceiling(safe) if self.options.confirm_flush else safe

    def _send_feedback(self, force: bool = False, final: bool = False) -> None:
        # final: nothing is read from this cursor any more, so psycopg2 cannot forward.
        safe = self.guard.safe(self._durable) if final else self.confirmable()
        if self._cur is not None and (safe > self._confirmed or force):
            if self.options.confirm_flush:
                self._cur.send_feedback(write_lsn=safe, flush_lsn=safe, force=True)
            else:  # lsn.flush.mode=manual: a status update that confirms nothing
                self._cur.send_feedback(write_lsn=safe, force=True)
            self._confirmed = max(self._confirmed, safe)

    def close(self) -> None:
        """Confirm the final durable position (called after the writer has drained and the
        reader stopped: no keepalive is read any more, so the cap below the last message's
        start is not needed, and a stopped capture's slot is at its stored offset)."""
        try:
            self._send_feedback(final=True)
        except Exception as exc:  # the connection may already be gone
            log.debug("final feedback not sent: %s", exc)

    def stream(self, ctx: SourceRunContext, offset: dict[str, Any]) -> None:
        start_lsn = int(offset["lsn"])
        self._durable = max(self._durable, start_lsn)
        self.last_start = 0  # a new cursor: psycopg2 has received nothing yet
        self.guard.restart()
        self._loop = None
        if self.incremental is not None:
            self.incremental.start(offset)
        cur = self.conn.cursor()
        self._cur = cur
        spill = self._spill = None
        self.protocol = self._protocol()
        if self.protocol > 1:
            self.spill_dir = self._spill_directory(cur)
            spill = self._spill = SpillBuffer(self.spill_dir)
        log.info("streaming step: START_REPLICATION SLOT %s LOGICAL %s (publication %s, "
                 "pgoutput protocol %d%s)", self.slot_name, pgoutput.format_lsn(start_lsn),
                 self.publication_name, self.protocol,
                 f", streaming {'parallel' if self.protocol >= 4 else 'on'}, spill directory "
                 f"{self.spill_dir}" if spill else "")
        try:
            self._start_replication(cur, start_lsn, protocol=self.protocol)
        except psycopg2.errors.ObjectInUse as exc:  # a dead predecessor's walsender lingers
            raise RetriableError(str(exc).strip()) from exc
        loop = self._loop = _Loop(self, ctx, cur, offset, spill)
        self.metrics.connected = True
        if spill is not None:
            spill.open()  # the slot is ours now: no other process uses these files
        loop.run()

    def connection_lost(self, exc: BaseException, *, streaming: bool) -> Exception | None:
        if not streaming or self._loop is None:
            return None
        self._loop.store_last_position()
        return RetriableError(f"replication connection lost: {exc}".strip())

    def end_session(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    @property
    def server_version(self) -> int:
        return int(getattr(self.conn, "server_version", 0) or 0)

    def _protocol(self) -> int:
        """1 with ``headwater.pgoutput.streaming`` off or before PostgreSQL 14; 4 (streaming
        'parallel') from PostgreSQL 16 on, else 2 (streaming 'on').

        Protocol 4 changes one thing a reader sees: Stream Abort carries the abort's LSN and
        time (the decoder reads both forms).  Asking for it on 16+ is what a current
        subscriber does (PostgreSQL 18 subscriptions default to streaming = parallel), so the
        walsender is exercised the way the newest servers are used."""
        version = self.server_version
        if not self.options.pgoutput_streaming:
            return 1
        if version < 140000:
            log.info("PostgreSQL %s cannot stream in-progress transactions (14+ can): "
                     "pgoutput protocol 1", version)
            return 1
        return 4 if version >= PARALLEL_STREAMING_MIN_SERVER_VERSION else 2

    def _spill_directory(self, cur: Any) -> Path:
        """`<spill root>/<slot>-<system identifier>`: one per slot and server cluster, so that
        no two capture processes share one (the server lets one process hold a slot)."""
        root = self.options.spill_dir or default_spill_root()
        try:
            cur.execute("IDENTIFY_SYSTEM")
            system_id = str(cur.fetchone()[0])
        except psycopg2.Error as exc:
            raise RetriableError(f"IDENTIFY_SYSTEM failed: {exc}".strip()) from exc
        return Path(root) / f"{self.slot_name}-{system_id}"

    def _start_replication(self, cur: Any, start_lsn: int, *, protocol: int = 1) -> None:
        options = {"proto_version": str(protocol), "publication_names": self.publication_name}
        if protocol >= 2:
            options["streaming"] = "parallel" if protocol >= 4 else "on"
        if self.options.messages is not None and self.server_version >= MESSAGES_MIN_SERVER_VERSION:
            options["messages"] = "true"  # as Debezium asks from PostgreSQL 14 on
        cur.start_replication(
            slot_name=self.slot_name,
            slot_type=REPLICATION_LOGICAL,
            start_lsn=start_lsn,
            decode=False,
            options=options,
            # psycopg2 refuses less than 1 s; shorter intervals are kept by our own loop (idle).
            status_interval=max(1.0, self.options.status_s),
        )


def old_image(
    codec: TableCodec, old: Any, kind: str | None, dispatcher: EventDispatcher
) -> tuple[Any, ...] | None:
    """The before image: the converted old tuple (`TableCodec.before_image`)."""
    return None if old is None else codec.before_image(dispatcher.convert(codec, old), kind)


# Data messages of a stream segment that reach the spill file (with their in-stream xid):
# Insert, Update, Delete, Truncate, Relation and (transactional) logical decoding messages.
# Type messages carry nothing we emit, and an Origin message (no xid) may follow Stream Start.
_SPILLED = frozenset(b"IUDTRM")
_NOT_SPILLED = frozenset(b"YO")
_STREAM_STOP = ord("E")
_UPDATE = pgoutput.Update
# The operation of a row message's change (`_Loop._flush_run`).
_OPS: dict[type, Op] = {pgoutput.Insert: Op.CREATE, pgoutput.Update: Op.UPDATE,
                        pgoutput.Delete: Op.DELETE}


def _event_tx_id(tx_id: str, position: PostgresPosition) -> str:
    """`transaction.id` of an event as Debezium 3.x writes it: `<txId>:<the event's LSN>`
    (PostgresTransactionMonitor.adjustTxId reads the offset's LSN, the current message's)."""
    return f"{tx_id}:{position.lsn}"


class _ReplayMessage(NamedTuple):
    """A replayed message, shaped like psycopg2's ReplicationMessage as far as `run` reads it."""

    payload: bytes
    data_start: int


class _Loop(LogSession):
    """One run of the replication stream: the transaction and offset state of the reader."""

    def __init__(
        self, source: PostgresStreamingSource, ctx: SourceRunContext, cur: Any,
        offset: dict[str, Any], spill: SpillBuffer | None = None,
    ) -> None:
        self.source = source
        self.cur = cur
        self.options = source.options
        self.spill = spill  # protocol 2 (streaming on) only
        super().__init__(source, ctx, self.options.dispatch, self.options.heartbeat_action)
        self.dispatcher.event_tx_id = _event_tx_id
        # transaction state
        self.commit_lsn = 0
        self.xid: int | None = None
        self.ts_ms = 0
        self.ts_us: int | None = None  # commit time of the transaction, Unix-epoch µs
        self.tx_index = 0  # data messages of the transaction so far (restart skipping)
        # `source.sequence[0]` of the first transaction, Debezium 3.x's lastCommitLsn: the
        # position we resume from, the end LSN of the last durable transaction's Commit, which
        # Debezium too restores from its offset.  After the snapshot Debezium has none (null);
        # Headwater keeps the snapshot's consistent point there, so a transaction that began
        # before it and committed after still orders after the snapshot's reads (consumers,
        # our pipeline included, order by sequence[0]; docs/compatibility.md).
        self.prev_commit: int | None = int(offset["lsn"])
        # offset state
        self.resume_lsn = int(offset["lsn"])
        self.last_commit_lsn: int | None = None
        self.last_index = 0
        self.ack: int | None = None
        self.emitted_ack = self.resume_lsn  # highest ack handed to the writer
        self.skip_commit: int | None = offset.get("lsn_commit")
        self.skip_index: int = int(offset.get("tx_index") or 0)
        self.skipping = self.skip_commit is not None
        self.last_feedback = time.monotonic()
        # end LSN of the last (Stream) Commit received: while `source._durable` is below it,
        # something received is not durable yet (see `settle`)
        self.received_end = self.resume_lsn
        # the server's quiet position `follow` last saw, and since when (monotonic seconds)
        self.still_at = 0
        self.still_since = time.monotonic()
        self.codecs = source._codecs
        # The run of row messages read but not dispatched yet (`_flush_run`): consecutive
        # Inserts, Updates without an old tuple or Deletes of one table version, their
        # decoded messages and positions; `run_byte` is their type byte.
        self.run_codec: TableCodec | None = None
        self.run_byte = b""
        self.run_msgs: list[Any] = []
        self.run_pos: list[PostgresPosition] = []
        self.run_room = 0  # rows the run may take before the pending records make a chunk
        # `read` is the socket, or the replay of a committed streamed transaction until it
        # runs dry (then back to the socket: `idle`).
        self.read = self.live_read = cur.read_message

    # -- signals and incremental snapshots (see connectors/postgres/incremental.py) ---------------
    def _row_position(self, lsn: int) -> PostgresPosition:
        return PostgresPosition(lsn, self.commit_lsn, self.prev_commit, self.xid, None,
                                self.ts_us)

    def boundary_position(self) -> PostgresPosition:
        return PostgresPosition(self.resume_lsn, self.resume_lsn, self.prev_commit, None)

    def emit_blocking(self, records: list[ChangeRecord]) -> None:
        super().emit_blocking(records)
        self.keepalive()

    def _hook_idle(self) -> None:
        hook = self.hook
        self.dispatcher.extend(hook.idle(self.cur, self.in_tx, self.boundary_position))
        if not self.in_tx:
            hook.boundary(self.emit_blocking, self.flush_offset)

    def flush_offset(self) -> None:
        if self.run_msgs:
            self._flush_run()
        offset = self.with_progress({
            "lsn": self.resume_lsn,
            "lsn_commit": self.last_commit_lsn,
            "tx_index": self.last_index,
            "txId": self.xid,
            "ts_usec": self.ts_ms * 1000,
            "snapshot_completed": True,
        })
        self.dispatcher.flush(offset, self.ack)
        if self.ack is not None:
            self.emitted_ack = self.ack
        self.ack = None

    def offset_unsent(self) -> bool:
        return self.ack is not None

    def flush_pending(self) -> None:
        if self.run_msgs:
            self._flush_run()
        super().flush_pending()

    def run(self) -> None:
        super().run()
        self.flush_pending()  # stopped: what was read goes out with its offset

    def kind(self, msg: Any) -> Any:
        # the last message's start caps what is confirmed (a replayed one's is lower: caps
        # more, never less)
        self.source.last_start = msg.data_start
        kind = msg.payload[:1]
        if self.run_msgs and kind != self.run_byte:  # the run ends before another kind
            self._flush_run()
        return kind

    def handlers(self) -> dict[Any, Callable[[Any], None]]:
        on_row = self.on_row
        return {
            b"I": on_row, b"U": on_row, b"D": on_row, b"B": self.on_begin,
            b"C": self.on_commit, b"R": self.on_relation, b"T": self.on_truncate,
            b"S": self.on_stream_start, b"c": self.on_stream_commit,
            b"A": self.on_stream_abort, b"M": self.on_message,
        }

    def unhandled(self, msg: Any) -> None:
        pgoutput.decode(msg.payload)  # Type, Origin: checked, nothing to emit

    def on_row(self, msg: Any) -> None:
        m: Any = pgoutput.decode(msg.payload)
        data_start = msg.data_start
        kind = type(m)
        codecs = self.codecs
        codec = codecs.get(m.relation_oid)
        self.tx_index += 1
        dispatcher = self.dispatcher
        hook = self.hook
        if hook is not None and m.relation_oid in hook.watched:
            dispatcher.extend(hook.row(
                m, kind, functools.partial(self._row_position, data_start)))
        if codec is None:
            if m.relation_oid not in codecs:
                raise RuntimeError(f"row for unknown relation {m.relation_oid}")
            dispatcher.filtered()
            return
        replay = self.skipping and self._replayed()
        # tuple.__new__ on NamedTuples skips their Python-level __new__ (hot path).
        pos = tuple.__new__(PostgresPosition, (data_start, self.commit_lsn, self.prev_commit,
                                               self.xid, None, self.ts_us))
        run_msgs = self.run_msgs
        if hook is None and not replay and (kind is not _UPDATE or m.old is None) and (
                (codec is self.run_codec and run_msgs) or self._start_run(codec, kind, msg)):
            # Into the run, converted and dispatched with its neighbours (`_flush_run`).
            run_msgs.append(m)
            self.run_pos.append(pos)
            self.last_commit_lsn = self.commit_lsn
            self.last_index = self.tx_index
            if len(run_msgs) >= self.run_room:
                self.flush_offset()
            return
        if self.run_msgs:
            self._flush_run()
        if replay:
            if not self.tx_metadata:
                return
            # Written by an earlier run: counted for the transaction block, not emitted.
            dispatcher.replaying = True
        self._dispatch_row(codec, kind, m, pos)
        if replay:
            dispatcher.replaying = False
            return
        self.last_commit_lsn = self.commit_lsn
        self.last_index = self.tx_index
        if dispatcher.full:
            self.flush_offset()

    def _start_run(self, codec: TableCodec, kind: type, msg: Any) -> bool:
        """Ends the run (if any) and starts one of `codec`'s rows of `kind` if the
        dispatcher takes them plain (`plain_rows`: no transaction block, the operation not
        skipped; neither changes inside a run, which a transaction's end ends)."""
        if self.run_msgs:
            self._flush_run()
        if not self.dispatcher.plain_rows(codec.schema, _OPS[kind], (), ()):
            return False
        self.run_codec = codec
        self.run_byte = msg.payload[:1]
        dispatcher = self.dispatcher
        self.run_room = dispatcher.max_batch_size - len(dispatcher.pending)  # to a full chunk
        return True

    def _flush_run(self) -> None:
        """Dispatch the run of row messages: its images converted column by column
        (`convert_rows`) and its records made in one pass (`EventDispatcher.changes`); when
        a value does not convert, row by row as `on_row` would have (`_dispatch_row`: the
        converting failure mode, the event's position in the error).

        Why: per row, the conversion and the dispatch cost five Python calls; a run of a
        transaction's rows pays them once (bench/capture_vs_pg_recvlogical.py)."""
        msgs, positions, codec = self.run_msgs.copy(), self.run_pos.copy(), self.run_codec
        self.run_msgs.clear()  # the same lists all along (`on_row` holds them)
        self.run_pos.clear()
        assert codec is not None
        dispatcher = self.dispatcher
        kind = type(msgs[0])
        op = _OPS[kind]
        befores: list[Any]
        afters: list[Any]
        try:
            if kind is pgoutput.Delete:
                olds = codec.convert_rows([m.old for m in msgs])
                before_image = codec.before_image
                befores = [before_image(v, m.old_kind)
                           for v, m in zip(olds, msgs, strict=True)]
                afters = [None] * len(msgs)
            else:
                afters = codec.convert_rows([m.new for m in msgs])
                befores = [None] * len(msgs)
        except Exception:
            pass  # row by row below: the converting failure mode decides
        else:
            dispatcher.changes(codec.schema, op, befores, afters, self.ts_ms, positions)
            return
        for m, pos in zip(msgs, positions, strict=True):
            self._dispatch_row(codec, kind, m, pos)

    def _dispatch_row(self, codec: TableCodec, kind: type, m: Any, pos: PostgresPosition
                      ) -> None:
        """One row message converted and handed to the dispatcher."""
        dispatcher = self.dispatcher
        try:
            if kind is pgoutput.Insert:
                dispatcher.change(codec.schema, Op.CREATE, None,
                                  dispatcher.convert(codec, m.new), self.ts_ms, pos)
            elif kind is pgoutput.Update:
                self.update(codec, m, pos)
            else:
                dispatcher.change(codec.schema, Op.DELETE,
                                  old_image(codec, m.old, m.old_kind, dispatcher), None,
                                  self.ts_ms, pos)
        except Exception as exc:
            dispatcher.processing_failed(exc, self._where(pos.lsn, codec))

    def on_relation(self, msg: Any) -> None:
        """A table's columns: its codec (`RelationCodecs`)."""
        m: Any = pgoutput.decode(msg.payload)
        if self.hook is not None:
            self.hook.relation(m.oid, m.namespace, m.name, tuple(c.name for c in m.columns))
        self.codecs.relation(m.oid, m.namespace, m.name, m.columns)

    # -- transactions ------------------------------------------------------------------------
    def on_begin(self, msg: Any) -> None:
        """A Begin message; the WAL position the server sent it at (the transaction's first
        LSN) is the LSN of the BEGIN event's id as Debezium 3.x writes it."""
        m: Any = pgoutput.decode(msg.payload)
        data_start = msg.data_start
        self.source.guard.begin(data_start)
        ts_ms = m.commit_ts_us // 1000
        self.begin((m.final_lsn,), str(m.xid), ts_ms, PostgresPosition(
            m.final_lsn, m.final_lsn, self.prev_commit, m.xid), event_id=f"{m.xid}:{data_start}")
        self.commit_lsn = m.final_lsn
        self.xid = m.xid
        self.ts_us = m.commit_ts_us
        self.ts_ms = ts_ms
        self.tx_index = 0
        if self.skipping and self.skip_commit is not None and self.commit_lsn > self.skip_commit:
            self.skipping = False

    def on_commit(self, msg: Any) -> None:
        m: Any = pgoutput.decode(msg.payload)
        self.source.guard.commit(m.end_lsn)
        if self.hook is not None:  # signals of the transaction take effect at its commit
            self.hook_committed(self.xid)
        # Debezium 3.x: the END event's id ends with the position the server sent the Commit
        # message at (its end LSN), which becomes the next events' `sequence[0]`.
        self.dispatcher.commit(self.ts_ms, PostgresPosition(
            m.commit_lsn, m.commit_lsn, self.prev_commit, self.xid),
            event_id=f"{self.xid}:{m.end_lsn}")
        self.prev_commit = self.resume_lsn = self.ack = m.end_lsn
        self.received_end = max(self.received_end, m.end_lsn)
        self.last_commit_lsn = m.commit_lsn
        self.last_index = self.tx_index
        self.in_tx = False
        if self.hook is not None:
            self.hook.boundary(self.emit_blocking, self.flush_offset)

    def _where(self, lsn: int, codec: TableCodec) -> str:
        return (f"LSN {pgoutput.format_lsn(lsn)} (transaction {self.xid}, commit "
                f"{pgoutput.format_lsn(self.commit_lsn)}, table {codec.schema.id})")

    def _replayed(self) -> bool:
        """The restart skip rule: written by an earlier run."""
        return self.skipping and (
            self.commit_lsn < self.skip_commit  # type: ignore[operator]
            or (self.commit_lsn == self.skip_commit and self.tx_index <= self.skip_index))

    def on_truncate(self, msg: Any) -> None:
        m: Any = pgoutput.decode(msg.payload)
        self.tx_index += 1
        if self.hook is not None:  # emitted or not, the rows are gone
            self.hook.truncate(m.relation_oids)
        dispatcher = self.dispatcher
        replay = dispatcher.replaying = self._replayed()
        self.truncates(map(self.codecs.get, m.relation_oids), self.ts_ms,
                       self._row_position(msg.data_start))
        dispatcher.replaying = False
        if replay:
            return
        self.last_commit_lsn = self.commit_lsn
        self.last_index = self.tx_index

    def on_message(self, msg: Any) -> None:
        """A logical decoding message: an op m event if its prefix passes the filters.

        A transactional one is a data message of its transaction (commit time, xid,
        ``tx_index`` and the restart skip rule of its rows).  A non-transactional one stands
        alone between transactions: no xid, the time it is read as source time, and once it
        is durable the slot may move past it (so a restart does not send it again)."""
        m: Any = pgoutput.decode(msg.payload)
        data_start = msg.data_start
        capture = self.options.messages
        if capture is None:  # the slot was read without `messages`: cannot happen
            return
        if m.transactional:
            self.tx_index += 1
        replay = m.transactional and self._replayed()
        dispatcher = self.dispatcher
        if not capture.admits(m.prefix):
            dispatcher.filtered()
        else:
            content = (m.prefix, capture.encode(m.content))
            if m.transactional:
                dispatcher.replaying = replay
                dispatcher.message(capture.table, content, self.ts_ms,
                                   self._row_position(data_start), MESSAGE_COLLECTION)
                dispatcher.replaying = False
            else:
                # Debezium 3.x commits a non-transactional message's position before it
                # dispatches it: its `sequence` is [<its LSN>, <its LSN>] (see below)
                pos = PostgresPosition(data_start, m.lsn, data_start, None)
                dispatcher.message(capture.table, content, int(time.time() * 1000), pos, None)
        if m.transactional:
            if not replay:
                self.last_commit_lsn = self.commit_lsn
                self.last_index = self.tx_index
        else:
            # Debezium's lastCommitLsn: the next events' `sequence[0]`, filtered message or not
            self.prev_commit = data_start
            if not self.in_tx:
                # Nothing before it is pending: resume (and confirm) past it.
                self.resume_lsn = max(self.resume_lsn, m.lsn + 1)
                self.received_end = max(self.received_end, m.lsn + 1)
                self.ack = self.resume_lsn
        if dispatcher.full:
            self.flush_offset()

    def update(self, codec: TableCodec, m: Any, pos: PostgresPosition) -> None:
        dispatcher = self.dispatcher
        after = dispatcher.convert(codec, m.new)
        before = old_image(codec, m.old, m.old_kind, dispatcher)
        if before is not None and UNCHANGED_TOAST in after and m.old_kind == "O":
            after = codec.with_old_toast(after, before)
        dispatcher.change(codec.schema, Op.UPDATE, before, after, self.ts_ms, pos)

    # -- streamed transactions (protocol 2) -----------------------------------------------------
    def _spill(self) -> SpillBuffer:
        if self.spill is None:
            raise RuntimeError("streamed transaction message on a protocol 1 replication stream")
        return self.spill

    def on_stream_start(self, msg: Any) -> None:
        """Stream Start: spill the segment's data messages, undecoded, until Stream Stop."""
        m: Any = pgoutput.decode(msg.payload)
        spill = self._spill()
        data_start = msg.data_start
        source = self.source
        source.guard.stream_start(m.xid, data_start)
        try:
            spill.start(m.xid, m.first_segment)
        except SpillError as exc:  # a new session sends every transaction from its start
            raise RetriableError(str(exc)) from exc
        append = spill.append
        read = self.cur.read_message
        stopping = self.ctx.stopping
        last = data_start  # WAL position of the last message psycopg2 received
        confirmed = source._confirmed  # changes only in idle() and settle()
        received_end = self.received_end  # no commit arrives inside a segment
        while True:
            if last <= confirmed and received_end > source._durable:
                self.settle()
                confirmed = source._confirmed
            if stopping.is_set():
                return  # the spill buffer is closed by `execute`
            msg = read()
            if msg is None:
                self.pause()
                confirmed = source._confirmed
                continue
            data = msg.payload
            last = source.last_start = msg.data_start
            t = data[0]
            if t in _SPILLED:
                append(data, last)
            elif t == _STREAM_STOP:
                break
            elif t not in _NOT_SPILLED:
                raise RuntimeError(
                    f"unexpected pgoutput message {bytes((t,))!r} inside a stream segment")
        spill.stop()
        if last <= source._confirmed and self.received_end > source._durable:
            self.settle()

    def settle(self) -> None:
        """Wait until every commit received is durable, without reading from the socket.

        Called when psycopg2 would forward the flush position on the next keepalive (the last
        message's position is not after what we confirmed) while a received commit is not
        durable yet: once it is, forwarding confirms nothing that is not durable."""
        self.flush_pending()
        source = self.source
        stopping = self.ctx.stopping
        while source._durable < self.received_end and not stopping.is_set():
            self.keepalive()
            time.sleep(0.002)

    def keepalive(self) -> None:
        """Status update while not reading (replay, settle): keeps wal_sender_timeout away."""
        now = time.monotonic()
        if now - self.last_feedback > self.options.status_s:
            self.source._send_feedback(force=True)
            self.last_feedback = now

    def on_stream_commit(self, msg: Any) -> None:
        """Stream Commit: read next the replay of the transaction (then None: `idle`)."""
        m: Any = pgoutput.decode(msg.payload)
        spill = self._spill()
        first = self.source.guard.stream_end(m.xid)
        self.received_end = max(self.received_end, m.end_lsn)
        log.debug("streamed transaction %d committed at %s: replaying %d spilled bytes",
                  m.xid, pgoutput.format_lsn(m.commit_lsn), spill.size(m.xid))
        records = spill.replay(m.xid)
        start = m.commit_lsn if first is None else first
        self.read = functools.partial(next, self._replay(m, start, records), None)

    def _replay(
        self, m: Any, start: int, records: Iterator[tuple[int, bytes]]
    ) -> Iterator[_ReplayMessage]:
        new = tuple.__new__
        yield new(_ReplayMessage, (pgoutput.encode_begin(m.commit_lsn, m.commit_ts_us, m.xid),
                                   start))
        for n, (lsn, message) in enumerate(records, 1):
            yield new(_ReplayMessage, (message, lsn))
            if not n & 1023:
                self.keepalive()
        yield new(_ReplayMessage, (pgoutput.encode_commit(m.commit_lsn, m.end_lsn,
                                                          m.commit_ts_us), m.end_lsn))

    def on_stream_abort(self, msg: Any) -> None:
        m: Any = pgoutput.decode(msg.payload)
        spill = self._spill()
        if m.subxid == m.xid:
            self.source.guard.stream_end(m.xid)
        dropped = spill.abort(m.xid, m.subxid)
        log.debug("streamed transaction %d: abort of %d dropped %d %s", m.xid, m.subxid,
                  dropped, "bytes" if m.subxid == m.xid else "message(s)")

    # -- idle: flush, feedback, heartbeats ------------------------------------------------------
    def idle(self) -> None:
        """Nothing came from the socket (or a replay ran dry: back to the socket)."""
        if self.read is not self.live_read:
            self.read = self.live_read
            return
        self.pause()
        if self.hook is not None:
            self._hook_idle()

    def pause(self) -> None:
        """Flush, heartbeat or follow, feedback; then wait up to 0.2 s for the socket."""
        super().idle()
        source = self.source
        now = time.monotonic()
        if (source.confirmable() > source._confirmed
                or now - self.last_feedback > self.options.status_s):
            source._send_feedback(force=True)
            self.last_feedback = now
        select.select([self.cur], [], [], 0.2)

    def quiet(self) -> None:
        if self.options.confirm_flush:
            self.follow(time.monotonic())

    def quiet_position(self) -> int | None:
        """The server's WAL end (its last message or keepalive) when it may be stored and
        confirmed: not before the resume position, with no transaction of ours open (nor an
        open streamed one) and everything received durable, so every commit of ours before it
        is durable."""
        source = self.source
        wal_end = int(getattr(self.cur, "wal_end", 0) or 0)
        if (wal_end >= self.resume_lsn and not self.in_tx and not source.guard.open_streams
                and source._durable >= self.emitted_ack):
            return wal_end
        return None

    def _move_to_quiet(self, wal_end: int) -> None:
        self.resume_lsn = wal_end
        self.ack = wal_end
        self.source.quiet_lsn = wal_end

    def follow(self, now: float) -> None:
        """Store (then confirm) the server's position when it stood still `FOLLOW_STILL_S`
        with nothing of ours in flight, or at once when psycopg2 may already forward the slot
        to it: a shutting-down walsender waits until the client confirms all it sent, and
        following every keepalive of a busy server would let psycopg2 forward again
        (docs/postgres.md, "Server versions")."""
        source = self.source
        wal_end = self.quiet_position()
        if wal_end is None or wal_end <= source.quiet_lsn:
            self.still_since = now
            self.still_at = 0
            return
        if wal_end != self.still_at:
            self.still_at = wal_end
            self.still_since = now
        # Before a session's first message psycopg2 forwards whatever is confirmed.
        exposed = source._confirmed >= source.last_start
        if not exposed and now - self.still_since < FOLLOW_STILL_S:
            return
        if wal_end > self.resume_lsn:
            self._move_to_quiet(wal_end)
            self.flush_offset()
        else:  # the resume position itself (durable): only the cap below it is lifted
            source.quiet_lsn = wal_end

    def store_last_position(self) -> None:
        """On a lost connection: store the server's last position if nothing of ours was in
        flight, once what was received is durable.  psycopg2 may have confirmed it on the
        keepalive the connection ended with, unseen by the reader, and the start check would
        take the slot's `restart_lsn` past the stored offset for a re-created slot
        (docs/postgres.md, "Server versions")."""
        source = self.source
        if self.in_tx or source.guard.open_streams:
            return  # a transaction of ours is open: the stored offset stays as it is
        try:
            self.flush_pending()
            stopping = self.ctx.stopping
            deadline = time.monotonic() + 60
            while (source._durable < self.emitted_ack and not stopping.is_set()
                   and time.monotonic() < deadline):
                time.sleep(0.002)
            wal_end = self.quiet_position()
            if wal_end is not None and wal_end > self.resume_lsn:
                log.info("streaming step: connection lost with nothing in flight: storing the "
                         "server's last position %s", pgoutput.format_lsn(wal_end))
                self._move_to_quiet(wal_end)
                self.flush_offset()
        except QueueClosed:
            log.debug("the server's last position was not stored: the capture stops")
        except Exception as exc:  # the reconnect goes on from what is stored
            log.warning("the server's last position was not stored: %s", exc)

    def heartbeat_position(self) -> PostgresPosition:
        """The resume position; when nothing of ours is in flight, moved to the server's."""
        wal_end = self.quiet_position()
        position = self.resume_lsn
        if wal_end is not None and wal_end > position:
            # Everything sent before wal_end is received and durable: confirm it, so WAL that
            # other databases write is not pinned by this slot.
            self._move_to_quiet(wal_end)
            position = wal_end
        return PostgresPosition(position, position, self.prev_commit, None)
