"""Streams end to end against a real PostgreSQL, through the CLI in separate processes (as a
user runs them): start, pause while rows are written, resume, drain, a killed capture
(FAILED, error fetched, resumed), a stream that cannot start (NOT_STARTED with its error), a
permanent failure and its recovery, a per-object backfill with a WHERE filter.  The topic log
must hold every row, and no row twice."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.testing.localpg import LocalPostgres, wait_for
from headwater.topics import reader

from .conftest import Env

SRC = str(Path(__file__).resolve().parents[3] / "src")


class Cli:
    def __init__(self, data: Path) -> None:
        self.data = data
        self.env = {**os.environ, "PYTHONPATH": SRC, "HEADWATER_DATA_DIR": str(data)}

    def __call__(self, *args: str, code: int = 0, stdout_only: bool = False) -> str:
        proc = subprocess.run([sys.executable, "-m", "headwater.cli", *args],
                              check=False, capture_output=True, text=True, env=self.env,
                              timeout=180)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr, self.log())
        return proc.stdout if code == 0 or stdout_only else proc.stdout + proc.stderr

    def json(self, *args: str, code: int = 0) -> Any:
        return orjson.loads(self(*args, "--json", code=code, stdout_only=True))

    def state(self, stream: str) -> str:
        return str(self.json("streams", "describe", stream)["state"])

    def log(self) -> str:
        logs = sorted(self.data.glob("streams/*/worker.log"))
        return "\n".join(f"== {p}\n{p.read_text()[-3000:]}" for p in logs)


def kill_captures(data: Path) -> None:
    """Kills every stream's capture process of the data directory: none outlives its test."""
    from headwater.streams.catalog import Catalog

    for rec in Catalog(data).streams():
        if rec.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(rec.pid, signal.SIGKILL)


@pytest.fixture()
def cli(tmp_path: Path) -> Iterator[Cli]:
    c = Cli(tmp_path / "data")
    try:
        yield c
    finally:
        kill_captures(c.data)


def _profile(cli: Cli, pg: LocalPostgres, name: str, db: str) -> None:
    cli("profiles", "create", name, "--kind", "postgresql", "--replace",
        "-p", "database.hostname=127.0.0.1", "-p", f"database.port={pg.port}",
        "-p", f"database.user={pg.user}", "-p", "database.password=unused",
        "-p", f"database.dbname={db}")


def _rows(topics: Path, topic: str) -> list[dict[str, Any]]:
    if not (topics / topic).exists():
        return []
    return [orjson.loads(r.value)["payload"] for r in reader.read(topics, topic)
            if r.value is not None]


def _ids(payloads: list[dict[str, Any]], ops: str = "cr") -> Counter[int]:
    return Counter(p["after"]["id"] for p in payloads if p["op"] in ops)


def test_pause_resume_drain_kill(env: Env, cli: Cli, tmp_path: Path) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY, v text)")
    env.sql("CREATE TABLE other (id int PRIMARY KEY)")
    env.sql("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 50) g")
    env.sql("INSERT INTO other VALUES (1)")
    _profile(cli, env.pg, "pg", env.db)
    cli("profiles", "create", "out", "--kind", "topics", "--dir", str(tmp_path / "topics"))
    cli("streams", "create", "s", "--source", "pg", "--destination", "out",
        "--include", "public.t", "-p", "poll.interval.ms=100",
        "-p", "headwater.topics.segment.ms=200")
    topics = tmp_path / "topics" / "s"
    topic = "s.public.t"

    def have(n: int) -> bool:
        return len(_ids(_rows(topics, topic))) >= n

    assert cli.json("streams", "start", "s", "--wait", "60")["state"] == "RUNNING", cli.log()
    wait_for(lambda: have(50), 60, what="the backfill")
    env.sql("INSERT INTO t SELECT g, 'v' || g FROM generate_series(51, 100) g")
    wait_for(lambda: have(100), 60, what="streamed rows")

    paused = cli.json("streams", "pause", "s", "--wait", "60")
    assert paused["state"] == "PAUSED", cli.log()
    env.sql("INSERT INTO t SELECT g, 'v' || g FROM generate_series(101, 150) g")
    assert cli.state("s") == "PAUSED"
    assert not have(101)  # nothing is read while paused

    assert cli.json("streams", "resume", "s", "--wait", "60")["state"] == "RUNNING"
    wait_for(lambda: have(150), 60, what="rows written while paused")

    # Drain while rows are being written: what was read is written, the rest comes later.
    env.sql("INSERT INTO t SELECT g, 'v' || g FROM generate_series(151, 200) g")
    assert cli.json("streams", "drain", "s", "--timeout", "60")["state"] == "PAUSED"
    env.sql("INSERT INTO t SELECT g, 'v' || g FROM generate_series(201, 220) g")
    assert cli.json("streams", "resume", "s", "--wait", "60")["state"] == "RUNNING"
    wait_for(lambda: have(220), 60, what="rows written during and after the drain")

    # A killed capture: FAILED with its error; resume continues from the kept offsets.
    pid = cli.json("streams", "describe", "s")["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: cli.state("s") == "FAILED", 30, what="FAILED after kill -9")
    errors = cli.json("streams", "errors", "s")["errors"]
    assert errors[-1]["reason"] == "PROCESS_DIED" and str(pid) in errors[-1]["message"]
    env.sql("INSERT INTO t SELECT g, 'v' || g FROM generate_series(221, 240) g")
    assert cli.json("streams", "resume", "s", "--wait", "60")["state"] == "RUNNING"
    wait_for(lambda: have(240), 60, what="rows after the kill")

    # A per-object backfill limited by a WHERE filter: READs of exactly those rows.
    cli("streams", "backfill", "s", "public.t", "--where", "id <= 10")
    wait_for(lambda: len([p for p in _rows(topics, topic)
                          if p["source"]["snapshot"] == "incremental"]) >= 10, 60,
             what="the filtered backfill")
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"

    payloads = _rows(topics, topic)
    backfilled = sorted(p["after"]["id"] for p in payloads
                        if p["source"]["snapshot"] == "incremental")
    assert backfilled == list(range(1, 11))
    initial = _ids([p for p in payloads if p["source"]["snapshot"] != "incremental"])
    assert set(initial) == set(range(1, 241))
    # Every graceful stop acknowledged what it wrote: no row twice, except what the kill -9
    # may re-deliver (at-least-once: rows read but not yet durable when it died).
    twice = {i for i, n in initial.items() if n > 1}
    assert twice <= set(range(221, 241)) | set(range(201, 221)), sorted(twice)
    assert not (tmp_path / "topics" / "s" / "s.public.other").exists()  # not included

    history = [(h["from"], h["to"]) for h in cli.json("streams", "describe", "s")["history"]]
    assert ("RUNNING", "DRAINING") in history and ("DRAINING", "PAUSED") in history
    assert ("RUNNING", "FAILED") in history and ("FAILED", "STARTING") in history
    cli("streams", "delete", "s")
    assert cli.json("streams", "list") == {"streams": []}


def test_failures(env: Env, cli: Cli, tmp_path: Path) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    env.sql("INSERT INTO t VALUES (1), (2)")
    cli("profiles", "create", "out", "--kind", "topics", "--dir", str(tmp_path / "topics"))

    # A stream that cannot start goes back to NOT_STARTED (Datastream), its error kept.
    _profile(cli, env.pg, "nowhere", "no_such_database")
    cli("streams", "create", "bad", "--source", "nowhere", "--destination", "out")
    # ... and `--wait` exits 1: the stream did not get to RUNNING.
    assert cli.json("streams", "start", "bad", "--wait", "60", code=1)["state"] == "NOT_STARTED"
    errors = cli.json("streams", "errors", "bad")["errors"]
    assert errors[0]["reason"] == "NOT_FOUND" and "no_such_database" in errors[0]["message"]
    assert errors[0]["errorUuid"] and errors[0]["errorTime"].endswith("Z")

    # A stream that ran, whose database then refuses it: FAILED_PERMANENTLY; after the fix,
    # recover.
    _profile(cli, env.pg, "pg", env.db)
    cli("streams", "create", "s", "--source", "pg", "--destination", "out",
        "--include", "public.t")
    assert cli.json("streams", "start", "s", "--wait", "60")["state"] == "RUNNING", cli.log()
    wait_for(lambda: len(_rows(tmp_path / "topics" / "s", "s.public.t")) >= 2, 60)
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"
    _profile(cli, env.pg, "pg", "no_such_database")
    assert cli.json("streams", "resume", "s", "--wait", "60", code=1
                    )["state"] == "FAILED_PERMANENTLY"
    assert cli.json("streams", "errors", "s")["errors"][-1]["reason"] == "NOT_FOUND"
    out = cli("streams", "resume", "s", code=2)
    assert "cannot resume a stream in state FAILED_PERMANENTLY" in " ".join(out.split())
    _profile(cli, env.pg, "pg", env.db)
    assert cli.json("streams", "recover", "s", "--wait", "60")["state"] == "RUNNING"
    assert cli.json("streams", "drain", "s", "--timeout", "60")["state"] == "PAUSED"


def test_in_process_launcher(env: Env, tmp_path: Path) -> None:
    """The same catalog and state machine with the stream run in a thread of this process
    (how a service running many streams may run them)."""
    from headwater.streams.catalog import Catalog
    from headwater.streams.model import ObjectRef, StreamSpec
    from headwater.streams.profiles import destination_profile, source_profile
    from headwater.streams.states import Action, State
    from headwater.streams.supervisor import Supervisor, ThreadLauncher

    env.sql("CREATE TABLE t (id int PRIMARY KEY)")
    env.sql("INSERT INTO t SELECT generate_series(1, 20)")
    cat = Catalog(tmp_path / "data")
    cat.add_profile(source_profile("pg", "postgresql", {
        "database.hostname": "127.0.0.1", "database.port": str(env.pg.port),
        "database.user": env.pg.user, "database.dbname": env.db}))
    cat.add_profile(destination_profile("out", "topics", str(tmp_path / "topics")))
    cat.create_stream(StreamSpec("inproc", "pg", "out", (ObjectRef("public", "t"),)))
    launcher = ThreadLauncher()
    sup = Supervisor(cat, launcher)
    assert sup.start("inproc") is State.STARTING
    try:
        assert sup.wait("inproc", frozenset({State.RUNNING}), 60).state is State.RUNNING
        topics = tmp_path / "topics" / "inproc"
        wait_for(lambda: len(_ids(_rows(topics, "inproc.public.t"))) == 20, 60)
        # A pause made in the catalog alone (no signal reaches the worker) still drains it.
        assert cat.transition("inproc", Action.PAUSE) is State.DRAINING
        assert sup.wait("inproc", frozenset({State.PAUSED}), 60).state is State.PAUSED
        env.sql("INSERT INTO t SELECT generate_series(21, 30)")
        assert sup.resume("inproc") is State.STARTING
        assert sup.wait("inproc", frozenset({State.RUNNING}), 60).state is State.RUNNING
        wait_for(lambda: len(_ids(_rows(topics, "inproc.public.t"))) == 30, 60)
        assert sup.pause("inproc") is State.DRAINING
        assert sup.wait("inproc", frozenset({State.PAUSED}), 60).state is State.PAUSED
    finally:
        worker, thread = launcher.workers["inproc"]
        worker.request_stop()
        thread.join(60)
    assert not thread.is_alive()
