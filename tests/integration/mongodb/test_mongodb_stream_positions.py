"""Datastream's cdcStrategy on a MongoDB stream, against a real replica set, through the CLI:
a first start at mongodbChangeStreamPosition {startTime} streams the changes from that second
on and none before; mostRecentStartPosition skips what was written while paused;
nextAvailableStartPosition resumes from the stored position while the oplog has it, and from
the oplog's oldest entry when it has not (and on a first start); a startTime before the
oplog's oldest entry or in the future is refused naming the position (the stream stays
PAUSED), a malformed one names the field."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.engine.offsets import FileOffsetStore
from headwater.streams.catalog import Catalog
from headwater.testing.replay import events

from .conftest import MongoEnv, wait

pytestmark = pytest.mark.integration


def _cli(tmp: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, [*args, "--data-dir", str(tmp)])
    assert result.exit_code == code, result.output
    return result.output


def _iso(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _server_seconds(env: MongoEnv) -> int:
    clock = env.client.admin.command("hello")["localTime"]
    return int(clock.replace(tzinfo=dt.UTC).timestamp())


def _insert(env: MongoEnv, doc_id: int) -> Any:
    """Inserts one document; its operation time."""
    with env.client.start_session() as session:
        env.db.c.insert_one({"_id": doc_id}, session=session)
        return session.operation_time


def _ids(topics: Path, topic: str) -> list[int]:
    if not (topics / topic).exists():
        return []
    return [json.loads(v["after"])["_id"] for _, _, v in events(topics, topic)
            if v is not None and v["op"] == "c"]


def _kill_workers(tmp: Path, *names: str) -> None:
    for name in names:
        pid = Catalog(tmp).stream(name).pid
        if pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_start_positions(env: MongoEnv, tmp_path: Path) -> None:
    _cli(tmp_path, "profiles", "create", "mg", "--kind", "mongodb",
         "-p", f"mongodb.connection.string={env.server.connection_string}")
    _cli(tmp_path, "profiles", "create", "out", "--kind", "topics", "--dir",
         str(tmp_path / "topics"))
    for name in ("s", "n"):
        _cli(tmp_path, "streams", "create", name, "--source", "mg", "--destination", "out",
             "--include", f"{env.db_name}.c", "--backfill", "none",
             "-p", "headwater.topics.segment.ms=200", "-p", "cursor.max.await.time.ms=200")
    topics = tmp_path / "topics" / "s"
    topic = f"s.{env.db_name}.c"

    def ids() -> list[int]:
        return _ids(topics, topic)

    def run(verb: str, strategy: str, name: str = "s", code: int = 0) -> str:
        return _cli(tmp_path, "streams", verb, name, "--wait", "60", "--cdc-strategy",
                    strategy, code=code)

    def pause() -> None:
        out = _cli(tmp_path, "streams", "pause", "s", "--wait", "60", "--json")
        assert orjson.loads(out)["state"] == "PAUSED"

    def specific(start: str) -> str:
        return orjson.dumps({"specificStartPosition": {"mongodbChangeStreamPosition": {
            "startTime": start}}}).decode()

    try:
        # specificStartPosition on a first start: the changes from startTime's second on.
        before = _insert(env, 0)
        start = before.time + 1
        while _server_seconds(env) < start:
            time.sleep(0.05)
        _insert(env, 1)
        run("start", specific(_iso(start)))
        _insert(env, 2)
        wait(lambda: {1, 2} <= set(ids()), "the changes after startTime")
        assert 0 not in ids(), "a change before startTime was streamed"
        pause()

        # Refused, named, recorded; the stream stays PAUSED.
        old = run("resume", specific("2020-01-01T00:00:00Z"), code=2)
        text = " ".join(old.split())
        assert ("the start position mongodbChangeStreamPosition {startTime: "
                "2020-01-01T00:00:00Z} is not available on the source: it is before the "
                "oplog's oldest entry") in text
        assert Catalog(tmp_path).stream("s").state.value == "PAUSED"
        last = orjson.loads(_cli(tmp_path, "streams", "errors", "s", "--json"))["errors"][-1]
        assert last["reason"] == "START_POSITION_UNAVAILABLE"
        assert last["details"]["position"] == ("mongodbChangeStreamPosition {startTime: "
                                               "2020-01-01T00:00:00Z}")
        future = _iso(_server_seconds(env) + 3600)
        text = " ".join(run("resume", specific(future), code=2).split())
        assert f"mongodbChangeStreamPosition {{startTime: {future}}} is not available" in text
        assert "it is in the future" in text
        bad = " ".join(run("resume", specific("2026-11-29 18:00"), code=2).split())
        assert "mongodbChangeStreamPosition {startTime: 2026-11-29 18:00}: startTime is not " \
               "an RFC 3339 timestamp" in bad

        # mostRecentStartPosition: what was written while paused is skipped.
        _insert(env, 3)
        run("resume", "mostRecentStartPosition")
        _insert(env, 4)
        wait(lambda: 4 in ids(), "the change after the resume")
        assert 3 not in ids()
        pause()

        # nextAvailableStartPosition with the stored position still in the oplog: from it.
        _insert(env, 5)
        run("resume", "nextAvailableStartPosition")
        wait(lambda: 5 in ids(), "the change written while paused")
        pause()
        assert sorted(ids()) == [1, 2, 4, 5]

        # ... and with a stored position the oplog no longer has: from the oplog's oldest
        # entry (so the changes before are streamed again, 0 and 3 included).
        oldest = next(env.client.local["oplog.rs"].find({}, {"ts": 1}).sort("$natural", 1)
                      .limit(1))["ts"]
        home = tmp_path / "streams" / "s" / "offsets.json"
        FileOffsetStore(home, {"server_id": "s"}).save(
            {"sec": oldest.time - 100, "ord": 1, "snapshot_completed": True})
        run("resume", "nextAvailableStartPosition")
        stored = json.loads(home.read_text())["offset"]
        assert stored.get("resume_token") or stored["sec"] == oldest.time
        wait(lambda: ids().count(5) == 2, "the changes from the oldest oplog entry")
        assert sorted(set(ids())) == [0, 1, 2, 3, 4, 5]
        pause()

        # nextAvailableStartPosition on a first start: the oplog's oldest entry.
        run("start", "nextAvailableStartPosition", name="n")
        wait(lambda: sorted(_ids(tmp_path / "topics" / "n", f"n.{env.db_name}.c"))
             == [0, 1, 2, 3, 4, 5], "stream n's changes from the oldest oplog entry")
        history = [h["detail"] for h in orjson.loads(_cli(
            tmp_path, "streams", "describe", "s", "--json"))["history"]]
        assert any("cdcStrategy mongodbChangeStreamPosition" in d for d in history)
        assert any("cdcStrategy mostRecentStartPosition" in d for d in history)
        assert any("cdcStrategy nextAvailableStartPosition" in d for d in history)
    finally:
        _kill_workers(tmp_path, "s", "n")
