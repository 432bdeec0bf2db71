"""The set-binlog-position signal on a real MariaDB: a file position (file channel) and a GTID
set (signal table) move the stream forward, skipping what lies between; positions the server
cannot stream from are rejected with an error naming them, and streaming goes on."""

from __future__ import annotations

import json

import pytest

from headwater.connectors.mysql.position_signal import check_on_server, parse_reposition
from headwater.engine.signals import Signal
from headwater.model.collection import SignalError
from headwater.testing.replay import events

from .conftest import MariaEnv, wait_for
from .test_incremental_snapshot import offset, send, setup_tables, signal_table

pytestmark = [pytest.mark.integration]


def _ids(env: MariaEnv) -> list[int]:
    return [int(v["after"]["id"]) for _, _, v in events(env.topics, env.topic("t"))
            if v is not None and v["op"] == "c"]


def _master(env: MariaEnv) -> tuple[str, int]:
    row = env.sql("SHOW MASTER STATUS")[0]
    return str(row[0]), int(row[1])


def _insert(env: MariaEnv, *ids: int) -> None:
    for i in ids:  # one transaction each
        env.sql("INSERT INTO t VALUES (%s, 0, 'x')", (i,))


def _started(env: MariaEnv, extra: dict[str, object]) -> None:
    """A no_data capture that has streamed row 1, then stopped."""
    capture = env.capture({"snapshot.mode": "no_data", **extra})
    try:
        wait_for(lambda: "file" in offset(env), timeout=60, what="streaming started")
        _insert(env, 1)
        wait_for(lambda: _ids(env) == [1], timeout=60, what="row 1 streamed")
    finally:
        capture.stop()


def test_file_position_skips_to_it(menv: MariaEnv) -> None:
    setup_tables(menv, 0)
    signals = menv.tmp / "signals.txt"
    signals.touch()
    extra = {"signal.enabled.channels": "file", "signal.file": str(signals),
             "signal.poll.interval.ms": 100}
    _started(menv, extra)
    _insert(menv, 2, 3)  # written while stopped: read again at the next start
    file, pos = _master(menv)
    _insert(menv, 4)
    signals.write_text(json.dumps({"id": "p1", "type": "set-binlog-position", "data": {
        "binlog_filename": file, "binlog_position": pos}}) + "\n")
    capture = menv.capture(extra)
    try:
        wait_for(lambda: 4 in _ids(menv), timeout=60, what="row 4 after the move")
        _insert(menv, 5)
        wait_for(lambda: 5 in _ids(menv), timeout=60, what="row 5 streamed after the move")
    finally:
        capture.stop()
    ids = _ids(menv)
    # the signal takes effect at the first transaction boundary (row 2's commit at the latest)
    assert 3 not in ids and ids[-2:] == [4, 5], ids
    assert ids.count(4) == 1


def test_gtid_set_skips_to_it_and_bad_positions_are_rejected(menv: MariaEnv) -> None:
    setup_tables(menv, 0)
    extra: dict[str, object] = {"signal.data.collection": signal_table(menv)}
    _started(menv, extra)
    # Written while stopped, in this order: two rejected signals, the good one, rows 2 and 3.
    send(menv, "bad-file", "set-binlog-position",
         {"binlog_filename": "nosuch-bin.000042", "binlog_position": 4})
    send(menv, "bad-gtid", "set-binlog-position", {"gtid_set": "0-1-999999999"})
    domain, server, seq = (int(x) for x in str(
        menv.sql("SELECT @@gtid_binlog_pos")[0][0]).split(",")[0].split("-"))
    # the good signal is GTID seq+1, row 2 seq+2, row 3 seq+3: start after row 2
    send(menv, "good", "set-binlog-position", {"gtid_set": f"{domain}-{server}-{seq + 2}"})
    _insert(menv, 2, 3)
    capture = menv.capture(extra)
    try:
        wait_for(lambda: 3 in _ids(menv), timeout=60, what="row 3 after the move")
        _insert(menv, 4)
        wait_for(lambda: 4 in _ids(menv), timeout=60, what="row 4 after the move")
    finally:
        capture.stop()
    assert _ids(menv) == [1, 3, 4]
    assert offset(menv)["gtids"].startswith(f"{domain}-{server}-")


@pytest.mark.parametrize(("data", "message"), [
    ({"binlog_filename": "nosuch-bin.000042", "binlog_position": 4},
     "binlog_filename=nosuch-bin.000042 is not on the server"),
    ({"binlog_position": 4}, "Binlog filename must be specified"),
    ({"binlog_filename": "x-bin.000001"}, "Binlog position must be specified"),
    ({"binlog_filename": "x-bin.000001", "binlog_position": -1}, "must be non-negative"),
    ({"binlog_filename": "bad name", "binlog_position": 4}, "Invalid binlog filename format"),
    ({"gtid_set": "0-1-1", "binlog_filename": "x-bin.000001", "binlog_position": 4},
     "Cannot specify both"),
    ({"gtid_set": "nonsense"}, "Invalid GTID set format: nonsense"),
    ({"gtid_set": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"}, "MariaDB only"),
    ({"gtid_set": "0-1-999999999"}, "0-1-999999999 is not in the binlog"),
    ({}, "no data"),
])
def test_rejected_positions_name_the_problem(menv: MariaEnv, data: dict[str, object],
                                             message: str) -> None:
    signal = Signal("s1", "set-binlog-position", json.dumps(data))
    with pytest.raises(SignalError, match=message) as info, menv.conn.cursor() as cur:
        check_on_server(cur, parse_reposition(signal))
    assert "signal 's1' (set-binlog-position)" in str(info.value)


def test_positions_inside_the_file_are_checked(menv: MariaEnv) -> None:
    setup_tables(menv, 0)
    file, start = _master(menv)
    _insert(menv, 1)
    _, end = _master(menv)
    events_ = menv.sql(f"SHOW BINLOG EVENTS IN '{file}' FROM {start}")
    inside = next(int(e[1]) for e in events_ if e[2] == "Table_map")

    def check(pos: int) -> None:
        signal = Signal("s", "set-binlog-position",
                        json.dumps({"binlog_filename": file, "binlog_position": pos}))
        with menv.conn.cursor() as cur:
            check_on_server(cur, parse_reposition(signal))

    check(start)
    check(end)  # the end of the file: the next event
    with pytest.raises(SignalError, match=f"binlog_position={inside} .* inside a transaction"):
        check(inside)
    with pytest.raises(SignalError, match=f"binlog_position={start + 1} is not the start"):
        check(start + 1)
    with pytest.raises(SignalError, match=f"binlog_position={end + 10} is outside"):
        check(end + 10)


def test_moving_back_replays_once(menv: MariaEnv) -> None:
    """Back to before the signal's own row: what lies between is sent again, as Debezium's
    documentation warns, and the signal read again does not move the stream again (the offsets
    remember it)."""
    setup_tables(menv, 0)
    capture = menv.capture({"snapshot.mode": "no_data",
                            "signal.data.collection": signal_table(menv)})
    try:
        wait_for(lambda: "file" in offset(menv), timeout=60, what="streaming started")
        file, pos = _master(menv)
        _insert(menv, 1, 2)
        wait_for(lambda: _ids(menv) == [1, 2], timeout=60, what="rows 1 and 2")
        send(menv, "back", "set-binlog-position",
             {"binlog_filename": file, "binlog_position": pos})
        wait_for(lambda: _ids(menv) == [1, 2, 1, 2], timeout=60, what="rows 1 and 2 again")
        _insert(menv, 3)
        wait_for(lambda: 3 in _ids(menv), timeout=60, what="row 3")
    finally:
        capture.stop()
    assert _ids(menv) == [1, 2, 1, 2, 3]
    assert offset(menv)["binlog_position_signal"] == "back"
