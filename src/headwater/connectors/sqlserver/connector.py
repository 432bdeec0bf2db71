"""The SQL Server connector: start step (snapshot mode, stored offset), the snapshot, and the
streaming source (streaming.py) on the change-table poller.

The snapshot follows Debezium's SQL Server snapshot: per database, under
`snapshot.isolation.mode` (read_uncommitted, read_committed, repeatable_read, snapshot, or
exclusive: repeatable read with TABLOCKX), read the current maximum LSN, then every captured
table; the reads carry that LSN as `commit_lsn`, and streaming starts after it.  Signals and
incremental snapshots run on the change-table base's hook with SQL Server's chunk source
(incremental.py).
"""

from __future__ import annotations

import time
from importlib import import_module
from typing import Any

from headwater.connectors.sqlserver import queries
from headwater.connectors.sqlserver.catalog import capture_instances
from headwater.connectors.sqlserver.config import SqlServerConnectorConfig
from headwater.connectors.sqlserver.incremental import SqlServerChunkSource
from headwater.connectors.sqlserver.lsn import lsn_text
from headwater.connectors.sqlserver.position import SqlServerPosition
from headwater.connectors.sqlserver.streaming import SqlServerStreaming, scalar
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import SourceRunContext
from headwater.engine.topic_naming import TopicNaming
from headwater.model.record import ChangeRecord, Op, SnapshotMarker
from headwater.model.schema import TableId
from headwater.relational.changetables.connector import ChangeTableConnector, ChangeTableSnapshot
from headwater.relational.changetables.paramstyle import connect_qmark


class SqlServerSnapshot(ChangeTableSnapshot):
    """Reads every captured table of every database once (one consistent read each), rows
    fetched `snapshot.fetch.size` at a time (batching: ChangeTableSnapshot)."""

    def __init__(self, connector: SqlServerConnector) -> None:
        super().__init__(connector.cfg.max_batch_size)
        self.connector = connector

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        cfg = self.connector.cfg
        databases: dict[str, Any] = {}
        for database in cfg.database_names:
            lsn = self._database(ctx, database)
            if lsn is None:
                return None
            databases[database] = {"commit_lsn": lsn, "change_lsn": None,
                                   "event_serial_no": None}
        offset = {"snapshot_completed": True, "databases": databases}
        self._finish(ctx, offset)
        return offset

    def _database(self, ctx: SourceRunContext, database: str) -> str | None:
        """Reads one database's tables; its snapshot LSN (None: stopped)."""
        cfg = self.connector.cfg
        conn = self.connector.connect(database)
        try:
            conn.rollback()
            cur = conn.cursor()
            cur.execute(queries.ISOLATION[cfg.snapshot_isolation_mode])
            cur.close()
            instances = capture_instances(conn, cfg, database)
            lsn = lsn_text(bytes(scalar(conn, queries.GET_MAX_LSN, database)))
            newest = {i.table: i for i in instances}
            template = (queries.SELECT_TABLE_LOCKED if cfg.snapshot_isolation_mode ==
                        "exclusive" else queries.SELECT_TABLE)
            fetch = cfg.snapshot_fetch_size or 2000
            for table, instance in newest.items():
                columns = ", ".join(queries.quote(c) for c in instance.columns)
                sql = (template.replace("#columns", columns)
                       .replace("#schema", (table.schema or "").replace("]", "]]"))
                       .replace("#table", table.table.replace("]", "]]")))
                cur = conn.cursor()
                cur.execute(queries.with_db(sql, database))
                while rows := cur.fetchmany(fetch):
                    if ctx.stopping.is_set():
                        return None
                    now = int(time.time() * 1000)
                    for row in rows:
                        self._add(ctx, ChangeRecord(
                            self.connector.context, instance.codec.schema, Op.READ, None,
                            instance.codec.convert(row), now, now, SnapshotMarker.TRUE,
                            SqlServerPosition(lsn, None, None, now * 1000)))
                cur.close()
            conn.commit()
            return lsn
        finally:
            conn.close()


class SqlServerConnector(ChangeTableConnector):
    DATABASE = "SQL Server"
    cfg: SqlServerConnectorConfig

    def __init__(self, cfg: SqlServerConnectorConfig, metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None) -> None:
        super().__init__(cfg, "sqlserver", metrics, naming)
        self.cfg = cfg
        self.driver = import_module(cfg.headwater_sqlserver_driver)

    def connect(self, database: str) -> Any:
        return connect_qmark(self.driver, **self.cfg.connect_kwargs(database))

    def captured_tables(self) -> list[TableId]:
        tables: list[TableId] = []
        for database in self.cfg.database_names:
            conn = self.connect(database)
            try:
                tables.extend(i.table for i in capture_instances(conn, self.cfg, database))
            finally:
                conn.close()
        return tables

    def snapshot_source(self) -> SqlServerSnapshot:
        return SqlServerSnapshot(self)

    def start_offset(self) -> dict[str, Any]:
        databases: dict[str, Any] = {}
        for database in self.cfg.database_names:
            conn = self.connect(database)
            try:
                lsn = lsn_text(bytes(scalar(conn, queries.GET_MAX_LSN, database)))
                conn.rollback()
            finally:
                conn.close()
            databases[database] = {"commit_lsn": lsn, "change_lsn": None,
                                   "event_serial_no": None}
        return {"snapshot_completed": True, "databases": databases}

    def chunk_source(self) -> SqlServerChunkSource:
        return SqlServerChunkSource(self.cfg, self.context, self.connect)

    def streaming_source(self, offset: dict[str, Any] | None) -> SqlServerStreaming:
        return SqlServerStreaming(self.cfg, self.context, self.metrics, self.connect, offset,
                                  self.connection_errors, self.incremental_hook())
