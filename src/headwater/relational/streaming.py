"""What the log readers (PostgreSQL's pgoutput stream, MySQL's binlog) do the same way around
their protocol: the shape of a streaming session, its read loop, and the loop's steps when
nothing came, at a transaction's begin and commit, at a heartbeat, for a blocking snapshot and
for truncated tables.

Why a base: every relational reader (the change-table poller of relational.changetables too)
is one `execute(ctx, offset)` per connection (a lost connection becomes a retriable error, the
incremental snapshot hook is closed with the session).  Both log readers' loops are a dispatch
table over their protocol's message kinds with one idle step between (hand over what is
pending, then a heartbeat when due), and hand the incremental snapshot hook the same
callbacks - hand what was read over with its offset (`flush_offset`), emit a blocking
snapshot's records without an offset (`emit_blocking`), say where records read between
transactions sit (`boundary_position`) - and put its progress into every stored offset
(`with_progress`).  A connector's streaming module keeps its protocol's handlers, its
positions and its decoding.

Per message the loop costs two calls (`kind`, the handler) and a table look-up; rows are the
handlers' own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from headwater.engine.dispatcher import DispatchOptions, EventDispatcher
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, SourceContext

log = logging.getLogger("headwater.relational.streaming")


class ActionConnection:
    """``heartbeat.action.query`` on a connection of its own, opened on first use (e.g. an
    update of a heartbeat table that makes the captured database produce a change, and so a
    position to confirm)."""

    def __init__(self, open_conn: Callable[[], Any], query: str) -> None:
        self._open = open_conn
        self.query = query
        self._conn: Any = None

    def __call__(self) -> None:
        if self._conn is None:
            self._conn = self._open()
        with self._conn.cursor() as cur:
            cur.execute(self.query)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception as exc:  # already gone with the server
                log.debug("close: %s", exc)


class LogStreamingSource:
    """A streaming source whose `execute` is one session of a log connection: from a stored
    offset until stopped, or until the connection is lost.

    Subclasses implement `stream` (the session) and `connection_lost`, and may release their
    session's resources in `end_session`."""

    # The offset member a session starts from (the snapshot's or a stored log position).
    START_KEY: ClassVar[str] = ""
    # Errors of the log connection that `connection_lost` turns into what the runtime sees.
    connection_errors: tuple[type[BaseException], ...] = ()

    metrics: CaptureMetrics
    context: SourceContext
    # signals and incremental snapshots (None: no signal channel configured)
    incremental: Any

    def acknowledge(self, token: Any) -> None:
        """Called by the writer once a batch is durable; by default the stored offset is all
        there is."""

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        try:
            self.stream(ctx, self.start_offset(offset))
        except self.connection_errors as exc:
            # metrics.connected: the session was streaming (else it failed to start)
            lost = self.connection_lost(exc, streaming=self.metrics.connected)
            if lost is None:
                raise
            raise lost from exc
        finally:
            self.metrics.connected = False
            self.end_session()
            if self.incremental is not None:
                self.incremental.close()

    def start_offset(self, offset: dict[str, Any] | None) -> dict[str, Any]:
        """The offset the session starts from: the snapshot's or a stored log position."""
        if offset is None or self.START_KEY not in offset:
            raise RuntimeError("streaming needs a start offset (the snapshot's or the log's "
                               "position)")
        return offset

    def stream(self, ctx: SourceRunContext, offset: dict[str, Any]) -> None:
        """The session: connect, set `metrics.connected` once streaming, read until stopped."""
        raise NotImplementedError

    def connection_lost(self, exc: BaseException, *, streaming: bool) -> Exception | None:
        """The error a lost connection ends the session with (None: `exc` itself)."""
        raise NotImplementedError

    def end_session(self) -> None:
        """Releases what the session opened (also after a failure)."""


class LogSession:
    """One session's loop: the steps every log reader takes outside its protocol's messages.

    Subclasses set `read` and implement `kind`, `handlers`, `flush_offset`, `offset_unsent`
    and `boundary_position`; `unhandled`, `quiet` and `heartbeat_position` default to doing
    nothing (None for the position)."""

    # The next message, None when none came within the poll interval (an attribute, so that a
    # session may switch sources, e.g. to the replay of a spilled transaction).
    read: Callable[[], Any]

    def __init__(self, source: LogStreamingSource, ctx: SourceRunContext,
                 options: DispatchOptions, heartbeat_action: Callable[[], None] | None) -> None:
        self.ctx = ctx
        self.dispatcher = EventDispatcher(source.context, options, source.metrics, ctx.emit,
                                          heartbeat_action)
        self.tx_metadata = options.transaction_metadata
        self.hook = source.incremental  # the incremental snapshot hook (None: no signal channel)
        self.in_tx = False  # inside a transaction of the log

    # -- the read loop -----------------------------------------------------------------------
    def run(self) -> None:
        """Until stopped: each message to the handler of its kind, `idle` when none came.

        Why one loop: both log readers are a dispatch table over the message kinds of their
        protocol, with the same idle step between; only the table differs."""
        stopping = self.ctx.stopping
        handlers = self.handlers()
        kind = self.kind
        unhandled = self.unhandled
        idle = self.idle
        while not stopping.is_set():
            message = self.read()
            if message is None:
                idle()
                continue
            handler = handlers.get(kind(message))
            if handler is None:
                unhandled(message)
            else:
                handler(message)

    def kind(self, message: Any) -> Any:
        """The key of `message`'s handler in `handlers`; called once for each message, right
        after it is read (a reader notes there what it keeps of every message, e.g. when or
        where it came: no second call per message)."""
        raise NotImplementedError

    def handlers(self) -> dict[Any, Callable[[Any], None]]:
        """The protocol's dispatch table: message kind -> handler."""
        raise NotImplementedError

    def unhandled(self, message: Any) -> None:
        """A message of a kind without a handler."""

    def idle(self) -> None:
        """Nothing came: what was read goes out with its offset; then a heartbeat when one is
        due, else the reader's `quiet` step."""
        self.flush_pending()
        if self.dispatcher.heartbeat_due():
            self.heartbeat()
        else:
            self.quiet()

    def quiet(self) -> None:
        """An idle moment without a heartbeat."""

    # -- offsets -----------------------------------------------------------------------------
    def flush_offset(self) -> None:
        """Hands what was dispatched to the runtime, with the offset that restarts after it."""
        raise NotImplementedError

    def offset_unsent(self) -> bool:
        """Whether the offset moved since it was last handed over."""
        raise NotImplementedError

    def flush_pending(self) -> None:
        """Hands over what was dispatched, or an offset that moved, if any."""
        if self.dispatcher.pending or self.offset_unsent():
            self.flush_offset()

    def boundary_position(self) -> Any:
        """Where records emitted between transactions (a closed window's) sit."""
        raise NotImplementedError

    def with_progress(self, offset: dict[str, Any]) -> dict[str, Any]:
        """`offset` (updated in place) with the incremental snapshot's progress."""
        if self.hook is not None:
            offset.update(self.hook.offset_fields())
        return offset

    def emit_blocking(self, records: list[ChangeRecord]) -> None:
        self.ctx.emit(Batch(records))  # no offset: a crash re-runs the signal's transaction

    # -- transactions ------------------------------------------------------------------------
    def begin(self, where: tuple[Any, ...], tx_id: str, ts_ms: int, position: Any,
              event_id: str | None = None) -> None:
        """A transaction begins (at `where`, as the hook locates it): a read-only incremental
        snapshot window it passes closes first, then its BEGIN (transaction metadata)."""
        if self.hook is not None:
            self.dispatcher.extend(self.hook.begin(*where, self.boundary_position))
        self.dispatcher.begin(tx_id, ts_ms, position, event_id)
        self.in_tx = True

    def hook_committed(self, *where: Any) -> None:
        """A transaction ended at `where`: the signals it wrote take effect, before the offset
        passes it."""
        hook = self.hook
        hook.committed(*where)
        hook.actions(self.flush_offset, self.emit_blocking)

    # -- heartbeats and truncates ------------------------------------------------------------
    def heartbeat_position(self) -> Any:
        return None

    def heartbeat(self) -> None:
        """``heartbeat.action.query``, then a heartbeat record, handed over with the offset."""
        dispatcher = self.dispatcher
        dispatcher.run_heartbeat_action()
        dispatcher.heartbeat(self.heartbeat_position())
        self.flush_offset()

    def truncates(self, codecs: Iterable[Any], ts_ms: int, position: Any) -> None:
        """Truncated tables: a truncate event (op t) on the topic of each captured one (a
        codec; None: not captured)."""
        truncate = self.dispatcher.truncate
        for codec in codecs:
            if codec is not None:
                truncate(codec.schema, ts_ms, position)
