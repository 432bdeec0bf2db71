"""kill -9 and a schema change on the SQL Server CDC EMULATION (not a live server): the capture
(`headwater run`, a subprocess) is killed with SIGKILL; while it is down the table changes
(rows under the old capture instance, a column dropped and one added, a second instance, rows
under it).  Restarted, it must decode the old instance's rows with the definition in its schema
history (the dropped column included), put the ALTER on the schema change topic between them
and the new instance's rows, and decode those with the new column.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.testing.localpg import wait_for
from headwater.testing.replay import events
from headwater.testing.stored_offsets import snapshot_completed
from tests.conformance.driver import properties_text
from tests.record_json import json_of
from tests.sqlserver.conftest import enable_cdc, tsql

pytestmark = pytest.mark.integration


def _start(config: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "headwater.cli", "run", str(config),
                             "--log-level", "WARNING"], stdout=log.open("ab"),
                            stderr=subprocess.STDOUT, start_new_session=True,
                            env=dict(os.environ))


def _stop(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    proc.wait(timeout=60)


def _ids(topics: Path, topic: str) -> list[int]:
    return [k["id"] for _, k, v in events(topics, topic) if k is not None and v is not None]


def test_kill9_then_pending_old_instance_rows_decode_with_the_recorded_schema(
        sqlserver_db: dict[str, Any], tmp_path: Path) -> None:
    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, a INT NULL, note NVARCHAR(20) "
         "NULL)", "INSERT INTO dbo.t VALUES (1, 10, 'n1')")
    enable_cdc(db, "dbo", "t", "dbo_t")
    topics, offsets = tmp_path / "topics", tmp_path / "offsets.json"
    config = tmp_path / "connector.properties"
    config.write_text(properties_text({
        "name": "sqlserver-schema", "connector.class": "sqlserver",
        "database.hostname": db["server"], "database.port": str(db["port"]),
        "database.user": db["user"], "database.names": db["database"],
        "database.encrypt": "false",
        "headwater.sqlserver.driver": "headwater.testing.sqlserver_emulation.dbapi",
        "topic.prefix": "ss", "offset.storage.file.filename": str(offsets),
        "offset.flush.interval.ms": "100", "headwater.topics.dir": str(topics),
        "headwater.topics.segment.ms": "100", "poll.interval.ms": "50",
    }))
    log = tmp_path / "capture.log"
    proc = _start(config, log)
    try:
        wait_for(lambda: snapshot_completed(offsets), 60, what="the snapshot completed")
        tsql(db, "INSERT INTO dbo.t VALUES (2, 20, 'n2')")
        wait_for(lambda: 2 in _ids(topics, "ss.dbo.t"), 60, what="the first insert")
        _stop(proc, signal.SIGKILL)
        tsql(db, "INSERT INTO dbo.t VALUES (3, 30, 'n3')",
             "ALTER TABLE dbo.t DROP COLUMN note", "ALTER TABLE dbo.t ADD b INT NULL",
             "INSERT INTO dbo.t (id, a, b) VALUES (4, 40, 7)")
        enable_cdc(db, "dbo", "t", "dbo_t_v2")
        tsql(db, "INSERT INTO dbo.t (id, a, b) VALUES (5, 50, 8)")
        proc = _start(config, log)
        wait_for(lambda: 5 in _ids(topics, "ss.dbo.t"), 60, what="the pending rows")
        _stop(proc, signal.SIGTERM)
        assert proc.returncode == 0, log.read_text()[-3000:]
    finally:
        _stop(proc, signal.SIGKILL)
    data = {k["id"]: v for _, k, v in events(topics, "ss.dbo.t") if v is not None}
    assert data[3]["after"] == {"id": 3, "a": 30, "note": "n3"}
    assert data[4]["after"] == {"id": 4, "a": 40, "note": None}
    assert data[5]["after"] == {"id": 5, "a": 50, "b": 8}
    raw = {json_of(r.key)["payload"]["id"]: json_of(r.value)
           for r, _k, v in events(topics, "ss.dbo.t") if v is not None}
    after = next(f for f in raw[3]["schema"]["fields"] if f["field"] == "after")
    assert [f["field"] for f in after["fields"]] == ["id", "a", "note"]
    schema_changes = [v for _, _k, v in events(topics, "ss")]
    assert [v["tableChanges"][0]["type"] for v in schema_changes] == ["CREATE", "ALTER"]
    alter = schema_changes[1]
    assert [c["name"] for c in alter["tableChanges"][0]["table"]["columns"]] == [
        "id", "a", "b"]
    at = alter["source"]["commit_lsn"]
    assert data[4]["source"]["commit_lsn"] <= at < data[5]["source"]["commit_lsn"]
    history = [orjson.loads(line) for line in
               (tmp_path / "data" / "history" / "ss.jsonl").read_bytes().splitlines()]
    assert [r["tableChanges"][0]["type"] for r in history] == ["CREATE", "ALTER"]
