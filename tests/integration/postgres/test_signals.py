"""Signals on a real PostgreSQL: blocking snapshots, the file channel (pause/resume/stop:
tests/conformance)."""

from __future__ import annotations

import json
import time

import pytest

from headwater.testing.replay import events

from .conftest import Env, wait_for
from .test_incremental_snapshot import SIGNALS, offset, send, setup_tables

pytestmark = [pytest.mark.integration]


def _streaming(env: Env) -> None:
    wait_for(lambda: env.sql("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                             (env.slot,)) == [(True,)], timeout=60, what="streaming started")


def _values(env: Env, topic: str = "t") -> list[dict[str, object]]:
    return [v for _, _, v in events(env.topics, f"{env.prefix}.public.{topic}") if v is not None]


def test_blocking_snapshot_with_a_filter_then_streaming_resumes(env: Env) -> None:
    setup_tables(env, 500)
    capture = env.capture({"snapshot.mode": "no_data", "signal.data.collection": SIGNALS})
    try:
        _streaming(env)
        send(env, "b-1", "execute-snapshot", {
            "data-collections": ["public.t"], "type": "blocking",
            "additional-conditions": [{"data-collection": "public.t", "filter": "id <= 100"}]})
        env.sql("INSERT INTO t VALUES (1000, 7, 'after')")
        wait_for(lambda: any(v["op"] == "c" for v in _values(env)), timeout=60,
                 what="streaming after the blocking snapshot")
    finally:
        capture.stop()
    values = _values(env)
    reads = [v for v in values if v["op"] == "r"]
    assert sorted(v["after"]["id"] for v in reads) == list(range(1, 101))  # type: ignore[index]
    assert [v["source"]["snapshot"] for v in reads] == ["true"] * 99 + ["last"]  # type: ignore[index]
    assert values[-1]["op"] == "c"  # the insert after the signal comes after the snapshot


def test_file_channel_and_a_quoted_table_name(env: Env) -> None:
    env.sql('CREATE SCHEMA "my.schema"')
    env.sql('CREATE TABLE "my.schema"."tab.le" (code text, n int)')  # no primary key
    env.sql("""INSERT INTO "my.schema"."tab.le" SELECT 'c' || g, g FROM generate_series(1, 30) g""")
    signals = env.tmp / "signals.txt"
    capture = env.capture({"snapshot.mode": "no_data", "signal.enabled.channels": "file",
                           "signal.file": str(signals), "signal.poll.interval.ms": 100,
                           "read.only": "true", "incremental.snapshot.chunk.size": 7})
    topic = "my.schema.tab.le"
    try:
        _streaming(env)
        with signals.open("a") as f:  # no surrogate key: refused with an error, nothing read
            f.write(json.dumps({"id": "f1", "type": "execute-snapshot", "data": {
                "data-collections": ['"my.schema"."tab.le"']}}) + "\n")
            f.write(json.dumps({"id": "f2", "type": "execute-snapshot", "data": {
                "data-collections": ['"my.schema"."tab.le"'], "surrogate-key": "code",
                "additional-condition": "n % 2 = 0"}}) + "\n")
        wait_for(lambda: len(list(events(env.topics, f"{env.prefix}.{topic}"))) >= 15,
                 timeout=60, what="reads of the quoted table")
        time.sleep(0.5)
    finally:
        capture.stop()
    reads = [v for _, _, v in events(env.topics, f"{env.prefix}.{topic}") if v is not None]
    assert sorted(v["after"]["n"] for v in reads) == list(range(2, 31, 2))
    assert {v["source"]["snapshot"] for v in reads} == {"incremental"}
    assert offset(env)["signal_file_position"] == signals.stat().st_size


def test_incremental_snapshot_of_a_table_not_captured_is_refused(env: Env) -> None:
    """A signal naming a table outside the include list reads nothing of it (the MySQL and
    MongoDB connectors refuse it too); the next table of the signal is read."""
    setup_tables(env, 40)
    env.sql("CREATE TABLE other (id int PRIMARY KEY, v text)")
    env.sql("INSERT INTO other SELECT g, 'x' FROM generate_series(1, 10) g")
    capture = env.capture({"snapshot.mode": "no_data", "signal.data.collection": SIGNALS,
                           "table.include.list": f"public.t,{SIGNALS}"})
    try:
        _streaming(env)
        send(env, "i-1", "execute-snapshot", {"data-collections": ["public.other", "public.t"]})
        wait_for(lambda: len([v for v in _values(env) if v["op"] == "r"]) >= 40, timeout=60,
                 what="the incremental reads of t")
        time.sleep(0.5)
    finally:
        capture.stop()
    assert not list(events(env.topics, f"{env.prefix}.public.other"))
    assert sorted(v["after"]["id"] for v in _values(env)  # type: ignore[index]
                  if v["op"] == "r") == list(range(1, 41))
