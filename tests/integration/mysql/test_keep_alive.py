"""`connect.keep.alive` against a real MariaDB: the binlog connection is killed from another
session (`KILL <id>` of the Binlog Dump thread).  With keep-alive the connector reconnects from
the last position after `connect.keep.alive.interval.ms`, outside `errors.max.retries`, and
nothing is lost or repeated; without it, capture stops with an error naming the property.
A connection that goes silent (a proxy stops forwarding it: no event, no heartbeat) is lost
once an interval has passed."""

from __future__ import annotations

import contextlib
import select
import socket
import threading

import pytest

from headwater.connectors.mysql.streaming import BinlogConnectionLostError
from headwater.testing.replay import events

from .conftest import MariaEnv, wait_for


def dump_threads(menv: MariaEnv) -> set[int]:
    """The server's Binlog Dump threads (the server is this test process's own)."""
    rows = menv.sql("SELECT ID FROM information_schema.PROCESSLIST "
                    "WHERE COMMAND = 'Binlog Dump'")
    return {int(row[0]) for row in rows}


def ids(menv: MariaEnv) -> list[int]:
    return [v["after"]["id"] for _, _, v in events(menv.topics, menv.topic("t"))
            if v and v["after"]]


def kill_binlog_connection(menv: MariaEnv) -> set[int]:
    killed = wait_for(lambda: dump_threads(menv), what="the binlog connection")
    for thread in killed:
        menv.sql(f"KILL {thread}")
    return set(killed)


def test_keep_alive_reconnects_from_the_last_position(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO t VALUES (1)")
    # errors.max.retries=0: a reconnect counted as a failure would stop the connector.
    cap = menv.capture({"connect.keep.alive.interval.ms": 500, "errors.max.retries": 0})
    try:
        wait_for(lambda: ids(menv) == [1], what="the snapshot")
        menv.sql("INSERT INTO t VALUES (2)")
        wait_for(lambda: ids(menv) == [1, 2], what="a streamed insert")
        for n in (3, 4):  # twice: a reconnect is not a failure of the budget
            killed = kill_binlog_connection(menv)
            menv.sql(f"INSERT INTO t VALUES ({n})")  # written while disconnected
            wait_for(lambda: len(ids(menv)) >= n, timeout=30,  # noqa: B023 (called here)
                     what=f"insert {n} after the reconnect")
            assert ids(menv) == list(range(1, n + 1))
            assert dump_threads(menv) - killed, "no new binlog connection"
        assert cap.thread.is_alive()
    finally:
        cap.stop()
    assert ids(menv) == [1, 2, 3, 4]


def test_without_keep_alive_a_lost_connection_stops_capture(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO t VALUES (1)")
    cap = menv.capture({"connect.keep.alive": "false"})
    try:
        wait_for(lambda: ids(menv) == [1], what="the snapshot")
        kill_binlog_connection(menv)
        wait_for(lambda: not cap.thread.is_alive(), timeout=30, what="capture to stop")
    finally:
        with pytest.raises(BinlogConnectionLostError) as stopped:
            cap.stop()
    assert "connect.keep.alive=false, so capture stops" in str(stopped.value)
    assert "\n" not in str(stopped.value)
    assert not dump_threads(menv)  # no reconnect


class FreezingProxy:
    """Forwards TCP connections to the server; `freeze` silences the ones open now (they stay
    open, nothing passes: a dead link the kernel has not noticed); later ones pass."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.frozen: list[threading.Event] = []
        self.sockets: list[socket.socket] = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            frozen = threading.Event()
            self.frozen.append(frozen)
            self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b, frozen), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, frozen: threading.Event) -> None:
        while not self.closed.is_set():
            if frozen.is_set():
                self.closed.wait(0.05)
                continue
            try:
                ready, _, _ = select.select([src], [], [], 0.05)
                if not ready or frozen.is_set():
                    continue
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
            except OSError:
                break
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def freeze(self) -> None:
        for frozen in list(self.frozen):
            frozen.set()

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        for sock in self.sockets:
            sock.close()


def test_keep_alive_takes_a_silent_connection_for_a_lost_one(menv: MariaEnv) -> None:
    """Failed before the keep-alive looked for silence: the frozen connection was read
    forever and the insert never arrived."""
    proxy = FreezingProxy(menv.server.port)
    menv.sql("CREATE TABLE t (id INT PRIMARY KEY)")
    menv.sql("INSERT INTO t VALUES (1)")
    cap = menv.capture({"database.port": proxy.port, "connect.keep.alive.interval.ms": 1000})
    try:
        wait_for(lambda: ids(menv) == [1], what="the snapshot")
        menv.sql("INSERT INTO t VALUES (2)")
        wait_for(lambda: ids(menv) == [1, 2], what="a streamed insert")
        proxy.freeze()  # every connection open now goes silent
        menv.sql("INSERT INTO t VALUES (3)")
        wait_for(lambda: len(ids(menv)) >= 3, timeout=30, what="insert 3 after the silence")
        assert cap.thread.is_alive()
    finally:
        try:
            cap.stop()
        finally:
            proxy.close()
    assert ids(menv) == [1, 2, 3]
