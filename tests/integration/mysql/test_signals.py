"""Signals on a real MariaDB: blocking snapshots, the signal table's own rows, the file channel
with read-only watermarks (pause/resume/stop: tests/conformance)."""

from __future__ import annotations

import json

import pytest

from headwater.testing.replay import events
from headwater.topics import reader

from .conftest import MariaEnv, wait_for
from .test_incremental_snapshot import offset, send, setup_tables, signal_table

pytestmark = [pytest.mark.integration]


def _streaming(env: MariaEnv) -> None:
    wait_for(lambda: "file" in offset(env), timeout=60, what="streaming started")


def _values(env: MariaEnv, table: str = "t") -> list[dict[str, object]]:
    return [v for _, _, v in events(env.topics, env.topic(table)) if v is not None]


def test_blocking_snapshot_with_a_filter_then_streaming_resumes(menv: MariaEnv) -> None:
    setup_tables(menv, 500)
    capture = menv.capture({"snapshot.mode": "no_data",
                            "signal.data.collection": signal_table(menv)})
    try:
        _streaming(menv)
        send(menv, "b-1", "execute-snapshot", {
            "data-collections": [f"{menv.db}.t"], "type": "blocking",
            "additional-conditions": [{"data-collection": f"{menv.db}.t",
                                       "filter": "id <= 100"}]})
        menv.sql("INSERT INTO t VALUES (1000, 7, 'after')")
        wait_for(lambda: any(v["op"] == "c" for v in _values(menv)), timeout=60,
                 what="streaming after the blocking snapshot")
    finally:
        capture.stop()
    values = _values(menv)
    reads = [v for v in values if v["op"] == "r"]
    assert sorted(v["after"]["id"] for v in reads) == list(range(1, 101))  # type: ignore[index]
    assert [v["source"]["snapshot"] for v in reads] == ["true"] * 99 + ["last"]  # type: ignore[index]
    assert values[-1]["op"] == "c"  # the insert after the signal comes after the snapshot
    assert "incremental_snapshot_collections" not in offset(menv)


def _topics(env: MariaEnv) -> set[str]:
    return {t.name for t in reader.list_topics(env.topics)}


def test_signal_rows_are_signals_and_data_only_when_captured(menv: MariaEnv) -> None:
    """A signal table outside table.include.list still takes signals and gets no topic; once
    captured (as Debezium does) its rows are data events as well."""
    setup_tables(menv, 30)
    capture = menv.capture({"snapshot.mode": "no_data", "table.include.list": f"{menv.db}.t",
                            # the schema then knows only t: the signal table's definition is
                            # read from the server
                            "schema.history.internal.store.only.captured.tables.ddl": "true",
                            "signal.data.collection": signal_table(menv),
                            "incremental.snapshot.chunk.size": 10})
    try:
        _streaming(menv)
        send(menv, "x-1", "execute-snapshot", {"data-collections": [f"{menv.db}.t"]})
        # The READs are written before the offset that closes the snapshot.
        wait_for(lambda: len(_values(menv)) >= 30
                 and "incremental_snapshot_collections" not in offset(menv), timeout=60,
                 what="30 READ events and the incremental snapshot closed in the offset")
    finally:
        capture.stop()
    assert sorted(v["after"]["id"] for v in _values(menv)) == list(range(1, 31))  # type: ignore[index]
    assert menv.topic("debezium_signal") not in _topics(menv)
    # The signal table is not captured, but its definition came from the server: the
    # watermark rows were decoded and closed every window.
    assert offset(menv).get("incremental_snapshot_collections") is None

    menv.offsets.unlink()
    capture = menv.capture({"snapshot.mode": "no_data",
                            "signal.data.collection": signal_table(menv)})
    try:
        _streaming(menv)
        send(menv, "x-2", "log", {"message": "hello"})
        wait_for(lambda: menv.topic("debezium_signal") in _topics(menv)
                 and len(_values(menv, "debezium_signal")) >= 1, timeout=60,
                 what="the signal row on the signal table's topic")
    finally:
        capture.stop()
    assert [(v["op"], v["after"]["id"]) for v in _values(menv, "debezium_signal")] == [  # type: ignore[index]
        ("c", "x-2")]


def test_file_channel_read_only_and_a_surrogate_key(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE nokey (code varchar(10) NOT NULL, n int)")  # no primary key
    with menv.conn.cursor() as cur:
        cur.executemany("INSERT INTO nokey VALUES (%s, %s)",
                        [(f"c{i:02d}", i) for i in range(1, 31)])
    signals = menv.tmp / "signals.txt"
    capture = menv.capture({"snapshot.mode": "no_data", "signal.enabled.channels": "file",
                            "signal.file": str(signals), "signal.poll.interval.ms": 100,
                            "read.only": "true", "incremental.snapshot.chunk.size": 7})
    try:
        _streaming(menv)
        with signals.open("a") as f:  # no surrogate key: refused with an error, nothing read
            f.write(json.dumps({"id": "f1", "type": "execute-snapshot", "data": {
                "data-collections": [f"{menv.db}.nokey"]}}) + "\n")
            f.write(json.dumps({"id": "f2", "type": "execute-snapshot", "data": {
                "data-collections": [f"{menv.db}.nokey"], "surrogate-key": "code",
                "additional-condition": "n % 2 = 0"}}) + "\n")
        wait_for(lambda: len(_values(menv, "nokey")) >= 15
                 and offset(menv).get("signal_file_position") == signals.stat().st_size
                 and "incremental_snapshot_collections" not in offset(menv), timeout=60,
                 what="reads of the table without a key, every signal consumed")
    finally:
        capture.stop()
    reads = _values(menv, "nokey")
    assert sorted(v["after"]["n"] for v in reads) == list(range(2, 31, 2))  # type: ignore[index]
    assert {v["source"]["snapshot"] for v in reads} == {"incremental"}  # type: ignore[index]
    assert offset(menv)["signal_file_position"] == signals.stat().st_size
