"""The pipeline's status file: counters exactly once across a replayed batch, lag from the
topic log, freshness, and `headwater status --pipeline`."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from typer.testing import CliRunner

from headwater.cli import app
from headwater.ops.progress import read_status
from headwater.pipeline.status import PipelineMonitor, freshness_s, newest_ts_ms
from headwater.topics.log import OutRecord, TopicLog


def test_counts_survive_a_restart_and_a_replayed_batch_counts_once(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint" / "status.json"
    m = PipelineMonitor(path, "headwater-pg", table_prefix="pg")
    m.batch(0, {"pg.public.t": 3, "pg.public.u": 2}, 1_000, 0.5)
    m.close("STOPPED")
    again = PipelineMonitor(path, "headwater-pg", table_prefix="pg")  # a restart
    again.batch(0, {"pg.public.t": 3, "pg.public.u": 2}, 1_000, 0.5)  # Spark's replay
    again.batch(1, {"pg.public.t": 4}, 2_000, 0.25)
    doc = read_status(path)
    assert doc is not None
    assert doc["batches"] == 2 and doc["changes_applied"] == 9
    assert doc["rows_by_table"] == {"public.t": 7, "public.u": 2}
    assert doc["last_batch_duration_s"] == 0.25 and doc["newest_source_ts_ms"] == 2_000
    assert freshness_s(doc, now_ms=5_000) == 3.0


def test_lag_is_what_the_topic_log_holds_past_the_read_offsets(tmp_path: Path) -> None:
    topics = tmp_path / "topics"
    log = TopicLog(topics)
    log.append({"pg.public.t": [OutRecord(b'{"id":%d}' % i, b"{}", 1) for i in range(5)]})
    log.close()
    m = PipelineMonitor(tmp_path / "cp" / "status.json", "p", topics, "pg.*", "pg")
    m.batch(0, {"pg.public.t": 2}, None, 0.1, {"pg.public.t": 2})
    doc = read_status(tmp_path / "cp" / "status.json")
    assert doc is not None and doc["lag"] == {"pg.public.t": 3}


def test_newest_ts_prefers_the_source_ts() -> None:
    value = {"payload": {"source": {"ts_ms": 7}, "ts_ms": 9, "op": "c"}}
    assert newest_ts_ms(orjson.dumps(value)) == 7
    assert newest_ts_ms(b'{"ts_ms": 9}') == 9
    assert newest_ts_ms(None) is None and newest_ts_ms(b"not json") is None


def test_headwater_status_prints_a_pipelines_numbers(tmp_path: Path) -> None:
    config = tmp_path / "pipeline.properties"
    config.write_text("topic.prefix=pg\nheadwater.pipeline.checkpoint.dir=cp\n")
    m = PipelineMonitor(tmp_path / "cp" / "status.json", "headwater-pg", table_prefix="pg")
    m.set_state("RUNNING")
    m.batch(0, {"pg.public.t": 3}, 1_000, 0.5)
    out = CliRunner().invoke(app, ["status", str(config)])
    assert out.exit_code == 0, out.output
    assert "pipeline headwater-pg: RUNNING" in out.output
    assert "changes applied: 3" in out.output and "public.t" in out.output
    doc = read_status(tmp_path / "cp" / "status.json")
    assert doc is not None and doc["pid"] == os.getpid()
    m.close("STOPPED")
    assert CliRunner().invoke(app, ["status", str(config)]).exit_code == 1
