"""A PostgreSQL connector and a Delta SCD1 pipeline in one service, both over the REST API:
the Delta table equals the source, /metrics counts exactly the changes applied, and after a
kill -9 of the service the pipeline resumes from its checkpoint and keeps the table equal."""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater.ops.status import pid_alive
from headwater.testing.localpg import LocalPostgres
from headwater.testing.timeouts import scaled

from .conftest import Served, wait_state

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


def wait_pipeline(c: httpx.Client, name: str, state: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + scaled(timeout)
    doc: Any = None
    while time.monotonic() < deadline:
        doc = c.get(f"/pipelines/{name}/status").json()
        if doc.get("state") == state:
            return doc
        time.sleep(0.3)
    raise AssertionError(f"pipeline {name} not {state}: {doc}")


def delta_rows(path: Path) -> dict[int, str]:
    from headwater.pipeline.delta_target import read_table

    try:
        rows = read_table(path).to_pylist()
    except Exception:  # not created yet
        return {}
    return {int(r["id"]): str(r["s"]) for r in rows}


def source_rows(pg: LocalPostgres, db: str) -> dict[int, str]:
    conn = pg.connect(db)
    cur = conn.cursor()
    cur.execute("SELECT id, s FROM t")
    rows = {int(i): str(s) for i, s in cur.fetchall()}
    conn.close()
    return rows


def insert(pg: LocalPostgres, db: str, ids: range) -> None:
    pg.psql("INSERT INTO t SELECT g, 'row ' || g FROM generate_series("
            f"{ids.start}, {ids.stop - 1}) g", dbname=db)


def wait_equal(pg: LocalPostgres, db: str, table: Path, timeout: float = 120) -> dict[int, str]:
    want = source_rows(pg, db)
    deadline = time.monotonic() + scaled(timeout)
    got = delta_rows(table)
    while got != want and time.monotonic() < deadline:
        time.sleep(0.5)
        got = delta_rows(table)
    assert got == want, f"{len(got)} rows in Delta vs {len(want)} in the source"
    return want


def metric(text: str, name: str, pipeline: str) -> float:
    found = re.search(rf'^{name}\{{pipeline="{pipeline}"\}} (\S+)$', text, re.M)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


def test_pipeline_in_the_service_survives_kill9(
        pg: LocalPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_SPARK_MASTER", "local[1]")
    monkeypatch.setenv("HEADWATER_SPARK_DRIVER_MEMORY", "1g")
    db = "srv_pipe"
    pg.create_database(db)
    pg.psql("CREATE TABLE t (id INT PRIMARY KEY, s TEXT)", dbname=db)
    insert(pg, db, range(1, 51))  # the snapshot's rows
    connector = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1", "database.port": pg.port, "database.user": pg.user,
        "database.password": "unused", "database.dbname": db, "topic.prefix": "pgp",
        "plugin.name": "pgoutput", "slot.name": "srv_pipe_slot",
        "publication.name": "srv_pipe_pub", "poll.interval.ms": 100,
        "headwater.topics.segment.ms": 200}
    # The topic log is found through the connector's topic.prefix; the checkpoint and the
    # Delta tables go under the pipeline's own directory.
    pipeline = {"topic.prefix": "pgp", "headwater.pipeline.mode": "scd1",
                "headwater.pipeline.trigger.interval.ms": 300,
                "headwater.pipeline.jdbc.password": "not-shown"}
    table = tmp_path / "data" / "pipelines" / "p1" / "delta" / "public" / "t"
    served = Served(tmp_path / "data").start()
    try:
        with served.client() as c:
            r = c.post("/pipelines", json={"name": "bad", "config": {
                "topic.prefix": "pgp", "headwater.pipeline.mode": "scd9"}})
            assert r.status_code == 400 and "headwater.pipeline.mode" in r.text, r.text
            assert c.get("/pipelines/nope/status").status_code == 404
            assert c.post("/connectors", json={"name": "pg", "config": connector}
                          ).status_code == 201
            wait_state(c, "pg", "RUNNING", 120)
            r = c.post("/pipelines", json={"name": "p1", "config": pipeline})
            assert r.status_code == 201, r.text
            assert r.json()["config"]["headwater.pipeline.jdbc.password"] == "[hidden]"
            assert c.get("/pipelines").json() == ["p1"]
            wait_pipeline(c, "p1", "RUNNING", 120)
            insert(pg, db, range(51, 101))
            want = wait_equal(pg, db, table)
            deadline = time.monotonic() + scaled(30)
            while time.monotonic() < deadline:  # the worker reports once a second
                text = c.get("/metrics").text
                if metric(text, "headwater_pipeline_changes_applied_total", "p1") == len(want):
                    break
                time.sleep(0.5)
            assert metric(text, "headwater_pipeline_changes_applied_total", "p1") == len(want)
            assert 'headwater_pipeline_lag_records{pipeline="p1",topic="pgp.public.t"} 0' in text
            assert metric(text, "headwater_pipeline_freshness_seconds", "p1") >= 0
            status = c.get("/pipelines/p1/status").json()
            assert status["metrics"]["rows_by_table"] == {"public.t": len(want)}
        db_file = sqlite3.connect(served.data_dir / "catalog.sqlite")
        pids = [p for (p,) in db_file.execute("SELECT pid FROM pipelines") if p]
        db_file.close()
        assert len(pids) == 1
        served.kill9()  # the pipeline's worker dies with it
        deadline = time.monotonic() + scaled(30)
        while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(pid_alive(p) for p in pids), "the pipeline outlived the service"
        insert(pg, db, range(101, 151))  # while the service is down
        served.start()
        with served.client() as c:
            wait_pipeline(c, "p1", "RUNNING", 120)
            insert(pg, db, range(151, 201))
            want = wait_equal(pg, db, table)
            assert len(want) == 200
            deadline = time.monotonic() + scaled(30)
            applied = -1
            while time.monotonic() < deadline and applied != len(want):
                applied = c.get("/pipelines/p1/status").json()["metrics"]["changes_applied"]
                time.sleep(0.5)
            assert applied == len(want)  # counted once each, across the kill
            r = c.put("/pipelines/p1/stop")
            assert r.status_code == 204
            assert c.get("/pipelines/p1/status").json()["state"] == "STOPPED"
            assert c.delete("/pipelines/p1").status_code == 204
    finally:
        served.close()
