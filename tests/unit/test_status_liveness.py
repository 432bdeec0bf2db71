"""`headwater status` tells a live capture from a dead one, and the read-only commands work
without the database password."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.engine.metrics import CaptureMetrics
from headwater.model.topic import TopicRecord
from headwater.ops.progress import read_status, status_document, status_path, write_status
from headwater.ops.status import liveness
from headwater.testing.timeouts import scaled
from headwater.topics.log import TopicLog

runner = CliRunner()
UNSET = "HEADWATER_TEST_SURELY_UNSET_PASSWORD"


def config(tmp_path: Path, password: str = "pw") -> tuple[Path, Path]:
    offsets = tmp_path / "offsets.json"
    cfg = tmp_path / "c.properties"
    cfg.write_text(
        "connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
        "database.hostname=h\ndatabase.user=u\ndatabase.dbname=d\ntopic.prefix=inv\n"
        f"database.password={password}\nheadwater.topics.dir=topics\n"
        f"offset.storage.file.filename={offsets}\n")
    return cfg, status_path(offsets)


MONITOR = """
import sys, time
from pathlib import Path
from headwater.engine.metrics import CaptureMetrics
from headwater.ops.progress import CaptureMonitor
CaptureMonitor(CaptureMetrics(), lambda: "RUNNING", "inv", Path(sys.argv[1]),
               interval_s=0.05).start()
print("started", flush=True)
time.sleep(600)
"""


def test_a_killed_capture_is_reported_dead(tmp_path: Path) -> None:
    # Failed on the old code: it printed "connector inv: RUNNING" and exited 0.
    cfg, status = config(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", MONITOR, str(status)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "started\n"
        deadline = time.monotonic() + scaled(10)
        while read_status(status) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = runner.invoke(app, ["status", str(cfg)])
        assert alive.exit_code == 0, alive.output
        assert f"connector inv: RUNNING (pid {proc.pid}, heartbeat 0s ago)" in alive.output
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    dead = runner.invoke(app, ["status", str(cfg)])
    assert dead.exit_code == 1
    assert "connector inv: DEAD" in dead.output
    assert f"process {proc.pid} is gone (last state RUNNING: killed or crashed)" in dead.output
    assert "last heartbeat" in dead.output


def doc(state: str, age_s: float, pid: int | None = None) -> dict[str, object]:
    d = status_document(CaptureMetrics(), state, "inv")
    d["updated_ms"] = int(time.time() * 1000 - age_s * 1000)
    if pid is not None:
        d["pid"] = pid
    return d


def test_a_live_pid_without_heartbeat_is_dead() -> None:
    # A stalled or reused pid: the process exists, its heartbeat stopped a minute ago.
    live = liveness(doc("RUNNING", 60))
    assert not live.alive and live.state == "DEAD"
    assert "no heartbeat for 60s (more than 10s)" in live.reason
    assert liveness(doc("RUNNING", 2)).alive


def test_another_hosts_capture_is_judged_by_its_heartbeat_only() -> None:
    fresh = doc("RUNNING", 1, pid=2**22 + 12345)
    fresh["host"] = "elsewhere"
    assert liveness(fresh).alive
    old = doc("RUNNING", 30, pid=2**22 + 12345)
    old["host"] = "elsewhere"
    assert "on elsewhere" in liveness(old).reason


@pytest.mark.parametrize(("state", "shown"), [("PAUSED", "STOPPED"), ("NOT_STARTED", "STOPPED"),
                                              ("FAILED", "FAILED")])
def test_a_stopped_capture_says_so(tmp_path: Path, state: str, shown: str) -> None:
    cfg, status = config(tmp_path)
    write_status(status, doc(state, 0))
    result = runner.invoke(app, ["status", str(cfg)])
    assert result.exit_code == 1
    assert f"connector inv: {shown}: it stopped (last state {state})" in result.output


@pytest.mark.parametrize("password", [f"${{env:{UNSET}}}", "${file:/nonexistent/pw.txt}"])
def test_read_only_commands_do_not_need_the_password(tmp_path: Path, password: str) -> None:
    # Failed on the old code: each exited 2 with "database.password: ...".
    assert UNSET not in os.environ
    cfg, status = config(tmp_path, password)
    write_status(status, doc("RUNNING", 0))
    with TopicLog(tmp_path / "topics") as log:
        log.append({"inv.public.t": [TopicRecord(b'{"id":1}', b'{"op":"c"}', 5)]})
    result = runner.invoke(app, ["status", str(cfg)])
    assert result.exit_code == 0 and "connector inv: RUNNING" in result.output, result.output
    listed = runner.invoke(app, ["topics", "list", "--config", str(cfg)])
    assert listed.exit_code == 0 and "inv.public.t" in listed.output, listed.output
    tail = runner.invoke(app, ["topics", "tail", "inv.public.t", "--from-beginning",
                               "--config", str(cfg)])
    assert tail.exit_code == 0 and '"op":"c"' in tail.output, tail.output
    shown = runner.invoke(app, ["offsets", "show", str(cfg)])
    assert shown.exit_code == 0 and "no offsets stored yet" in shown.output
    # The command that connects still needs it, and says which property.
    run = runner.invoke(app, ["run", str(cfg)])
    assert run.exit_code == 2 and "database.password" in run.output
