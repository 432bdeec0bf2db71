"""The command line: configuration errors, topics list/tail, offsets show, secrets kept out."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from headwater.cli import app
from headwater.engine.offsets import FileOffsetStore
from headwater.model.topic import TopicRecord
from headwater.testing.localpg import free_port
from headwater.topics.log import TopicLog

runner = CliRunner()


def write_config(tmp_path: Path, **extra: str) -> Path:
    props = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1",
        "database.port": str(free_port()),
        "database.user": "u",
        "database.password": "s3cret-pass",
        "database.dbname": "db",
        "topic.prefix": "srv",
        "headwater.topics.dir": "topics",
        "offset.storage.file.filename": "offsets.json",
    }
    props.update(extra)
    path = tmp_path / "c.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v != "-"))
    return path


def test_missing_required_property_is_named(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(write_config(tmp_path, **{"topic.prefix": "-"}))])
    assert result.exit_code == 2
    assert "topic.prefix" in result.output


def test_invalid_value_is_named_with_expectation(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, **{"snapshot.mode": "initil"})
    result = runner.invoke(app, ["run", str(cfg)])
    assert result.exit_code == 2
    assert "snapshot.mode" in result.output and "initial" in result.output


def test_unreachable_database_fails_without_leaking_the_password(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(write_config(tmp_path)), "--log-level", "DEBUG"])
    assert result.exit_code == 1
    assert "connector configuration" in result.output  # the configuration is logged...
    assert "s3cret-pass" not in result.output  # ...with the password masked


def test_topics_list_and_tail(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    with TopicLog(root) as log:
        log.append({"srv.public.t": [
            TopicRecord(b'{"id":1}', b'{"op":"c","after":{"id":1},"source":{}}', 5),
            TopicRecord(b'{"id":1}', None, 6),
        ]})
    out = runner.invoke(app, ["topics", "list", "--dir", str(root)])
    assert out.exit_code == 0 and "srv.public.t" in out.output and "2" in out.output
    tail = runner.invoke(app, ["topics", "tail", "srv.public.t", "--from-beginning",
                               "--dir", str(root)])
    lines = [orjson.loads(line) for line in tail.output.splitlines()]
    assert [(r["offset"], r["value"]) for r in lines] == [
        (0, {"op": "c", "after": {"id": 1}, "source": {}}), (1, None)]
    pretty = runner.invoke(app, ["topics", "tail", "srv.public.t", "--from-beginning",
                                 "--pretty", "--dir", str(root)])
    assert "create" in pretty.output and "tombstone" in pretty.output
    missing = runner.invoke(app, ["topics", "tail", "nope", "--dir", str(root)])
    assert missing.exit_code == 1 and "no topic" in missing.output


def test_offsets_show(tmp_path: Path) -> None:
    cfg = write_config(tmp_path)
    assert "no offsets stored yet" in runner.invoke(app, ["offsets", "show", str(cfg)]).output
    FileOffsetStore(tmp_path / "offsets.json", {"server": "srv"}).save({"lsn": 42})
    out = runner.invoke(app, ["offsets", "show", str(cfg)])
    assert out.exit_code == 0 and '"lsn": 42' in out.output
