"""SQL Server streaming: every `poll.interval.ms`, each database's change tables are read from
the last processed LSN to the current maximum (or `max.iteration.transactions` further), merged
in (commit LSN, change LSN, serial) order by the change-table poller and dispatched.

Offsets are Debezium's three values per database (`commit_lsn`, `change_lsn`,
`event_serial_no`); a stored change LSN means the transaction may be unfinished, so the next
read starts at its commit LSN and the poller replays what was written.  The transaction id of
the metadata events is the commit LSN, as Debezium's SQL Server connector sets it.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

from headwater.connectors.sqlserver import queries
from headwater.connectors.sqlserver.catalog import (
    CaptureInstance,
    capture_instances,
    change_tables,
)
from headwater.connectors.sqlserver.config import SqlServerConnectorConfig
from headwater.connectors.sqlserver.lsn import lsn_bytes, lsn_text
from headwater.connectors.sqlserver.position import SqlServerPosition
from headwater.engine.dispatcher import DispatchOptions, EventDispatcher
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.model.record import SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.poller import (
    Change,
    ChangeRow,
    Resume,
    merge_changes,
    resumed,
)

log = logging.getLogger("headwater.connectors.sqlserver")


def epoch_us(value: object) -> int:
    """A commit time (aware, or naive UTC as the emulation's mapping table holds) in µs."""
    if value is None:
        return int(datetime.now(UTC).timestamp() * 1_000_000)
    if not isinstance(value, datetime):
        raise TypeError(f"commit time {value!r} is not a datetime")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def scalar(conn: Any, sql: str, database: str, params: tuple[Any, ...] = ()) -> Any:
    cur = conn.cursor()
    try:
        cur.execute(queries.with_db(sql, database), params)
        row = cur.fetchone()
        return None if row is None else row[0]
    finally:
        cur.close()


def collection_name(table: TableId) -> str:
    """`database.schema.table`: Debezium's SQL Server table ids carry the database (its
    catalog), in transaction metadata and in signals."""
    return f"{table.database}.{table.schema}.{table.table}"


class DatabaseStream:
    """One database's position and change tables."""

    def __init__(self, cfg: SqlServerConnectorConfig, database: str, conn: Any,
                 offset: dict[str, Any] | None) -> None:
        self.cfg = cfg
        self.database = database
        self.conn = conn
        self.instances: list[CaptureInstance] = capture_instances(conn, cfg, database)
        self.known = change_tables(conn, database)
        offset = offset or {}
        self.commit = lsn_bytes(offset.get("commit_lsn"))
        change = lsn_bytes(offset.get("change_lsn"))
        self.resume: Resume | None = None
        self.increase_from = change is None
        if self.commit is not None:
            self.resume = Resume(self.commit, change, int(offset.get("event_serial_no") or 0))

    def offset(self) -> dict[str, Any]:
        resume = self.resume
        if resume is None:
            return {"commit_lsn": None, "change_lsn": None, "event_serial_no": None}
        return {"commit_lsn": lsn_text(resume.commit), "change_lsn": lsn_text(resume.change),
                "event_serial_no": resume.serial}

    def to_lsn(self) -> bytes | None:
        n = self.cfg.max_iteration_transactions
        if n <= 0:
            value = scalar(self.conn, queries.GET_MAX_LSN, self.database)
        elif self.commit is None:
            value = scalar(self.conn, queries.GET_NTH_TRANSACTION_LSN_FROM_BEGINNING,
                           self.database, (n,))
        else:
            value = scalar(self.conn, queries.GET_NTH_TRANSACTION_LSN_FROM_LAST, self.database,
                           (n + 1, self.commit))
        return None if value is None else bytes(value)

    def rows(self, instance: CaptureInstance, from_lsn: bytes, to_lsn: bytes) -> list[ChangeRow]:
        template = (queries.CHANGES_FUNCTION if self.cfg.data_query_mode == "function"
                    else queries.CHANGES_DIRECT)
        prefix = "cdc_data." if self.cfg.data_query_mode == "direct" else ""
        columns = ", ".join(prefix + queries.quote(c) for c in instance.columns)
        sql = template.replace("#columns", columns).replace("#ci", instance.name)
        start = max(from_lsn, instance.start_lsn)
        cur = self.conn.cursor()
        try:
            cur.execute(queries.with_db(sql, self.database), (start, to_lsn))
            out = []
            stop = instance.stop_lsn
            for row in cur.fetchall():
                commit = bytes(row[0])
                if stop is not None and commit >= stop:
                    continue  # the newer capture instance has it
                out.append(ChangeRow(commit, bytes(row[1]), int(row[2]), tuple(row[4:-1]),
                                     row[-1]))
            return out
        finally:
            cur.close()

    def refresh(self) -> None:
        """Reloads the capture instances when the change tables changed: Debezium reads the
        change tables every iteration, so a second capture instance created after a schema
        change is read from its start LSN on (the older one up to it)."""
        current = change_tables(self.conn, self.database)
        if current != self.known:
            self.instances = capture_instances(self.conn, self.cfg, self.database)
            self.known = current
            log.info("database %s: capture instances now %s", self.database,
                     ", ".join(str(i) for i in self.instances))

    def changes(self, to_lsn: bytes) -> list[Change]:
        if self.commit is not None and self.increase_from:
            from_lsn = bytes(scalar(self.conn, queries.INCREMENT_LSN, self.database,
                                    (self.commit,)))
        else:
            from_lsn = self.commit or bytes(10)
        self.refresh()
        streams = [(i, self.rows(i, from_lsn, to_lsn)) for i in self.instances]
        self.conn.rollback()  # end the read transaction (Debezium rolls back, too)
        return list(resumed(merge_changes(streams), self.resume))


class SqlServerStreaming:
    """The streaming source: all databases, one dispatcher."""

    def __init__(self, cfg: SqlServerConnectorConfig, context: SourceContext,
                 metrics: CaptureMetrics, connect: Any,
                 offset: dict[str, Any] | None,
                 connection_errors: tuple[type[BaseException], ...] = ()) -> None:
        self.cfg = cfg
        self.connection_errors = connection_errors
        self.context = context
        self.metrics = metrics
        self.connect = connect
        self.offset = offset or {}

    def acknowledge(self, token: Any) -> None:
        pass

    def _offset(self, streams: list[DatabaseStream]) -> dict[str, Any]:
        return {"snapshot_completed": True,
                "databases": {s.database: s.offset() for s in streams}}

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        """Streams until stopped; a lost connection is retriable (the runtime starts again
        from the durable offset, as Debezium's task restarts on a connection error)."""
        try:
            self._execute(ctx, offset)
        except self.connection_errors as exc:
            raise RetriableError(f"SQL Server connection lost: {exc}".strip()) from exc

    def _execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        stored = (offset or self.offset).get("databases", {})
        streams = [DatabaseStream(self.cfg, db, self.connect(db), stored.get(db))
                   for db in self.cfg.database_names]
        dispatcher = EventDispatcher(self.context, DispatchOptions.from_config(self.cfg),
                                     self.metrics, ctx.emit)
        dispatcher.collection_name = collection_name
        self.metrics.connected = True
        try:
            while not ctx.stopping.is_set():
                busy = False
                for stream in streams:
                    busy |= self._poll(stream, streams, dispatcher)
                if dispatcher.heartbeat_due():
                    dispatcher.run_heartbeat_action()
                    dispatcher.heartbeat(SqlServerPosition(
                        streams[0].offset()["commit_lsn"], None, None))
                    dispatcher.flush(self._offset(streams))
                if not busy:
                    ctx.stopping.wait(self.cfg.poll_interval_ms / 1000)
        finally:
            for stream in streams:
                with contextlib.suppress(*self.connection_errors):
                    stream.conn.close()

    def _poll(self, stream: DatabaseStream, streams: list[DatabaseStream],
              dispatcher: EventDispatcher) -> bool:
        to_lsn = stream.to_lsn()
        if to_lsn is None or (stream.commit is not None and stream.increase_from
                              and to_lsn <= stream.commit):
            return False
        tx: bytes | None = None
        last: SqlServerPosition | None = None
        for change in stream.changes(to_lsn):
            ts_us = epoch_us(change.commit_time)
            position = SqlServerPosition(lsn_text(change.commit), lsn_text(change.change),
                                         change.serial, ts_us)
            if change.commit != tx:
                if tx is not None and last is not None:
                    dispatcher.commit(ts_us // 1000, last)
                dispatcher.begin(position.commit_lsn or "", ts_us // 1000, position)
                tx = change.commit
            dispatcher.replaying = change.replay
            codec = change.table.codec
            before = dispatcher.convert(codec, change.before) if change.before else None
            after = dispatcher.convert(codec, change.after) if change.after else None
            dispatcher.change(codec.schema, change.op, before, after, ts_us // 1000, position)
            dispatcher.replaying = False
            last = position
            stream.resume = Resume(change.commit, change.change, change.serial)
            if dispatcher.full:
                dispatcher.flush(self._offset(streams))
        if tx is not None and last is not None:
            dispatcher.commit((last.ts_us or 0) // 1000, last)
        stream.commit = to_lsn
        stream.increase_from = True
        stream.resume = Resume(to_lsn, None, 0)
        dispatcher.flush(self._offset(streams))
        return tx is not None
