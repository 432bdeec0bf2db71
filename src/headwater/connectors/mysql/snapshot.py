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

A snapshot interrupted by a crash is not resumed: no offset was stored, so the next start
takes a new one (as Debezium does), with the schema history started over.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pymysql  # type: ignore[import-untyped]
import pymysql.cursors  # type: ignore[import-untyped]

from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.connection import (
    binlog_status_statement,
    connect,
    qualified,
    quote_ident,
)
from headwater.connectors.mysql.position import MySqlPosition, restart_offset
from headwater.connectors.mysql.schema_state import SchemaState
from headwater.connectors.mysql.snapshot_values import snapshot_conversions
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceEvent

log = logging.getLogger("headwater.connectors.mysql")

_ACCESS_DENIED = (1227, 1045, 1044)


def _select_list(table: MySqlTable) -> str:
    """Every column in table order; FLOAT read as DOUBLE, since the text protocol prints a
    FLOAT with 6 significant digits only (the binlog carries all of the stored float)."""
    return ", ".join(
        f"CAST({quote_ident(c.name)} AS DOUBLE)" if c.type_name == "FLOAT"
        else quote_ident(c.name)
        for c in table.columns
    )


class SnapshotPoint:
    """The binlog position the snapshot's data is consistent with."""

    def __init__(self, file: str, pos: int, gtids: str | None, server_id: int) -> None:
        self.file = file
        self.pos = pos
        self.gtids = gtids
        self.server_id = server_id

    def position(self) -> MySqlPosition:
        return MySqlPosition(self.file, self.pos, 0, self.server_id, None, None, None)

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

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        cfg = self.cfg
        if cfg.snapshot_delay_ms:
            log.info("snapshot: waiting snapshot.delay.ms=%d", cfg.snapshot_delay_ms)
            if ctx.stopping.wait(cfg.snapshot_delay_ms / 1000):
                return None
        conn = connect(cfg, conv=snapshot_conversions())
        locked = False
        try:
            cur = conn.cursor()
            cur.execute(f"SET SESSION lock_wait_timeout = "
                        f"{max(1, cfg.snapshot_lock_timeout_ms // 1000)}")
            tables = self._list_tables(cur)
            if cfg.snapshot_locking_mode != "none":
                locked = self._lock(cur, tables)
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            point = self._binlog_position(cur, locked)
            log.info("snapshot: binlog position %s:%d, GTIDs %s", point.file, point.pos,
                     point.gtids or "-")
            schema_events = self._read_schema(cur, tables, point)
            if locked and cfg.snapshot_locking_mode == "minimal":
                cur.execute("UNLOCK TABLES")
                locked = False
                log.info("snapshot: unlocked (snapshot.locking.mode=minimal)")
            if schema_events:
                ctx.emit(Batch(schema_events))
            captured = [(db, t) for db, t in tables if self.state.captured(db, t)]
            m = self.metrics
            m.snapshot_running, m.snapshot_started_monotonic = True, time.monotonic()
            m.total_table_count = m.remaining_table_count = len(captured) if self.with_data else 0
            if self.with_data and not self._scan(ctx, conn, captured, point):
                return None
            # The snapshot's end is durable once its last events are: store the offset then.
            ctx.emit(Batch(self._pending, point.offset()))
            self._pending = []
            cur = conn.cursor()
            cur.execute("COMMIT")
            if locked:
                cur.execute("UNLOCK TABLES")
                locked = False
            m.snapshot_running, m.snapshot_completed = False, True
            m.snapshot_duration_s = time.monotonic() - (m.snapshot_started_monotonic or 0.0)
            return point.offset()
        finally:
            try:
                if locked:
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
        log.info("snapshot: %d tables in %d databases, captured: %s", len(tables),
                 len(databases),
                 ", ".join(f"{d}.{t}" for d, t in tables if self.state.captured(d, t)) or "none")
        return tables

    def _lock(self, cur: Any, tables: list[tuple[str, str]]) -> bool:
        try:
            cur.execute("FLUSH TABLES WITH READ LOCK")
            log.info("snapshot: global read lock acquired")
            return True
        except pymysql.err.OperationalError as exc:
            if exc.args[0] not in _ACCESS_DENIED:
                raise
            log.info("snapshot: global read lock not allowed (%s); using table locks", exc)
        captured = [qualified(d, t) for d, t in tables if self.state.captured(d, t)]
        if not captured:
            return False
        cur.execute(f"FLUSH TABLES {', '.join(captured)} WITH READ LOCK")
        log.info("snapshot: table locks acquired on %d tables", len(captured))
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
        store_all = not self.cfg.schema_history_internal_store_only_captured_tables_ddl
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
            cur.execute(f"SHOW CREATE TABLE {qualified(db, table)}")
            ddl = cur.fetchone()[1]
            events.extend(state.apply(ddl, db, position, now, SnapshotMarker.TRUE))
        return events

    def _scan(
        self,
        ctx: SourceRunContext,
        conn: Any,
        tables: list[tuple[str, str]],
        point: SnapshotPoint,
    ) -> bool:
        """Emits READ records for every row; False if stopped."""
        state = self.state
        position = point.position()
        batch_size = self.cfg.max_batch_size
        context = state.context
        read = Op.READ
        true = SnapshotMarker.TRUE
        pending: list[SourceEvent] | None = None
        for n, (db, table) in enumerate(tables, 1):
            codec = state.codec(db, table)
            if codec is None:
                continue
            log.info("snapshot: scanning %s.%s (%d of %d)", db, table, n, len(tables))
            started = time.monotonic()
            schema = codec.schema
            convert = codec.convert
            rows = 0
            cur = conn.cursor(pymysql.cursors.SSCursor)
            cur.execute(f"SELECT {_select_list(codec.table)} FROM {qualified(db, table)}")
            try:
                while True:
                    chunk = cur.fetchmany(batch_size)
                    if not chunk:
                        break
                    now = int(time.time() * 1000)
                    records: list[SourceEvent] = [
                        ChangeRecord(context, schema, read, None, convert(values), now, now,
                                     true, position)
                        for values in chunk
                    ]
                    rows += len(records)
                    if pending is not None:
                        ctx.emit(Batch(pending))
                    pending = records
                    self.metrics.rows_scanned[f"{db}.{table}"] = rows
                    if ctx.stopping.is_set():
                        return False
            finally:
                cur.close()
            self.metrics.remaining_table_count -= 1
            log.info("snapshot: %s.%s done, %d rows in %.1f s", db, table, rows,
                     time.monotonic() - started)
        if pending:
            last = pending[-1]
            assert isinstance(last, ChangeRecord)
            pending[-1] = last._replace(snapshot=SnapshotMarker.LAST)
            self._pending = pending
        return True
