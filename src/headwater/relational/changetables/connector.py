"""The start step and snapshot plumbing the SQL Server and Db2 connectors share.

Why a base: both connectors start the same way (the snapshot mode and stored offset decide
between a snapshot and streaming, the captured tables' topics are checked first, a driver
connection error is retriable once the connector has run) and emit their snapshots the same
way.  Each connector keeps only how it finds its captured tables and reads them.

Signals and incremental snapshots: with a signal channel configured, the streaming source gets
the shared hook (relational.changetables.incremental) on the connector's chunk source.  The
signal table must be captured: signals reach the connector through its change table.
Without a data snapshot and without a stored position (`snapshot.mode=no_data`, `recovery`),
streaming starts at the current maximum LSN, as Debezium's schema-only snapshot records it,
not at the beginning of the change tables.
"""

from __future__ import annotations

from typing import Any

from headwater.engine.incremental import IncrementalSnapshotError
from headwater.engine.queue import Batch
from headwater.engine.source import RetriableError, SourceRunContext, StartPlan
from headwater.model.record import ChangeRecord, SnapshotMarker
from headwater.model.schema import TableId
from headwater.relational.changetables.chunks import ChangeTableChunkSource
from headwater.relational.changetables.incremental import ChangeTableIncrementalHook
from headwater.relational.config import RelationalConnectorConfig
from headwater.relational.connector import RelationalConnector
from headwater.relational.snapshotter import snapshotter_for


class ChangeTableSnapshot:
    """Collects a snapshot's READ records.

    Rows are emitted in batches of `max.batch.size` without an offset, the last record held
    back so it can be marked `last`; the completing offset comes with the final batch.  Why
    batches: a snapshot stopped part-way must have written what it read, so the runtime's
    supersede step (which needs the aborted READs in the topic) makes its restart exact, and
    memory stays bounded.
    """

    def __init__(self, max_batch_size: int) -> None:
        self.max_batch_size = max_batch_size
        self.pending: list[ChangeRecord] = []
        self.started = False

    def _add(self, ctx: SourceRunContext, record: ChangeRecord) -> None:
        if not self.started:
            record = record._replace(snapshot=SnapshotMarker.FIRST)
            self.started = True
        self.pending.append(record)
        if len(self.pending) > self.max_batch_size:
            ctx.emit(Batch(self.pending[:-1]))
            self.pending = self.pending[-1:]

    def _finish(self, ctx: SourceRunContext, offset: dict[str, Any]) -> None:
        """Marks the last record and emits the final batch with the completing offset."""
        if self.pending:
            self.pending[-1] = self.pending[-1]._replace(snapshot=SnapshotMarker.LAST)
        ctx.emit(Batch(self.pending, offset=offset))


class ChangeTableConnector(RelationalConnector):
    """Subclasses set `DATABASE`, `self.driver` (the DB-API module) and `self.cfg`, and
    implement `captured_tables`, `snapshot_source` and `streaming_source`."""

    driver: Any
    cfg: RelationalConnectorConfig

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

    def start_offset(self) -> dict[str, Any]:
        """The offset of the current maximum LSN: where streaming starts without a snapshot
        and without a stored position."""
        raise NotImplementedError

    def chunk_source(self) -> ChangeTableChunkSource:
        """The connector's chunk source (its SQL dialect on the shared one)."""
        raise NotImplementedError

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

    def snapshot_source(self) -> Any:
        raise NotImplementedError

    def streaming_source(self, offset: dict[str, Any] | None) -> Any:
        raise NotImplementedError

    def _start(self, offset: dict[str, Any] | None) -> StartPlan:
        snapshotter = snapshotter_for(self.cfg.snapshot_mode)
        tables = self.captured_tables()
        self._check_topics(sorted(set(tables), key=str))
        self._check_signal_tables(tables)
        self._started = True
        completed = bool((offset or {}).get("snapshot_completed"))
        snapshot = self.snapshot_source() if snapshotter.reads_data(completed, True) else None
        if snapshot is None and not offset and snapshotter.streams:
            offset = self.start_offset()
        streaming = self.streaming_source(offset) if snapshotter.streams else None
        return StartPlan(snapshot, streaming, data_snapshot=snapshot is not None)

    def close(self) -> None:
        pass
