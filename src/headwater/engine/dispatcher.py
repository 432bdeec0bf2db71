"""The event dispatcher: the one place every connector's changes pass through on their way out.

Debezium's `EventDispatcher` with its `TransactionMonitor` and `RelationalChangeRecordEmitter`,
in one small object per streaming session.  A connector's streaming loop reads and decodes the
log, converts row images with :meth:`EventDispatcher.convert`, and hands typed changes to
:meth:`change` between :meth:`begin` and :meth:`commit`; everything that is the same for every
database happens here, once:

- ``skipped.operations``, per *emitted* operation (Debezium 3.x checks the operation of each
  record the emitter produces, so with ``u`` skipped a key-changing update still emits its
  delete and create);
- the primary-key change split: an update whose key changed becomes a delete (with the new row
  as ``__debezium.newkey``) and a create (with the old row as ``__debezium.oldkey``); the
  tombstone between them is the format's business (``tombstones.on.delete``);
- transaction metadata: a BEGIN before the first event of a transaction, the ``transaction``
  block (``total_order`` and ``data_collection_order`` count *emitted* events, as Debezium's
  transaction monitor does), and an END with the event count per data collection;
- heartbeats: the interval, ``heartbeat.action.query`` and the heartbeat record;
- flushing by size: `full` says when the pending records reach ``max.batch.size``;
- ``event.processing.failure.handling.mode`` (:meth:`processing_failed`) and
  ``event.converting.failure.handling.mode`` (:meth:`convert`): fail, warn or skip, honoured;
- the metrics the dispatch decides (filtered, erroneous and committed counts).

What stays with the connector is what only it knows: where a position is, what offset restarts
after the pending records (it passes it to :meth:`flush`), and how far a restart has to skip.
While it re-reads what a previous run already wrote, it sets `replaying`: the dispatcher then
counts exactly as the first run did (so ``total_order`` and the END counts agree across a
crash) but emits nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, NamedTuple, Protocol

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch, QueueClosed
from headwater.model.record import (
    ABSENT,
    ChangeRecord,
    HeartbeatEvent,
    Op,
    SnapshotMarker,
    SourceContext,
    SourceEvent,
    TransactionEvent,
    TxInfo,
)
from headwater.model.schema import TableId, TableSchema

log = logging.getLogger("headwater.engine.dispatcher")

class DispatchOptions(NamedTuple):
    """What the dispatcher honours, all from the connector configuration."""

    max_batch_size: int = 2048
    skipped_operations: frozenset[str] = frozenset({"t"})
    transaction_metadata: bool = False
    heartbeat_interval_s: float = 0.0
    # event.processing.failure.handling.mode / event.converting.failure.handling.mode
    processing_failure_mode: str = "fail"
    converting_failure_mode: str = "fail"
    # Every change belongs to a transaction (relational logs). False: changes outside
    # begin/commit carry no `transaction` block and are not counted (MongoDB's single-document
    # writes, as Debezium's TransactionMonitor treats events without a transaction id).
    implicit_transactions: bool = True

    @classmethod
    def from_config(cls, cfg: Any) -> DispatchOptions:
        """From any relational connector configuration (the shared property names)."""
        return cls(
            max_batch_size=cfg.max_batch_size,
            skipped_operations=frozenset(cfg.skipped_operations),
            transaction_metadata=cfg.provide_transaction_metadata,
            heartbeat_interval_s=cfg.heartbeat_interval_ms / 1000.0,
            processing_failure_mode=cfg.event_processing_failure_handling_mode,
            converting_failure_mode=cfg.event_converting_failure_handling_mode,
        )


class RowCodec(Protocol):
    """What :meth:`EventDispatcher.convert` needs of a table codec (see relational/codec.py)."""

    @property
    def schema(self) -> TableSchema: ...

    def convert(self, values: Sequence[Any]) -> tuple[Any, ...]: ...

    def convert_each(
        self, values: Sequence[Any], failed: Callable[[int, Any, Exception], None]
    ) -> tuple[Any, ...]: ...


class EventProcessingError(RuntimeError):
    """An event could not be processed (event.processing.failure.handling.mode=fail)."""


class EventConvertingError(ValueError):
    """A column value could not be converted (event.converting.failure.handling.mode=fail)."""


_new = tuple.__new__
_CREATE, _UPDATE, _DELETE, _TRUNCATE = Op.CREATE, Op.UPDATE, Op.DELETE, Op.TRUNCATE
_STREAMING = SnapshotMarker.FALSE



def _identifier(table: TableId) -> str:
    return table.identifier

class EventDispatcher:
    """Turns a connector's typed changes into source events, one streaming session long."""

    def __init__(
        self,
        context: SourceContext,
        options: DispatchOptions,
        metrics: CaptureMetrics,
        emit: Callable[[Batch], None],
        heartbeat_action: Callable[[], None] | None = None,
    ) -> None:
        self.context = context
        self.options = options
        self.metrics = metrics
        self._emit = emit
        self.heartbeat_action = heartbeat_action
        self.pending: list[SourceEvent] = []
        self.max_batch_size = options.max_batch_size
        skipped = options.skipped_operations
        self.skip_c, self.skip_u, self.skip_d = "c" in skipped, "u" in skipped, "d" in skipped
        self.skip_t = "t" in skipped
        self.tx_metadata = options.transaction_metadata
        # whether the next emitted change gets a `transaction` block (see implicit_transactions)
        self.track_tx = self.tx_metadata and options.implicit_transactions
        # set by the connector while it re-reads what an earlier run already wrote
        self.replaying = False
        # The data collection name of transaction metadata: `schema.table` (Debezium's
        # TableId.identifier without a catalog); a connector whose ids carry the database
        # (SQL Server: `database.schema.table`) sets its own.
        self.collection_name: Callable[[TableId], str] = _identifier
        # The `transaction.id` of an emitted event from the transaction id and the event's
        # position; None: the transaction id.  Debezium 3.x's PostgreSQL connector appends each
        # event's LSN (PostgresTransactionMonitor), so its ids differ within a transaction.
        self.event_tx_id: Callable[[str, Any], str] | None = None
        # the transaction being read
        self.tx_id = ""
        self.tx_begin_id = ""  # the BEGIN event's id
        self.tx_ts_ms = 0
        self.tx_position: Any = None
        self.tx_total = 0
        self.tx_counts: dict[str, int] = {}
        self.in_tx = False
        self._tx_start = 0  # where the transaction's events start in `pending`
        self.last_heartbeat = time.monotonic()

    # -- transactions -------------------------------------------------------------------------
    def begin(self, tx_id: str, ts_ms: int, position: Any, event_id: str | None = None) -> None:
        """A transaction starts; its BEGIN event (with id `event_id`, by default `tx_id`)
        waits for its first emitted change."""
        self.tx_id = tx_id
        self.tx_begin_id = tx_id if event_id is None else event_id
        self.tx_ts_ms = ts_ms
        self.tx_position = position
        self.tx_total = 0
        self.tx_counts = {}
        self.in_tx = True
        self.track_tx = self.tx_metadata
        self._tx_start = len(self.pending)

    def resume(self, tx_id: str, ts_ms: int, position: Any, counts: dict[str, int]) -> None:
        """Continue a transaction an earlier run began and partly wrote (its BEGIN and the
        events counted in `counts`, per data collection, are in the topics already)."""
        self.begin(tx_id, ts_ms, position)
        self.tx_counts = dict(counts)
        self.tx_total = sum(counts.values())

    def commit(self, ts_ms: int, position: Any, event_id: str | None = None) -> None:
        """The transaction ends: its END event (with metadata on and events emitted), with id
        `event_id`, by default the transaction's id."""
        if self.tx_metadata and self.tx_total and not self.replaying:
            self.pending.append(TransactionEvent(
                self.context, "END", self.tx_id if event_id is None else event_id, ts_ms,
                self.tx_total,
                tuple(self.tx_counts.items()), position))
        self.in_tx = False
        self.track_tx = self.tx_metadata and self.options.implicit_transactions
        metrics = self.metrics
        metrics.committed_transactions += 1
        metrics.last_transaction_id = self.tx_id

    def rollback(self) -> None:
        """The transaction was rolled back: drop what it has pending."""
        if self.in_tx:
            del self.pending[self._tx_start:]
        self.in_tx = False
        self.track_tx = self.tx_metadata and self.options.implicit_transactions

    def _tx(self, table: TableSchema, position: Any, name: str | None = None) -> TxInfo:
        """The transaction block of the next emitted event of `table` at `position` (counts
        it under `name`, by default the table's collection name)."""
        if self.tx_total == 0 and not self.replaying:
            self.pending.append(TransactionEvent(
                self.context, "BEGIN", self.tx_begin_id, self.tx_ts_ms, None, None,
                self.tx_position))
        self.tx_total += 1
        if name is None:
            name = self.collection_name(table.id)
        count = self.tx_counts.get(name, 0) + 1
        self.tx_counts[name] = count
        event_id = self.event_tx_id
        return _new(TxInfo, (self.tx_id if event_id is None else event_id(self.tx_id, position),
                             self.tx_total, count))

    # -- changes --------------------------------------------------------------------------------
    def change(
        self,
        table: TableSchema,
        op: Op,
        before: tuple[Any, ...] | None,
        after: tuple[Any, ...] | None,
        ts_ms: int,
        position: Any,
    ) -> None:
        """One row change (c, u or d) of a captured table, its images already converted."""
        if op is _UPDATE:
            keys = table.key_positions
            if before is not None and keys and after is not None:
                old_key = tuple([before[i] for i in keys])
                if ABSENT not in old_key and old_key != tuple([after[i] for i in keys]):
                    self._emit_record(table, _DELETE, before, None, ts_ms, position, after)
                    self._emit_record(table, _CREATE, None, after, ts_ms, position, before)
                    return
        self._emit_record(table, op, before, after, ts_ms, position, None)

    def plain_rows(self, table: TableSchema, op: Op, befores: Sequence[Any],
                   afters: Sequence[Any]) -> bool:
        """Whether `changes` may take these rows of one log event (one operation, one table):
        each makes exactly one record, with no transaction block and none skipped, as
        `change` would emit it.  An update's rows qualify when no key changes (the key
        columns compared as one list per side, C-level)."""
        if self.track_tx or self.replaying or (
                self.skip_c if op is _CREATE else self.skip_u if op is _UPDATE
                else self.skip_d if op is _DELETE else True):
            return False
        if op is _UPDATE:
            keys = table.key_positions
            if keys:
                key = itemgetter(*keys)
                return list(map(key, befores)) == list(map(key, afters))
        return True

    def changes(self, table: TableSchema, op: Op, befores: Sequence[Any],
                afters: Sequence[Any], ts_ms: int, positions: Sequence[Any]) -> None:
        """`change` for each (before, after, position) of rows `plain_rows` accepted, in one
        comprehension: a rows event's many rows without three calls each.  Their processing
        time is read once (the rows of one log event are processed together)."""
        context, now = self.context, int(time.time() * 1000)
        self.pending.extend([
            _new(ChangeRecord, (context, table, op, before, after, ts_ms, now, _STREAMING,
                                position, None, None))
            for before, after, position in zip(befores, afters, positions, strict=True)])

    def _emit_record(
        self, table: TableSchema, op: Op, before: tuple[Any, ...] | None,
        after: tuple[Any, ...] | None, ts_ms: int, position: Any,
        other_key: tuple[Any, ...] | None,
    ) -> None:
        if (self.skip_c and op is _CREATE) or (self.skip_u and op is _UPDATE) or (
                self.skip_d and op is _DELETE):
            if not self.replaying:
                self.metrics.events_filtered += 1
            return
        tx = self._tx(table, position) if self.track_tx else None
        if self.replaying:
            return
        self.pending.append(_new(ChangeRecord, (
            self.context, table, op, before, after, ts_ms, int(time.time() * 1000), _STREAMING,
            position, tx, other_key)))

    def truncate(self, table: TableSchema, ts_ms: int, position: Any) -> None:
        """A captured table was truncated (op ``t``, unless ``skipped.operations`` has it)."""
        if self.skip_t:
            return
        self._emit_record(table, _TRUNCATE, None, None, ts_ms, position, None)

    def message(self, table: TableSchema, content: tuple[Any, ...], ts_ms: int, position: Any,
                transactional: str | None) -> None:
        """A logical decoding message (op ``m``, Debezium's LogicalDecodingMessageMonitor).

        `transactional` is the data collection it is counted under in its transaction's
        metadata, or None for a non-transactional message: that one has no transaction block
        and opens no BEGIN (Debezium finds no transaction id for it)."""
        tx = self._tx(table, position, transactional) if transactional and self.track_tx else None
        if self.replaying:
            return
        self.pending.append(_new(ChangeRecord, (
            self.context, table, Op.MESSAGE, None, content, ts_ms, int(time.time() * 1000),
            _STREAMING, position, tx, None)))

    def filtered(self) -> None:
        """A change of a table the filters leave out (counted, as Debezium does)."""
        if not self.replaying:
            self.metrics.events_filtered += 1

    def extend(self, events: Sequence[SourceEvent]) -> None:
        """Events the connector built itself (schema changes, incremental snapshot windows)."""
        self.pending.extend(events)

    # -- conversion and failures ------------------------------------------------------------------
    def convert(self, codec: RowCodec, values: Sequence[Any]) -> tuple[Any, ...]:
        """A row image through its table's converters, honouring the converting failure mode.

        fail: an error naming the table, column and value; warn / skip: the column's value
        becomes null, logged at WARNING (warn) or INFO (skip) - never dropped unannounced.
        """
        try:
            return codec.convert(values)
        except Exception:
            return self._convert_slowly(codec, values)

    def _convert_slowly(self, codec: RowCodec, values: Sequence[Any]) -> tuple[Any, ...]:
        mode = self.options.converting_failure_mode
        table = codec.schema.id

        def failed(index: int, value: Any, exc: Exception) -> None:
            column = codec.schema.columns[index]
            message = (f"table {table}, column {column.name} ({column.type_name}): cannot "
                       f"convert {value!r}: {exc}")
            if mode == "fail":
                raise EventConvertingError(
                    message + " (event.converting.failure.handling.mode=fail; warn or skip "
                    "write null instead)") from exc
            self.metrics.erroneous_events += 1
            log.log(logging.WARNING if mode == "warn" else logging.INFO,
                    "%s: written as null (event.converting.failure.handling.mode=%s)",
                    message, mode)

        return codec.convert_each(values, failed)

    def processing_failed(self, exc: Exception, where: str) -> None:
        """An event at `where` could not be processed: raise, or log and go on (warn, skip).

        A closed queue (the runtime is shutting down) is no event failure: it goes through."""
        if isinstance(exc, QueueClosed):
            raise exc
        if isinstance(exc, EventConvertingError) or (
                self.options.processing_failure_mode == "fail"):
            raise EventProcessingError(
                f"error while processing the event at {where}: {exc} "
                "(event.processing.failure.handling.mode=fail)") from exc
        self.metrics.erroneous_events += 1
        mode = self.options.processing_failure_mode
        log.log(logging.WARNING if mode == "warn" else logging.INFO,
                "event at %s not emitted (event.processing.failure.handling.mode=%s): %s",
                where, mode, exc)

    # -- heartbeats -------------------------------------------------------------------------------
    def heartbeat_due(self) -> bool:
        """Whether ``heartbeat.interval.ms`` has passed since the last heartbeat (0: never)."""
        interval = self.options.heartbeat_interval_s
        if interval <= 0:
            return False
        now = time.monotonic()
        if now - self.last_heartbeat < interval:
            return False
        self.last_heartbeat = now
        return True

    def run_heartbeat_action(self) -> None:
        """``heartbeat.action.query``: a failure is logged; the heartbeat still goes out."""
        if self.heartbeat_action is not None:
            try:
                self.heartbeat_action()
            except Exception as exc:
                log.warning("heartbeat.action.query failed: %s", exc)

    def heartbeat(self, position: Any) -> None:
        """A heartbeat record at `position`."""
        self.pending.append(HeartbeatEvent(self.context, int(time.time() * 1000), position))

    # -- flushing -------------------------------------------------------------------------------
    @property
    def full(self) -> bool:
        return len(self.pending) >= self.max_batch_size

    def flush(self, offset: dict[str, Any] | None, ack: Any = None) -> None:
        """Hand the pending events to the writer with the offset that restarts after them."""
        self._emit(Batch(self.pending, offset=offset, ack=ack))
        self.pending = []
        self._tx_start = 0

