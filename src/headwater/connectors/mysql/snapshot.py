"""The consistent initial snapshot of MySQL/MariaDB (reference 1.3): the relational base's
seven steps (relational/snapshot.py, logged by name), each method below MySQL's part of one:
the read lock (`lock`, with its fallbacks), `START TRANSACTION WITH CONSISTENT SNAPSHOT` and
its binlog position (`read_position`), `SHOW CREATE TABLE` into the schema history at that
position (`capture_schema`), unlocking (`release`, `commit`: minimal or extended).

A snapshot interrupted by a crash is not resumed: the next start takes a new one (as Debezium
does), with the schema history started over; the runtime then deletes the rows the interrupted
attempt read and the new one did not find (engine/supersede.py).

With `snapshot.max.threads` N > 1 (and a lock), step 6 runs in N worker processes
(snapshot_workers.py, engine/parallel.py) over primary-key ranges and whole tables.  They are
started while the lock is still held, each opens its own consistent snapshot and reports it,
and only then does step 5 release the lock: the lock forbids every change to the captured
tables, so all the snapshots see the data as of the binlog position read in step 3.  See
docs/snapshots-parallel.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import pymysql  # type: ignore[import-untyped]
import pymysql.cursors  # type: ignore[import-untyped]

from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.connection import (
    connect,
    qualified,
    quote_ident,
    show_create_table,
)
from headwater.connectors.mysql.position import MySqlPosition, restart_offset
from headwater.connectors.mysql.schema_state import SchemaHistoryError, SchemaState
from headwater.connectors.mysql.server import server_for
from headwater.connectors.mysql.snapshot_workers import (
    chunk_sql,
    select_rows,
    splicer,
    split_key,
    streams_results,
)
from headwater.connectors.mysql.tables import MySqlTableCodec
from headwater.connectors.mysql.text_values import snapshot_conversions
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import SourceRunContext
from headwater.model.record import SnapshotMarker, SourceEvent
from headwater.model.schema import TableSchema
from headwater.model.topic import TopicBatch
from headwater.relational.key_ranges import TableSize, plan_chunks
from headwater.relational.snapshot import RangeChunk, RelationalSnapshotSource, SnapshotEmitter

log = logging.getLogger("headwater.connectors.mysql")

_ACCESS_DENIED = (1227, 1045, 1044)


class SnapshotPoint(NamedTuple):
    """The binlog position the snapshot's data is consistent with."""

    file: str
    pos: int
    gtids: str | None
    server_id: int

    def position(self) -> MySqlPosition:
        """The snapshot records' position.  `server_id` 0, as Debezium 3.x writes it in their
        `source` block: its BinlogSourceInfo takes the server id from binlog events only (the
        offset keeps the server's)."""
        return MySqlPosition(self.file, self.pos, 0, 0, None, None, None)

    def offset(self) -> dict[str, Any]:
        offset = restart_offset(self.file, self.pos, self.gtids, server_id=self.server_id)
        offset["snapshot_completed"] = True
        return offset


def consistent_point(cur: Any, locked: bool) -> SnapshotPoint:
    """The binlog position (and GTIDs) of the consistent snapshot `cur`'s transaction just
    started, as the server (MySQL or MariaDB, server.py) reports it."""
    cur.execute("SELECT VERSION(), @@server_id")
    version, server_id = cur.fetchone()
    return SnapshotPoint(*server_for(str(version)).consistent_point(cur, locked),
                         int(server_id))


class MySqlSnapshotSource(RelationalSnapshotSource[tuple[str, str]]):
    """The snapshot's steps (relational.snapshot) with MySQL's part of each."""

    log = log

    def __init__(
        self,
        cfg: MySqlConnectorConfig,
        state: SchemaState,
        metrics: CaptureMetrics,
        *,
        with_data: bool = True,
        columnar: bool = True,
    ) -> None:
        self.cfg = cfg
        # Chunks rendered column-wise (relational/snapshot_splice.py) where the output format
        # allows; False reads every table row-wise (the tests compare the two).
        self.columnar = columnar
        self.state = state
        self.metrics = metrics
        self.with_data = with_data
        self.batch_size = cfg.max_batch_size
        self.max_threads = cfg.snapshot_max_threads
        self.snapshot_delay_ms = cfg.snapshot_delay_ms
        self.conn: Any = None
        self._locked = False  # this connection holds the read lock (global or tables)
        self._locked_at = 0.0
        self.read_order: dict[tuple[str, str], int] = {}  # each table read: its `sizes` index
        self.sizes: list[TableSize] = []

    # -- the steps' MySQL part ---------------------------------------------------------------------
    def begin(self, ctx: SourceRunContext) -> None:
        cfg = self.cfg
        self.context = self.state.context
        self.conn = connect(cfg, conv=snapshot_conversions())
        self._locked = False
        self.cur = self.conn.cursor()
        self.cur.execute(f"SET SESSION lock_wait_timeout = "
                         f"{max(1, cfg.snapshot_lock_timeout_ms // 1000)}")

    def captured_tables(self) -> list[tuple[str, str]]:
        """The captured tables; every table of the captured databases is kept for step 4."""
        cur = self.cur
        cur.execute("SHOW DATABASES")
        databases = [row[0] for row in cur.fetchall() if self.cfg.database_filter(row[0])]
        self.all_tables: list[tuple[str, str]] = []
        for db in databases:
            cur.execute(f"SHOW FULL TABLES FROM {quote_ident(db)} WHERE Table_type = 'BASE TABLE'")
            self.all_tables.extend((db, row[0]) for row in cur.fetchall())
        return [(db, t) for db, t in self.all_tables if self.state.captured(db, t)]

    def table_name(self, table: tuple[str, str]) -> str:
        return f"{table[0]}.{table[1]}"

    def schema_of(self, table: tuple[str, str]) -> TableSchema:
        return self.codec(table).schema

    def codec(self, table: tuple[str, str]) -> MySqlTableCodec:
        codec = self.state.codec(*table)
        assert codec is not None, f"{self.table_name(table)} has no definition"
        return codec

    def lock(self, tables: list[tuple[str, str]]) -> str:
        """`FLUSH TABLES WITH READ LOCK`, else (RELOAD missing, managed services) `FLUSH
        TABLES <captured> WITH READ LOCK`; nothing with snapshot.locking.mode=none."""
        if self.cfg.snapshot_locking_mode == "none":
            return "none: snapshot.locking.mode=none"
        self._locked_at = time.monotonic()
        try:
            self.cur.execute("FLUSH TABLES WITH READ LOCK")
            self._locked = True
            return "global read lock acquired"
        except pymysql.err.OperationalError as exc:
            if exc.args[0] not in _ACCESS_DENIED:
                raise
            log.info("snapshot: global read lock not allowed (%s); using table locks", exc)
        if not tables:
            return "no captured table to lock"
        self.cur.execute(f"FLUSH TABLES {', '.join(qualified(*t) for t in tables)} "
                         "WITH READ LOCK")
        self._locked = True
        return f"table locks acquired on {len(tables)} tables"

    def read_position(self) -> tuple[MySqlPosition, str]:
        """REPEATABLE READ, `START TRANSACTION WITH CONSISTENT SNAPSHOT`, and the binlog
        position of that point (MariaDB reports the snapshot's own, exact even without a
        lock)."""
        self.cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        self.cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        point = self.point = consistent_point(self.cur, self._locked)
        return point.position(), (f"binlog position {point.file}:{point.pos}, GTIDs "
                                  f"{point.gtids or '-'}")

    def release(self) -> str:
        """With snapshot.locking.mode=minimal, writes resume now; extended keeps the lock."""
        if not self._locked:
            return "nothing to release"
        if self.cfg.snapshot_locking_mode != "minimal":
            return "snapshot.locking.mode=extended: kept until the snapshot transaction ends"
        self.cur.execute("UNLOCK TABLES")
        self._locked = False
        return (f"unlocked (snapshot.locking.mode=minimal) after "
                f"{time.monotonic() - self._locked_at:.2f} s")

    def parallel_possible(self) -> bool:
        if not self._locked:
            # Configuration validation refuses this; a config built in code still gets the
            # serial scan rather than readers at different points.
            log.warning("snapshot: snapshot.max.threads=%d needs a read lock "
                        "(snapshot.locking.mode minimal or extended); reading serially",
                        self.max_threads)
            return False
        return True

    def commit(self) -> dict[str, Any]:
        """Commits (extended: unlocks only now); the snapshot position's offset."""
        cur = self.conn.cursor()
        cur.execute("COMMIT")
        if self._locked:
            cur.execute("UNLOCK TABLES")
            self._locked = False
        return self.point.offset()

    def close(self) -> None:
        if self.conn is None:
            return
        try:
            if self._locked:
                self.conn.cursor().execute("UNLOCK TABLES")
        finally:
            self.conn.close()
            self.conn = None

    def capture_schema(self, captured: list[tuple[str, str]],
                       position: Any) -> tuple[list[SourceEvent], str]:
        """`SHOW CREATE TABLE` of every table of the captured databases, parsed into the
        schema and written to the schema history at the snapshot position."""
        state, cur, tables = self.state, self.cur, self.all_tables
        state.reset()
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
        return events, f"SHOW CREATE TABLE of {len(tables)} tables, in the schema history"

    def estimates(self, tables: list[tuple[str, str]], parallel: bool) -> list[int]:
        """Row estimates (information_schema.TABLES.TABLE_ROWS, for the progress bars and the
        chunk plan) and, in `parallel`, the split key's range read in the snapshot."""
        cur = self.cur
        estimates: dict[tuple[str, str], int] = {}
        for db in sorted({db for db, _ in tables}):
            cur.execute("SELECT TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES "
                        "WHERE TABLE_SCHEMA = %s", (db,))
            for name, rows in cur.fetchall():
                estimates[(db, str(name))] = -1 if rows is None else int(rows)
        self.read_order = {table: n for n, table in enumerate(tables)}
        self.sizes = []
        for db, table in tables:
            estimate = estimates.get((db, table), -1)
            codec = self.state.codec(db, table)
            key = split_key(codec.table) if parallel and codec is not None else None
            low = high = None
            if key is not None:
                cur.execute(f"SELECT MIN({quote_ident(key)}), MAX({quote_ident(key)}) "
                            f"FROM {qualified(db, table)}")
                low, high = cur.fetchone()
            self.sizes.append(TableSize(estimate, low, high))
        return [size.estimated_rows for size in self.sizes]

    def read_in_workers(self, ctx: SourceRunContext, tables: list[tuple[str, str]],
                        release: Callable[[], None]) -> TopicBatch | None:
        """Primary-key ranges and whole tables in worker processes.

        The lock is held until every worker reported its consistent snapshot open (READY),
        or until every chunk is read if some worker is not ready by then (it then reads
        nothing: a chunk is only taken by a ready worker, and no chunk is left)."""
        from headwater.connectors.mysql.snapshot_workers import MySqlChunkReader, ReaderSpec

        spec = ReaderSpec(self.cfg, self.state.modes, self.state.context, self.position,
                          tuple(self.codec(t).table for t in tables),
                          tuple(streams_results(size, self.cfg.min_row_count_to_stream_results)
                                for size in self.sizes), self.columnar)
        return self.workers(ctx, tables, MySqlChunkReader, spec,
                            plan_chunks(self.sizes, self.max_threads), on_all_ready=release)

    def read_table(self, table: tuple[str, str], emitter: SnapshotEmitter) -> None:
        codec, n = self.codec(table), self.read_order[table]
        select_rows(self.conn, chunk_sql(codec.table, RangeChunk(n, None, None)),
                    streams_results(self.sizes[n], self.cfg.min_row_count_to_stream_results),
                    codec, emitter, self.batch_size,
                    splicer(self.ctx.renderer, codec, self.context, emitter.position,
                            self.columnar))
