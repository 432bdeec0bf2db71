"""Snapshot progress: bars on a terminal, log lines otherwise, and the status file."""

from __future__ import annotations

import io
import logging
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from headwater.engine.metrics import CaptureMetrics
from headwater.ops.progress import (
    CaptureMonitor,
    SnapshotBars,
    progress_line,
    read_status,
    status_document,
    status_path,
    write_status,
)


def running_metrics() -> CaptureMetrics:
    m = CaptureMetrics()
    m.snapshot_running = True
    m.snapshot_started_monotonic = time.monotonic() - 3.5
    m.total_table_count, m.remaining_table_count = 3, 2
    m.rows_scanned = {"public.big": 250, "public.small": 7, "other.x": 0}
    m.rows_estimated = {"public.big": 1000, "public.small": 7, "other.x": -1}
    return m


def test_status_path_sits_next_to_the_offsets() -> None:
    assert status_path(Path("/d/offsets/inv.json")) == Path("/d/offsets/inv.status.json")


def test_metrics_carry_debezium_snapshot_names_and_running_duration() -> None:
    m = running_metrics().as_dict()
    assert m["TotalTableCount"] == 3 and m["RemainingTableCount"] == 2
    assert m["RowsScanned"] == {"public.big": 250, "public.small": 7, "other.x": 0}
    assert m["SnapshotRunning"] is True
    assert m["SnapshotDurationInSeconds"] == 3  # so far, while it runs


def test_status_file_roundtrip_is_atomic(tmp_path: Path) -> None:
    path = tmp_path / "offsets" / "inv.status.json"
    assert read_status(path) is None
    write_status(path, status_document(running_metrics(), "RUNNING", "inv"))
    doc = read_status(path)
    assert doc is not None
    assert doc["connector"] == "inv" and doc["state"] == "RUNNING"
    assert doc["metrics"]["RowsScanned"]["public.big"] == 250
    assert doc["rows_estimated"]["other.x"] == -1
    assert [p.name for p in path.parent.iterdir()] == ["inv.status.json"]  # no temp file left


def test_progress_line_shows_tables_remaining_and_rows_against_estimates() -> None:
    line = progress_line(running_metrics())
    assert line.startswith("snapshot progress: 2 of 3 tables remaining, 3s;")
    assert "public.big 250/~1000 (25%)" in line
    assert "public.small 7/~7 (100%)" in line
    assert "other.x 0" in line and "other.x 0/" not in line


def test_bars_show_one_bar_per_table_and_end_at_the_rows_read() -> None:
    out = io.StringIO()
    bars = SnapshotBars(Console(file=out, force_terminal=True, width=140))
    m = running_metrics()
    bars.update(m)
    tasks = {t.description: t for t in bars.progress.tasks}
    assert set(tasks) == {"public.big", "public.small", "other.x"}
    assert (tasks["public.big"].completed, tasks["public.big"].total) == (250, 1000)
    assert tasks["other.x"].total is None  # no estimate: an indeterminate bar
    m.rows_scanned["public.big"] = 1200  # more rows than the planner estimated
    bars.update(m)
    assert bars.progress.tasks[0].total == 1200
    m.rows_scanned["public.big"] = 1300
    bars.update(m, done=True)
    assert all(t.finished for t in bars.progress.tasks)
    bars.stop()
    assert "public.big" in out.getvalue() and "1300/1300" in out.getvalue()


def test_monitor_without_a_terminal_logs_progress_and_writes_status(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    m = running_metrics()
    status = tmp_path / "s.json"
    mon = CaptureMonitor(m, lambda: "RUNNING", "inv", status,
                         console=Console(file=io.StringIO()), log_interval_s=60)
    assert mon.bars is None
    with caplog.at_level(logging.INFO, logger="headwater.ops.progress"):
        mon.tick()
        mon.tick()  # within log_interval_s: no second line
        m.snapshot_running, m.snapshot_completed = False, True
        mon.tick()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "public.big 250/~1000" in lines[0]
    doc = read_status(status)
    assert doc is not None and doc["metrics"]["SnapshotCompleted"] is True


def test_monitor_on_a_terminal_draws_bars_and_routes_logging_above_them(tmp_path: Path) -> None:
    handler = logging.StreamHandler(sys.__stderr__)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        m = running_metrics()
        out = io.StringIO()
        mon = CaptureMonitor(m, lambda: "RUNNING", "inv", None,
                             console=Console(file=out, force_terminal=True, width=140))
        assert mon.bars is not None
        mon.tick()
        assert mon.bars.started
        assert handler.stream is not sys.__stderr__  # through the live display while it runs
        m.snapshot_running, m.snapshot_completed = False, True
        m.rows_scanned["public.big"] = 1000
        mon.tick()
        assert not mon.bars.started and handler.stream is sys.__stderr__
        assert "1000/1000" in out.getvalue()
    finally:
        root.removeHandler(handler)


def test_status_command_prints_what_the_capture_wrote(tmp_path: Path) -> None:
    from headwater.cli import app

    offsets = tmp_path / "offsets.json"
    cfg = tmp_path / "c.properties"
    cfg.write_text(
        "name=x\nconnector.class=io.debezium.connector.postgresql.PostgresConnector\n"
        "database.hostname=h\ndatabase.user=u\ndatabase.dbname=d\ntopic.prefix=inv\n"
        f"offset.storage.file.filename={offsets}\n")
    runner = CliRunner()
    result = runner.invoke(app, ["status", str(cfg)])
    assert result.exit_code == 1 and "no status" in result.output
    write_status(status_path(offsets), status_document(running_metrics(), "RUNNING", "inv"))
    result = runner.invoke(app, ["status", str(cfg)])
    assert result.exit_code == 0, result.output
    assert "connector inv: RUNNING" in result.output
    assert "snapshot: running" in result.output and "2 of 3 tables remaining" in result.output
    assert "public.big" in result.output and "1000" in result.output
