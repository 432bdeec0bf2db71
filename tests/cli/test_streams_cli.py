"""`streams start --wait` says in its exit status whether the stream runs; a profile's
relative directory is stored absolute."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.streams.catalog import Catalog
from headwater.testing.localpg import free_port

runner = CliRunner()


def test_start_wait_exits_1_when_the_stream_fails(tmp_path: Path) -> None:
    # Failed on the old code: FAILED is a settled state, so `--wait` returned exit 0.
    data = str(tmp_path / "data")
    for args in (["profiles", "create", "src", "--kind", "postgresql",
                  "-p", "database.hostname=127.0.0.1", "-p", f"database.port={free_port()}",
                  "-p", "database.user=u", "-p", "database.dbname=d",
                  "-p", "errors.max.retries=0"],
                 ["profiles", "create", "dst", "--kind", "topics", "--dir",
                  str(tmp_path / "out")],
                 ["streams", "create", "s", "--source", "src", "--destination", "dst"]):
        done = runner.invoke(app, [*args, "--data-dir", data])
        assert done.exit_code == 0, done.output
    started = runner.invoke(app, ["streams", "start", "s", "--wait", "120",
                                  "--data-dir", data])
    assert started.exit_code == 1, started.output
    assert started.stderr.startswith("error: stream s is "), started.stderr
    assert ", not RUNNING: connection to server at \"127.0.0.1\"" in started.stderr
    assert len(started.stderr.strip().splitlines()) == 1
    assert "Traceback" not in started.output


def test_a_relative_profile_directory_is_stored_absolute(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["profiles", "create", "dst", "--kind", "topics", "--dir",
                               "out/topics", "--data-dir", "data"])
    assert done.exit_code == 0, done.output
    profile = Catalog(tmp_path / "data").profile("dst")
    assert profile.properties["directory"] == str(tmp_path / "out" / "topics")
