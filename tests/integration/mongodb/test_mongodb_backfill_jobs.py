"""Datastream's backfill jobs on a MongoDB stream, against a real replica set, through the CLI
(the capture in its own process): every BackfillJob state is reached (NOT_STARTED, PENDING,
ACTIVE, COMPLETED, STOPPED, FAILED, UNSUPPORTED for a view), backfillAll's excluded
collection is not backfilled, a filter the server refuses is refused naming collection and
filter, and a stream without `signal.data.collection` (where the MongoDB connector writes
its watermarks) is refused naming the property."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.testing.localpg import wait_for
from headwater.testing.replay import events
from tests.integration.postgres.test_streams import Cli as SubprocessCli
from tests.integration.postgres.test_streams import kill_captures

from .conftest import MongoEnv

pytestmark = pytest.mark.integration

N = 1500


class Cli(SubprocessCli):
    """The CLI in this process (a subprocess per command costs seconds of imports); the
    stream's capture still runs in its own detached process."""

    def __call__(self, *args: str, code: int = 0, stdout_only: bool = False) -> str:
        result = CliRunner().invoke(app, [*args, "--data-dir", str(self.data)])
        assert result.exit_code == code, (args, result.output, self.log())
        return result.output

    def json(self, *args: str, code: int = 0) -> Any:
        result = CliRunner().invoke(app, [*args, "--json", "--data-dir", str(self.data)])
        assert result.exit_code == code, (args, result.output, self.log())
        return orjson.loads(result.stdout)


@pytest.fixture()
def cli(tmp_path: Path) -> Iterator[Cli]:
    c = Cli(tmp_path / "data")
    try:
        yield c
    finally:
        kill_captures(c.data)


def _jobs(cli: Cli) -> dict[str, dict[str, Any]]:
    doc = cli.json("streams", "objects", "s")
    return {o["displayName"].split(".", 1)[1]: o["backfillJob"] for o in doc["streamObjects"]}


def _wait_job(cli: Cli, obj: str, state: str, timeout: float) -> None:
    try:
        wait_for(lambda: _jobs(cli).get(obj, {}).get("state") == state, timeout,
                 what=f"the backfill of {obj} to be {state}")
    except TimeoutError as exc:
        doc = cli.json("streams", "describe", "s")
        raise AssertionError((str(exc), _jobs(cli), doc["state"], doc.get("errors"),
                              cli.log())) from None


def test_backfill_jobs(env: MongoEnv, cli: Cli) -> None:
    db, name = env.db, env.db_name
    # Enough chunks (of 4) for the worker's once-a-second look to see the job ACTIVE.
    db.a.insert_many([{"_id": i, "v": i} for i in range(1, N + 1)])
    db.ex.insert_many([{"_id": i} for i in range(1, 6)])
    db.gone.insert_one({"_id": 1})
    db.command("create", "v", viewOn="a", pipeline=[])
    db.create_collection("sig")
    cli("profiles", "create", "mg", "--kind", "mongodb",
        "-p", f"mongodb.connection.string={env.server.connection_string}")
    cli("profiles", "create", "out", "--kind", "topics", "--dir", str(env.tmp / "topics"))
    common = ["--include", name, "--exclude", f"{name}.sig",
              "-p", "incremental.snapshot.chunk.size=4", "-p", "headwater.topics.segment.ms=200",
              "-p", "cursor.max.await.time.ms=200"]
    # Without a signal collection there is nowhere to write the watermarks: refused, named.
    cli("streams", "create", "n", "--source", "mg", "--destination", "out", *common)
    out = cli("streams", "start-backfill-job", "n", f"{name}.a", code=2)
    assert "needs signal.data.collection=<db>.<collection>" in " ".join(out.split())

    cli("streams", "create", "s", "--source", "mg", "--destination", "out", *common,
        "--backfill-exclude", f"{name}.ex", "-p", f"signal.data.collection={name}.sig")
    jobs = _jobs(cli)
    # sig is not the stream's; discover lists collections, not views (v appears once asked)
    assert set(jobs) == {"a", "ex", "gone"}, jobs
    assert {j["state"] for j in jobs.values()} == {"NOT_STARTED"}
    bad = cli("streams", "start-backfill-job", "s", f"{name}.a", "--where",
              '{"v": {"$nosuch": 1}}', code=2)
    assert (f"""backfill of {name}.a: filter '{{"v": {{"$nosuch": 1}}}}' is not valid on """
            "the source: unknown operator: $nosuch") in " ".join(bad.split())
    missing = cli("streams", "start-backfill-job", "s", f"{name}.nosuch", code=2)
    assert f"backfill of {name}.nosuch: no such collection on the source" in missing

    assert cli.json("streams", "start", "s", "--wait", "60")["state"] == "RUNNING", cli.log()
    _wait_job(cli, "a", "COMPLETED", 180)
    jobs = _jobs(cli)
    assert jobs["a"]["trigger"] == "AUTOMATIC" and "lastEndTime" in jobs["a"]
    trail = [(h["from"], h["to"]) for h in cli.json("streams", "describe", "s")["history"]
             if h["action"] == "backfill_job" and h["detail"] == f"{name}.a"]
    assert trail[:3] == [("NOT_STARTED", "PENDING"), ("PENDING", "ACTIVE"),
                         ("ACTIVE", "COMPLETED")], trail
    assert jobs["ex"]["state"] == "NOT_STARTED"  # backfillAll.excludedObjects
    # UNSUPPORTED: a view has no change stream and no _id index to chunk it by.
    view = cli("streams", "start-backfill-job", "s", f"{name}.v", code=2)
    assert "a MongoDB view cannot be backfilled" in " ".join(view.split())
    assert _jobs(cli)["v"]["state"] == "UNSUPPORTED"
    assert "a MongoDB view" in _jobs(cli)["v"]["errors"][0]["message"]

    # PENDING while the stream is paused; FAILED when the collection is gone when it runs.
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"
    job = cli.json("streams", "start-backfill-job", "s", f"{name}.a", "--where",
                   '{"_id": {"$lte": 5}}')
    assert job["backfillJob"]["state"] == "PENDING" and job["backfillJob"]["trigger"] == "MANUAL"
    assert cli.json("streams", "start-backfill-job", "s", f"{name}.gone")["backfillJob"][
        "state"] == "PENDING"
    db.gone.drop()
    assert cli.json("streams", "resume", "s", "--wait", "60")["state"] == "RUNNING"
    _wait_job(cli, "a", "COMPLETED", 180)
    _wait_job(cli, "gone", "FAILED", 60)
    assert _jobs(cli)["gone"]["errors"]

    # STOPPED: asked to stop.
    cli("streams", "start-backfill-job", "s", f"{name}.ex")
    stopped = cli.json("streams", "stop-backfill-job", "s", f"{name}.ex")["backfillJob"]
    assert stopped["state"] == "STOPPED" and "lastEndTime" in stopped
    nothing = cli("streams", "stop-backfill-job", "s", f"{name}.v", code=2)
    assert "UNSUPPORTED: nothing to stop" in nothing

    topics = env.tmp / "topics" / "s"
    reads = Counter(json.loads(v["after"])["_id"] for _, _, v in events(topics, f"s.{name}.a")
                    if v is not None and v["source"]["snapshot"] == "incremental")
    assert set(reads) == set(range(1, N + 1))
    assert all(reads[i] == 2 for i in range(1, 6)), reads  # automatic + the partial one
    assert all(reads[i] == 1 for i in range(6, N + 1)), reads
    assert cli.json("streams", "pause", "s", "--wait", "60")["state"] == "PAUSED"
