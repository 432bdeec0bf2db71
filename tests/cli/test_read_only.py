"""Read-only commands name where they looked, a missing topics directory is an error, and a
failed `run` leaves no empty topics directory behind."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from headwater.cli import app
from headwater.model.topic import TopicRecord
from headwater.topics.log import TopicLog
from tests.unit.test_cli import write_config

runner = CliRunner()


def test_topics_list_names_the_directory(tmp_path: Path) -> None:
    with TopicLog(tmp_path / "topics") as log:
        log.append({"srv.public.t": [TopicRecord(b'{"id":1}', b'{"op":"c"}', 5)]})
    result = runner.invoke(app, ["topics", "list", "--config", str(write_config(tmp_path))])
    assert result.exit_code == 0, result.output
    assert f"topics under {tmp_path / 'topics'}: 1" in result.stdout


def test_topics_commands_refuse_a_missing_directory(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)  # headwater.topics.dir=topics, never written
    for args in (["list", "--config", str(cfg)], ["verify", str(cfg)],
                 ["tail", "srv.public.t", "--config", str(cfg)]):
        result = runner.invoke(app, ["topics", *args])
        assert result.exit_code == 1, (args, result.output)
        assert result.stderr.strip() == (
            f"error: topics directory {tmp_path / 'topics'} (headwater.topics.dir of {cfg}) "
            "does not exist"), args
    missing = tmp_path / "nowhere"
    result = runner.invoke(app, ["topics", "list", "--dir", str(missing)])
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: topics directory {missing} (--dir) does not exist"


def test_a_failed_run_leaves_no_topics_directory(tmp_path: Path) -> None:
    # Nothing listens on the configured port: the run fails before writing any record.
    # Failed on the old code: topics/ (with only the writer's .lock) stayed behind, and a
    # pipeline pointed at it started on an empty log.
    cfg = write_config(tmp_path, **{"errors.max.retries": "0"})
    result = runner.invoke(app, ["run", str(cfg)])
    assert result.exit_code == 1
    assert not (tmp_path / "topics").exists()
    pipeline = runner.invoke(app, ["pipeline", str(cfg), "--once"])
    assert pipeline.exit_code == 2
    assert "headwater.topics.dir" in pipeline.stderr
