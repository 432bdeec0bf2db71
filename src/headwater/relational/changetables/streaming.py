"""The streaming loop the SQL Server and Db2 connectors share: every `poll.interval.ms`, each
stream's change tables are read from the last processed LSN to a target LSN, merged by the
change-table poller and dispatched, one transaction's BEGIN, changes and END at a time.

Why a base: Debezium's two change-table connectors (SqlServerStreamingChangeEventSource and
Db2StreamingChangeEventSource) are near-twin classes; the loop, the offset bookkeeping
(`commit_lsn`, `change_lsn`, `event_serial_no`; a stored change LSN means the transaction may
be unfinished, so the next read starts at its commit LSN and the poller replays what was
written), heartbeats and the connection-loss rule are the same.  A connector's `LsnStream`
supplies only what differs: the target LSN, the change-table rows, the event time, and how it
closes its read transaction.  The transaction id of the metadata events is the commit LSN.
Signals and incremental snapshots are the hook's (relational.changetables.incremental), called
at each change, each commit and each idle poll; its progress joins every stored offset.

Schema: a stream with a `follower` (schema_follower.py) decodes each change with the table
definition in force at its position and hands on the schema change events that take effect
before it (a CREATE, an ALTER at a new capture instance's start LSN) right before it, after
the previous transaction's END; the loop itself knows nothing else of schemas.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Generic, TypeVar

from headwater.engine.dispatcher import DispatchOptions, EventDispatcher
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.model.record import SchemaChangeEvent, SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.incremental import ChangeTableIncrementalHook
from headwater.relational.changetables.poller import (
    Change,
    ChangeRow,
    Resume,
    merge_changes,
    resumed,
    with_ordinals,
)
from headwater.relational.changetables.position import LsnPosition
from headwater.relational.changetables.schema import ChangeTableSchema
from headwater.relational.changetables.schema_follower import SchemaFollower
from headwater.relational.config import RelationalConnectorConfig
from headwater.relational.streaming import LogStreamingSource

LsnText = Callable[[bytes | None], str | None]
LsnBytes = Callable[[str | None], bytes | None]


def epoch_us(value: object) -> int:
    """A timestamp (aware, or naive read as UTC, as the emulations' tables hold) in µs;
    None: now."""
    if value is None:
        return int(datetime.now(UTC).timestamp() * 1_000_000)
    if not isinstance(value, datetime):
        raise TypeError(f"timestamp {value!r} is not a datetime")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def scalar(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the first row of `sql` (None: no row)."""
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else row[0]
    finally:
        cur.close()


class LsnStream:
    """One connection's position and change tables.  Subclasses implement `to_lsn`,
    `tables`, `rows`, `increment` and `refresh`; the hooks `idle`, `end_read`, `event_us` and
    `first_lsn` default to SQL Server's behaviour."""

    # The connector's position class (for schema change records and events).
    position_class: type[LsnPosition] = LsnPosition
    # Which definition decodes each change table's rows (relational.changetables
    # .schema_follower); None: each table handle's own codec.
    follower: SchemaFollower | None = None

    def __init__(self, conn: Any, offset: dict[str, Any] | None, lsn_bytes: LsnBytes,
                 lsn_text: LsnText) -> None:
        self.conn = conn
        self.lsn_text = lsn_text
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
        return {"commit_lsn": self.lsn_text(resume.commit),
                "change_lsn": self.lsn_text(resume.change), "event_serial_no": resume.serial}

    def to_lsn(self) -> bytes | None:
        """The LSN this poll reads up to; None: nothing to read."""
        raise NotImplementedError

    def tables(self) -> list[Any]:
        """The change tables to read (the poller's table handles: each has a `codec`)."""
        raise NotImplementedError

    def rows(self, table: Any, from_lsn: bytes, to_lsn: bytes) -> list[ChangeRow]:
        raise NotImplementedError

    def increment(self, lsn: bytes) -> bytes:
        """The LSN after `lsn`: where a read resumes after a finished transaction."""
        raise NotImplementedError

    def refresh(self) -> None:
        """Reloads the change tables when the server's set of them changed."""

    def first_lsn(self, to_lsn: bytes) -> bytes:
        """Where a stream without a stored position starts."""
        return bytes(len(to_lsn))

    def idle(self) -> None:
        """Called when the target LSN has not moved."""

    def end_read(self) -> None:
        """Called after a poll's changes were dispatched."""

    def event_us(self, change: Change) -> int:
        """The event time of `change` in µs (default: its commit time)."""
        return epoch_us(change.commit_time)

    def current_position(self) -> LsnPosition:
        """Where the stream is: the last change handed on, or the stored offset."""
        resume = self.resume
        if resume is None:
            return self.position_class(None, None, None)
        return self.position_class(self.lsn_text(resume.commit), self.lsn_text(resume.change),
                                   resume.serial)

    def schema_changes(self, commit: bytes) -> list[SchemaChangeEvent]:
        """Schema changes that take effect before a change at `commit` (at the end of a poll,
        before anything after it)."""
        return self.follower.before(commit) if self.follower is not None else []

    def codec(self, table: Any) -> Any:
        """The codec a change of `table` (a change table handle) is decoded with."""
        return self.follower.codec(table) if self.follower is not None else table.codec

    def changes(self, to_lsn: bytes) -> list[Change]:
        if self.commit is not None and self.increase_from:
            from_lsn = self.increment(self.commit)
        else:
            from_lsn = self.commit or self.first_lsn(to_lsn)
        self.refresh()
        streams = [(t, self.rows(t, from_lsn, to_lsn)) for t in self.tables()]
        self.conn.rollback()  # end the read transaction (Debezium rolls back, too)
        return list(resumed(merge_changes(streams), self.resume))


S = TypeVar("S", bound=LsnStream)


@dataclass(eq=False)
class LsnStreaming(LogStreamingSource, Generic[S]):
    """The streaming source: the connector's streams, one dispatcher.  Subclasses set `LABEL`
    and `POSITION` and implement `open_streams`, `stored_offset` and `collection_name`."""

    LABEL: ClassVar[str] = ""
    POSITION: ClassVar[type[LsnPosition]] = LsnPosition

    cfg: RelationalConnectorConfig
    context: SourceContext
    metrics: CaptureMetrics
    connect: Any
    # the stored offset (None: none, the streams start where the snapshot ended)
    offset: dict[str, Any] | None
    connection_errors: tuple[type[BaseException], ...] = ()
    # signals and incremental snapshots (None: no signal channel configured)
    incremental: ChangeTableIncrementalHook | None = None
    # A new schema state per stream (the connector's `table_schema`); None: no history.
    table_schema: Callable[[], ChangeTableSchema] | None = None

    def open_streams(self, offset: dict[str, Any]) -> list[S]:
        raise NotImplementedError

    def stored_offset(self, streams: list[S]) -> dict[str, Any]:
        """The offset to store for the streams' positions."""
        raise NotImplementedError

    def collection_name(self, table: TableId) -> str:
        """The table's name in transaction metadata and signals."""
        raise NotImplementedError

    def _offset(self, streams: list[S]) -> dict[str, Any]:
        """The stored offset with the incremental snapshot's progress."""
        hook = self.incremental
        return {**self.stored_offset(streams), **(hook.offset_fields() if hook else {})}

    def start_offset(self, offset: dict[str, Any] | None) -> dict[str, Any]:
        return offset or self.offset or {}

    def connection_lost(self, exc: BaseException, *, streaming: bool) -> Exception:
        """Retriable: the runtime starts again from the durable offset, as Debezium's task
        restarts on a connection error."""
        return RetriableError(f"{self.LABEL} connection lost: {exc}".strip())

    def stream(self, ctx: SourceRunContext, offset: dict[str, Any]) -> None:
        streams = self.open_streams(offset)
        dispatcher = EventDispatcher(self.context, DispatchOptions.from_config(self.cfg),
                                     self.metrics, ctx.emit)
        dispatcher.collection_name = self.collection_name
        hook = self.incremental
        if hook is not None:
            hook.start(offset, lambda: dispatcher.flush(self._offset(streams)),
                       lambda records: ctx.emit(Batch(records)))
        self.metrics.connected = True
        try:
            while not ctx.stopping.is_set():
                busy = False
                for stream in streams:
                    busy |= self._poll(stream, streams, dispatcher)
                if hook is not None:
                    hook.boundary()
                if dispatcher.heartbeat_due():
                    dispatcher.run_heartbeat_action()
                    dispatcher.heartbeat(self.POSITION(
                        streams[0].offset()["commit_lsn"], None, None))
                    dispatcher.flush(self._offset(streams))
                if not busy:
                    ctx.stopping.wait(self.cfg.poll_interval_ms / 1000)
        finally:
            for stream in streams:
                with contextlib.suppress(*self.connection_errors):
                    stream.conn.close()

    def _poll(self, stream: S, streams: list[S], dispatcher: EventDispatcher) -> bool:
        to_lsn = stream.to_lsn()
        if to_lsn is None:
            return False
        if stream.commit is not None and stream.increase_from and to_lsn <= stream.commit:
            stream.idle()
            return False
        hook = self.incremental
        tx: bytes | None = None
        last: LsnPosition | None = None
        for ordinal, change in with_ordinals(stream.changes(to_lsn)):
            ts_us = stream.event_us(change)
            position = self.POSITION(stream.lsn_text(change.commit),
                                     stream.lsn_text(change.change), change.serial, ts_us)
            if change.commit != tx:
                if tx is not None and last is not None:
                    dispatcher.commit(ts_us // 1000, last)
                    if hook is not None:
                        hook.committed(tx)
                dispatcher.begin(position.commit_lsn or "", ts_us // 1000, position)
                tx = change.commit
            schema_changes = stream.schema_changes(change.commit)
            if schema_changes:
                dispatcher.extend(schema_changes)
            if hook is not None and (closed := hook.change(change, position)):
                dispatcher.extend(closed)  # a closed window's READ events
            dispatcher.replaying = change.replay
            codec = stream.codec(change.table)
            before = dispatcher.convert(codec, change.before) if change.before else None
            after = dispatcher.convert(codec, change.after) if change.after else None
            dispatcher.change(codec.schema, change.op, before, after, ts_us // 1000, position)
            dispatcher.replaying = False
            last = position
            stream.resume = Resume.after(change, ordinal)
            if dispatcher.full:
                dispatcher.flush(self._offset(streams))
        stream.end_read()
        if tx is not None and last is not None:
            dispatcher.commit((last.ts_us or 0) // 1000, last)
        dispatcher.extend(stream.schema_changes(to_lsn))
        stream.commit = to_lsn
        stream.increase_from = True
        stream.resume = Resume(to_lsn, None, 0)
        if hook is not None and tx is not None:
            hook.committed(tx)
        dispatcher.flush(self._offset(streams))
        return tx is not None
