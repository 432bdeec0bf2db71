"""Clear errors, non-zero exits: a pipeline on a topics directory that does not exist, a
second capture on a locked topic log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from headwater.cli import app
from headwater.topics.log import TopicLog
from tests.unit.test_cli import write_config


def test_pipeline_refuses_a_missing_topics_directory(tmp_path: Path) -> None:
    # Failed on the old code: it created the directory, ran an empty query and exited 0.
    cfg = write_config(tmp_path, **{"headwater.topics.dir": "no/such/topics"})
    result = CliRunner().invoke(app, ["pipeline", str(cfg), "--once"])
    assert result.exit_code == 2
    assert "headwater.topics.dir" in result.output
    assert str(tmp_path / "no" / "such" / "topics") in result.output
    assert not (tmp_path / "no").exists()


def test_second_run_on_a_locked_topic_log_says_why_without_a_traceback(tmp_path: Path) -> None:
    # Failed on the old code: a rich traceback came first, the message at its end.
    cfg = write_config(tmp_path)
    with TopicLog(tmp_path / "topics"):
        result = subprocess.run([sys.executable, "-m", "headwater.cli", "run", str(cfg)],
                                check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "cannot start srv: topic log root" in result.stderr
    assert "is locked by another writer (pid" in result.stderr
    assert "Traceback" not in result.stderr and "╭" not in result.stderr, result.stderr
