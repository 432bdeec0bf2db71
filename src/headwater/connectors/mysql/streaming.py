"""Streaming from the binlog: row events become change records, DDL moves the schema along.

Per transaction (a GTID or BEGIN event up to its XID/COMMIT; a DDL statement is a transaction
of its own) the reader keeps where the transaction started and how many row events and rows of
it were emitted; every batch handed to the runtime carries the offset that restarts exactly
after its last row (see position.py).  On start the first transaction re-read is skipped up to
that point, so a restart in the middle of a multi-row event or of a multi-statement transaction
neither loses nor repeats a row.

Large row events are cut into batches of `max.batch.size` rows, which bounds memory whatever
the transaction size.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from headwater.connectors.mysql.binlog import events as ev
from headwater.connectors.mysql.binlog.client import BinlogClient, BinlogServerError
from headwater.connectors.mysql.binlog.rows import RowDecoder, row_decoder
from headwater.connectors.mysql.connection import binlog_client, connect
from headwater.connectors.mysql.incremental import MySqlIncrementalHook
from headwater.connectors.mysql.position import (
    MySqlPosition,
    TxStart,
    offset_gtids,
    restart_offset,
)
from headwater.connectors.mysql.position_signal import Repositioned
from headwater.connectors.mysql.tables import MySqlTableCodec
from headwater.engine.dispatcher import DispatchOptions
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.model.record import Op
from headwater.relational.codec import convert_images, row_images
from headwater.relational.resume import TransactionResume
from headwater.relational.streaming import ActionConnection, LogSession, LogStreamingSource

if TYPE_CHECKING:
    from headwater.connectors.mysql.connector import MySqlConnector

log = logging.getLogger("headwater.connectors.mysql")

_new = tuple.__new__

# Server error "Could not find first log file name in binary log index file" and relatives:
# the requested position is not (or no longer) in the binlog.
ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236


class BinlogPositionLostError(RuntimeError):
    """The stored binlog position is no longer on the server (purged)."""


class BinlogConnectionLostError(RuntimeError):
    """The binlog connection dropped with `connect.keep.alive=false`: capture stops."""


class MySqlStreamingSource(LogStreamingSource):
    """The binlog reader's session state across reconnects; `_Loop` is one session."""

    START_KEY = "file"
    connection_errors = (ConnectionError, OSError, EOFError)

    def __init__(
        self, connector: MySqlConnector, incremental: MySqlIncrementalHook | None = None
    ) -> None:
        self.cfg, self.state = connector.config, connector.state
        self.metrics, self.context = connector.metrics, connector.context
        # signals and incremental snapshots (None: no signal channel configured)
        self.incremental = incremental
        self._client: BinlogClient | None = None
        query = self.cfg.heartbeat_action_query
        self.heartbeat_action = (
            ActionConnection(lambda: connect(self.cfg), query) if query else None)

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        while True:
            try:
                super().execute(ctx, offset)
                return
            except Repositioned as moved:  # set-binlog-position: its offset is handed over
                offset = moved.offset
                log.info("streaming: reconnecting at %s (set-binlog-position)", moved.describe)

    def stream(self, ctx: SourceRunContext, offset: dict[str, Any]) -> None:
        """One binlog connection, from `offset` until stopped (or moved by a signal)."""
        client = binlog_client(self.cfg)
        self._client = client
        # the offset's GTIDs in their flavour say where (else its file/pos: always stored)
        start = offset_gtids(offset.get("gtids")).start(
            self.cfg.gtid_source_filter, lambda: connect(self.cfg), offset)
        gtids = start.get("gtid_set", start.get("gtid_position"))
        where = (f"{offset['file']}:{offset['pos']}" if gtids is None else
                 f"{'MySQL GTID set' if 'gtid_set' in start else 'GTID position'} {gtids}")
        try:
            log.info("streaming: from %s (skip %s events, %s rows)", where,
                     offset.get("event", 0), offset.get("row", 0))
            client.start(**(start or {"file": str(offset["file"]), "pos": int(offset["pos"])}))
            self.metrics.connected = True
            _Loop(self, ctx, client, offset).run()
        except BinlogServerError as exc:
            if exc.code == ER_MASTER_FATAL_ERROR_READING_BINLOG:
                raise BinlogPositionLostError(
                    f"the binlog position {offset.get('file')}:{offset.get('pos')}"
                    f"{' (GTIDs ' + str(gtids) + ')' if gtids else ''} is no longer available "
                    f"on the server ({exc}); the binlog was probably purged. Set "
                    "snapshot.mode=when_needed to take a new snapshot, or delete the offsets "
                    "file to start over"
                ) from exc
            raise

    def end_session(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.heartbeat_action is not None:
            self.heartbeat_action.close()

    def connection_lost(self, exc: BaseException, *, streaming: bool) -> Exception:
        """Not connected yet: an ordinary retriable failure (errors.max.retries).  Once
        streaming, `connect.keep.alive`: true reconnects from the last position (the durable
        offset) after `connect.keep.alive.interval.ms`, as Debezium's keep-alive thread, which
        looks at the connection once per interval, does, outside `errors.max.retries`; false
        stops capture with this error."""
        if not streaming:
            return RetriableError(f"binlog connection failed: {exc}")
        cfg = self.cfg
        if not cfg.connect_keep_alive:
            return BinlogConnectionLostError(
                f"binlog connection lost ({exc}); connect.keep.alive=false, so capture stops "
                "(connect.keep.alive=true reconnects from the last position)")
        return RetriableError(
            f"binlog connection lost ({exc}); connect.keep.alive: reconnecting from the last "
            "position", reconnect_after_s=cfg.connect_keep_alive_interval_ms / 1000)


class _Loop(LogSession):
    """One streaming session: the state of the transaction being read."""

    def __init__(
        self,
        source: MySqlStreamingSource,
        ctx: SourceRunContext,
        client: BinlogClient,
        offset: dict[str, Any],
    ) -> None:
        self.cfg = source.cfg
        self.state = source.state
        self.client = client
        super().__init__(source, ctx, DispatchOptions.from_config(self.cfg),
                         source.heartbeat_action)
        self.file = str(offset["file"])
        # the offset's `gtids`, in its flavour (MySQL's executed set, MariaDB's position)
        self.gtids = offset_gtids(offset.get("gtids"))
        self.server_id = int(offset.get("server_id", 0))
        # The transaction being read: where it starts, what of it went out (and, in the first
        # one read, what an earlier run handed over: skipped).
        self.resume = TransactionResume(
            TxStart(self.file, int(offset["pos"]), self.gtids.text()),
            int(offset.get("event", 0)), int(offset.get("row", 0)))
        self.gtid: str | None = None
        # A MySQL GTID event does not say whether a BEGIN follows: until one does, the
        # transaction is the statement after it (a DDL statement), which ends it.
        self.one_statement = False
        self.thread: int | None = None
        self.query: str | None = None
        self.tables: dict[int, tuple[Any, MySqlTableCodec | None, RowDecoder | None]] = {}
        self.last_offset: dict[str, Any] = dict(offset)
        # last_offset (a transaction end) not yet handed to the runtime.
        self.offset_pending = False
        self.last_emit = time.monotonic()
        if self.hook is not None:
            self.hook.start(offset, self.file, self.resume.start.pos)
        self.read = functools.partial(client.read_event, self.cfg.poll_interval_ms / 1000)
        # connect.keep.alive: a connection silent this long (no event, no heartbeat) is lost
        self.silence = (self.cfg.connect_keep_alive_interval_ms / 1000
                        if self.cfg.connect_keep_alive else None)
        self.seen = time.monotonic()

    # -- loop ------------------------------------------------------------------------------------

    def kind(self, event: Any) -> Any:
        self.seen = time.monotonic()
        return event.type_code

    def handlers(self) -> dict[Any, Callable[[Any], None]]:
        table: dict[Any, Callable[[Any], None]] = dict.fromkeys(
            ev.WRITE_ROWS | ev.UPDATE_ROWS | ev.DELETE_ROWS, self.on_rows)
        table.update(dict.fromkeys(ev.QUERY, self.on_query))
        table.update({
            ev.ROTATE_EVENT: self.on_rotate,
            ev.XID_EVENT: self.on_commit, ev.TABLE_MAP_EVENT: self.on_table_map,
            ev.MARIADB_GTID_EVENT: self.on_gtid, ev.MYSQL_GTID_EVENT: self.on_gtid,
            ev.ANNOTATE_ROWS_EVENT: self.on_annotate,
            ev.HEARTBEAT_LOG_EVENT: lambda _event: self.idle(),
        })
        return table

    def unhandled(self, event: Any) -> None:
        if self.hook is not None and not self.in_tx:
            self.hook.moved(self.file, event.log_pos)

    def idle(self) -> None:
        if self.silence is not None and time.monotonic() - self.seen > self.silence:
            raise ConnectionError(
                "no event or heartbeat from the server for connect.keep.alive."
                f"interval.ms={self.cfg.connect_keep_alive_interval_ms}")
        if self.in_tx:  # inside a transaction nothing moves the offset
            return
        self._boundary()
        super().idle()
        if self.hook is not None:
            self._move_if_signalled()

    def _boundary(self) -> None:
        if self.hook is not None:  # between transactions: a window may close, a chunk start
            self.dispatcher.extend(self.hook.boundary(
                self.emit_blocking, self.flush_offset, self.boundary_position))

    def _move_if_signalled(self) -> None:
        """set-binlog-position: what was read up to the signal goes out with its offset, then
        the new position as the offset to restart from, and this session ends."""
        assert self.hook is not None
        positions = self.hook.positions
        target, positions.reposition = positions.reposition, None
        if target is None:
            return
        self.flush(self.last_offset)
        moved = self.with_progress(dict(target.offset(self.last_offset)))
        self.dispatcher.flush(moved)
        raise Repositioned(moved, target.describe())

    def flush(self, offset: dict[str, Any] | None) -> None:
        self.dispatcher.flush(self.with_progress(dict(offset)) if offset is not None else None)
        self.last_emit = time.monotonic()
        self.offset_pending = offset is not self.last_offset

    def flush_offset(self) -> None:
        self.flush(self.last_offset)

    def offset_unsent(self) -> bool:
        return self.offset_pending

    def boundary_position(self) -> MySqlPosition:
        """Where READ records emitted between transactions sit."""
        return MySqlPosition(self.file, int(self.last_offset["pos"]), 0, self.server_id, None,
                             None, None, int(self.last_offset.get("ts_sec") or 0))

    # -- events --------------------------------------------------------------------------------

    def on_rotate(self, event: Any) -> None:
        body = event.body
        self.file = body.next_file
        if not self.in_tx:
            self.resume.start = self.resume.start._replace(file=self.file, pos=body.position)

    def on_gtid(self, event: Any) -> None:
        body = event.body
        self._begin(event, body.gtid)
        self.in_tx = not getattr(body, "standalone", False)
        self.one_statement = isinstance(body, ev.MySqlGtid)

    def _begin(self, event: Any, gtid: str | None) -> None:
        self.begin((gtid, self.file, event.position), gtid or f"{self.file}:{event.position}",
                   event.timestamp * 1000, None)
        self.gtid = gtid
        self.resume.begin(TxStart(self.file, event.position, self.gtids.text()))
        self.query = None
        self.server_id = event.server_id

    def on_annotate(self, event: Any) -> None:
        if self.cfg.include_query:
            self.query = event.body.sql

    def on_query(self, event: Any) -> None:
        body = event.body
        sql = body.sql
        head = sql[:9].upper()
        if head.startswith("BEGIN"):
            if self.gtid is None:  # no GTID event (MySQL without GTIDs)
                self._begin(event, None)
            self.in_tx = True
            self.one_statement = False
            self.thread = body.thread_id
            return
        if head.startswith("COMMIT"):
            self.on_commit(event)
            return
        if head.startswith("ROLLBACK"):
            self.dispatcher.rollback()
            self.end_tx(event)
            return
        if head.startswith(("SAVEPOINT", "XA ")):
            self.one_statement = False
            return
        # DDL (or a statement the schema ignores).  No `thread`: Debezium 3.x sets it from a
        # transaction's BEGIN only (handleTransactionBegin), so a DDL statement's schema change
        # and a TRUNCATE's event carry null there.
        position = MySqlPosition(self.file, event.position, 0, event.server_id, self.gtid,
                                 None, None, event.timestamp)
        events = self.state.apply(sql, body.database or None, position,
                                  event.timestamp * 1000,
                                  ansi_quotes=bool((body.sql_mode or 0) & ev.MODE_ANSI_QUOTES))
        self.tables.clear()  # codecs may have changed
        if self.hook is not None:
            self.hook.ddl(self.state.last_changes)
        if events:
            self.dispatcher.extend(events)
        # A DDL statement commits implicitly: its truncates belong to no data transaction.
        self.dispatcher.in_tx = False
        # TRUNCATE TABLE of a captured table: a truncate event (op t) on its topic.
        self.truncates((self.state.codec(c.database, c.table) for c in self.state.last_changes
                        if c.kind == "TRUNCATE" and c.table is not None),
                       event.timestamp * 1000, position)
        if not self.in_tx or self.one_statement:
            self.end_tx(event)

    def on_commit(self, event: Any) -> None:
        self.dispatcher.commit(event.timestamp * 1000, None)
        self.end_tx(event)

    def end_tx(self, event: Any) -> None:
        hook = self.hook
        if hook is not None:  # signals of the transaction take effect at its commit
            self.hook_committed(self.file, event.log_pos)
        self.gtids.committed(self.gtid)
        self.in_tx = False
        self.one_statement = False
        self.gtid = None
        self.thread = None
        self.query = None
        self.resume.end(self.resume.start._replace(file=self.file, pos=event.log_pos))
        self.last_offset = restart_offset(
            self.file, event.log_pos, self.gtids.text(),
            server_id=event.server_id, ts_sec=event.timestamp,
        )
        self.offset_pending = True
        self._boundary()
        dispatcher = self.dispatcher
        now = time.monotonic()
        if dispatcher.full or now - self.last_emit >= 0.05:
            self.flush(self.last_offset)
        elif not dispatcher.pending and now - self.last_emit >= 1.0:
            self.flush(self.last_offset)  # filtered traffic: move the offset now and then
        if hook is not None:
            self._move_if_signalled()

    def on_table_map(self, event: Any) -> None:
        body = event.body
        if self.hook is not None:
            self.hook.table_map(body)
        entry = self.tables.get(body.table_id)
        if entry is not None and entry[0].signature == body.signature:
            return  # the same table version as before (DDL clears `tables`)
        codec = self.state.table_map_codec(body, self.file, event.position)
        self.tables[body.table_id] = ((body, None, None) if codec is None else
                                      (body, codec.binlog(), row_decoder(body, codec.table)))

    def on_rows(self, event: Any) -> None:
        body = event.body
        entry = self.tables.get(body.table_id)
        dispatcher = self.dispatcher
        resume = self.resume
        skip_rows = resume.event()
        if skip_rows is None:
            # Written by an earlier run; with transaction metadata it still counts.
            if self.tx_metadata:
                dispatcher.replaying = True
                try:
                    self._dispatch_rows(event, entry, 0, None)
                finally:
                    dispatcher.replaying = False
            resume.event_done()
            return
        if self.hook is not None and body.table_id in self.hook.watched and entry is not None:
            dispatcher.extend(self.hook.rows(event, entry[0], MySqlPosition(
                self.file, event.position, 0, event.server_id, None, self.thread, None,
                event.timestamp)))
        try:
            self._dispatch_rows(event, entry, skip_rows, self._mid_flush)
        except Exception as exc:
            dispatcher.processing_failed(
                exc, f"{self.file}:{event.position} (table "
                     f"{entry[0].database}.{entry[0].table})" if entry else
                     f"{self.file}:{event.position}")
        resume.event_done()
        if dispatcher.full:
            self.flush(self._mid_offset(resume.events, 0))

    def _mid_flush(self, rows_done: int) -> None:
        self.flush(self._mid_offset(self.resume.events, rows_done))

    def _dispatch_rows(
        self, event: Any, entry: tuple[Any, MySqlTableCodec | None, RowDecoder | None] | None,
        skip_rows: int, mid_flush: Any,
    ) -> None:
        """The rows of one row event, from `skip_rows` on, to the dispatcher; `mid_flush(n)`
        hands a full batch over with the offset that restarts after row n of this event."""
        codec = entry[1] if entry is not None else None
        decoder = entry[2] if entry is not None else None
        if codec is None or decoder is None:
            return
        code = event.type_code
        op = (Op.CREATE if code in ev.WRITE_ROWS else Op.UPDATE if code in ev.UPDATE_ROWS
              else Op.DELETE)
        dispatcher = self.dispatcher
        rows = decoder.decode(event.body)
        if skip_rows:
            rows = rows[skip_rows:]
        # The whole event's images column by column (codec.convert_rows), not row by row.
        befores, afters = row_images(functools.partial(convert_images, dispatcher, codec),
                                     op, rows)
        schema = codec.schema
        change = dispatcher.change
        ts = event.timestamp * 1000
        file, pos, server, gtid, thread, query = (
            self.file, event.position, event.server_id, self.gtid, self.thread, self.query)
        last = skip_rows + len(rows) - 1
        ts_sec = event.timestamp
        if dispatcher.plain_rows(schema, op, befores, afters):
            # One record per row: the rows in runs that fill the batch exactly, so it is
            # handed over after the same row as row by row.
            start, limit = skip_rows, dispatcher.max_batch_size
            while start <= last:
                end = min(last + 1, start + max(1, limit - len(dispatcher.pending)))
                first = start - skip_rows
                dispatcher.changes(
                    schema, op, befores[first:end - skip_rows], afters[first:end - skip_rows],
                    ts, [_new(MySqlPosition, (file, pos, index, server, gtid, thread, query,
                                              ts_sec)) for index in range(start, end)])
                start = end
                if mid_flush is not None and start <= last and dispatcher.full:
                    mid_flush(start)
            return
        for index, before, after in zip(range(skip_rows, last + 1), befores, afters,
                                        strict=True):
            change(schema, op, before, after, ts,  # tuple.__new__: half a NamedTuple's call
                   _new(MySqlPosition, (file, pos, index, server, gtid, thread, query, ts_sec)))
            if mid_flush is not None and index < last and dispatcher.full:
                mid_flush(index + 1)

    def _mid_offset(self, events: int, rows: int) -> dict[str, Any]:
        start = self.resume.start
        return restart_offset(start.file, start.pos, start.gtids, event=events, row=rows,
                              server_id=self.server_id)

