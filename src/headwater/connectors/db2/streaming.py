"""Db2 streaming: every `poll.interval.ms`, each registered table's CD table is read from the
last processed commit sequence to the current maximum SYNCHPOINT of IBMSNAP_REGISTER, merged
in (IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ) order by the change-table poller and dispatched, as
Debezium's Db2StreamingChangeEventSource does.

Updates: Debezium's setup registers tables with CHG_UPD_TO_DEL_INS='Y', so SQL Replication
writes an update as a 'D' row (the before image) and an 'I' row (the after image) of the same
transaction, next in INTENTSEQ order; the LUW change query turns that pair into operations
3/4 (a 'D' followed by an 'I' in one transaction is an update: Debezium's rule, which also
pairs a delete and an unrelated insert of the same table in one transaction).  The update is
reported at the 'I' row's INTENTSEQ (Debezium advances to it before emitting).  On z/OS an
'U' row is a single after image (operation 5): an update without a before image.

Offsets are Debezium's (`commit_lsn`, `change_lsn`, `event_serial_no`); a stored change LSN
means the transaction may be unfinished, so the next read starts at its commit LSN and the
poller replays what was written.  Event times are what Debezium uses: the server's CURRENT
TIMESTAMP when the commit sequence is first seen (LSN_TO_TIMESTAMP), not the commit time.
The transaction id of the metadata events is the commit LSN.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

from headwater.connectors.db2 import queries
from headwater.connectors.db2.catalog import ChangeTable, change_tables
from headwater.connectors.db2.config import Db2ConnectorConfig
from headwater.connectors.db2.lsn import increment, lsn_bytes, lsn_text
from headwater.connectors.db2.position import Db2Position
from headwater.engine.dispatcher import DispatchOptions, EventDispatcher
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.model.record import SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.poller import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Change,
    ChangeRow,
    Resume,
    merge_changes,
    resumed,
)

log = logging.getLogger("headwater.connectors.db2")

# Debezium's operation codes (Db2ChangeRecordEmitter) onto the poller's.
_OPERATIONS = {1: DELETE, 2: INSERT, 3: UPDATE_BEFORE, 4: UPDATE_AFTER, 5: UPDATE_AFTER}
_DATA = 4  # OPCODE, IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ, IBMSNAP_OPERATION, then the columns


def epoch_us(value: object) -> int:
    """A timestamp (aware, or naive read as UTC) in µs; None: now."""
    if value is None:
        return int(datetime.now(UTC).timestamp() * 1_000_000)
    if not isinstance(value, datetime):
        raise TypeError(f"timestamp {value!r} is not a datetime")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def scalar(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else row[0]
    finally:
        cur.close()


def max_lsn(conn: Any, cfg: Db2ConnectorConfig) -> bytes | None:
    """The maximum SYNCHPOINT of IBMSNAP_REGISTER (Debezium's getMaxLsn)."""
    sql, _register, _changes = queries.for_platform(cfg.db2_platform)
    value = scalar(conn, queries.with_schemas(sql, cfg.cdc_control_schema,
                                              cfg.cdc_change_tables_schema))
    return None if value is None else bytes(value)


def normalized(raw: list[Any], table: ChangeTable) -> list[ChangeRow]:
    """Change-query rows as poller rows: an update's before row takes its after row's
    INTENTSEQ (the position Debezium reports the update at), so the poller pairs them."""
    out: list[ChangeRow] = []
    width = len(table.columns)
    for index, row in enumerate(raw):
        commit, change = bytes(row[1]), bytes(row[2])
        if table.stop_lsn is not None and table.stop_lsn <= commit:
            continue  # CD_OLD_SYNCHPOINT: the table is no longer captured there
        opcode = _OPERATIONS.get(int(row[0]) if row[0] is not None else 0, 0)
        if opcode == UPDATE_BEFORE and index + 1 < len(raw):
            change = bytes(raw[index + 1][2])
        out.append(ChangeRow(commit, change, opcode, tuple(row[_DATA:_DATA + width])))
    return out


def collection_name(table: TableId) -> str:
    """`schema.table`: Debezium's Db2 table ids have an empty catalog."""
    return f"{table.schema}.{table.table}"


class Db2Stream:
    """The database's position and registered tables."""

    def __init__(self, cfg: Db2ConnectorConfig, conn: Any, offset: dict[str, Any] | None) -> None:
        self.cfg = cfg
        self.conn = conn
        self.tables: list[ChangeTable] = change_tables(conn, cfg)
        offset = offset or {}
        self.commit = lsn_bytes(offset.get("commit_lsn"))
        change = lsn_bytes(offset.get("change_lsn"))
        self.resume: Resume | None = None
        self.increase_from = change is None
        self.times: dict[bytes, int] = {}
        if self.commit is not None:
            self.resume = Resume(self.commit, change, int(offset.get("event_serial_no") or 0))

    def offset(self) -> dict[str, Any]:
        resume = self.resume
        if resume is None:
            return {"commit_lsn": None, "change_lsn": None, "event_serial_no": None,
                    "snapshot_completed": True}
        return {"commit_lsn": lsn_text(resume.commit), "change_lsn": lsn_text(resume.change),
                "event_serial_no": resume.serial, "snapshot_completed": True}

    def event_us(self, commit: bytes) -> int:
        """LSN_TO_TIMESTAMP, cached per commit LSN as Debezium caches it."""
        if commit not in self.times:
            if len(self.times) > 100:
                self.times.clear()
            self.times[commit] = epoch_us(scalar(self.conn, queries.LSN_TO_TIMESTAMP, (commit,)))
        return self.times[commit]

    def rows(self, table: ChangeTable, from_lsn: bytes, to_lsn: bytes) -> list[ChangeRow]:
        _max, _register, template = queries.for_platform(self.cfg.db2_platform)
        sql = queries.with_schemas(template, self.cfg.cdc_control_schema,
                                   self.cfg.cdc_change_tables_schema).replace("#", table.cd_table)
        cur = self.conn.cursor()
        try:
            cur.execute(sql, (from_lsn, to_lsn))
            raw: list[Any] = []
            fetch = self.cfg.query_fetch_size or 10_000
            while chunk := cur.fetchmany(fetch):
                raw.extend(chunk)
            return normalized(raw, table)
        finally:
            cur.close()

    def refresh(self) -> None:
        """Reloads the registered tables when the register changed (a table added to or
        removed from capture while running, which Debezium detects too)."""
        current = change_tables(self.conn, self.cfg)
        if [(t.table, t.cd_table, t.start_lsn) for t in current] != [
                (t.table, t.cd_table, t.start_lsn) for t in self.tables]:
            self.tables = current
            log.info("registered tables now %s", ", ".join(str(t) for t in current))

    def changes(self, to_lsn: bytes) -> list[Change]:
        if self.commit is not None and self.increase_from:
            from_lsn = increment(self.commit)
        else:
            from_lsn = self.commit or bytes(len(to_lsn))
        self.refresh()
        streams = [(t, self.rows(t, from_lsn, to_lsn)) for t in self.tables]
        self.conn.rollback()  # end the read transaction (Debezium rolls back, too)
        return list(resumed(merge_changes(streams), self.resume))


class Db2Streaming:
    """The streaming source: one database, one dispatcher."""

    def __init__(self, cfg: Db2ConnectorConfig, context: SourceContext, metrics: CaptureMetrics,
                 connect: Any, offset: dict[str, Any] | None,
                 connection_errors: tuple[type[BaseException], ...] = ()) -> None:
        self.cfg = cfg
        self.connection_errors = connection_errors
        self.context = context
        self.metrics = metrics
        self.connect = connect
        self.offset = offset or {}

    def acknowledge(self, token: Any) -> None:
        pass

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        """Streams until stopped; a lost connection is retriable (the runtime starts again
        from the durable offset, as Debezium's task restarts on a connection error)."""
        try:
            self._execute(ctx, offset)
        except self.connection_errors as exc:
            raise RetriableError(f"Db2 connection lost: {exc}".strip()) from exc

    def _execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        stream = Db2Stream(self.cfg, self.connect(), offset or self.offset)
        dispatcher = EventDispatcher(self.context, DispatchOptions.from_config(self.cfg),
                                     self.metrics, ctx.emit)
        dispatcher.collection_name = collection_name
        self.metrics.connected = True
        try:
            while not ctx.stopping.is_set():
                busy = self._poll(stream, dispatcher)
                if dispatcher.heartbeat_due():
                    dispatcher.run_heartbeat_action()
                    dispatcher.heartbeat(Db2Position(stream.offset()["commit_lsn"], None, None))
                    dispatcher.flush(stream.offset())
                if not busy:
                    ctx.stopping.wait(self.cfg.poll_interval_ms / 1000)
        finally:
            with contextlib.suppress(*self.connection_errors):
                stream.conn.close()

    def _poll(self, stream: Db2Stream, dispatcher: EventDispatcher) -> bool:
        to_lsn = max_lsn(stream.conn, self.cfg)
        if to_lsn is None:
            log.warning("No maximum LSN in the database; please ensure that the ASN Capture "
                        "program is running")
            return False
        if stream.commit is not None and stream.increase_from and to_lsn <= stream.commit:
            stream.conn.rollback()
            return False
        tx: bytes | None = None
        last: Db2Position | None = None
        for change in stream.changes(to_lsn):
            ts_us = stream.event_us(change.commit)
            position = Db2Position(lsn_text(change.commit), lsn_text(change.change),
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
                dispatcher.flush(stream.offset())
        stream.conn.rollback()
        if tx is not None and last is not None:
            dispatcher.commit((last.ts_us or 0) // 1000, last)
        stream.commit = to_lsn
        stream.increase_from = True
        stream.resume = Resume(to_lsn, None, 0)
        dispatcher.flush(stream.offset())
        return tx is not None
