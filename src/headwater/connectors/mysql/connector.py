"""The MySQL / MariaDB connector: decides what to run from the stored offset, the binlogs the
server still has and snapshot.mode.

Start-up steps (each logged):

1. *check server*: binary logging on, `binlog_format=ROW`, `binlog_row_image=FULL` or `NOBLOB`;
   `binlog_row_metadata` other than FULL is a warning (the fallback for tables the schema
   history cannot decode needs the column names only FULL writes);
2. *position*: is the stored binlog position still on the server?  If it was purged the
   connector stops with an error naming the position and what to do, or takes a new snapshot
   with snapshot.mode=when_needed;
3. *schema*: recovered from the schema history up to the stored position (or rebuilt by the
   snapshot);
4. *snapshot* / *stream*, as snapshot.mode says.
"""

from __future__ import annotations

import logging
from typing import Any

import pymysql  # type: ignore[import-untyped]

from headwater.config.connector_common import warn_unmatched
from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.connection import connect
from headwater.connectors.mysql.incremental import MySqlChunkSource, MySqlIncrementalHook
from headwater.connectors.mysql.position import binlog_order
from headwater.connectors.mysql.schema_state import SchemaState
from headwater.connectors.mysql.snapshot import MySqlSnapshotSource
from headwater.connectors.mysql.streaming import BinlogPositionLostError, MySqlStreamingSource
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import SourceRunContext, StartPlan
from headwater.model.schema import TableId
from headwater.model.topic_naming import TopicNaming
from headwater.relational.connector import RelationalConnector
from headwater.relational.snapshotter import snapshotter_for

log = logging.getLogger("headwater.connectors.mysql")


class MySqlConnectorError(RuntimeError):
    """A condition the user must act on; the message says what to do."""


class _RecoverySnapshot:
    """snapshot.mode=recovery: rebuild the schema history from the current schema, then stream
    from the stored offset (Debezium's schema_only_recovery; correct only if no schema change
    happened since that offset)."""

    def __init__(self, schema_snapshot: MySqlSnapshotSource, offset: dict[str, Any]) -> None:
        self.schema_snapshot = schema_snapshot
        self.offset = offset

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        if self.schema_snapshot.execute(ctx) is None:
            return None
        self.schema_snapshot.state.note_recorded_until(
            str(self.offset["file"]), int(self.offset["pos"]))
        return self.offset


class MySqlConnector(RelationalConnector):
    DATABASE = "MySQL"
    CONNECTION_ERRORS = (pymysql.err.OperationalError,)

    def __init__(self, config: MySqlConnectorConfig, metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None):
        super().__init__(config, "mariadb" if config.is_mariadb else "mysql", metrics, naming)
        self.config = config
        self.state = SchemaState(config, self._context)
        if metrics is not None:
            metrics.schema_history = self.state.history.metrics

    def _start(self, offset: dict[str, Any] | None) -> StartPlan:
        cfg = self.config
        conn = connect(cfg)
        try:
            self._check_server(conn)
            self._check_topics(self._captured_tables(conn))
            binlogs = self._binlog_files(conn)
            self._started = True
            mode = cfg.snapshot_mode
            streaming = MySqlStreamingSource(self, incremental=self._incremental_hook())
            data_snapshot = MySqlSnapshotSource(cfg, self.state, self.metrics)
            snapshotter = snapshotter_for(mode)
            has_offset = bool(offset and offset.get("file"))
            where = f"{offset['file']}:{offset['pos']}" if offset and has_offset else ""
            readable = offset is None or not has_offset or self._available(offset, binlogs)
            if snapshotter.reads_data(has_offset, readable):
                if not readable:
                    log.warning("the stored binlog position %s is no longer on the server: "
                                "taking a new snapshot (snapshot.mode=%s)", where, mode)
                return StartPlan(data_snapshot, streaming if snapshotter.streams else None,
                                 data_snapshot=True)
            if not snapshotter.streams:
                log.info("snapshot.mode=%s and the snapshot is complete: nothing to do", mode)
                return StartPlan(None, None)
            if not has_offset:
                if mode == "never":
                    first = self._first_position(binlogs)
                    log.info("snapshot.mode=never: streaming from the oldest binlog %s", first)
                    if not self.state.history.clears and self.state.history.exists():
                        # Re-read DDL would be appended after the old history's and replayed
                        # on top of it: a topic cannot be emptied, so refuse.
                        raise MySqlConnectorError(
                            f"snapshot.mode=never without offsets, but the "
                            f"{self.state.history} has records of an earlier run; delete the "
                            "topic or use a new one (schema.history.internal.kafka.topic)")
                    self.state.reset()
                    return StartPlan(_Fixed(first), streaming)
                # no_data, recovery without an offset: schema only, then stream from there
                return StartPlan(MySqlSnapshotSource(cfg, self.state, self.metrics,
                                                     with_data=False), streaming)
            assert offset is not None
            if not readable:
                oldest = binlogs[0][0] if binlogs else "none"
                raise BinlogPositionLostError(
                    f"the stored binlog position {where} is no longer available on the server "
                    f"(oldest binlog: {oldest}); it was purged while the connector was stopped."
                    " Set snapshot.mode=when_needed to take a new snapshot automatically, or "
                    "delete the offsets file to start over"
                )
            if mode == "recovery":
                schema_only = MySqlSnapshotSource(cfg, self.state, self.metrics, with_data=False)
                return StartPlan(_RecoverySnapshot(schema_only, offset), streaming)
            if not self.state.history.exists():
                raise MySqlConnectorError(
                    f"the {self.state.history} is missing or empty"
                    " but offsets exist; restore it, or run once with snapshot.mode=recovery to"
                    " rebuild it from the current schema"
                )
            self.state.recover(offset)
            return StartPlan(None, streaming)
        finally:
            conn.close()

    def close(self) -> None:
        pass

    def _incremental_hook(self) -> MySqlIncrementalHook | None:
        """Signals and incremental snapshots, when a signal channel is configured."""
        signals = self.config.signals
        if not signals.any_channel:
            return None
        source = MySqlChunkSource(self.config, self.state, self._context)
        return MySqlIncrementalHook(source, self._context, self.metrics)

    # -- checks --------------------------------------------------------------------------------

    def _check_server(self, conn: Any) -> None:
        with conn.cursor() as cur:
            cur.execute("SELECT @@log_bin, @@binlog_format, @@binlog_row_image, VERSION()")
            log_bin, fmt, image, version = cur.fetchone()
        log.info("server %s: log_bin=%s binlog_format=%s binlog_row_image=%s", version,
                 log_bin, fmt, image)
        problems = []
        if str(log_bin) not in ("1", "ON"):
            problems.append("binary logging is off (start the server with log_bin)")
        if str(fmt).upper() != "ROW":
            problems.append(f"binlog_format is {fmt} (ROW is required)")
        if str(image).upper() not in ("FULL", "NOBLOB"):  # Debezium 3.x takes both
            problems.append(f"binlog_row_image is {image} (FULL or NOBLOB is required)")
        if problems:
            raise MySqlConnectorError(
                "the server cannot be captured: " + "; ".join(problems))
        self._check_row_metadata(conn)

    def _check_row_metadata(self, conn: Any) -> None:
        """binlog_row_metadata (MariaDB 10.5+, MySQL 8.0.1+): only FULL names the columns in
        TABLE_MAP, which decoding rows without a schema history definition needs."""
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@binlog_row_metadata")
                row = cur.fetchone()
            metadata = str(row[0]).upper() if row and row[0] is not None else None
        except pymysql.err.MySQLError as exc:  # an older server: no such variable
            log.debug("binlog_row_metadata: %s", exc)
            metadata = None
        self.state.row_metadata = metadata
        if metadata == "FULL":
            return
        log.warning(
            "binlog_row_metadata is %s, not FULL: TABLE_MAP events then carry no column "
            "names, ENUM/SET members or primary key, so rows of a table the schema history "
            "cannot decode (its DDL was skipped as unparseable, or the history is out of "
            "date) cannot be decoded from the binlog's own metadata either; capture then "
            "stops at the first such row instead of dropping it. Set binlog_row_metadata=FULL "
            "(SET GLOBAL binlog_row_metadata=FULL and in the server configuration)",
            metadata or "not available on this server")

    def _captured_tables(self, conn: Any) -> list[TableId]:
        with conn.cursor() as cur:
            cur.execute("SELECT table_schema, table_name FROM information_schema.tables "
                        "WHERE table_type = 'BASE TABLE'")
            rows = [(str(db), str(table)) for db, table in cur.fetchall()]
        warn_unmatched("table.include.list", self.config.table_include_list,
                       (f"{db}.{table}" for db, table in rows), log)
        captured = [TableId(db, None, table) for db, table in rows
                    if self.config.table_filter(db, table)]
        self.metrics.monitored_tables = [f"{t.database}.{t.table}" for t in captured]
        if self.config.schema_history.store_only_captured_tables_ddl:
            self.config.guardrail.check(self.metrics.monitored_tables, log)
        else:  # the schema history keeps every table of the captured databases
            self.config.guardrail.check(
                [f"{db}.{table}" for db, table in rows if self.config.database_filter(db)],
                log, history_keeps_all=True)
        return captured

    def _binlog_files(self, conn: Any) -> list[tuple[str, int]]:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            return [(str(row[0]), int(row[1])) for row in cur.fetchall()]

    def _available(self, offset: dict[str, Any], binlogs: list[tuple[str, int]]) -> bool:
        names = {name: size for name, size in binlogs}
        file = str(offset["file"])
        if file in names:
            return int(offset["pos"]) <= names[file]
        if not binlogs:
            return False
        # A position past the newest file cannot be; one before the oldest was purged.
        return binlog_order(file, 0) > binlog_order(binlogs[-1][0], 0)

    def _first_position(self, binlogs: list[tuple[str, int]]) -> dict[str, Any]:
        if not binlogs:
            raise MySqlConnectorError("the server has no binary logs (SHOW BINARY LOGS)")
        return {"file": binlogs[0][0], "pos": 4, "snapshot_completed": True}


class _Fixed:
    """A snapshot that reads nothing and starts streaming at a given position."""

    def __init__(self, offset: dict[str, Any]) -> None:
        self.offset = offset

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        return self.offset
