"""A connector defined outside Headwater (toy.py), found through its `headwater.connectors`
entry point, captured with `headwater run` into the topic log and materialized into Delta by
`headwater pipeline`: its two updates of one key in one batch are both applied, in order."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from headwater.pipeline.delta_target import read_table
from headwater.pipeline.source import read_range
from headwater.testing.timeouts import scaled
from headwater.topics.reader import list_topics

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]  # the checkout: `tests.plugin_connector` imports
TOPIC = "toy.dbo.items"


def plugin_env(tmp: Path) -> dict[str, str]:
    """The environment of a process where the toy connector is installed: a dist-info
    directory on the path declaring the entry point (what `pip install` would leave)."""
    site = tmp / "site"
    dist = site / "toy_connector-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-connector\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[headwater.connectors]\ntoysql = tests.plugin_connector.toy:REGISTRATION\n")
    path = os.pathsep.join(p for p in (str(site), str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def write_config(tmp: Path) -> Path:
    config = tmp / "toy.properties"
    config.write_text(
        "name=toy\n"
        "connector.class=org.example.toysql.ToySqlConnector\n"
        "topic.prefix=toy\n"
        "headwater.topics.dir=topics\n"
        "offset.storage.file.filename=offsets.json\n"
        "headwater.pipeline.delta.path=delta\n"
        "headwater.pipeline.checkpoint.dir=checkpoint\n")
    return config


def records(tmp: Path) -> int:
    return sum(t.end_offset - t.start_offset for t in list_topics(tmp / "topics")
               if t.name == TOPIC)


def test_plugin_connector_is_captured_and_materialized_in_order(tmp_path: Path) -> None:
    env = plugin_env(tmp_path)
    config = write_config(tmp_path)
    run = subprocess.Popen([sys.executable, "-m", "headwater.cli", "run", str(config)],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + scaled(60)
        while records(tmp_path) < 6:
            assert run.poll() is None, run.stderr.read().decode() if run.stderr else ""
            assert time.monotonic() < deadline, "capture did not write 6 records"
            time.sleep(0.1)
    finally:
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err.decode()

    # The topic log holds the SQL Server-shaped events: no lsn, no txId.
    events = list(read_range(tmp_path / "topics", TOPIC, 0, 6))
    assert [v is not None and b'"connector":"toysql"' in v for _, _, v in events] == [True] * 6
    assert all(b'"lsn"' not in v and b'"txId"' not in v for _, _, v in events if v)

    pipeline = subprocess.run(
        [sys.executable, "-m", "headwater.cli", "pipeline", str(config), "--once"],
        check=False, env=env, capture_output=True, timeout=600)
    assert pipeline.returncode == 0, pipeline.stderr.decode()[-3000:]
    rows = read_table(tmp_path / "delta" / "dbo" / "items").to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [
        (1, "second"), (2, "two"), (3, "three"), (4, "four")]
