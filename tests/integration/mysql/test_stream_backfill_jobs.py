"""Backfill jobs and start positions against a real MariaDB, through the CLI (the capture in
its own process): every BackfillJob state is reached (NOT_STARTED, PENDING, ACTIVE,
COMPLETED, STOPPED, FAILED, UNSUPPORTED), backfillAll's excluded object is not backfilled, a
bad filter is refused naming object and filter, and the cdcStrategy positions start where
asked (a binary log the server does not have is refused, naming the position)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.localpg import wait_for
from tests.integration.postgres.test_streams import Cli, _rows, cli  # noqa: F401 (fixture)

from .conftest import MariaEnv
from .stream_cli import create_profiles, run_sql


def _jobs(cli: Cli, stream: str) -> dict[str, dict[str, Any]]:  # noqa: F811
    doc = cli.json("streams", "objects", stream)
    return {o["displayName"].split(".", 1)[1]: o["backfillJob"] for o in doc["streamObjects"]}


def _wait_job(cli: Cli, obj: str, state: str, timeout: float) -> None:  # noqa: F811
    """Waits for a job's state; on a timeout says where every job and the stream stand."""
    try:
        wait_for(lambda: _jobs(cli, "s").get(obj, {}).get("state") == state, timeout,
                 what=f"the backfill of {obj} to be {state}")
    except TimeoutError as exc:
        doc = cli.json("streams", "describe", "s")
        raise AssertionError((str(exc), _jobs(cli, "s"), doc["state"], doc.get("errors"),
                              cli.log())) from None


def test_backfill_jobs(menv: MariaEnv, cli: Cli) -> None:  # noqa: F811
    db = menv.db
    run_sql(menv, "CREATE TABLE a (id int PRIMARY KEY, v int)",
            "INSERT INTO a SELECT seq, seq FROM seq_1_to_60",
            "CREATE TABLE nokey (v int)", "INSERT INTO nokey VALUES (1), (2)",
            "CREATE TABLE ex (id int PRIMARY KEY)", "INSERT INTO ex SELECT seq FROM seq_1_to_5",
            "CREATE TABLE gone (id int PRIMARY KEY)", "INSERT INTO gone VALUES (1)")
    create_profiles(cli, menv)
    cli("streams", "create", "s", "--source", "maria", "--destination", "out",
        "--include", db, "--backfill-exclude", f"{db}.ex",
        "-p", "incremental.snapshot.chunk.size=4", "-p", "headwater.topics.segment.ms=200",
        "-p", "poll.interval.ms=100")
    assert {j["state"] for j in _jobs(cli, "s").values()} == {"NOT_STARTED"}

    bad = cli("streams", "start-backfill-job", "s", f"{db}.a", "--where", "nosuch > 1", code=2)
    assert f"backfill of {db}.a: filter 'nosuch > 1' is not valid" in " ".join(bad.split())

    assert cli.json("streams", "start", "s", "--wait", "60")["state"] == "RUNNING", cli.log()
    seen: set[str] = set()

    def automatic_done() -> bool:
        job = _jobs(cli, "s")["a"]
        seen.add(job["state"])
        return bool(job["state"] == "COMPLETED")

    wait_for(automatic_done, 180, what="the automatic backfill of a")
    jobs = _jobs(cli, "s")
    assert jobs["a"]["trigger"] == "AUTOMATIC" and "lastEndTime" in jobs["a"]
    trail = [(h["from"], h["to"]) for h in cli.json("streams", "describe", "s")["history"]
             if h["action"] == "backfill_job" and h["detail"] == f"{db}.a"]
    assert trail[:3] == [("NOT_STARTED", "PENDING"), ("PENDING", "ACTIVE"),
                         ("ACTIVE", "COMPLETED")], (trail, seen)
    assert jobs["nokey"]["state"] == "UNSUPPORTED"
    assert "no primary key" in jobs["nokey"]["errors"][0]["message"]
    assert jobs["ex"]["state"] == "NOT_STARTED"  # backfillAll.excludedObjects
    topics = menv.tmp / "topics" / "s"
    prefix = "s"
    assert _rows(topics, f"{prefix}.{db}.ex") == []  # excluded: no backfill rows

    # PENDING while the stream is paused; FAILED when the table is gone when it runs.
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"
    job = cli.json("streams", "start-backfill-job", "s", f"{db}.a", "--where", "id <= 5")
    assert job["backfillJob"]["state"] == "PENDING" and job["backfillJob"]["trigger"] == "MANUAL"
    assert cli.json("streams", "start-backfill-job", "s", f"{db}.gone")["backfillJob"][
        "state"] == "PENDING"
    run_sql(menv, "DROP TABLE gone")
    assert cli.json("streams", "resume", "s", "--wait", "60")["state"] == "RUNNING"
    _wait_job(cli, "a", "COMPLETED", 180)
    # Dropped after its signal was written: its scan fails (Debezium's warnAndSkip), whether
    # the capture reads the signal or the DROP first; the stream goes on (it did not, once).
    _wait_job(cli, "gone", "FAILED", 60)
    assert _jobs(cli, "s")["gone"]["errors"]

    # STOPPED: asked to stop (its next run starts from the beginning).
    cli("streams", "start-backfill-job", "s", f"{db}.ex")
    stopped = cli.json("streams", "stop-backfill-job", "s", f"{db}.ex")["backfillJob"]
    assert stopped["state"] == "STOPPED" and "lastEndTime" in stopped
    nothing = cli("streams", "stop-backfill-job", "s", f"{db}.nokey", code=2)
    assert "UNSUPPORTED: nothing to stop" in nothing

    reads = Counter(p["after"]["id"] for p in _rows(topics, f"{prefix}.{db}.a")
                    if p["source"]["snapshot"] == "incremental")
    assert set(reads) == set(range(1, 61))
    assert all(reads[i] == 2 for i in range(1, 6)), reads  # automatic + the partial one
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"


@pytest.fixture()
def own_server(tmp_path: Path) -> Iterator[MariaEnv]:
    """A MariaDB server of this test's own: "the oldest binary log" of the session's server
    holds whatever earlier tests wrote (a fresh-clone run met another file's DDL there, and
    PURGE BINARY LOGS keeps any log a lingering binlog reader still has open)."""
    server = LocalMariaDB().start()
    env = MariaEnv(server, tmp_path)
    try:
        yield env
    finally:
        env.close()
        server.cleanup()


def test_start_positions(own_server: MariaEnv, cli: Cli) -> None:  # noqa: F811
    menv = own_server
    db = menv.db
    run_sql(menv, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)")
    create_profiles(cli, menv)
    cli("streams", "create", "s", "--source", "maria", "--destination", "out",
        "--include", db, "--backfill", "none", "-p", "headwater.topics.segment.ms=200",
        "-p", "poll.interval.ms=100")
    topics = menv.tmp / "topics" / "s"

    def ids() -> set[int]:
        return {p["after"]["id"] for p in _rows(topics, f"s.{db}.t") if p["op"] == "c"}

    # nextAvailableStartPosition on a first start: from the oldest binlog, so the rows
    # inserted before the stream existed are streamed as changes.
    assert cli.json("streams", "start", "s", "--wait", "60", "--cdc-strategy",
                    "nextAvailableStartPosition")["state"] == "RUNNING", cli.log()
    try:
        wait_for(lambda: ids() >= {1, 2}, 120, what="rows from the oldest binlog")
    except TimeoutError as exc:
        raise AssertionError((str(exc), ids(), cli.log())) from None
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"

    # specificStartPosition mysqlLogPosition: only what was written after it.
    run_sql(menv, "INSERT INTO t VALUES (3)")
    file, pos = run_sql(menv, "SHOW MASTER STATUS")[0][:2]
    run_sql(menv, "INSERT INTO t VALUES (4)")
    position = {"specificStartPosition": {"mysqlLogPosition": {"logFile": file,
                                                               "logPosition": int(pos)}}}
    cli("streams", "resume", "s", "--wait", "60", "--cdc-strategy",
        orjson.dumps(position).decode())
    wait_for(lambda: 4 in ids(), 60, what="the row after the position")
    assert 3 not in ids()
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"

    # A binary log the server does not have (purged, or never there): refused, named.
    gone = {"specificStartPosition": {"mysqlLogPosition": {"logFile": "purged-bin.000001",
                                                           "logPosition": 4}}}
    out = cli("streams", "resume", "s", "--cdc-strategy", orjson.dumps(gone).decode(), code=2)
    text = " ".join(out.split())
    assert ("the start position mysqlLogPosition {logFile: purged-bin.000001, logPosition: 4}"
            " is not available on the source: binary log purged-bin.000001 is not on the "
            "server") in text
    assert cli.state("s") == "PAUSED"
    assert cli.json("streams", "errors", "s")["errors"][-1]["reason"] == \
        "START_POSITION_UNAVAILABLE"

    # mostRecentStartPosition: what was written while paused is skipped.
    run_sql(menv, "INSERT INTO t VALUES (5)")
    cli("streams", "resume", "s", "--wait", "60", "--cdc-strategy", "mostRecentStartPosition")
    run_sql(menv, "INSERT INTO t VALUES (6)")
    wait_for(lambda: 6 in ids(), 60, what="the row after the resume")
    assert 5 not in ids()
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"
