"""Streaming from a change stream into the dispatcher (MongoDbStreamingChangeEventSource).

One change stream per `capture.scope`, resumed after the stored resume token.  Events are read
with `try_next` (no wait while the cursor's batch has events), handed to the dispatcher, and
flushed when `max.batch.size` is reached, every 50 ms under load, or when the stream is idle;
every flush carries the offset that resumes after its last event (filtered events included),
so a restart neither repeats nor loses an event: the offset is stored only once the events
before it are in the topic log (the runtime's contract).

Transactions: events of a multi-document transaction carry `lsid` and `txnNumber`; Debezium's
transaction id is ``<lsid>:<txnNumber>``.  BEGIN comes with the first event of a transaction,
END when an event of another (or of no) transaction follows, with that event's time as its
`ts_ms`: the change stream does not mark a transaction's end, and Debezium's END is the same
(an idle stream leaves the transaction open, its context in the offset).  Single-document
writes belong to no transaction: no `transaction` block, as Debezium writes them.  A restart
inside a transaction continues its counts from the offset (`transaction_id`,
`transaction_data_collection_order_<collection>`, TransactionContext's keys).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC
from typing import TYPE_CHECKING, Any

from bson.datetime_ms import DatetimeMS
from bson.timestamp import Timestamp
from pymongo import errors

from headwater.connectors.mongodb import connection
from headwater.connectors.mongodb.documents import UnknownOperation
from headwater.connectors.mongodb.position import (
    RESUME_TOKEN,
    MongoPosition,
    lsid_json,
    offset_time,
    stream_offset,
    token_from_offset,
    token_position,
    token_to_base64,
)
from headwater.connectors.mongodb.prefetch import ChangeStreamReader, Idle
from headwater.connectors.mongodb.rawdoc import fields_of
from headwater.connectors.mongodb.signals import MongoIncrementalHook
from headwater.engine.dispatcher import DispatchOptions, EventDispatcher
from headwater.engine.queue import Batch
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.model.record import ChangeRecord

if TYPE_CHECKING:
    from headwater.connectors.mongodb.connector import MongoDbConnector

log = logging.getLogger("headwater.connectors.mongodb")

TX_ID = "transaction_id"
TX_COUNT_PREFIX = "transaction_data_collection_order_"
# ChangeStreamHistoryLost, and ChangeStreamFatalError (older servers' "resume point may no
# longer be in the oplog").
_HISTORY_LOST = (286, 280)
_FLUSH_S = 0.05
_IDLE_OFFSET_S = 1.0


class ResumeTokenLostError(RuntimeError):
    """The stored resume token is no longer in the oplog."""


def history_lost(exc: errors.OperationFailure) -> bool:
    return exc.code in _HISTORY_LOST


class MongoDbStreamingSource:
    def __init__(self, connector: MongoDbConnector) -> None:
        self.connector = connector
        self.cfg = connector.config
        self.metrics = connector.metrics

    def acknowledge(self, token: Any) -> None:
        """MongoDB keeps no reader state: the stored offset is all there is."""

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        cfg = self.cfg
        token = offset.get(RESUME_TOKEN) if offset else None
        client = connection.client(cfg, **connection.RAW_DOCUMENTS)  # rawdoc.py
        # Debezium's order: the stored resume token, else the stored operation time (an
        # offset written for a stream's start position), else capture.start.op.time.
        stored_time = offset_time(offset)
        op_time = None if token else (stored_time
                                      or start_operation_time(cfg.capture_start_op_time))
        try:
            kw: dict[str, Any] = ({"resume_after": token_from_offset(str(token))} if token
                                  else {"start_at_operation_time": op_time} if op_time
                                  else {})
            log.info("streaming: %s", f"resuming after token {token}" if token
                     else f"at operation time {op_time} (the stored offset)" if stored_time
                     else f"at operation time {op_time} (capture.start.op.time)" if op_time
                     else "from the current end of the change stream")
            with self.connector.open_stream(client, **kw) as stream:
                self.metrics.connected = True
                loop = _Loop(self, ctx, stream, offset or {})
                try:
                    loop.run()
                finally:
                    if loop.hook is not None:
                        loop.hook.close()
        except errors.OperationFailure as exc:
            if history_lost(exc) and stored_time is not None:
                raise ResumeTokenLostError(
                    f"the stored operation time {stored_time} is no longer in the oplog of "
                    f"{cfg.masked_connection_string()} ({connection.scrub(str(exc), cfg)})"
                    ) from None
            if history_lost(exc) and op_time is not None:
                raise ResumeTokenLostError(
                    f"capture.start.op.time={cfg.capture_start_op_time} ({op_time}) is not "
                    f"in the oplog of {cfg.masked_connection_string()} "
                    f"({connection.scrub(str(exc), cfg)}); give a later operation time") from None
            if history_lost(exc):
                raise ResumeTokenLostError(
                    f"the stored resume token {token} is no longer in the oplog of "
                    f"{cfg.masked_connection_string()} ({connection.scrub(str(exc), cfg)}); "
                    "changes after it are lost. Set snapshot.mode=when_needed to take a new "
                    "snapshot, or delete the offsets file to start over") from None
            if connection.transient(exc):
                raise RetriableError(f"change stream failed: "
                                     f"{connection.scrub(str(exc), cfg)}") from None
            raise RuntimeError(connection.scrub(str(exc), cfg)) from None
        except errors.PyMongoError as exc:
            if connection.transient(exc):
                raise RetriableError(f"MongoDB connection lost: "
                                     f"{connection.scrub(str(exc), cfg)}") from None
            raise RuntimeError(connection.scrub(str(exc), cfg)) from None
        finally:
            self.metrics.connected = False
            client.close()


def start_operation_time(value: int | None) -> Timestamp | None:
    """capture.start.op.time as the BSON timestamp it is the long of (Debezium's
    `new BsonTimestamp(long)`: seconds in the high 32 bits, increment in the low)."""
    if value is None:
        return None
    return Timestamp(value >> 32, value & 0xFFFFFFFF)


class _Loop:
    """One streaming session."""

    def __init__(self, source: MongoDbStreamingSource, ctx: SourceRunContext, stream: Any,
                 offset: dict[str, Any]) -> None:
        self.connector = source.connector
        self.cfg = source.cfg
        self.ctx = ctx
        self.stream = stream
        cfg = self.cfg
        self.dispatcher = EventDispatcher(
            self.connector.context,
            DispatchOptions(
                max_batch_size=cfg.max_batch_size,
                skipped_operations=cfg.skipped_operations,
                transaction_metadata=cfg.provide_transaction_metadata,
                heartbeat_interval_s=cfg.heartbeat_interval_ms / 1000.0,
                processing_failure_mode=cfg.event_processing_failure_handling_mode,
                implicit_transactions=False),
            source.metrics, ctx.emit)
        token = offset.get(RESUME_TOKEN)
        self.position: MongoPosition | None = (
            token_position(token_from_offset(str(token))) if token else None)
        self.last_flush = time.monotonic()
        self.offset_pending = False
        # collection.include/exclude.list per namespace: regular expressions, once each
        self.captured: dict[tuple[str, str], bool] = {}
        # signals and incremental snapshots (signals.py); None when no channel is configured
        signals = cfg.signals
        self.hook: MongoIncrementalHook | None = None
        if signals.data_collection or signals.file_channel:
            self.hook = MongoIncrementalHook(self.connector, lambda: self.position)
            self.hook.start(offset)
        tx_id = offset.get(TX_ID)
        if tx_id and cfg.provide_transaction_metadata:
            counts = {k[len(TX_COUNT_PREFIX):]: int(v) for k, v in offset.items()
                      if k.startswith(TX_COUNT_PREFIX)}
            self.dispatcher.resume(str(tx_id), 0, self.position, counts)

    # -- loop ------------------------------------------------------------------------------------

    def run(self) -> None:
        """Events from a ChangeStreamReader (prefetch.py: the next batch is read while this
        one is encoded); `Idle` carries the resume token of an empty poll."""
        stopping = self.ctx.stopping
        on_event = self.on_event
        with ChangeStreamReader(self.stream) as reader:
            next_item = reader.next
            while not stopping.is_set():
                item = next_item()
                if item is None:
                    continue
                if type(item) is Idle:
                    self.idle(item.token)
                    continue
                on_event(item)

    def on_event(self, event: Any) -> None:
        dispatcher = self.dispatcher
        fields = fields_of(event)  # a dict: the event is read field by field
        cluster = fields["clusterTime"]
        lsid, txn = fields.get("lsid"), fields.get("txnNumber")
        wall = fields.get("wallTime")
        wall_ms = 0 if wall is None else int(wall) if type(wall) is DatetimeMS else int(
            wall.replace(tzinfo=UTC).timestamp() * 1000)  # a naive datetime is UTC
        position = MongoPosition(cluster.time, cluster.inc, token_to_base64(fields["_id"]),
                                 lsid_json(lsid) if lsid is not None and txn is not None
                                 else None,
                                 int(txn) if lsid is not None and txn is not None else None,
                                 wall_ms)
        ts = wall_ms or cluster.time * 1000
        tx_id = position.tx_id
        if dispatcher.in_tx and dispatcher.tx_id != tx_id:
            dispatcher.commit(ts, self.position)
        if tx_id is not None and not dispatcher.in_tx:
            dispatcher.begin(tx_id, ts, position)
        self.position = position
        self.offset_pending = True
        ns = fields.get("ns")
        if ns is not None:
            ns = fields_of(ns)
            database, collection = ns.get("db", ""), ns.get("coll", "")
        else:
            database = collection = ""
        hook = self.hook
        if hook is not None:  # a window closed by this event: its READs go here
            dispatcher.extend(hook.event(fields, database, collection, position))
        captured = self.captured.get((database, collection))
        if captured is None:
            captured = self.captured[(database, collection)] = bool(
                collection and self.cfg.collection_filter(database, collection))
        if not captured:
            dispatcher.filtered()
        else:
            codec = self.connector.codec(database, collection)
            try:
                op, before, after = codec.change(fields)
                dispatcher.change(codec.schema, op, before, after, ts, position)
            except UnknownOperation:
                dispatcher.filtered()
            except Exception as exc:
                dispatcher.processing_failed(
                    exc, f"resume token {position.resume_token} ({database}.{collection})")
        if hook is not None and tx_id is None:
            self.boundary()
        if dispatcher.full or time.monotonic() - self.last_flush >= _FLUSH_S:
            self.flush()

    def idle(self, token: Any) -> None:
        """An empty poll; `token`: the stream's resume token then (None: none yet)."""
        dispatcher = self.dispatcher
        # An open transaction stays open (its END comes with the next event, as Debezium's):
        # its events are all here, so signals and chunks may run.
        if self.hook is not None:
            self.boundary()
        now = time.monotonic()
        if token is not None and not dispatcher.pending and now - self.last_flush >= \
                _IDLE_OFFSET_S:
            # The stream moved on (other namespaces, no-ops): so does the offset, so that a
            # restart does not start from a point the oplog may have dropped meanwhile.
            moved = token_position(token)
            if self.position is None or moved.resume_token != self.position.resume_token:
                self.position = moved
                self.offset_pending = True
        if dispatcher.pending or self.offset_pending:
            self.flush()
        if dispatcher.heartbeat_due():
            dispatcher.heartbeat(self.position)
            self.flush()

    # -- offsets -------------------------------------------------------------------------------

    def offset(self) -> dict[str, Any] | None:
        if self.position is None:
            return None
        offset = stream_offset(self.position)
        dispatcher = self.dispatcher
        if dispatcher.in_tx and dispatcher.tx_metadata:
            offset[TX_ID] = dispatcher.tx_id
            for name, count in dispatcher.tx_counts.items():
                offset[TX_COUNT_PREFIX + name] = count
        if self.hook is not None:
            offset.update(self.hook.offset_fields())  # incremental snapshot, file position
        return offset

    def flush(self) -> None:
        self.dispatcher.flush(self.offset())
        self.last_flush = time.monotonic()
        self.offset_pending = False

    # -- signals and incremental snapshots (signals.py) -----------------------------------------

    def boundary(self) -> None:
        """Between transactions: signals take effect, a chunk may start."""
        assert self.hook is not None
        before = self.hook.offset_fields()
        self.hook.boundary(self._emit_blocking, self.flush)
        if self.hook.offset_fields() != before:
            self.offset_pending = True  # snapshot progress or a file signal to store

    def _emit_blocking(self, records: list[ChangeRecord]) -> None:
        self.ctx.emit(Batch(records))  # no offset: a crash runs the blocking snapshot again
