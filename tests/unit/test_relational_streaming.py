"""The log readers' shared session shape (relational.streaming), without a server."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import RetriableError, SourceRunContext
from headwater.relational.streaming import ActionConnection, LogStreamingSource


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
