"""The log readers' shared session shape (relational.streaming), without a server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from headwater.engine.dispatcher import DispatchOptions
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.model.record import SourceContext
from headwater.relational.streaming import ActionConnection, LogSession, LogStreamingSource


class _Conn:
    def __init__(self, fail_close: bool = False) -> None:
        self.executed: list[str] = []
        self.closed = False
        self.fail_close = fail_close

    def cursor(self) -> Any:
        conn = self

        class _Cur:
            def __enter__(self) -> _Cur:
                return self

            def __exit__(self, *exc: object) -> None:
                return None

            def execute(self, sql: str) -> None:
                conn.executed.append(sql)

        return _Cur()

    def close(self) -> None:
        self.closed = True
        if self.fail_close:
            raise OSError("gone")


def test_the_heartbeat_action_opens_its_connection_once_and_reopens_after_close() -> None:
    opened: list[_Conn] = []

    def open_conn() -> _Conn:
        opened.append(_Conn(fail_close=len(opened) == 0))
        return opened[-1]

    action = ActionConnection(open_conn, "UPDATE hb SET ts = now()")
    action.close()  # nothing opened yet: nothing to close
    assert opened == []
    action()
    action()
    assert len(opened) == 1 and opened[0].executed == ["UPDATE hb SET ts = now()"] * 2
    action.close()  # a close that fails (the server is gone) is not an error
    assert opened[0].closed
    action()
    assert len(opened) == 2 and opened[1].executed == ["UPDATE hb SET ts = now()"]


class _Hook:
    closed = 0

    def close(self) -> None:
        self.closed += 1


class _Source(LogStreamingSource):
    START_KEY = "pos"
    connection_errors = (ConnectionError,)

    def __init__(self, fail_after_connect: bool) -> None:
        self.metrics = CaptureMetrics()
        self.incremental = _Hook()
        self.fail_after_connect = fail_after_connect
        self.ended = 0
        self.lost: list[bool] = []

    def stream(self, ctx: SourceRunContext, offset: dict[str, Any]) -> None:
        if self.fail_after_connect:
            self.metrics.connected = True
        raise ConnectionError("reset by peer")

    def connection_lost(self, exc: BaseException, *, streaming: bool) -> Exception | None:
        self.lost.append(streaming)
        return RetriableError(f"lost: {exc}") if streaming else None

    def end_session(self) -> None:
        self.ended += 1


def _ctx() -> SourceRunContext:
    return SourceRunContext(emit=lambda batch: None, stopping=threading.Event())


def test_a_lost_connection_ends_the_session_by_what_the_connector_says() -> None:
    streaming = _Source(fail_after_connect=True)
    with pytest.raises(RetriableError, match="lost: reset by peer"):
        streaming.execute(_ctx(), {"pos": 4})
    assert streaming.lost == [True] and streaming.ended == 1
    assert streaming.incremental.closed == 1 and not streaming.metrics.connected
    starting = _Source(fail_after_connect=False)  # not streaming yet: the error itself
    with pytest.raises(ConnectionError, match="reset by peer"):
        starting.execute(_ctx(), {"pos": 4})
    assert starting.lost == [False] and starting.ended == 1 and starting.incremental.closed == 1


def test_a_session_needs_its_start_position() -> None:
    source = _Source(fail_after_connect=True)
    for offset in (None, {"file": "x"}):
        with pytest.raises(RuntimeError, match="needs a start offset"):
            source.execute(_ctx(), offset)
    assert source.lost == []


class _Session(LogSession):
    """A scripted log: each item a message (kind, payload), or None for 'nothing came'."""

    def __init__(self, script: list[tuple[str, Any] | None], heartbeat_s: float = 0.0,
                 hook: Any = None) -> None:
        source = _Source(fail_after_connect=False)
        source.context = SourceContext("postgresql", "srv", "test")
        source.incremental = hook
        self.batches: list[Batch] = []
        stop = threading.Event()
        super().__init__(source, SourceRunContext(self.batches.append, stop),
                         DispatchOptions(heartbeat_interval_s=heartbeat_s), None)
        self.script = list(script)
        self.seen: list[Any] = []
        self.flushed = 0
        self.moved = False
        self.quiet_steps = 0

        def read() -> tuple[str, Any] | None:
            if not self.script:
                stop.set()
                return None
            return self.script.pop(0)

        self.read = read

    def kind(self, message: Any) -> Any:
        return message[0]

    def handlers(self) -> dict[Any, Callable[[Any], None]]:
        return {"row": self.seen.append, "move": lambda _m: setattr(self, "moved", True)}

    def unhandled(self, message: Any) -> None:
        self.seen.append(("unhandled", message[1]))

    def flush_offset(self) -> None:
        self.flushed += 1
        self.moved = False
        self.dispatcher.flush({"pos": self.flushed})

    def offset_unsent(self) -> bool:
        return self.moved

    def quiet(self) -> None:
        self.quiet_steps += 1

    def boundary_position(self) -> Any:
        return "between"


def test_the_loop_hands_each_message_to_its_kind_and_idles_when_none_came() -> None:
    session = _Session([("row", 1), ("type", 2), None, ("move", 3), None, None])
    session.run()
    assert session.seen == [("row", 1), ("unhandled", 2)]
    # idle: nothing pending and the offset unmoved -> only the quiet step; after "move" the
    # offset goes out once, then nothing more to hand over
    assert session.flushed == 1 and session.quiet_steps == 4
    assert [b.offset for b in session.batches] == [{"pos": 1}]


def test_an_idle_moment_sends_a_due_heartbeat_with_the_offset_instead_of_the_quiet_step(
) -> None:
    session = _Session([None], heartbeat_s=3600)
    # due at the first idle moment, not at the next; an interval before now, not 0.0: the
    # monotonic clock may count from the machine's boot, less than an hour ago
    session.dispatcher.last_heartbeat = time.monotonic() - 3601
    session.run()
    assert session.quiet_steps == 1 and session.flushed == 1
    assert [type(r).__name__ for b in session.batches for r in b.records] == ["HeartbeatEvent"]
    assert session.batches[0].offset == {"pos": 1}


class _BeginHook:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def begin(self, *where: Any) -> list[Any]:
        *args, position = where
        self.calls.append((*args, position()))
        return []

    def close(self) -> None:
        pass


def test_a_transaction_begins_through_the_hook_then_opens() -> None:
    hook = _BeginHook()
    session = _Session([], hook=hook)
    session.begin(("gtid-1", "binlog.000001", 4), "gtid-1", 1000, None)
    assert hook.calls == [("gtid-1", "binlog.000001", 4, "between")]
    assert session.in_tx and session.dispatcher.in_tx and session.dispatcher.tx_id == "gtid-1"
