"""The incremental snapshot controller: chunks, watermarks and the window, with no database.

Why here: the algorithm (DBLog; Debezium's incremental snapshots) is the same for every
database.  A connector supplies only a `ChunkSource` (its chunk and max-key queries, its
watermark writes, its blocking snapshot) and feeds the controller from its streaming loop:

* ``signal``: a signal seen in the stream (a signal table row) or read from the file channel;
* ``watermark``: a watermark row of the signal table seen in the stream;
* ``committed``: the id of each transaction whose commit the stream delivered;
* ``key_changed`` / ``truncated``: stream events of the table being chunked;
* ``boundary``: the stream is between transactions; signals take effect here and the next
  chunk is read here;
* ``close``: the high watermark was seen; returns the READ records to emit right there.

One chunk, named steps (each logged):

1. *low watermark*: the connector writes ``<chunk id>-open`` into the signal table
   (read-only: the current stream position is the low watermark, nothing is written);
2. *read chunk*: ``WHERE key > last key AND key <= maximum key ORDER BY key LIMIT n`` on a
   separate connection, streaming goes on;
3. *high watermark*: ``<chunk id>-close`` written (read-only: the source's position after the
   chunk's read, which the streaming loop compares with what it receives);
4. *merge*: `headwater.engine.window.merge_window` drops every row whose key the stream
   changed between the watermarks;
5. *emit*: the survivors as READ records (``source.snapshot=incremental``) at the high
   watermark's place in the stream, and the progress in the offset of the same batch.

A last check guards the low side: a transaction whose commit the stream delivered before the
window opened is normally visible to the chunk's read, but a server may publish a commit in its
log a moment before it becomes visible to new snapshots.  The chunk says (`ChunkRead.stale_if`)
whether any of the recently committed transactions was invisible to it; if so the chunk is read
again instead of emitted.

Progress (`incremental_snapshot_collections`, `_primary_key`, `_maximum_key`, as Debezium names
them, all JSON, and `_correlation_id`, the execute-snapshot signal's id) is part of the
streaming offset; the connector adds `offset_fields()` to the offset of the batch that carries
the chunk's READ records, so it is stored only once they are durable, and a restart reads the
chunk after the last durable one again.

Notifications (Debezium's IncrementalSnapshotNotificationService, engine/notifications.py) are
sent from here, at the points where Debezium's AbstractIncrementalSnapshotChangeEventSource sends
them, so every connector's incremental snapshots send the same ones.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.notifications import key_text
from headwater.engine.signals import (
    Action,
    ConnectorSignal,
    ExecuteSnapshot,
    FileSignalChannel,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    StopSnapshot,
    parse_action,
)
from headwater.engine.window import SnapshotWindow
from headwater.model.collection import (
    SignalError,
    format_collection,
    same_collection,
    split_collection,
)
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import TableSchema

if TYPE_CHECKING:
    from headwater.config.kafka import KafkaSignalSettings

log = logging.getLogger("headwater.engine.incremental")

# A key as the connector stores it in offsets (JSON values, e.g. PostgreSQL's text output).
RawKey = list[Any]
Row = tuple[Any, ...]
RECENT_COMMITS = 8192


class IncrementalSnapshotError(RuntimeError):
    """A table cannot be snapshotted incrementally as asked; the message says why.

    `status` is Debezium's TableScanCompletionStatus for the TABLE_SCAN_COMPLETED
    notification when the table was already queued: UNKNOWN_SCHEMA (dropped, not captured),
    NO_PRIMARY_KEY or SQL_EXCEPTION (the source refused the chunk's query)."""

    def __init__(self, message: str, status: str = "UNKNOWN_SCHEMA") -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class SnapshotTable:
    """One collection to snapshot: canonical name parts, filter, surrogate key."""

    collection: tuple[str, ...]
    condition: str | None = None
    surrogate_key: str | None = None

    @property
    def name(self) -> str:
        return format_collection(self.collection)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.name, "condition": self.condition,
                "surrogate_key": self.surrogate_key}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SnapshotTable:
        return cls(split_collection(str(doc["id"])), doc.get("condition"),
                   doc.get("surrogate_key"))


class ChunkRead(NamedTuple):
    """What the connector read for one chunk."""

    schema: TableSchema
    rows: Sequence[tuple[Hashable, Row]]  # (key as the stream shows it, row image), key order
    last_key: RawKey | None  # the last row's key in offset form; None when no row
    # read-only: the source position from which on the stream shows only changes the read did
    # not see (the streaming loop closes the window there)
    high: Any = None
    # given the transaction ids committed (in the stream) before the window opened, and
    # whether that list may be missing older ones: True if the read did not see one of them
    stale_if: Callable[[Sequence[Any], bool], bool] | None = None


class ChunkSource(Protocol):
    """The connector's side of incremental and blocking snapshots."""

    @property
    def read_only(self) -> bool: ...

    def resolve(self, table: SnapshotTable) -> SnapshotTable:
        """The canonical table; raises IncrementalSnapshotError (no such table, no key...)."""
        ...

    def max_key(self, table: SnapshotTable) -> RawKey | None:
        """The largest key matching the table's condition; None for no rows."""
        ...

    def read_chunk(
        self, table: SnapshotTable, after: RawKey | None, maximum: RawKey, limit: int
    ) -> ChunkRead: ...

    def write_watermark(self, chunk_id: str, opening: bool) -> None:
        """Writes the low (opening) or high watermark into the signal table (not read-only)."""
        ...

    def blocking_snapshot(
        self, tables: Sequence[SnapshotTable], emit: Callable[[list[ChangeRecord]], None]
    ) -> None:
        """Reads the tables in one consistent snapshot, emitting READ records."""
        ...


class BlockingSnapshotBatches:
    """A blocking snapshot's READ records for `emit`, `size` at a time, the latest one held
    back: the snapshot's final record is only known when the reading ends, and `finish` marks
    it LAST (every connector's `blocking_snapshot` emits through one of these)."""

    __slots__ = ("_batch", "_emit", "_held", "_size")

    def __init__(self, emit: Callable[[list[ChangeRecord]], None], size: int) -> None:
        self._emit = emit
        self._size = size
        self._batch: list[ChangeRecord] = []
        self._held: ChangeRecord | None = None

    def add(self, record: ChangeRecord) -> None:
        held = self._held
        if held is not None:
            self._batch.append(held)
            if len(self._batch) >= self._size:
                self._emit(self._batch)
                self._batch = []
        self._held = record

    def finish(self) -> None:
        """Emits what is left, the last record marked LAST."""
        if self._held is not None:
            self._batch.append(self._held._replace(snapshot=SnapshotMarker.LAST))
            self._held = None
        if self._batch:
            self._emit(self._batch)
            self._batch = []


@dataclass(slots=True)
class IncrementalContext:
    """The progress stored in offsets: the queue of tables and where the first one is."""

    tables: list[SnapshotTable] = field(default_factory=list)
    last_key: RawKey | None = None
    max_key: RawKey | None = None
    max_known: bool = False
    paused: bool = False
    # the execute-snapshot signal's id: the id of every notification of this snapshot
    correlation_id: str | None = None

    def to_offset(self) -> dict[str, Any]:
        if not self.tables and not self.paused:
            return {}
        return {
            "incremental_snapshot_collections": [t.to_json() for t in self.tables],
            "incremental_snapshot_primary_key": self.last_key,
            "incremental_snapshot_maximum_key": self.max_key if self.max_known else None,
            "incremental_snapshot_maximum_known": self.max_known,
            "incremental_snapshot_paused": self.paused,
            "incremental_snapshot_correlation_id": self.correlation_id,
        }

    @classmethod
    def from_offset(cls, offset: dict[str, Any] | None) -> IncrementalContext:
        if not offset or "incremental_snapshot_collections" not in offset:
            return cls()
        return cls(
            tables=[SnapshotTable.from_json(d) for d in offset["incremental_snapshot_collections"]],
            last_key=offset.get("incremental_snapshot_primary_key"),
            max_key=offset.get("incremental_snapshot_maximum_key"),
            max_known=bool(offset.get("incremental_snapshot_maximum_known")),
            paused=bool(offset.get("incremental_snapshot_paused")),
            correlation_id=offset.get("incremental_snapshot_correlation_id"),
        )


class _Chunk:
    """The chunk in flight: its window, read, and what the window saw before it opened."""

    def __init__(self, chunk_id: str, table: SnapshotTable, after: RawKey | None) -> None:
        self.id = chunk_id
        self.table = table
        self.after = after
        self.window: SnapshotWindow[Hashable, Row] = SnapshotWindow(chunk_id)
        self.read: ChunkRead | None = None
        self.before_open: tuple[Sequence[Any], bool] = ((), False)
        self.started = time.monotonic()


class IncrementalSnapshotController:
    """Runs signals and incremental snapshots for one streaming session."""

    def __init__(
        self,
        source: ChunkSource,
        context: SourceContext,
        *,
        chunk_size: int,
        offset: dict[str, Any] | None = None,
        file_channel: Path | None = None,
        kafka_channel: KafkaSignalSettings | None = None,
        poll_interval_s: float = 5.0,
        allow_schema_changes: bool = False,
        metrics: CaptureMetrics | None = None,
        connector_signals: Mapping[str, Callable[[Signal], None]] | None = None,
    ) -> None:
        self.source = source
        # the connector's own signal types (lower case) and their handlers
        self.connector_signals = dict(connector_signals or {})
        # RowsScanned of the table being snapshotted: rows read so far (as Debezium's
        # incremental source counts them, from 0 for each table it starts)
        self.metrics = metrics
        self._table_rows = 0
        self.context = context
        self.chunk_size = chunk_size
        self.allow_schema_changes = allow_schema_changes
        self.ctx = IncrementalContext.from_offset(offset)
        self.file = (FileSignalChannel(file_channel, int((offset or {}).get(
            "signal_file_position", 0))) if file_channel is not None else None)
        self.kafka = None
        if kafka_channel is not None:
            from headwater.engine.kafka_signals import OFFSET_FIELD, KafkaSignalChannel

            stored = (offset or {}).get(OFFSET_FIELD)
            self.kafka = KafkaSignalChannel(kafka_channel,
                                            None if stored is None else int(stored))
        self.poll_interval_s = poll_interval_s
        self._last_poll = -float("inf")  # never: the monotonic clock may start near 0 at boot
        self._actions: list[Action] = []
        self._recent: deque[Any] = deque(maxlen=RECENT_COMMITS)
        self._committed_total = 0
        self.chunk: _Chunk | None = None
        self.chunks_emitted = 0
        self.rows_emitted = 0
        if self.ctx.tables:
            log.info("incremental snapshot resumes: %s after key %s%s",
                     ", ".join(t.name for t in self.ctx.tables), self.ctx.last_key,
                     " (paused)" if self.ctx.paused else "")

    # -- what the streaming loop asks ----------------------------------------------------------
    @property
    def window_table(self) -> tuple[str, ...] | None:
        """The table whose stream events the window must see (None: no window open or due)."""
        return self.chunk.table.collection if self.chunk is not None else None

    @property
    def window_open(self) -> bool:
        return self.chunk is not None and self.chunk.window.is_open

    @property
    def read_only_high(self) -> Any:
        """Read-only: the position at which the open window closes (None: nothing to close)."""
        c = self.chunk
        if c is None or c.read is None or not c.window.is_open or not self.source.read_only:
            return None
        return c.read.high

    @property
    def idle(self) -> bool:
        """Nothing to do at boundaries: no queued action, table or chunk, no file channel."""
        return (not self._actions and self.chunk is None and self.file is None
                and self.kafka is None
                and (not self.ctx.tables or self.ctx.paused))

    def close_channels(self) -> None:
        """Releases the Kafka channel's consumer (a new session opens its own)."""
        if self.kafka is not None:
            self.kafka.close()

    def offset_fields(self) -> dict[str, Any]:
        out = self.ctx.to_offset()
        if self.file is not None:
            out["signal_file_position"] = self.file.position
        if self.kafka is not None and self.kafka.position is not None:
            out["signal_kafka_offset"] = self.kafka.position
        return out

    def _notify(self, type_: str, data: dict[str, str] | None = None) -> None:
        notifier = self.metrics.notifier if self.metrics is not None else None
        if notifier is not None:
            notifier.incremental(type_, self.ctx.correlation_id, data)

    def _collections(self) -> dict[str, str]:
        return {"data_collections": ",".join(t.name for t in self.ctx.tables)}

    # -- events from the stream ----------------------------------------------------------------
    def signal(self, signal: Signal) -> None:
        """A signal: its action runs at the next transaction boundary."""
        try:
            action = parse_action(signal, self.connector_signals)
        except SignalError as exc:
            log.error("signal %r (%s channel) rejected: %s", signal.id, signal.channel, exc)
            return
        if action is not None:
            log.info("signal %r received (%s channel): %s", signal.id, signal.channel,
                     signal.type)
            self._actions.append(action)

    def watermark(self, signal_id: str, opening: bool) -> bool:
        """A watermark row of the signal table; True when it closes the current window."""
        c = self.chunk
        if c is None or self.source.read_only:
            return False
        if opening and signal_id == f"{c.id}-open" and not c.window.is_open:
            self._open(c)
            return False
        return not opening and signal_id in (f"{c.id}-close", f"{c.id}-open") and \
            c.window.is_open and c.read is not None

    def committed(self, txid: Any) -> None:
        self._recent.append(txid)
        self._committed_total += 1

    def key_changed(self, *keys: Hashable) -> None:
        if self.chunk is not None:
            self.chunk.window.key_changed(*keys)

    def truncated(self) -> None:
        if self.chunk is not None:
            self.chunk.window.truncated()

    def schema_changed(self) -> None:
        """The chunked table changed shape: with allow.schema.changes the chunk is read again."""
        c = self.chunk
        if c is not None and self.allow_schema_changes:
            log.info("incremental snapshot: schema of %s changed inside the window of chunk %s; "
                     "the chunk is read again", c.table.name, c.id)
            self.chunk = None

    # -- boundaries ----------------------------------------------------------------------------
    def boundary(
        self, emit_blocking: Callable[[list[ChangeRecord]], None],
        before_blocking: Callable[[], None], *, start_chunk: bool = True,
    ) -> None:
        """Between transactions: run queued actions, poll the file channel, start a chunk."""
        if self.file is not None or self.kafka is not None:
            now = time.monotonic()
            if now - self._last_poll >= self.poll_interval_s:
                self._last_poll = now
                for channel in (self.file, self.kafka):
                    for sig in channel.poll() if channel is not None else ():
                        self.signal(sig)
        while self._actions:
            action = self._actions.pop(0)
            self._run(action, emit_blocking, before_blocking)
        if start_chunk and self.chunk is None and self.ctx.tables and not self.ctx.paused:
            self._start_chunk()

    def _run(
        self, action: Action, emit_blocking: Callable[[list[ChangeRecord]], None],
        before_blocking: Callable[[], None],
    ) -> None:
        if isinstance(action, ConnectorSignal):
            sig = action.signal
            try:
                self.connector_signals[sig.type.strip().lower()](sig)
            except SignalError as exc:
                log.error("signal %r (%s channel) rejected: %s", sig.id, sig.channel, exc)
        elif isinstance(action, LogMessage):
            log.info("signal %r: %s", action.signal_id, action.message)
        elif isinstance(action, PauseSnapshot):
            log.info("signal %r: incremental snapshot paused", action.signal_id)
            if self.ctx.tables and not self.ctx.paused:  # Debezium: only a running snapshot
                self._notify("PAUSED", self._collections())
            self.ctx.paused = True
        elif isinstance(action, ResumeSnapshot):
            log.info("signal %r: incremental snapshot resumed", action.signal_id)
            if self.ctx.tables and self.ctx.paused:
                self._notify("RESUMED", self._collections())
            self.ctx.paused = False
        elif isinstance(action, StopSnapshot):
            self._stop(action)
        elif action.snapshot_type == "blocking":
            self._blocking(action, emit_blocking, before_blocking)
        else:
            self._execute(action)

    def _tables(self, action: ExecuteSnapshot) -> list[SnapshotTable]:
        out: list[SnapshotTable] = []
        for name in action.collections:
            wanted = SnapshotTable(name, action.condition_for(name), action.surrogate_key)
            try:
                out.append(self.source.resolve(wanted))
            except IncrementalSnapshotError as exc:
                log.error("signal %r: %s: not snapshotted", action.signal_id, exc)
                self._report(wanted.name, "FAILED", str(exc))
        return out

    def _execute(self, action: ExecuteSnapshot) -> None:
        if not action.collections:
            log.warning("signal %r: execute-snapshot with no data-collections: nothing to do",
                        action.signal_id)
            return
        running = bool(self.ctx.tables)
        for table in self._tables(action):
            if table in self.ctx.tables:
                log.info("signal %r: %s is already queued", action.signal_id, table.name)
                continue
            self.ctx.tables.append(table)
            log.info("signal %r: incremental snapshot of %s queued%s", action.signal_id,
                     table.name, f" (filter: {table.condition})" if table.condition else "")
        if self.ctx.tables:
            self.ctx.correlation_id = action.signal_id  # as Debezium, the latest signal's id
            if not running:
                self._notify("STARTED", self._collections())

    def _blocking(
        self, action: ExecuteSnapshot, emit: Callable[[list[ChangeRecord]], None],
        before: Callable[[], None],
    ) -> None:
        tables = self._tables(action)
        if not tables:
            return
        log.info("signal %r: blocking snapshot of %s: streaming pauses", action.signal_id,
                 ", ".join(t.name for t in tables))
        before()
        started = time.monotonic()
        self.source.blocking_snapshot(tables, emit)
        log.info("signal %r: blocking snapshot done in %.1fs: streaming resumes",
                 action.signal_id, time.monotonic() - started)

    def _stop(self, action: StopSnapshot) -> None:
        running = bool(self.ctx.tables)
        # Debezium's ABORTED names what was removed: the queued tables, the current one last
        stopped = [t.name for t in self.ctx.tables[1:]] + [t.name for t in self.ctx.tables[:1]]
        if not action.collections:
            log.info("signal %r: incremental snapshot stopped (%d table(s) dropped)",
                     action.signal_id, len(self.ctx.tables))
            for t in self.ctx.tables:
                self._report(t.name, "STOPPED")
            correlation_id = self.ctx.correlation_id
            self.ctx = IncrementalContext(paused=False, correlation_id=correlation_id)
            self.chunk = None
            self._table_rows = 0
        else:
            current = self.ctx.tables[0] if self.ctx.tables else None
            kept = [t for t in self.ctx.tables
                    if not any(same_collection(t.collection, c) for c in action.collections)]
            log.info("signal %r: incremental snapshot of %s stopped", action.signal_id,
                     ", ".join(t.name for t in self.ctx.tables if t not in kept) or "nothing")
            stopped = [n for n in stopped if not any(t.name == n for t in kept)]
            for t in self.ctx.tables:
                if t not in kept:
                    self._report(t.name, "STOPPED")
            self.ctx.tables = kept
            if current is not None and current not in kept:
                self.ctx.last_key, self.ctx.max_key, self.ctx.max_known = None, None, False
                self.chunk = None
                self._table_rows = 0
        if running:  # Debezium ignores a stop when no snapshot runs
            self._notify("ABORTED", {"data_collections": ",".join(stopped)})
        if not self.ctx.tables:
            self.ctx.correlation_id = None

    # -- one chunk -----------------------------------------------------------------------------
    def _start_chunk(self) -> None:
        table = self.ctx.tables[0]
        try:
            self._read_chunk(table)
        except IncrementalSnapshotError as exc:
            # Debezium's warnAndSkip: a table dropped or no longer captured after it was
            # queued (its signal and its DROP can be read in either order) fails its own
            # backfill and the snapshot goes on with the next table; the stream keeps running.
            log.error("incremental snapshot of %s: %s: skipped", table.name, exc)
            self.chunk = None
            self._table_done(table, exc.status, failure=str(exc))

    def _read_chunk(self, table: SnapshotTable) -> None:
        if not self.ctx.max_known:
            self.ctx.max_key = self.source.max_key(table)
            self.ctx.max_known = True
            self._report(table.name, "ACTIVE")
            log.info("incremental snapshot step: table %s, maximum key %s", table.name,
                     self.ctx.max_key)
        if self.ctx.max_key is None:  # empty table
            self._table_done(table, "EMPTY")
            return
        chunk = _Chunk(uuid.uuid4().hex, table, self.ctx.last_key)
        self.chunk = chunk
        if self.source.read_only:
            log.debug("incremental snapshot step: low watermark of chunk %s (stream position)",
                      chunk.id)
            self._open(chunk)
        else:
            log.debug("incremental snapshot step: low watermark %s-open", chunk.id)
            self.source.write_watermark(chunk.id, True)
        read = self.source.read_chunk(table, chunk.after, self.ctx.max_key, self.chunk_size)
        log.debug("incremental snapshot step: read chunk %s of %s after key %s: %d rows",
                  chunk.id, table.name, chunk.after, len(read.rows))
        chunk.read = read
        chunk.window.fill(read.rows)
        if not read.rows:  # nothing left up to the maximum key: no window needed
            self.chunk = None
            self._table_done(table)
            return
        self._notify("IN_PROGRESS", {**self._collections(),
                                     "current_collection_in_progress": table.name,
                                     "maximum_key": key_text(self.ctx.max_key),
                                     "last_processed_key": key_text(read.last_key)})
        if not self.source.read_only:
            log.debug("incremental snapshot step: high watermark %s-close", chunk.id)
            self.source.write_watermark(chunk.id, False)
        else:
            log.debug("incremental snapshot step: high watermark of chunk %s at %s", chunk.id,
                      read.high)

    def _open(self, chunk: _Chunk) -> None:
        recent = tuple(self._recent)
        chunk.before_open = (recent, self._committed_total > len(recent))
        chunk.window.open()

    def close(self, position: Any) -> list[ChangeRecord]:
        """The high watermark: merge and the READ records to emit at `position`."""
        c = self.chunk
        if c is None or c.read is None:
            return []
        self.chunk = None
        read = c.read
        if read.stale_if is not None and read.stale_if(*c.before_open):
            log.info("incremental snapshot: chunk %s of %s did not see a transaction committed "
                     "before its window opened; reading it again", c.id, c.table.name)
            return []
        self._table_rows += len(read.rows)  # (a chunk read again above is counted once)
        if self.metrics is not None:
            self.metrics.rows_scanned[c.table.name] = self._table_rows
        seen = c.window.events_seen
        survivors = c.window.close()
        log.debug("incremental snapshot step: merge chunk %s: %d rows read, %d stream events "
                  "in the window, %d rows kept", c.id, len(read.rows), seen, len(survivors))
        now = int(time.time() * 1000)
        records = [
            ChangeRecord(self.context, read.schema, Op.READ, None, row, now, now,
                         SnapshotMarker.INCREMENTAL, position)
            for row in survivors
        ]
        self.chunks_emitted += 1
        self.rows_emitted += len(records)
        log.info("incremental snapshot step: emit chunk %s of %s: %d READ events (%.0f ms)",
                 c.id, c.table.name, len(records), (time.monotonic() - c.started) * 1000)
        if len(read.rows) < self.chunk_size or read.last_key == self.ctx.max_key:
            self._table_done(c.table)
        else:
            self.ctx.last_key = read.last_key
        return records

    def _report(self, table: str, state: str, message: str = "") -> None:
        if self.metrics is not None:
            self.metrics.incremental_state(table, state, message)

    def _table_done(self, table: SnapshotTable, status: str = "SUCCEEDED", *,
                    failure: str | None = None) -> None:
        if failure is None:
            log.info("incremental snapshot: %s completed", table.name)
            self._report(table.name, "COMPLETED")
        else:
            self._report(table.name, "FAILED", failure)
        self._notify("TABLE_SCAN_COMPLETED", {**self._collections(),
                                              "scanned_collection": table.name,
                                              "total_rows_scanned": str(self._table_rows),
                                              "status": status})
        self._table_rows = 0
        if self.ctx.tables and self.ctx.tables[0] == table:
            self.ctx.tables.pop(0)
        self.ctx.last_key, self.ctx.max_key, self.ctx.max_known = None, None, False
        if not self.ctx.tables:
            log.info("incremental snapshot: completed")
            self._notify("COMPLETED")
            self.ctx.correlation_id = None
