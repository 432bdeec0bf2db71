"""Streams changes from a logical replication slot with pgoutput.

The reader loop pulls messages from psycopg2's replication cursor, decodes them with the
sans-IO pgoutput decoder and turns row messages into change records, in chunks of up to
`max.batch.size`.  A chunk is handed to the runtime when it is full or when the server has
nothing more to send right now, with:

- the offset to store once the chunk is durable: `lsn` (end of the last complete transaction,
  where a restart asks the server to resume), and `lsn_commit`/`tx_index` (the last event
  written, so a restart in the middle of a replayed transaction skips what is already out);
- the ack: the end LSN of the last transaction the chunk completes.

Only `acknowledge` (called by the writer after the topic log fsync) moves the LSN we confirm to
the server; psycopg2 sends that flush position in its standby status updates and keepalive
replies, so `confirmed_flush_lsn` never passes what is durable.
"""

from __future__ import annotations

import logging
import select
import time
from collections.abc import Callable
from typing import Any

from psycopg2.extras import REPLICATION_LOGICAL

from headwater.connectors.postgres import pgoutput
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.tables import IncomingColumn, TableCodec
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import (
    ABSENT,
    UNCHANGED_TOAST,
    ChangeRecord,
    Op,
    SnapshotMarker,
    SourceContext,
    TxInfo,
)

log = logging.getLogger("headwater.connectors.postgres.streaming")

CodecFactory = Callable[[int, str, str, tuple[IncomingColumn, ...]], TableCodec | None]


class PostgresStreamingSource:
    def __init__(
        self,
        *,
        repl_conn: Any,
        context: SourceContext,
        slot_name: str,
        publication_name: str,
        codec_factory: CodecFactory,
        max_batch_size: int,
        status_interval_s: float,
        metrics: CaptureMetrics,
    ) -> None:
        self.conn = repl_conn
        self.context = context
        self.slot_name = slot_name
        self.publication_name = publication_name
        self.codec_factory = codec_factory
        self.max_batch_size = max_batch_size
        self.status_interval_s = max(0.5, status_interval_s)
        self.metrics = metrics
        self._durable = 0  # set by the writer thread (a plain int store is atomic)
        self._confirmed = 0
        self._cur: Any = None
        # relation oid -> codec (None: table not captured)
        self._codecs: dict[int, TableCodec | None] = {}

    # -- called by the writer thread ----------------------------------------------------------
    def acknowledge(self, token: Any) -> None:
        lsn = int(token)
        self._durable = max(self._durable, lsn)

    # -- reader thread -------------------------------------------------------------------------
    def _send_feedback(self, force: bool = False) -> None:
        durable = self._durable
        if self._cur is not None and (durable > self._confirmed or force):
            self._cur.send_feedback(write_lsn=durable, flush_lsn=durable, force=True)
            self._confirmed = durable

    def close(self) -> None:
        """Confirm the final durable position (called after the writer has drained)."""
        try:
            self._send_feedback()
        except Exception as exc:  # the connection may already be gone
            log.debug("final feedback not sent: %s", exc)

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        if offset is None or "lsn" not in offset:
            raise RuntimeError("streaming needs a start offset (the snapshot or slot position)")
        start_lsn = int(offset["lsn"])
        skip_commit = offset.get("lsn_commit")
        skip_index = offset.get("tx_index")
        self._durable = max(self._durable, start_lsn)
        cur = self.conn.cursor()
        self._cur = cur
        log.info("streaming step: START_REPLICATION SLOT %s LOGICAL %s (publication %s)",
                 self.slot_name, pgoutput.format_lsn(start_lsn), self.publication_name)
        cur.start_replication(
            slot_name=self.slot_name,
            slot_type=REPLICATION_LOGICAL,
            start_lsn=start_lsn,
            decode=False,
            options={"proto_version": "1", "publication_names": self.publication_name},
            status_interval=self.status_interval_s,
        )
        self.metrics.connected = True
        self._loop(ctx, cur, start_lsn, skip_commit, skip_index)

    def _loop(
        self, ctx: SourceRunContext, cur: Any, start_lsn: int,
        skip_commit: int | None, skip_index: int | None,
    ) -> None:
        decode = pgoutput.decode
        new = tuple.__new__
        CREATE = Op.CREATE  # noqa: N806 (local alias of a constant, hot path)
        STREAMING = SnapshotMarker.FALSE  # noqa: N806
        xid_str = ""
        context = self.context
        max_batch = self.max_batch_size
        codecs = self._codecs
        pending: list[ChangeRecord] = []
        # transaction state
        commit_lsn = 0
        xid: int | None = None
        ts_ms = 0
        tx_index = 0
        per_table: dict[int, int] = {}
        prev_commit: int | None = None
        # offset state
        resume_lsn = start_lsn
        last_commit_lsn: int | None = None
        last_index = 0
        ack: int | None = None
        last_feedback = time.monotonic()
        skipping = skip_commit is not None

        def emit() -> None:
            nonlocal ack
            offset = {
                "lsn": resume_lsn,
                "lsn_commit": last_commit_lsn,
                "tx_index": last_index,
                "txId": xid,
                "ts_usec": ts_ms * 1000,
                "snapshot_completed": True,
            }
            ctx.emit(Batch(pending[:], offset=offset, ack=ack))
            pending.clear()
            ack = None

        while True:
            if ctx.stopping.is_set():
                if pending or ack is not None:
                    emit()
                return
            msg = cur.read_message()
            if msg is None:
                if pending or ack is not None:
                    emit()
                now = time.monotonic()
                if self._durable > self._confirmed or now - last_feedback > self.status_interval_s:
                    self._send_feedback(force=True)
                    last_feedback = now
                select.select([cur], [], [], 0.2)
                continue
            m: Any = decode(msg.payload)  # dispatched on type(m) below (fastest in CPython)
            kind = type(m)
            if kind is pgoutput.Insert or kind is pgoutput.Update or kind is pgoutput.Delete:
                codec = codecs.get(m.relation_oid)
                tx_index += 1
                if codec is None:
                    if m.relation_oid not in codecs:
                        raise RuntimeError(f"row for unknown relation {m.relation_oid}")
                    self.metrics.events_filtered += 1
                    continue
                if skipping and (
                    commit_lsn < skip_commit  # type: ignore[operator]
                    or (commit_lsn == skip_commit and tx_index <= (skip_index or 0))
                ):
                    continue
                table = codec.schema
                count = per_table.get(m.relation_oid, 0) + 1
                per_table[m.relation_oid] = count
                # tuple.__new__ on NamedTuples skips their Python-level __new__ (hot path).
                pos = new(PostgresPosition, (msg.data_start, commit_lsn, prev_commit, xid, None))
                tx = new(TxInfo, (xid_str, tx_index, count))
                if kind is pgoutput.Insert:
                    pending.append(new(ChangeRecord, (
                        context, table, CREATE, None, codec.convert(m.new), ts_ms,
                        int(time.time() * 1000), STREAMING, pos, tx, None)))
                elif kind is pgoutput.Update:
                    self._update(pending, codec, m, ts_ms, pos, tx)
                else:
                    before = self._old_image(codec, m.old, m.old_kind)
                    pending.append(ChangeRecord(
                        context, table, Op.DELETE, before, None, ts_ms,
                        int(time.time() * 1000), SnapshotMarker.FALSE, pos, tx))
                last_commit_lsn = commit_lsn
                last_index = tx_index
                if len(pending) >= max_batch:
                    emit()
            elif kind is pgoutput.Begin:
                commit_lsn = m.final_lsn
                xid = m.xid
                xid_str = str(xid)
                ts_ms = m.commit_ts_us // 1000
                tx_index = 0
                per_table = {}
                if skipping and skip_commit is not None and commit_lsn > skip_commit:
                    skipping = False
            elif kind is pgoutput.Commit:
                prev_commit = m.commit_lsn
                resume_lsn = m.end_lsn
                last_commit_lsn = m.commit_lsn
                last_index = tx_index
                ack = m.end_lsn
                self.metrics.committed_transactions += 1
                self.metrics.last_transaction_id = str(xid)
            elif kind is pgoutput.Relation:
                self._relation(m)
            # Type, Origin, LogicalMessage and Truncate (skipped.operations=t, Debezium's
            # default) carry nothing to emit here.

    def _relation(self, m: Any) -> None:
        incoming = tuple(
            IncomingColumn(c.name, c.type_oid, c.type_modifier, c.is_key) for c in m.columns
        )
        old = self._codecs.get(m.oid)
        if old is not None and old.same_shape(incoming):
            return
        self._codecs[m.oid] = self.codec_factory(m.oid, m.namespace, m.name, incoming)

    def _old_image(self, codec: TableCodec, old: Any, kind: str | None) -> tuple[Any, ...] | None:
        if old is None:
            return None
        values = codec.convert(old)
        if kind == "K":
            # Only replica identity columns were sent; the rest are unknown, not NULL.
            ident = codec.identity
            values = tuple(v if i in ident else ABSENT for i, v in enumerate(values))
        return values

    def _update(
        self, pending: list[ChangeRecord], codec: TableCodec, m: Any, ts_ms: int,
        pos: PostgresPosition, tx: TxInfo,
    ) -> None:
        context = self.context
        table = codec.schema
        after = codec.convert(m.new)
        before = self._old_image(codec, m.old, m.old_kind)
        if before is not None and UNCHANGED_TOAST in after and m.old_kind == "O":
            after = tuple(
                b if a is UNCHANGED_TOAST and b is not UNCHANGED_TOAST else a
                for a, b in zip(after, before, strict=True)
            )
        now = int(time.time() * 1000)
        keys = table.key_positions
        if before is not None and keys:
            old_key = tuple(before[i] for i in keys)
            new_key = tuple(after[i] for i in keys)
            if ABSENT not in old_key and old_key != new_key:
                pending.append(ChangeRecord(
                    context, table, Op.DELETE, before, None, ts_ms, now, SnapshotMarker.FALSE,
                    pos, tx, other_key=after))
                pending.append(ChangeRecord(
                    context, table, Op.CREATE, None, after, ts_ms, now, SnapshotMarker.FALSE,
                    pos, tx, other_key=before))
                return
        pending.append(ChangeRecord(
            context, table, Op.UPDATE, before, after, ts_ms, now, SnapshotMarker.FALSE, pos, tx))

