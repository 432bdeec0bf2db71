"""The consistent initial snapshot of MySQL/MariaDB (reference 1.3), steps logged by name:

1. *lock*: `FLUSH TABLES WITH READ LOCK` (snapshot.locking.mode minimal/extended); if the user
   may not (RELOAD missing, managed services), `FLUSH TABLES <captured> WITH READ LOCK`;
   nothing with mode none;
2. *consistent snapshot*: REPEATABLE READ, `START TRANSACTION WITH CONSISTENT SNAPSHOT`;
3. *binlog position*: file/position and GTID set at that point (MariaDB reports the snapshot's
   own binlog position in `binlog_snapshot_file`/`binlog_snapshot_position`, exact even
   without a lock);
4. *schema*: `SHOW CREATE TABLE` of the tables of captured databases, parsed into the schema
   and written to the schema history at the snapshot position;
5. *unlock* (minimal): writes resume while the rows are read inside the snapshot transaction;
6. *schema change events*; 7. *scan* every captured table (READ events, `last` on the very
   last); 8. *commit* (extended: unlock only now); 9. the offset of the snapshot position is
   returned and recorded once the events are durable.

A snapshot interrupted by a crash is not resumed: the next start takes a new one (as Debezium
does), with the schema history started over; the runtime then deletes the rows the interrupted
attempt read and the new one did not find (engine/supersede.py).

With `snapshot.max.threads` N > 1 (and a lock), step 7 runs in N worker processes
(snapshot_workers.py, engine/parallel.py) over primary-key ranges and whole tables.  They are
started while the lock is still held, each opens its own consistent snapshot and reports it,
and only then does step 5 release the lock: the lock forbids every change to the captured
tables, so all the snapshots see the data as of the binlog position read in step 3.  See
docs/snapshots-parallel.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import pymysql  # type: ignore[import-untyped]
import pymysql.cursors  # type: ignore[import-untyped]

from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.connection import (
    binlog_status_statement,
    connect,
    qualified,
    quote_ident,
    show_create_table,
)
from headwater.connectors.mysql.position import MySqlPosition, restart_offset
from headwater.connectors.mysql.schema_state import SchemaHistoryError, SchemaState
from headwater.connectors.mysql.snapshot_values import select_list, snapshot_conversions
from headwater.connectors.mysql.snapshot_workers import (
    TableSize,
    plan_chunks,
    result_cursor,
    split_key,
    streams_results,
)
from headwater.connectors.mysql.tables import MySqlTableCodec
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.parallel import (
    SnapshotStopped,
    WorkerSpec,
    read_in_workers,
)
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceEvent
from headwater.model.topic import TopicBatch

log = logging.getLogger("headwater.connectors.mysql")

_ACCESS_DENIED = (1227, 1045, 1044)



class SnapshotPoint:
    """The binlog position the snapshot's data is consistent with."""

    def __init__(self, file: str, pos: int, gtids: str | None, server_id: int) -> None:
        self.file = file
        self.pos = pos
        self.gtids = gtids
        self.server_id = server_id

    def position(self) -> MySqlPosition:
        """The snapshot records' position.  `server_id` 0, as Debezium 3.x writes it in their
        `source` block: its BinlogSourceInfo takes the server id from binlog events only (the
        offset keeps the server's)."""
        return MySqlPosition(self.file, self.pos, 0, 0, None, None, None)

    def offset(self) -> dict[str, Any]:
        offset = restart_offset(self.file, self.pos, self.gtids, server_id=self.server_id)
        offset["snapshot_completed"] = True
        return offset


class MySqlSnapshotSource:
    def __init__(
        self,
        cfg: MySqlConnectorConfig,
        state: SchemaState,
        metrics: CaptureMetrics,
        *,
        with_data: bool = True,
    ) -> None:
        self.cfg = cfg
        self.state = state
        self.metrics = metrics
        self.with_data = with_data
        self._pending: list[SourceEvent] = []
        self._locked = False  # this connection holds the read lock (global or tables)
        self._locked_at = 0.0

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        cfg = self.cfg
        if cfg.snapshot_delay_ms:
            log.info("snapshot step: waiting snapshot.delay.ms=%d", cfg.snapshot_delay_ms)
            if ctx.stopping.wait(cfg.snapshot_delay_ms / 1000):
                return None
        conn = connect(cfg, conv=snapshot_conversions())
        self._locked = False
        try:
            cur = conn.cursor()
            cur.execute(f"SET SESSION lock_wait_timeout = "
                        f"{max(1, cfg.snapshot_lock_timeout_ms // 1000)}")
            tables = self._list_tables(cur)
            if cfg.snapshot_locking_mode != "none":
                self._locked = self._lock(cur, tables)
                self._locked_at = time.monotonic()
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            point = self._binlog_position(cur, self._locked)
            log.info("snapshot step: binlog position %s:%d, GTIDs %s", point.file, point.pos,
                     point.gtids or "-")
            schema_events = self._read_schema(cur, tables, point)
            captured = [(db, t) for db, t in tables if self.state.captured(db, t)]
            parallel = self._parallel(ctx, captured)
            if not parallel:
                self._unlock_minimal(cur)
            if schema_events:
                ctx.emit(Batch(schema_events))
            m = self.metrics
            m.snapshot_running, m.snapshot_started_monotonic = True, time.monotonic()
            m.total_table_count = m.remaining_table_count = len(captured) if self.with_data else 0
            last: TopicBatch | None = None
            if self.with_data:
                sizes = self._table_sizes(cur, captured, split=parallel)
                if parallel:
                    try:
                        last = self._read_parallel(ctx, cur, captured, sizes, point)
                    except SnapshotStopped:
                        log.info("snapshot step: stopped; it starts over on the next run")
                        return None
                elif not self._scan(ctx, conn, captured, sizes, point):
                    return None
            # The snapshot's end is durable once its last events are: store the offset then.
            ctx.emit(Batch(self._pending, point.offset(), rendered=last))
            self._pending = []
            cur = conn.cursor()
            cur.execute("COMMIT")
            if self._locked:
                cur.execute("UNLOCK TABLES")
                self._locked = False
            m.snapshot_running, m.snapshot_completed = False, True
            m.snapshot_duration_s = time.monotonic() - (m.snapshot_started_monotonic or 0.0)
            return point.offset()
        finally:
            try:
                if self._locked:
                    conn.cursor().execute("UNLOCK TABLES")
            finally:
                conn.close()

    # -- steps ---------------------------------------------------------------------------------

    def _list_tables(self, cur: Any) -> list[tuple[str, str]]:
        cur.execute("SHOW DATABASES")
        databases = [row[0] for row in cur.fetchall() if self.cfg.database_filter(row[0])]
        tables: list[tuple[str, str]] = []
        for db in databases:
            cur.execute(f"SHOW FULL TABLES FROM {quote_ident(db)} WHERE Table_type = 'BASE TABLE'")
            tables.extend((db, row[0]) for row in cur.fetchall())
        log.info("snapshot step: %d tables in %d databases, captured: %s", len(tables),
                 len(databases),
                 ", ".join(f"{d}.{t}" for d, t in tables if self.state.captured(d, t)) or "none")
        return tables

    def _lock(self, cur: Any, tables: list[tuple[str, str]]) -> bool:
        try:
            cur.execute("FLUSH TABLES WITH READ LOCK")
            log.info("snapshot step: global read lock acquired")
            return True
        except pymysql.err.OperationalError as exc:
            if exc.args[0] not in _ACCESS_DENIED:
                raise
            log.info("snapshot step: global read lock not allowed (%s); using table locks", exc)
        captured = [qualified(d, t) for d, t in tables if self.state.captured(d, t)]
        if not captured:
            return False
        cur.execute(f"FLUSH TABLES {', '.join(captured)} WITH READ LOCK")
        log.info("snapshot step: table locks acquired on %d tables", len(captured))
        return True

    def _binlog_position(self, cur: Any, locked: bool) -> SnapshotPoint:
        cur.execute("SELECT VERSION(), @@server_id")
        version, server_id = cur.fetchone()
        mariadb = "mariadb" in str(version).lower()
        file: str | None = None
        pos = 0
        gtids: str | None = None
        if mariadb:
            cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
            status = {name.lower(): value for name, value in cur.fetchall()}
            file = status.get("binlog_snapshot_file") or None
            pos = int(status.get("binlog_snapshot_position") or 0)
            if locked:  # the GTID position is consistent with the snapshot only under the lock
                cur.execute("SELECT @@gtid_binlog_pos")
                gtids = str(cur.fetchone()[0] or "") or None
        if not file:
            cur.execute(binlog_status_statement(str(version)))
            row = cur.fetchone()
            if row is None:
                raise RuntimeError(
                    "the server has no binary log: start it with log_bin (and binlog_format=ROW,"
                    " binlog_row_image=FULL)"
                )
            file, pos = str(row[0]), int(row[1])
            if not mariadb and len(row) >= 5 and row[4]:
                gtids = str(row[4]).replace("\n", "")
        return SnapshotPoint(file, pos, gtids, int(server_id))

    def _read_schema(
        self, cur: Any, tables: list[tuple[str, str]], point: SnapshotPoint
    ) -> list[SourceEvent]:
        state = self.state
        state.reset()
        position = point.position()
        now = int(time.time() * 1000)
        events: list[SourceEvent] = []
        store_all = not self.cfg.schema_history.store_only_captured_tables_ddl
        databases = sorted({db for db, _ in tables})
        for db in databases:
            cur.execute(
                "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA "
                "WHERE SCHEMA_NAME = %s", (db,))
            row = cur.fetchone()
            charset = f" CHARACTER SET {row[0]}" if row and row[0] else ""
            events.extend(state.apply(
                f"CREATE DATABASE IF NOT EXISTS {quote_ident(db)}{charset}", None, position,
                now, SnapshotMarker.TRUE))
        for db, table in tables:
            if not store_all and not state.captured(db, table):
                continue
            ddl, ansi_quotes = show_create_table(cur, db, table)
            events.extend(state.apply(ddl, db, position, now, SnapshotMarker.TRUE,
                                      ansi_quotes))
            if state.captured(db, table) and state.codec(db, table) is None:
                # Skipped as unparseable: the snapshot has no other definition to read the
                # rows with (the binlog's table metadata only comes with streamed rows).
                raise SchemaHistoryError(
                    f"snapshot of {db}.{table}: its SHOW CREATE TABLE could not be parsed "
                    "(skipped by schema.history.internal.skip.unparseable.ddl), so its rows "
                    "cannot be read; exclude the table (table.exclude.list) or report the "
                    "statement")
        return events

    def _parallel(self, ctx: SourceRunContext, captured: Sequence[tuple[str, str]]) -> bool:
        """Whether step 7 runs in worker processes (else the serial in-process scan)."""
        threads = self.cfg.snapshot_max_threads
        if threads <= 1 or not self.with_data or not captured:
            return False
        if not self._locked:
            # Configuration validation refuses this; a config built in code still gets the
            # serial scan rather than readers at different points.
            log.warning("snapshot step: snapshot.max.threads=%d needs a read lock "
                        "(snapshot.locking.mode minimal or extended); reading serially", threads)
            return False
        if ctx.renderer is None:
            log.warning("snapshot step: the runtime offers no renderer; reading serially")
            return False
        return True

    def _unlock_minimal(self, cur: Any) -> None:
        """Step 5: with snapshot.locking.mode=minimal, writes resume now."""
        if self._locked and self.cfg.snapshot_locking_mode == "minimal":
            cur.execute("UNLOCK TABLES")
            self._locked = False
            log.info("snapshot step: unlocked (snapshot.locking.mode=minimal) after %.2f s",
                     time.monotonic() - self._locked_at)

    def _table_sizes(
        self, cur: Any, tables: Sequence[tuple[str, str]], *, split: bool
    ) -> list[TableSize]:
        """Row estimates (information_schema.TABLES.TABLE_ROWS, for the progress bars and the
        chunk plan) and, with `split`, the split key's range read in the snapshot."""
        estimates: dict[tuple[str, str], int] = {}
        for db in sorted({db for db, _ in tables}):
            cur.execute("SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES "
                        "WHERE TABLE_SCHEMA = %s", (db,))
            for name, rows in cur.fetchall():
                estimates[(db, str(name))] = -1 if rows is None else int(rows)
        sizes = []
        for db, table in tables:
            name = f"{db}.{table}"
            estimate = estimates.get((db, table), -1)
            self.metrics.rows_scanned[name] = 0
            self.metrics.rows_estimated[name] = estimate
            codec = self.state.codec(db, table)
            key = split_key(codec.table) if split and codec is not None else None
            low = high = None
            if key is not None:
                cur.execute(f"SELECT MIN({quote_ident(key)}), MAX({quote_ident(key)}) "
                            f"FROM {qualified(db, table)}")
                low, high = cur.fetchone()
            sizes.append(TableSize(estimate, low, high))
        return sizes

    def _read_parallel(
        self,
        ctx: SourceRunContext,
        cur: Any,
        tables: Sequence[tuple[str, str]],
        sizes: Sequence[TableSize],
        point: SnapshotPoint,
    ) -> TopicBatch | None:
        """Step 7 in worker processes; returns the snapshot's `last` event, rendered.

        The lock is held until every worker reported its consistent snapshot open (READY),
        or until every chunk is read if some worker is not ready by then (it then reads
        nothing: a chunk is only taken by a ready worker, and no chunk is left)."""
        from headwater.connectors.mysql.snapshot_workers import ReaderSpec, open_reader

        threads = self.cfg.snapshot_max_threads
        codecs: list[MySqlTableCodec] = []
        for db, table in tables:
            codec = self.state.codec(db, table)
            assert codec is not None, f"{db}.{table} has no definition"
            codecs.append(codec)
        names = [f"{db}.{table}" for db, table in tables]
        chunks = plan_chunks(sizes, threads)
        spec = WorkerSpec(
            open_reader,
            ReaderSpec(self.cfg, self.state.modes, self.state.context, point.position(),
                       tuple(c.table for c in codecs),
                       tuple(streams_results(size, self.cfg.min_row_count_to_stream_results)
                             for size in sizes)),
            ctx.renderer,
            self.cfg.max_batch_size,
        )
        last = read_in_workers(ctx.emit, ctx.stopping, spec, chunks, names, threads,
                               self.metrics, on_all_ready=lambda: self._unlock_minimal(cur))
        self._unlock_minimal(cur)
        return last

    def _scan(
        self,
        ctx: SourceRunContext,
        conn: Any,
        tables: list[tuple[str, str]],
        sizes: Sequence[TableSize],
        point: SnapshotPoint,
    ) -> bool:
        """Emits READ records for every row; False if stopped.  Each table is read with a
        streaming or a buffered result set as `min.row.count.to.stream.results` says
        (snapshot_workers.streams_results)."""
        state = self.state
        position = point.position()
        batch_size = self.cfg.max_batch_size
        context = state.context
        read = Op.READ
        true = SnapshotMarker.TRUE
        pending: list[SourceEvent] | None = None
        for n, ((db, table), size) in enumerate(zip(tables, sizes, strict=True), 1):
            codec = state.codec(db, table)
            if codec is None:
                continue
            log.info("snapshot step: scanning %s.%s (%d of %d)", db, table, n, len(tables))
            self.metrics.table_started(f"{db}.{table}")
            started = time.monotonic()
            schema = codec.schema
            convert_rows = codec.convert_rows  # column by column: no per-row converter loop
            rows = 0
            cur = conn.cursor(result_cursor(size, self.cfg.min_row_count_to_stream_results))
            cur.execute(f"SELECT {select_list(codec.table)} FROM {qualified(db, table)}")
            try:
                while True:
                    chunk = cur.fetchmany(batch_size)
                    if not chunk:
                        break
                    now = int(time.time() * 1000)
                    records: list[SourceEvent] = [
                        ChangeRecord(context, schema, read, None, after, now, now, true,
                                     position)
                        for after in convert_rows(chunk)
                    ]
                    if rows == 0:  # Debezium 3.x marks the first record of each table
                        first = records[0]
                        assert isinstance(first, ChangeRecord)
                        records[0] = first._replace(snapshot=SnapshotMarker.resolve(
                            pending is None, False, True, False))
                    rows += len(records)
                    if pending is not None:
                        ctx.emit(Batch(pending))
                    pending = records
                    self.metrics.rows_scanned[f"{db}.{table}"] = rows
                    if ctx.stopping.is_set():
                        return False
            finally:
                cur.close()
            if rows and pending:  # ... and the last (unless it is also the very first)
                last = pending[-1]
                assert isinstance(last, ChangeRecord)
                if last.snapshot is not SnapshotMarker.FIRST:
                    pending[-1] = last._replace(snapshot=SnapshotMarker.LAST_IN_DATA_COLLECTION)
            self.metrics.table_done(f"{db}.{table}")
            log.info("snapshot step: %s.%s done, %d rows in %.1f s", db, table, rows,
                     time.monotonic() - started)
        if pending:
            last = pending[-1]
            assert isinstance(last, ChangeRecord)
            pending[-1] = last._replace(snapshot=SnapshotMarker.LAST)
            self._pending = pending
        return True
