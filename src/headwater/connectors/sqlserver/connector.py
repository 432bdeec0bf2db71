"""The SQL Server connector: start step (snapshot mode, stored offset), the snapshot, and the
streaming source (streaming.py) on the change-table poller.

The snapshot follows Debezium's SQL Server snapshot: per database, under
`snapshot.isolation.mode` (read_uncommitted, read_committed, repeatable_read, snapshot, or
exclusive: repeatable read with TABLOCKX), read the current maximum LSN, then every captured
table; the reads carry that LSN as `commit_lsn`, and streaming starts after it.
"""

from __future__ import annotations

import time
from importlib import import_module
from typing import Any

from headwater.connectors.sqlserver import queries
from headwater.connectors.sqlserver.catalog import capture_instances
from headwater.connectors.sqlserver.config import SqlServerConnectorConfig
from headwater.connectors.sqlserver.lsn import lsn_text
from headwater.connectors.sqlserver.position import SqlServerPosition
from headwater.connectors.sqlserver.streaming import SqlServerStreaming, scalar
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import RetriableError, SourceRunContext, StartPlan
from headwater.engine.topic_naming import TopicNaming
from headwater.model.record import ChangeRecord, Op, SnapshotMarker
from headwater.model.schema import TableId
from headwater.relational.connector import RelationalConnector
from headwater.relational.snapshotter import snapshotter_for


class SqlServerSnapshot:
    """Reads every captured table of every database once (one consistent read each).

    Rows are fetched `snapshot.fetch.size` at a time and emitted in batches of
    `max.batch.size` without an offset, the last record held back so it can be marked `last`;
    the completing offset comes with the final batch.  Why batches: a snapshot stopped
    part-way must have written what it read, so the runtime's supersede step (which needs the
    aborted READs in the topic) makes its restart exact, and memory stays bounded.
    """

    def __init__(self, connector: SqlServerConnector) -> None:
        self.connector = connector
        self.pending: list[ChangeRecord] = []
        self.started = False

    def _add(self, ctx: SourceRunContext, record: ChangeRecord) -> None:
        if not self.started:
            record = record._replace(snapshot=SnapshotMarker.FIRST)
            self.started = True
        self.pending.append(record)
        if len(self.pending) > self.connector.cfg.max_batch_size:
            ctx.emit(Batch(self.pending[:-1]))
            self.pending = self.pending[-1:]

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        cfg = self.connector.cfg
        databases: dict[str, Any] = {}
        for database in cfg.database_names:
            lsn = self._database(ctx, database)
            if lsn is None:
                return None
            databases[database] = {"commit_lsn": lsn, "change_lsn": None,
                                   "event_serial_no": None}
        if self.pending:
            self.pending[-1] = self.pending[-1]._replace(snapshot=SnapshotMarker.LAST)
        offset = {"snapshot_completed": True, "databases": databases}
        ctx.emit(Batch(self.pending, offset=offset))
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


class SqlServerConnector(RelationalConnector):
    DATABASE = "SQL Server"

    def __init__(self, cfg: SqlServerConnectorConfig, metrics: CaptureMetrics | None = None,
                 naming: TopicNaming | None = None) -> None:
        super().__init__(cfg, "sqlserver", metrics, naming)
        self.cfg = cfg
        self.driver = import_module(cfg.headwater_sqlserver_driver)

    def connect(self, database: str) -> Any:
        return self.driver.connect(**self.cfg.connect_kwargs(database))

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
                raise RetriableError(f"SQL Server connection failed: {exc}") from exc
            raise

    def _start(self, offset: dict[str, Any] | None) -> StartPlan:
        snapshotter = snapshotter_for(self.cfg.snapshot_mode)
        tables: list[TableId] = []
        for database in self.cfg.database_names:
            conn = self.connect(database)
            try:
                tables.extend(i.table for i in capture_instances(conn, self.cfg, database))
            finally:
                conn.close()
        self._check_topics(sorted(set(tables), key=str))
        self._started = True
        completed = bool((offset or {}).get("snapshot_completed"))
        snapshot = (SqlServerSnapshot(self) if snapshotter.reads_data(completed, True)
                    else None)
        streaming = (SqlServerStreaming(self.cfg, self.context, self.metrics, self.connect,
                                        offset, self.connection_errors)
                     if snapshotter.streams else None)
        return StartPlan(snapshot, streaming, data_snapshot=snapshot is not None)

    def close(self) -> None:
        pass
