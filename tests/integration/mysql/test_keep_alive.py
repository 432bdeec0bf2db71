"""`connect.keep.alive` against a real MariaDB: the binlog connection is killed from another
session (`KILL <id>` of the Binlog Dump thread).  With keep-alive the connector reconnects from
the last position after `connect.keep.alive.interval.ms`, outside `errors.max.retries`, and
nothing is lost or repeated; without it, capture stops with an error naming the property."""

from __future__ import annotations

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
