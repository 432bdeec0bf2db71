"""What the log readers (PostgreSQL's pgoutput stream, MySQL's binlog) do the same way around
their protocol: the shape of a streaming session, and the loop's steps at a transaction's
begin and commit, at a heartbeat, for a blocking snapshot and for truncated tables.

Why a base: every relational reader (the change-table poller of relational.changetables too)
is one `execute(ctx, offset)` per connection (a lost connection becomes a retriable error, the
incremental snapshot hook is closed with the session), and both log readers' loops hand the
incremental snapshot hook the same callbacks - hand what was read over with its offset
(`flush_offset`), emit a blocking snapshot's records without an offset (`emit_blocking`), say
where records read between transactions sit (`boundary_position`) - and put its progress into
every stored offset (`with_progress`).  A connector's streaming module
keeps its protocol, its positions and its decoding.

Nothing here runs per row: the connectors' hot loops stay theirs; these methods run once per
transaction, per heartbeat or per session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from headwater.engine.dispatcher import EventDispatcher
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord

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

    Subclasses implement `flush_offset` and `boundary_position`; `heartbeat_position` says
    where a heartbeat record sits (None by default)."""

    def __init__(self, ctx: SourceRunContext, dispatcher: EventDispatcher, hook: Any) -> None:
        self.ctx = ctx
        self.dispatcher = dispatcher
        self.hook = hook  # the incremental snapshot hook (None: no signal channel)

    def flush_offset(self) -> None:
        """Hands what was dispatched to the runtime, with the offset that restarts after it."""
        raise NotImplementedError

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

    # -- incremental snapshot hook, per transaction ------------------------------------------
    def hook_begin(self, *where: Any) -> None:
        """A transaction begins at `where` (read-only: may close the window first)."""
        self.dispatcher.extend(self.hook.begin(*where, self.boundary_position))

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
