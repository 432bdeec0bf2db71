"""The start step and snapshot plumbing the SQL Server and Db2 connectors share.

Why a base: both connectors start the same way (the snapshot mode and stored offset decide
between a snapshot and streaming, the captured tables' topics are checked first, a driver
connection error is retriable once the connector has run) and emit their snapshots the same
way (ChangeTableSnapshot, on the relational snapshot's emitter).  Each connector keeps only
how it finds its captured tables and reads them.

The schema at start (Debezium's snapshotters and BaseSourceTask's history check):

- a data snapshot records a CREATE per table first (its schema snapshot);
- without a stored offset and without a data snapshot (`no_data`), a schema-only snapshot
  records them at the current maximum LSN and streaming starts there;
- `snapshot.mode=recovery` with a stored offset records them again at that offset (rebuilding
  a lost history) and streams on from it;
- otherwise streaming recovers the definitions from the history at the stored offset, and a
  history that does not exist is an error (it would decode old change rows with today's
  catalog).

Signals and incremental snapshots: with a signal channel configured, the streaming source gets
the shared hook (relational.changetables.incremental) on the connector's chunk source.  The
signal table must be captured: signals reach the connector through its change table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, ClassVar

from headwater.config.connector_common import NameFilter
from headwater.engine.incremental import IncrementalSnapshotError
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.parallel import SnapshotStopped
from headwater.engine.queue import Batch
from headwater.engine.source import RetriableError, SourceRunContext, StartPlan
from headwater.model.record import SchemaChangeEvent
from headwater.model.schema import TableId
from headwater.model.topic_naming import TopicNaming
from headwater.relational.changetables.chunks import ChangeTableChunkSource
from headwater.relational.changetables.config import ChangeTableConnectorConfig
from headwater.relational.changetables.history import ChangeTableHistory
from headwater.relational.changetables.incremental import ChangeTableIncrementalHook
from headwater.relational.changetables.position import LsnPosition, LsnSourceBlock
from headwater.relational.changetables.schema import ChangeTableSchema
from headwater.relational.changetables.schema_events import SchemaEventShape
from headwater.relational.changetables.streaming import LsnStreaming
from headwater.relational.codec import RelationalTableCodec
from headwater.relational.connector import RelationalConnector
from headwater.relational.history_config import SchemaHistoryConfig, open_history_store
from headwater.relational.history_file import SchemaHistoryError
from headwater.relational.snapshot import SnapshotEmitter, wait_snapshot_delay
from headwater.relational.snapshotter import WhenNeededSnapshotter, snapshotter_for

log = logging.getLogger("headwater.relational.changetables")


class ChangeTableSnapshot:
    """A change-table connector's snapshot: after `snapshot.delay.ms`, per partition (a SQL
    Server database, Db2's one) its schema change events, then its tables' READ records
    through the relational snapshot's emitter (relational/snapshot.py).

    Why the shared emitter: batches of `max.batch.size` without an offset (a snapshot stopped
    part-way has written what it read, so the runtime's supersede step makes its restart exact,
    and memory stays bounded) and Debezium 3.x's markers, `first`, `first_in_data_collection`,
    `last_in_data_collection`, `last`, as its RelationalSnapshotChangeEventSource gives them
    for every relational connector: once per partition, since Debezium snapshots each SQL
    Server database as a partition of its own.  The completing offset comes with the final
    batch; a stop request ends the snapshot without one.
    """

    def __init__(self, connector: Any, data: bool = True,
                 at: dict[str, Any] | None = None) -> None:
        self.connector = connector
        self.data = data  # False: the schema only
        self.at = at  # snapshot.mode=recovery: the stored offset the schema is recorded at
        self.emitter: SnapshotEmitter | None = None  # the current partition's

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        """The connector's snapshot (engine.source.SnapshotSource)."""
        try:
            wait_snapshot_delay(ctx, self.connector.cfg.snapshot_delay_ms, log)
            return self.run(ctx)
        except SnapshotStopped:
            log.info("snapshot stopped by a stop request; the next run starts it over, which "
                     "deletes the rows this one read that are gone by then")
            return None

    def run(self, ctx: SourceRunContext) -> dict[str, Any]:
        """The connector's snapshot steps; the completing offset."""
        raise NotImplementedError

    def begin_partition(self, ctx: SourceRunContext, events: list[SchemaChangeEvent],
                        position: LsnPosition) -> None:
        """A partition's snapshot begins: the previous partition's records are emitted (its
        last marked `last`), then this one's schema change events (a schema-only snapshot
        marked its last event itself); its READs carry `position`."""
        self._end_partition(ctx)
        if events:
            ctx.emit(Batch(events))
        self.emitter = SnapshotEmitter(ctx, self.connector.context, position,
                                       self.connector.cfg.max_batch_size,
                                       self.connector.metrics.rows_scanned)

    def read_rows(self, ctx: SourceRunContext, name: str, conn: Any, sql: str,
                  codec: RelationalTableCodec, fetch_size: int) -> int:
        """One table's READ records, a row each of what `sql` selects on `conn`, fetched
        `fetch_size` at a time; the number read (SnapshotStopped on a stop request).  The
        cursor is closed however the read ends."""
        emitter = self.emitter
        assert emitter is not None, "read_rows before begin_partition"
        cur = conn.cursor()
        try:
            cur.execute(sql)
            emitter.begin_table(name, codec.schema)
            convert = codec.convert
            while rows := cur.fetchmany(fetch_size):
                if ctx.stopping.is_set():
                    raise SnapshotStopped
                emitter.now_ms = int(time.time() * 1000)
                emitter.add_many([convert(row) for row in rows])
            emitter.end_table()
        finally:
            cur.close()
        return emitter.table_rows

    def _end_partition(self, ctx: SourceRunContext) -> None:
        if self.emitter is not None:
            records = self.emitter.finish()
            if records:
                ctx.emit(Batch(records))

    def finish(self, ctx: SourceRunContext, offset: dict[str, Any]) -> None:
        """The final batch: the last partition's records not emitted yet, its last marked
        `last`, with the completing offset."""
        records = self.emitter.finish() if self.emitter is not None else []
        self.emitter = None
        ctx.emit(Batch(records, offset=offset))


class ChangeTableConnector(RelationalConnector):
    """Subclasses set `DATABASE`, `STREAMING`, `SOURCE_BLOCK`, `SNAPSHOT` and `CHUNK_SOURCE`
    (their streaming source's, source block's, snapshot's and chunk source's classes; the
    connector kind is the source block's `default_kind`, its `source.connector`) and `driver`
    (the DB-API module), implement `connect`, `captured_tables` and `lsn_bytes`, and
    override `schema_shape` where their schema events differ from SQL Server's."""

    STREAMING: ClassVar[type[LsnStreaming[Any]]]
    SOURCE_BLOCK: ClassVar[type[LsnSourceBlock]]
    SNAPSHOT: ClassVar[type[ChangeTableSnapshot]]
    # (cfg, context, connect) -> the connector's chunk source
    CHUNK_SOURCE: ClassVar[Callable[..., ChangeTableChunkSource]]
    driver: Any
    connect: Callable[..., Any]  # a new DB-API connection (SQL Server's takes the database)
    cfg: ChangeTableConnectorConfig
    history_cfg: SchemaHistoryConfig
    source_block: LsnSourceBlock
    _history: ChangeTableHistory | None = None

    def __init__(self, cfg: ChangeTableConnectorConfig, metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None) -> None:
        super().__init__(cfg, self.SOURCE_BLOCK.default_kind, metrics, naming)
        self.cfg = cfg
        self.history_cfg = cfg.schema_history
        self.source_block = self.SOURCE_BLOCK()

    def lsn_bytes(self, text: str | None) -> bytes | None:
        raise NotImplementedError

    def schema_shape(self) -> SchemaEventShape:
        """The connector's schema event and history record shape (SQL Server's by default)."""
        return SchemaEventShape(self.context, self.source_block)

    def captures_schema(self, name: str) -> bool:
        """Whether the schema filters (`schema.include.list`...) admit schema `name`."""
        return NameFilter(self.cfg.schema_include_list,
                          self.cfg.schema_exclude_list).admits(name)

    @property
    def history(self) -> ChangeTableHistory:
        """The schema history (`schema.history.internal`), opened once."""
        if self._history is None:
            shape = self.schema_shape()
            store = open_history_store(self.history_cfg, self.context.server_name)
            self._history = ChangeTableHistory(store, self.lsn_bytes, shape.table_id)
            self.metrics.schema_history = store.metrics
        return self._history

    def table_schema(self) -> ChangeTableSchema:
        """A fresh schema state for one source partition (a snapshot's, a stream's)."""
        skip_schemas = self.history_cfg.store_only_captured_databases_ddl

        def skip(table: TableId) -> bool:
            return skip_schemas and not self.captures_schema(table.schema or "")

        return ChangeTableSchema(self.schema_shape(), self.history,
                                 include_events=self.history_cfg.include_schema_changes,
                                 skip=skip)

    @property
    def connection_errors(self) -> tuple[type[BaseException], ...]:
        """The driver's "could not talk to the server" exceptions; the driver is chosen by
        configuration, so they are known only here."""
        return (self.driver.OperationalError, self.driver.InterfaceError)

    def start(self, offset: dict[str, Any] | None) -> StartPlan:
        """A driver connection error is retriable once the connector has run (relational
        rule)."""
        errors = self.connection_errors
        try:
            return self._start(offset)
        except errors as exc:
            if self._started:
                raise RetriableError(f"{self.DATABASE} connection failed: {exc}") from exc
            raise

    def captured_tables(self) -> list[TableId]:
        """The tables in capture, read from the server at start."""
        raise NotImplementedError


    def chunk_source(self) -> ChangeTableChunkSource:
        """The connector's chunk source (its SQL dialect on the shared one)."""
        return self.CHUNK_SOURCE(self.cfg, self.context, self.connect)

    def incremental_hook(self) -> ChangeTableIncrementalHook | None:
        """Signals and incremental snapshots, when a signal channel is configured."""
        if not self.cfg.signals.any_channel:
            return None
        return ChangeTableIncrementalHook(self.chunk_source(), self.context, self.metrics)

    def _check_signal_tables(self, tables: list[TableId]) -> None:
        """Every signal table is captured (CDC enabled): else no signal or watermark would ever
        arrive."""
        signals = self.cfg.signals
        if not signals.data_collection or not signals.any_channel:
            return
        source = self.chunk_source()
        for signal in source.signal_tables.values():
            if not any(t.database == signal.database
                       and source.same_name(t.schema or "", signal.schema or "")
                       and source.same_name(t.table, signal.table) for t in tables):
                raise IncrementalSnapshotError(
                    f"signal.data.collection={signals.data_collection}: the signal table "
                    f"{signal} of database {signal.database} is not captured; enable it for "
                    f"{self.DATABASE} change data capture (signals reach the connector through "
                    "its change table)")

    def snapshot_source(self, data: bool = True,
                        at: dict[str, Any] | None = None) -> ChangeTableSnapshot:
        """The snapshot: the schema, then (with `data`) the tables' rows; `at` (recovery) is
        the stored offset the schema is recorded at instead of the current maximum LSN."""
        return self.SNAPSHOT(self, data, at)

    def streaming_source(self, offset: dict[str, Any] | None) -> LsnStreaming[Any]:
        """The connector's `STREAMING` class from `offset`; each of its streams gets a fresh
        schema state (`table_schema`)."""
        return self.STREAMING(self.cfg, self.context, self.metrics, self.connect, offset,
                              self.connection_errors, self.incremental_hook(), self.table_schema)

    def position_readable(self, offset: dict[str, Any]) -> bool:
        """Whether the change tables still hold the stored offset (`when_needed` and
        `when_needed_no_data` start over when not); a connector without the check: True."""
        return True

    def _start(self, offset: dict[str, Any] | None) -> StartPlan:
        snapshotter = snapshotter_for(self.cfg.snapshot_mode)
        tables = self.captured_tables()
        self.cfg.guardrail.check(sorted({str(t) for t in tables}), log)
        self._check_topics(sorted(set(tables), key=str))
        self._check_signal_tables(tables)
        self._started = True
        completed = bool((offset or {}).get("snapshot_completed"))
        readable = True
        if offset is not None and isinstance(snapshotter, WhenNeededSnapshotter):
            readable = self.position_readable(offset)
            if not readable:  # Debezium resets the offset: a start without one
                log.warning("the stored offset is no longer in the change tables: starting "
                            "over with a %s snapshot (snapshot.mode=%s)",
                            "schema" if snapshotter.mode == "when_needed_no_data" else "data",
                            snapshotter.mode)
                offset, completed = None, False
        data = snapshotter.reads_data(completed, readable)
        snapshot = None
        if snapshotter.mode == "recovery" and offset is None:
            raise SchemaHistoryError(
                "snapshot.mode=recovery rebuilds the schema history at the stored offset, but "
                "there is no stored offset; use snapshot.mode=initial or no_data")
        if data or offset is None:
            snapshot = self.snapshot_source(data=data)
        elif snapshotter.mode == "recovery":
            snapshot = self.snapshot_source(data=False, at=offset)
        elif not self.history.store.exists():
            raise SchemaHistoryError(
                f"{self.history} does not exist, but the stored offset needs it to decode the "
                "change rows still to read with the columns they were written with; set "
                "snapshot.mode=recovery to rebuild it from the current catalog (or remove the "
                "stored offsets to snapshot again)")
        streaming = self.streaming_source(offset) if snapshotter.streams else None
        return StartPlan(snapshot, streaming, data_snapshot=data)

    def close(self) -> None:
        if self._history is not None:
            self._history.store.close()
