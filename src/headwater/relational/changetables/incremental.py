"""The change-table streaming loop's side of signals and incremental snapshots, shared by the
SQL Server and Db2 connectors.

Why here: both connectors see their signal table the same way, as Debezium does - its rows come
back through the signal table's own change table, in commit order with every other captured
change - so one hook serves both (relational.changetables.streaming calls it):

* `change`: every change the poller dispatches.  A row inserted into the signal table is a
  signal (its action runs at the transaction's commit; only with the `source` channel enabled:
  the table also holds the watermarks of snapshots other channels ask for), or one of this
  connector's watermarks:
  `<chunk>-open` opens the chunk's window, `<chunk>-close` (or, with `insert_delete`, the delete
  of the open row) closes it, and the chunk's surviving READ events are returned to be emitted
  right there, at the close watermark's position.  A change of the chunked table inside the
  window drops the chunk rows of its keys (before and after image), as the engine's window
  merge defines.  Changes a restart replays are seen too: a signal is at-least-once, and a
  stale watermark names no chunk in flight.
* `committed`: a transaction ended: its signals take effect and, between transactions, the next
  chunk starts (watermark, read, watermark).
* `idle`: a poll found nothing new: the file and Kafka channels are read, a queued or resumed
  snapshot starts.

The window is keyed by the raw key values of the change rows and of the chunk rows, which the
same driver returns for the same columns (the chunk reads its table's change-table columns).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.engine.metrics import CaptureMetrics
from headwater.model.record import ChangeRecord, Op, SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.adhoc_steps import step
from headwater.relational.changetables.chunks import ChangeTableChunkSource
from headwater.relational.changetables.poller import Change
from headwater.relational.incremental import EmitBlocking, IncrementalHookBase


class ChangeTableIncrementalHook(IncrementalHookBase):
    """One streaming session's signals and incremental snapshot (see the module docstring)."""

    def __init__(self, source: ChangeTableChunkSource, context: SourceContext,
                 metrics: CaptureMetrics | None = None) -> None:
        super().__init__(source, context, metrics)
        self.source: ChangeTableChunkSource = source
        self._window: tuple[str, ...] | None = None
        self._positions: dict[tuple[str, ...], tuple[int, ...] | None] = {}
        self._signal: dict[TableId, bool] = {}
        self._reshaped: set[tuple[str, tuple[str, ...]]] = set()  # (chunk id, columns) seen
        self._before_blocking: Callable[[], None] = lambda: None
        self._emit_blocking: EmitBlocking = lambda records: None

    # -- session -------------------------------------------------------------------------------
    def start(self, offset: dict[str, Any] | None, before_blocking: Callable[[], None],
              emit_blocking: EmitBlocking) -> None:
        """A streaming session starts: the snapshot resumes from the stored offset.
        `before_blocking` flushes what the loop holds (a blocking snapshot starts at a commit),
        `emit_blocking` emits a blocking snapshot's READ events."""
        self._start_controller(offset)
        ctl = self._ctl()
        self.source.chunk_table = lambda: ctl.chunk.table if ctl.chunk is not None else None
        self._before_blocking = before_blocking
        self._emit_blocking = emit_blocking
        self._refresh()

    def _refresh(self) -> None:
        self._window = self._ctl().window_table
        self._positions.clear()

    def _is_signal(self, table: TableId) -> bool:
        known = self._signal.get(table)
        if known is None:
            same = self.source.same_name
            known = self._signal[table] = any(
                s.database == table.database and same(s.schema or "", table.schema or "")
                and same(s.table, table.table) for s in self.source.signal_tables.values())
        return known

    # -- changes -------------------------------------------------------------------------------
    def change(self, change: Change, position: Any) -> list[ChangeRecord]:
        """A change the loop dispatches at `position`; READ events when it closes a window."""
        table: TableId = change.table.table
        if self._window is not None and self.source.collection(table) == self._window:
            self._window_change(change)
        if not self._is_signal(table) or change.op not in (Op.CREATE, Op.DELETE):
            return []
        inserted = change.op is Op.CREATE
        return self._signal_row(change.after if inserted else change.before, inserted,
                                lambda: position)

    def _window_change(self, change: Change) -> None:
        ctl = self._ctl()
        chunk = ctl.chunk
        if chunk is None:
            return
        columns: tuple[str, ...] = change.table.columns
        if (columns != self.source.columns_of(chunk.table)
                and (chunk.id, columns) not in self._reshaped):
            # Another capture instance (a schema change): with allow.schema.changes the chunk
            # is read again; the next chunk is read with the table's newest change table.
            self._reshaped.add((chunk.id, columns))
            ctl.schema_changed()
            self.source.forget()
            self._refresh()
            chunk = ctl.chunk
            if chunk is None:
                return
        if columns not in self._positions:
            self._positions[columns] = self.source.key_index(chunk.table, columns)
        self._keys_changed([i for i in (change.before, change.after) if i is not None],
                           self._positions[columns])

    def _close(self, position: Any) -> list[ChangeRecord]:
        chunk = self._ctl().chunk
        read = len(chunk.read.rows) if chunk is not None and chunk.read is not None else 0
        seen = chunk.window.events_seen if chunk is not None else 0
        records = super()._close(position)
        if chunk is not None:
            step(self.source.log, 5, f"{chunk.table.name}: {read - len(records)} of {read} "
                                     f"rows dropped, {seen} streamed events in the window")
            step(self.source.log, 6, f"{chunk.table.name}: {len(records)} READ events")
        return records

    def close(self) -> None:
        """The session ends: the chunk source's connections and the Kafka channel's consumer
        (the next session builds its own hook)."""
        if self.controller is not None:
            self.controller.close_channels()
        super().close()

    # -- boundaries ----------------------------------------------------------------------------
    def committed(self, commit: bytes) -> None:
        """A transaction's commit was dispatched: its signals take effect, and between
        transactions the next chunk may start."""
        self._ctl().committed(commit)
        self.boundary()

    def boundary(self) -> None:
        """Between transactions: actions, the file and Kafka channels, the next chunk."""
        ctl = self._ctl()
        if ctl.idle:
            return
        ctl.boundary(self._emit_blocking, self._before_blocking)
        self._refresh()
