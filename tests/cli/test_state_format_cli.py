"""Every command that opens Headwater's state refuses a newer format with the CLI's one-line
error (exit 1, no traceback), before it starts or creates anything (issue 28, must show 3)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.engine.offsets import FileOffsetStore
from headwater.model.topic import TopicRecord
from headwater.state_format import KINDS, STAMP_FILE
from headwater.streams.catalog import CATALOG_FILE, Catalog
from headwater.testing.localpg import free_port
from headwater.topics.log import TopicLog
from tests.unit.test_cli import write_config

runner = CliRunner()
NEWER = "headwater 9.0.0"
PIPELINE = "topic.prefix=srv\nheadwater.topics.dir=topics\nheadwater.pipeline.checkpoint.dir=ck\n"


def refusal(label: str, path: Path, by: str | None = NEWER) -> str:
    who = f" ({by})" if by else ""
    current = next(kind.current for kind in KINDS if kind[0] == label)
    return (f"{label} {path} was written by a newer Headwater{who} (format 3); this release "
            f"reads format {current}: upgrade Headwater or restore a backup")


def newer_topic_log(root: Path) -> Path:
    with TopicLog(root) as log:
        log.append({"srv.public.t": [TopicRecord(b'{"id":1}', b'{"op":"c"}', 5)]})
    stamp = root / STAMP_FILE
    stamp.write_bytes(orjson.dumps({"kind": "topic-log", "format": 3, "written_by": NEWER}))
    return stamp


def newer_offsets(path: Path) -> Path:
    FileOffsetStore(path, {"server": "srv"}).save({"lsn": 1})
    path.write_bytes(orjson.dumps({**orjson.loads(path.read_bytes()), "version": 3}))
    return path


def newer_checkpoint(checkpoint: Path) -> Path:
    checkpoint.mkdir(parents=True)
    stamp = checkpoint / STAMP_FILE
    stamp.write_bytes(orjson.dumps({"kind": "checkpoint", "format": 3, "written_by": NEWER}))
    return stamp


def newer_catalog(data: Path) -> Path:
    Catalog(data).close()
    path = data / CATALOG_FILE
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 3")
    db.close()
    return path


def assert_refused(args: list[str], message: str, *, logs: bool = False) -> None:
    """Exit 1 and the one line; `logs`: lines the command logged before may come first."""
    result = runner.invoke(app, args)
    assert result.exit_code == 1, (args, result.output)
    err = result.stderr.splitlines(keepends=True)[-1] if logs else result.stderr
    assert err == f"error: {message}\n", (args, result.stderr)
    assert "Traceback" not in result.output


def test_topic_commands_refuse_a_newer_topic_log(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    message = refusal("topic log", newer_topic_log(tmp_path / "topics"))
    for args in (["topics", "list", "--config", str(cfg)],
                 ["topics", "list", "--dir", str(tmp_path / "topics")],
                 ["topics", "verify", str(cfg)], ["topics", "verify", str(cfg), "--repair"],
                 ["topics", "tail", "srv.public.t", "--from-beginning", "--config", str(cfg)]):
        assert_refused(args, message)


def test_offsets_show_and_status_refuse_newer_offsets(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    message = refusal("offset file", newer_offsets(tmp_path / "offsets.json"), None)
    assert_refused(["offsets", "show", str(cfg)], message)
    assert_refused(["status", str(cfg)], message)


def test_run_refuses_newer_state_before_connecting(tmp_path: Path) -> None:
    # Nothing listens on the configured port: a run that got as far as connecting would
    # fail there instead, with another message.
    cfg = write_config(tmp_path, **{"errors.max.retries": "0"})
    offsets = newer_offsets(tmp_path / "offsets.json")
    # (`run` logs its configuration first, one line at INFO)
    assert_refused(["run", str(cfg)], f"cannot start srv: {refusal('offset file', offsets, None)}",
                   logs=True)
    assert not (tmp_path / "topics").exists()  # refused before the topic log was opened
    offsets.unlink()
    stamp = newer_topic_log(tmp_path / "topics")
    assert_refused(["run", str(cfg)], f"cannot start srv: {refusal('topic log', stamp)}",
                   logs=True)
    assert not (tmp_path / "offsets.json").exists()


def test_pipeline_and_its_status_refuse_a_newer_checkpoint(tmp_path: Path) -> None:
    cfg = tmp_path / "p.properties"
    cfg.write_text(PIPELINE)
    TopicLog(tmp_path / "topics").close()
    stamp = newer_checkpoint(tmp_path / "ck")
    assert_refused(["pipeline", str(cfg), "--once"], refusal("pipeline checkpoint", stamp))
    assert_refused(["status", str(cfg)], refusal("pipeline checkpoint", stamp))
    assert [p.name for p in (tmp_path / "ck").iterdir()] == [STAMP_FILE]  # nothing created


def test_pipeline_refuses_a_newer_topic_log(tmp_path: Path) -> None:
    cfg = tmp_path / "p.properties"
    cfg.write_text(PIPELINE)
    stamp = newer_topic_log(tmp_path / "topics")
    assert_refused(["pipeline", str(cfg), "--once"], refusal("topic log", stamp))
    assert not (tmp_path / "ck").exists()


@pytest.mark.parametrize("args", [["streams", "list"], ["profiles", "list"]])
def test_catalog_commands_refuse_a_newer_catalog(tmp_path: Path, args: list[str]) -> None:
    path = newer_catalog(tmp_path / "data")
    assert_refused([*args, "--data-dir", str(tmp_path / "data")], refusal("catalog", path, None))


def test_serve_refuses_a_newer_catalog(tmp_path: Path) -> None:
    path = newer_catalog(tmp_path / "data")
    assert_refused(["serve", "--data-dir", str(tmp_path / "data"), "--port", str(free_port())],
                   refusal("catalog", path, None))


def test_the_refusal_is_one_line_from_the_installed_command(tmp_path: Path) -> None:
    # The whole process, not the test runner's view of it: stderr is the one line.
    cfg = write_config(tmp_path)
    stamp = newer_topic_log(tmp_path / "topics")
    offsets = newer_offsets(tmp_path / "offsets.json")
    for args, message in ((["topics", "list", "--config", str(cfg)], refusal("topic log", stamp)),
                          (["offsets", "show", str(cfg)], refusal("offset file", offsets, None))):
        done = subprocess.run([sys.executable, "-m", "headwater.cli", *args], check=False,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        assert done.stderr == f"error: {message}\n"
        assert done.stdout == ""
