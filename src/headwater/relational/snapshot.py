"""The initial snapshot's steps, table loop and READ-event emission, once for the relational
connectors; each connector supplies only what its database does in a step.

The steps are those of Debezium's Db2 documentation (seed 004, "initial snapshot steps"), which
its RelationalSnapshotChangeEventSource takes for every relational connector; each is logged by
name ("snapshot step N/7: ...") in that order, so an operator follows any connector's snapshot
in the seed's words:

1. determine the tables in capture mode;
2. lock them (what a lock is, and whether there is one, is the database's);
3. read the position the data is consistent with (an LSN, a binlog position);
4. capture the schema of the captured tables;
5. release the locks (or say they stay until the snapshot transaction ends);
6. read the captured tables at that position, one READ event per row: in this process through
   the `SnapshotEmitter`, or in worker processes (engine/parallel.py) over chunks;
7. record the completed snapshot in the offsets (the final batch carries the offset).

Before step 1 the snapshot waits `snapshot.delay.ms` (`wait_snapshot_delay`, Debezium's
delaySnapshotIfNeeded), which a stop request cuts short.

A stop request ends the snapshot without an offset: the next run starts over (as Debezium's),
and the runtime deletes the rows this one read that are gone by then (engine/supersede.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Generic, NamedTuple, Protocol, TypeVar

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.parallel import (
    ChunkEmitter,
    ChunkOfTable,
    SnapshotStopped,
    WorkerSpec,
    read_in_workers,
)
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext, SourceEvent
from headwater.model.schema import TableSchema
from headwater.model.topic import RenderedBatch, TopicBatch

SNAPSHOT_STEPS: Final = (
    "determine the tables in capture mode",
    "lock the captured tables",
    "read the maximum LSN",
    "capture the schema of the captured tables",
    "release the locks",
    "read the captured tables at the maximum LSN",
    "record the completed snapshot in the offsets",
)


def log_step(logger: logging.Logger, steps: Sequence[str], number: int, detail: str = "",
             kind: str = "snapshot step") -> None:
    """Logs step `number` (1-based) of `steps` by its name, with `detail` in parentheses."""
    logger.info("%s %d/%d: %s%s", kind, number, len(steps), steps[number - 1],
                f" ({detail})" if detail else "")


def step(logger: logging.Logger, number: int, detail: str = "") -> None:
    """Logs step `number` of SNAPSHOT_STEPS."""
    log_step(logger, SNAPSHOT_STEPS, number, detail)


def wait_snapshot_delay(ctx: SourceRunContext, delay_ms: int, logger: logging.Logger) -> None:
    """Waits `snapshot.delay.ms` before a snapshot starts (every connector's in Debezium: time
    for the other tasks of a cluster to start, say); a stop request during the wait ends the
    snapshot (SnapshotStopped) at once."""
    if delay_ms <= 0:
        return
    logger.info("snapshot: waiting snapshot.delay.ms=%d before it starts", delay_ms)
    if ctx.stopping.wait(delay_ms / 1000):
        raise SnapshotStopped


_READ, _TRUE, _FIRST = Op.READ, SnapshotMarker.TRUE, SnapshotMarker.FIRST


class SnapshotEmitter:
    """A snapshot's READ records, emitted in batches with Debezium 3.x's markers.

    Why the newest record is held back: its marker is known only once the next record arrives
    or its table ends (`last_in_data_collection`) or the snapshot ends (`last`).  A table's
    first record is `first_in_data_collection`, the first table's `first`: as Debezium's
    RelationalSnapshotChangeEventSource, whose `first` is the first row of the first table, so
    a snapshot whose first table is empty has no `first`; and whose `last` is the snapshot's
    last record (EventDispatcher's buffered record), even when the last table is empty.  Each full
    batch refreshes the events' time, updates RowsScanned (progress) and checks the stop
    request (SnapshotStopped).
    """

    def __init__(self, ctx: SourceRunContext, context: SourceContext, position: Any,
                 batch_size: int, rows_scanned: dict[str, int]) -> None:
        self.ctx = ctx
        self.context = context
        self.position = position
        self.batch_size = max(1, batch_size)
        self.rows_scanned = rows_scanned
        self.pending: list[ChangeRecord] = []
        self.held: ChangeRecord | None = None
        self.name = ""
        self.tables = 0  # tables begun: the first table's first record is `first`
        self.schema: Any = None  # the current table's TableSchema (begin_table)
        self.table_rows = 0  # records of the current table, the held one included
        self.now_ms = int(time.time() * 1000)

    def begin_table(self, name: str, schema: TableSchema) -> None:
        self.name, self.schema, self.table_rows = name, schema, 0
        self.tables += 1
        self.now_ms = int(time.time() * 1000)

    def add(self, after: Any) -> None:
        """One row's converted values."""
        if not self.table_rows:
            self._first(after)
            return
        pending = self.pending
        pending.append(self.held)  # type: ignore[arg-type]  # held from the table's first row
        now = self.now_ms
        self.held = ChangeRecord(self.context, self.schema, _READ, None, after, now, now, _TRUE,
                                 self.position)
        self.table_rows += 1
        if len(pending) >= self.batch_size:
            self.flush()

    def add_many(self, afters: Iterable[Any]) -> None:
        """Rows' converted values, as fetched together."""
        context, schema, position, now = self.context, self.schema, self.position, self.now_ms
        records = [ChangeRecord(context, schema, _READ, None, after, now, now, _TRUE, position)
                   for after in afters]
        if not records:
            return
        if not self.table_rows:
            records[0] = records[0]._replace(snapshot=self._first_marker())
        if self.held is not None:
            self.pending.append(self.held)
        self.held = records.pop()
        self.pending.extend(records)
        self.table_rows += len(records) + 1
        if len(self.pending) >= self.batch_size:
            self.flush()

    def add_rendered(self, rendered: RenderedBatch, rows: int, after: Any) -> None:
        """`rows` rows the reader rendered itself (snapshot=true), which follow the held
        record, then one row's converted values, held in turn.  Only after the table's first
        row (which goes through `add`, for its marker)."""
        assert self.table_rows, "add_rendered before the table's first row"
        self.pending.append(self.held)  # type: ignore[arg-type]
        self.table_rows += rows
        self.flush(rendered)
        now = self.now_ms
        self.held = ChangeRecord(self.context, self.schema, _READ, None, after, now, now, _TRUE,
                                 self.position)
        self.table_rows += 1

    def _first_marker(self) -> SnapshotMarker:
        return SnapshotMarker.resolve(self.tables == 1, False, True, False)

    def _first(self, after: Any) -> None:
        if self.held is not None:
            self.pending.append(self.held)
        now = self.now_ms
        self.held = ChangeRecord(self.context, self.schema, _READ, None, after, now, now,
                                 self._first_marker(), self.position)
        self.table_rows = 1

    def end_table(self) -> None:
        """The table's last record is `last_in_data_collection` (unless it is the snapshot's
        first, which `first` outranks)."""
        held = self.held
        if self.table_rows and held is not None and held.snapshot is not _FIRST:
            self.held = held._replace(snapshot=SnapshotMarker.LAST_IN_DATA_COLLECTION)
        self.rows_scanned[self.name] = self.table_rows

    def flush(self, rendered: RenderedBatch | None = None) -> None:
        self.ctx.emit(Batch(self.pending, rendered=rendered))
        self.pending = []
        self.rows_scanned[self.name] = self.table_rows
        self.now_ms = int(time.time() * 1000)
        if self.ctx.stopping.is_set():
            raise SnapshotStopped

    def finish(self) -> list[ChangeRecord]:
        """The records not emitted yet, the very last marked `last`."""
        if self.held is not None:
            self.pending.append(self.held._replace(snapshot=SnapshotMarker.LAST))
            self.held = None
        pending, self.pending = self.pending, []
        return pending


class RowSink(Protocol):
    """What a connector's table or chunk reader feeds: a `SnapshotEmitter` in this process,
    `ChunkRows` in a worker, so one reading code serves both."""

    position: Any
    now_ms: int

    @property
    def table_rows(self) -> int: ...

    def add(self, after: Any) -> None: ...

    def add_many(self, afters: Iterable[Any]) -> None: ...

    def add_rendered(self, rendered: RenderedBatch, rows: int, after: Any) -> None: ...


class ChunkRows:
    """A worker's chunk (engine.parallel.ChunkEmitter, which holds back its last record) as a
    `RowSink`: every record `true`, since only the parent knows the snapshot's one `last`."""

    def __init__(self, chunk: ChunkEmitter, context: SourceContext, position: Any,
                 schema: TableSchema) -> None:
        self.chunk, self.context, self.position, self.schema = chunk, context, position, schema
        self.now_ms = int(time.time() * 1000)
        self._until_now = chunk.batch_size  # rows until the events' time is taken again

    @property
    def table_rows(self) -> int:
        return self.chunk.rows

    def add(self, after: Any) -> None:
        self._until_now -= 1
        if not self._until_now:
            self._until_now = self.chunk.batch_size
            self.now_ms = int(time.time() * 1000)
        now = self.now_ms
        self.chunk.add(ChangeRecord(self.context, self.schema, _READ, None, after, now, now,
                                    _TRUE, self.position))

    def add_many(self, afters: Iterable[Any]) -> None:
        context, schema, position, add = self.context, self.schema, self.position, self.chunk.add
        now = self.now_ms = int(time.time() * 1000)
        for after in afters:
            add(ChangeRecord(context, schema, _READ, None, after, now, now, _TRUE, position))

    def add_rendered(self, rendered: RenderedBatch, rows: int, after: Any) -> None:
        now = self.now_ms
        self.chunk.add_rendered(rendered, rows, ChangeRecord(
            self.context, self.schema, _READ, None, after, now, now, _TRUE, self.position))
        self.now_ms = int(time.time() * 1000)


class RangeChunk(NamedTuple):
    """The rows of one table with `low <= cut < high`, where `cut` is what the connector cuts
    a table on (PostgreSQL's heap block, MySQL's integer key); None is open on that side."""

    table: int  # index into the snapshot's table list
    low: int | None
    high: int | None

    def where(self, column: str, literal: Callable[[int], str] = str) -> str:
        """The SQL condition selecting the chunk's rows ('' for the whole table)."""
        conds = []
        if self.low is not None:
            conds.append(f"{column} >= {literal(int(self.low))}")
        if self.high is not None:
            conds.append(f"{column} < {literal(int(self.high))}")
        return " AND ".join(conds)


def plan_ranges(weights: Sequence[int], cuts: Callable[[int], Sequence[int]]
                ) -> list[RangeChunk]:
    """Chunks covering every table exactly once: table i cut at `cuts(i)` (none: read whole),
    the first chunk open below and the last open above, so a row outside what was known at
    planning time still falls in exactly one chunk.  Largest `weights` first keeps the workers
    busy until the end (a big table scheduled last would be read by few workers while the
    others idle)."""
    chunks: list[RangeChunk] = []
    for i in sorted(range(len(weights)), key=lambda i: -max(0, weights[i])):
        edges: list[int | None] = [None, *cuts(i), None]
        chunks.extend(RangeChunk(i, edges[k], edges[k + 1]) for k in range(len(edges) - 1))
    return chunks


T = TypeVar("T")  # a connector's description of one captured table


class RelationalSnapshotSource(Generic[T]):
    """`execute` runs the seven steps; a subclass supplies each step's database part (the
    methods that raise NotImplementedError) and sets `log`, `metrics`, `context`,
    `batch_size`, `max_threads` and `snapshot_delay_ms`."""

    log: logging.Logger
    metrics: CaptureMetrics
    context: SourceContext
    batch_size: int
    max_threads: int = 1
    snapshot_delay_ms: int = 0
    with_data: bool = True
    ctx: SourceRunContext  # the run's, once `execute` started
    position: Any  # the READ events', once step 3 read it

    # -- the database's part of each step --------------------------------------------------------
    def begin(self, ctx: SourceRunContext) -> None:
        """Opens the snapshot's connection and session (before step 1)."""
        raise NotImplementedError

    def captured_tables(self) -> list[T]:
        """Step 1: the tables whose rows the snapshot reads."""
        raise NotImplementedError

    def table_name(self, table: T) -> str:
        """`schema.table` (`database.table`): the name in logs and metrics."""
        raise NotImplementedError

    def lock(self, tables: list[T]) -> str:
        """Step 2; what was locked, for the log."""
        raise NotImplementedError

    def read_position(self) -> tuple[Any, str]:
        """Step 3: the READ events' position, and how to log it."""
        raise NotImplementedError

    def capture_schema(self, tables: list[T], position: Any) -> tuple[list[SourceEvent], str]:
        """Step 4: the schema change events (emitted before the rows), and the log's detail."""
        raise NotImplementedError

    def release(self) -> str:
        """Step 5; what was released, for the log."""
        raise NotImplementedError

    def estimates(self, tables: list[T], parallel: bool) -> list[int]:
        """Estimated rows per table (-1: unknown), for progress and the chunk plan."""
        raise NotImplementedError

    def parallel_possible(self) -> bool:
        """Whether this snapshot's tables may be read by worker processes."""
        return True

    def read_table(self, table: T, emitter: SnapshotEmitter) -> None:
        """Step 6 in this process, for one table: each row to the emitter."""
        raise NotImplementedError

    def read_in_workers(self, ctx: SourceRunContext, tables: list[T],
                        release: Callable[[], None]) -> TopicBatch | None:
        """Step 6 in worker processes (`workers` does the common part); returns the
        snapshot's `last` event, rendered.  `release` is step 5 (once every worker's snapshot
        is open)."""
        raise NotImplementedError

    def schema_of(self, table: T) -> TableSchema:
        raise NotImplementedError

    def commit(self) -> dict[str, Any]:
        """Ends the snapshot transaction (and any lock); the completing offset."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- the steps ---------------------------------------------------------------------------------
    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        try:
            return self._steps(ctx)
        except SnapshotStopped:
            self.log.info("snapshot stopped by a stop request; the next run starts it over, "
                          "which deletes the rows this one read that are gone by then")
            return None
        finally:
            self.close()

    def _steps(self, ctx: SourceRunContext) -> dict[str, Any]:
        log = self.log
        self.ctx = ctx
        wait_snapshot_delay(ctx, self.snapshot_delay_ms, log)
        self.begin(ctx)
        tables = self.captured_tables()
        step(log, 1, ", ".join(self.table_name(t) for t in tables) or "none")
        step(log, 2, self.lock(tables))
        position, at = self.read_position()
        self.position = position
        step(log, 3, at)
        events, schema = self.capture_schema(tables, position)
        step(log, 4, schema)
        read = tables if self.with_data else []
        parallel = self._parallel(ctx, read)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                step(log, 5, self.release())

        if not parallel:
            release()
        if events:
            ctx.emit(Batch(events))
        names = [self.table_name(t) for t in read]
        self._start_metrics(names, self.estimates(read, parallel) if read else [])
        last: TopicBatch | None = None
        pending: list[ChangeRecord] = []
        if parallel:
            last = self.read_in_workers(ctx, read, release)
            release()
        else:
            pending = self._read_serial(ctx, read, position)
        offset = self.commit()
        ctx.emit(Batch(pending, offset=offset, rendered=last))
        step(log, 7, "streaming continues from the snapshot's position")
        return offset

    def _parallel(self, ctx: SourceRunContext, tables: list[T]) -> bool:
        """Whether step 6 runs in worker processes (else the serial in-process read)."""
        if self.max_threads <= 1 or not tables or not self.parallel_possible():
            return False
        if ctx.renderer is None:
            self.log.warning("snapshot step: the runtime offers no renderer; reading serially")
            return False
        return True

    def _start_metrics(self, names: Sequence[str], estimates: Sequence[int]) -> None:
        m = self.metrics
        m.total_table_count = m.remaining_table_count = len(names)
        for name, estimate in zip(names, estimates, strict=True):
            m.rows_scanned[name] = 0
            m.rows_estimated[name] = estimate

    def _read_serial(self, ctx: SourceRunContext, tables: list[T],
                     position: Any) -> list[ChangeRecord]:
        emitter = SnapshotEmitter(ctx, self.context, position, self.batch_size,
                                  self.metrics.rows_scanned)
        for n, table in enumerate(tables, 1):
            if ctx.stopping.is_set():
                raise SnapshotStopped
            name = self.table_name(table)
            step(self.log, 6, f"{name}, {n} of {len(tables)}")
            started = time.monotonic()
            self.metrics.table_started(name)
            emitter.begin_table(name, self.schema_of(table))
            self.read_table(table, emitter)
            emitter.end_table()
            self.metrics.table_done(name)
            step(self.log, 6, f"{name} done, {emitter.table_rows} rows in "
                              f"{time.monotonic() - started:.1f} s")
        return emitter.finish()

    def workers(self, ctx: SourceRunContext, tables: list[T], open_reader: Callable[[Any], Any],
                reader_spec: Any, chunks: Sequence[ChunkOfTable],
                on_all_ready: Callable[[], None] | None = None) -> TopicBatch | None:
        """Reads `chunks` with `open_reader(reader_spec)` in each worker process."""
        spec = WorkerSpec(open_reader, reader_spec, ctx.renderer, self.batch_size)
        return read_in_workers(ctx.emit, ctx.stopping, spec, chunks,
                               [self.table_name(t) for t in tables], self.max_threads,
                               self.metrics, on_all_ready,
                               lambda detail: step(self.log, 6, detail))
