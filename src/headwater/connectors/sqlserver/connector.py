"""The SQL Server connector: start step (snapshot mode, stored offset), the snapshot, and the
streaming source (streaming.py) on the change-table poller.

The snapshot follows Debezium's SQL Server snapshot, its steps logged by the names every
relational connector's are (relational/snapshot.py): per database, under
`snapshot.isolation.mode` (read_uncommitted, read_committed, repeatable_read, snapshot, or
exclusive: repeatable read with TABLOCKX), read the current maximum LSN, then every captured
table; the reads carry that LSN as `commit_lsn`, and streaming starts after it.  Signals and
incremental snapshots run on the change-table base's hook with SQL Server's chunk source
(incremental.py).
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import Any

from headwater.connectors.sqlserver import queries
from headwater.connectors.sqlserver.catalog import CaptureInstance, capture_instances
from headwater.connectors.sqlserver.config import SqlServerConnectorConfig
from headwater.connectors.sqlserver.definitions import catalog_definitions
from headwater.connectors.sqlserver.incremental import SqlServerChunkSource
from headwater.connectors.sqlserver.lsn import lsn_bytes, lsn_text
from headwater.connectors.sqlserver.position import SqlServerPosition, SqlServerSourceBlock
from headwater.connectors.sqlserver.schema_snapshot import schema_tables
from headwater.connectors.sqlserver.streaming import SqlServerStreaming, scalar
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import SourceRunContext
from headwater.model.schema import TableId
from headwater.model.topic_naming import TopicNaming
from headwater.relational.changetables.connector import ChangeTableConnector, ChangeTableSnapshot
from headwater.relational.changetables.paramstyle import connect_qmark
from headwater.relational.snapshot import step

log = logging.getLogger("headwater.connectors.sqlserver")


class SqlServerSnapshot(ChangeTableSnapshot):
    """Per database: the schema (a CREATE per table, schema_snapshot.py), then every
    captured table's rows once (one consistent read each), fetched `snapshot.fetch.size` at
    a time (batching and markers: ChangeTableSnapshot, each database a partition with its own
    `first` and `last`, as Debezium's).  Without `data` only the schema; with `at`
    (snapshot.mode=recovery) the schema is recorded at the stored offset, which is kept."""

    connector: SqlServerConnector

    def run(self, ctx: SourceRunContext) -> dict[str, Any]:
        cfg = self.connector.cfg
        history = self.connector.history.store
        if history.clears:
            history.clear()
        databases: dict[str, Any] = {}
        stored = (self.at or {}).get("databases", {})
        for database in cfg.database_names:
            lsn = self._database(ctx, database, stored.get(database))
            databases[database] = {"commit_lsn": lsn, "change_lsn": None,
                                   "event_serial_no": None}
        offset = self.at or {"snapshot_completed": True, "databases": databases}
        step(log, 7, ", ".join(f"{d} commit_lsn {p['commit_lsn']}" for d, p in databases.items()))
        self.finish(ctx, offset)
        return offset

    def _database(self, ctx: SourceRunContext, database: str,
                  stored: dict[str, Any] | None) -> str | None:
        """Reads one database's schema and tables; its snapshot LSN."""
        cfg = self.connector.cfg
        conn = self.connector.connect(database)
        try:
            conn.rollback()
            cur = conn.cursor()
            cur.execute(queries.ISOLATION[cfg.snapshot_isolation_mode])
            cur.close()
            catalog = catalog_definitions(conn, database)
            instances = capture_instances(conn, cfg, database, catalog)
            step(log, 1, f"{database}: " + (", ".join(str(i.table) for i in instances) or "none"))
            exclusive = cfg.snapshot_isolation_mode == "exclusive"
            step(log, 2, f"{database}: " + ("each table's read takes TABLOCKX" if exclusive else
                         f"none: snapshot.isolation.mode={cfg.snapshot_isolation_mode}"))
            lsn = lsn_text(bytes(scalar(conn, queries.GET_MAX_LSN, database)))
            step(log, 3, f"{database}: LSN {lsn}")
            position = (SqlServerPosition(stored.get("commit_lsn"), stored.get("change_lsn"),
                                          stored.get("event_serial_no"))
                        if stored else SqlServerPosition(lsn, None, None))
            definitions = schema_tables(self.connector, catalog, instances,
                                        lsn_bytes(stored.get("commit_lsn")) if stored else None)
            events = self.connector.table_schema().snapshot(definitions, position,
                                                            last=not self.data)
            step(log, 4, f"{database}: {len(definitions)} tables, at commit_lsn "
                         f"{position.commit_lsn}")
            step(log, 5, f"{database}: " + ("the locks are kept until the snapshot "
                                            "transaction ends" if exclusive else "no locks"))
            self.begin_partition(ctx, events, SqlServerPosition(lsn, None, None))
            if self.data:
                self._rows(ctx, conn, database, instances, lsn)
            conn.commit()
            return lsn
        finally:
            conn.close()

    def _rows(self, ctx: SourceRunContext, conn: Any, database: str,
              instances: list[CaptureInstance], lsn: str | None) -> None:
        """Every captured table's rows at `lsn`."""
        cfg = self.connector.cfg
        newest = {i.table: i for i in instances}
        template = (queries.SELECT_TABLE_LOCKED if cfg.snapshot_isolation_mode ==
                    "exclusive" else queries.SELECT_TABLE)
        fetch = cfg.snapshot_fetch_size or 2000
        for table, instance in newest.items():
            columns = ", ".join(queries.quote(c) for c in instance.columns)
            sql = (template.replace("#columns", columns)
                   .replace("#schema", (table.schema or "").replace("]", "]]"))
                   .replace("#table", table.table.replace("]", "]]")))
            step(log, 6, f"{database}.{table} at LSN {lsn}")
            count = self.read_rows(ctx, f"{database}.{table}", conn,
                                   queries.with_db(sql, database), instance.codec, fetch)
            step(log, 6, f"{database}.{table} done, {count} rows")


class SqlServerConnector(ChangeTableConnector):
    DATABASE = "SQL Server"
    STREAMING = SqlServerStreaming
    SOURCE_BLOCK = SqlServerSourceBlock
    SNAPSHOT = SqlServerSnapshot
    CHUNK_SOURCE = SqlServerChunkSource
    cfg: SqlServerConnectorConfig
    lsn_bytes = staticmethod(lsn_bytes)

    def __init__(self, cfg: SqlServerConnectorConfig, metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None) -> None:
        super().__init__(cfg, metrics, naming)
        self.driver = import_module(cfg.headwater_sqlserver_driver)

    def position_readable(self, offset: dict[str, Any]) -> bool:
        """Debezium's SqlServerConnection.validateLogPosition, per database: the stored commit
        LSN is at or after the oldest `start_lsn` of the change tables (cleanup moves it)."""
        stored = offset.get("databases") or {}
        for database in self.cfg.database_names:
            commit = lsn_bytes((stored.get(database) or {}).get("commit_lsn"))
            if commit is None:
                continue
            conn = self.connect(database)
            try:
                oldest = scalar(conn, queries.GET_MIN_LSN_FROM_ALL_CHANGE_TABLES, database)
            finally:
                conn.close()
            log.info("database %s: oldest change table LSN %s, stored LSN %s", database,
                     lsn_text(bytes(oldest)) if oldest is not None else None,
                     lsn_text(commit))
            if oldest is None or bytes(oldest) > commit:
                return False
        return True

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
