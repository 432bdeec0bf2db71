"""SQL Server as a stream source (Datastream's model), on the CDC EMULATION (not a live server),
with the stream run in a thread (ThreadLauncher, so no worker process per step):

* cdcStrategy: a first start at `specificStartPosition.sqlServerLsnPosition` streams exactly
  the transactions committed from that LSN on; `mostRecentStartPosition` skips what was
  written while paused; `nextAvailableStartPosition` reads from the oldest LSN the capture
  instances hold; an LSN before that (after a cleanup) or after `sys.fn_cdc_get_max_lsn()`
  is refused naming the position, recorded as START_POSITION_UNAVAILABLE, and the stream
  stays PAUSED; a malformed LSN names the field.
* backfill jobs: refused without `signal.data.collection` (naming it), NOT_STARTED, PENDING,
  ACTIVE, COMPLETED (the filtered rows read as incremental snapshot READs), STOPPED, FAILED
  (a table dropped between the request and the resume; the stream goes on), UNSUPPORTED (no
  primary key), and the errors for a table without a capture instance and for a bad filter.
* discover's shape and depths (the unified types: test_datastream_type_table.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from headwater.cli import app
from headwater.connectors.sqlserver.lsn import lsn_text
from headwater.streams.catalog import Catalog
from headwater.streams.discover import discover
from headwater.streams.jobs import BackfillError, BackfillJobs, JobState
from headwater.streams.model import ObjectRef, StreamSpec
from headwater.streams.positions import CdcStrategy, CdcStrategyError, StartPositionUnavailable
from headwater.streams.profiles import ProfileError, destination_profile, source_profile
from headwater.streams.states import State
from headwater.streams.supervisor import Supervisor, ThreadLauncher
from headwater.testing.localpg import wait_for
from headwater.testing.replay import events
from headwater.testing.sqlserver_emulation import dbapi
from tests.sqlserver.conftest import enable_cdc, tsql

pytestmark = pytest.mark.integration

DRIVER = "headwater.testing.sqlserver_emulation.dbapi"


def _profile(db: dict[str, Any], **extra: str) -> Any:
    return source_profile("ss", "sqlserver", {
        "database.hostname": db["server"], "database.port": str(db["port"]),
        "database.user": db["user"], "database.names": db["database"],
        "database.encrypt": "false", "headwater.sqlserver.driver": DRIVER, **extra})


def _max_lsn(db: dict[str, Any]) -> str:
    conn = dbapi.connect(**db)
    try:
        cur = conn.cursor()
        cur.execute("SELECT sys.fn_cdc_get_max_lsn()")
        return str(lsn_text(bytes(cur.fetchone()[0])))
    finally:
        conn.close()


def _cleanup(db: dict[str, Any]) -> None:
    """What SQL Server's cleanup job does: the change tables' start LSN moves past every
    change written so far, and the rows below it are deleted."""
    conn = dbapi.connect(**db)
    try:
        cur = conn._inner.cursor()
        cur.execute("UPDATE cdc.change_tables SET start_lsn = "
                    "sys.fn_cdc_increment_lsn(sys.fn_cdc_get_max_lsn())")
        cur.execute('DELETE FROM cdc."dbo_t_CT" WHERE "__$start_lsn" < '
                    "(SELECT min(start_lsn) FROM cdc.change_tables)")
        conn.commit()
    finally:
        conn.close()


class Env:
    def __init__(self, db: dict[str, Any], root: Path, **props: str) -> None:
        self.db = db
        self.cat = Catalog(root / "data")
        self.cat.add_profile(_profile(db, **props))
        self.cat.add_profile(destination_profile("out", "topics", str(root / "topics")))
        self.topics = root / "topics"
        self.launcher = ThreadLauncher()
        self.sup = Supervisor(self.cat, self.launcher)

    def stream(self, name: str, *include: ObjectRef, **props: str) -> None:
        self.cat.create_stream(StreamSpec(name, "ss", "out", include, backfill="none",
                                          properties={"poll.interval.ms": "50",
                                                      "headwater.topics.segment.ms": "200",
                                                      **props}))

    def payloads(self, name: str, table: str = "t") -> list[dict[str, Any]]:
        topic = f"{name}.dbo.{table}"  # docs/sqlserver.md: prefix.schema.table
        if not (self.topics / name / topic).exists():
            return []
        return [v for _, _, v in events(self.topics / name, topic) if v is not None]

    def ids(self, name: str, ops: str = "c") -> set[int]:
        return {p["after"]["id"] for p in self.payloads(name) if p["op"] in ops}

    def running(self, name: str) -> None:
        assert self.sup.wait(name, frozenset({State.RUNNING, State.NOT_STARTED,
                                              State.FAILED}), 60).state is State.RUNNING, \
            self.cat.errors(name)

    def pause(self, name: str) -> None:
        self.sup.pause(name)
        assert self.sup.wait(name, frozenset({State.PAUSED}), 60).state is State.PAUSED

    def stop_all(self) -> None:
        for worker, thread in self.launcher.workers.values():
            worker.request_stop()
            thread.join(60)


@pytest.fixture
def env(sqlserver_db: dict[str, Any], tmp_path: Path) -> Iterator[Env]:
    tsql(sqlserver_db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, v INT NULL)")
    enable_cdc(sqlserver_db, "dbo", "t")
    e = Env(sqlserver_db, tmp_path)
    try:
        yield e
    finally:
        e.stop_all()


def _insert(db: dict[str, Any], lo: int, hi: int) -> None:
    tsql(db, *(f"INSERT INTO dbo.t (id, v) VALUES ({i}, {i})" for i in range(lo, hi + 1)))


def _lsn(lsn: str) -> CdcStrategy:
    return CdcStrategy.parse({"specificStartPosition": {"sqlServerLsnPosition": {"lsn": lsn}}})


def test_start_positions(env: Env) -> None:
    db = env.db
    env.stream("s", ObjectRef("dbo", "t"))
    _insert(db, 1, 2)
    _insert(db, 3, 3)
    start = _max_lsn(db)  # the commit LSN of row 3's transaction
    _insert(db, 4, 5)

    # A first start at a specific LSN: the transactions from it on, none before.
    env.sup.start("s", _lsn(start))
    env.running("s")
    wait_for(lambda: env.ids("s") >= {3, 4, 5}, 60, what="rows from the LSN")
    _insert(db, 6, 6)
    wait_for(lambda: 6 in env.ids("s"), 60, what="a row streamed after the start")
    assert env.ids("s") == {3, 4, 5, 6}
    env.pause("s")

    # mostRecentStartPosition: what was written while paused is skipped.
    _insert(db, 7, 8)
    env.sup.resume("s", CdcStrategy.parse({"mostRecentStartPosition": {}}))
    env.running("s")
    _insert(db, 9, 9)
    wait_for(lambda: 9 in env.ids("s"), 60, what="a row after mostRecentStartPosition")
    assert not env.ids("s") & {7, 8}
    env.pause("s")

    # nextAvailableStartPosition: from the oldest LSN the change tables hold (rows 1 to 9).
    env.sup.resume("s", CdcStrategy.parse({"nextAvailableStartPosition": {}}))
    env.running("s")
    wait_for(lambda: env.ids("s") >= set(range(1, 10)), 60, what="every row from the oldest")
    env.pause("s")

    # Outside the capture instances' range: refused, named, recorded; nothing starts.
    _cleanup(db)
    for lsn, why in ((start, "before the oldest LSN the capture instances of database"),
                     ("7fffffff:00000000:0000", "after the newest LSN of database")):
        with pytest.raises(StartPositionUnavailable) as info:
            env.sup.resume("s", _lsn(lsn))
        text = str(info.value)
        assert f"the start position sqlServerLsnPosition {{lsn: {lsn}}} is not available" \
            in text, text
        assert why in text, text
        assert env.cat.stream("s").state is State.PAUSED
        last = env.cat.errors("s")[-1].as_json()
        assert last["reason"] == "START_POSITION_UNAVAILABLE"
        assert last["details"]["position"] == f"sqlServerLsnPosition {{lsn: {lsn}}}"
    with pytest.raises(CdcStrategyError, match=re.escape(
            "sqlServerLsnPosition {lsn: 12/34}: not an SQL Server LSN")):
        _lsn("12/34")
    # Both written forms of an LSN are the same position.
    assert _lsn("0x0000002B000001400003").position == {"lsn": "0x0000002B000001400003"}


def test_backfill_jobs(sqlserver_db: dict[str, Any], tmp_path: Path) -> None:
    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, v INT NULL)",
         "CREATE TABLE dbo.nokey (id INT NULL)",
         "CREATE TABLE dbo.plain (id INT NOT NULL PRIMARY KEY)",
         "CREATE TABLE dbo.dbz_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, "
         "type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL)")
    tsql(db, "INSERT INTO dbo.t (id, v) VALUES "
         + ", ".join(f"({i}, {i})" for i in range(1, 321)))
    for table in ("t", "nokey", "dbz_signal"):
        enable_cdc(db, "dbo", table)
    env = Env(db, tmp_path)
    try:
        jobs = BackfillJobs(env.cat)
        # Without a signal table: refused, naming the property.
        env.stream("bare", ObjectRef("dbo", "t"))
        with pytest.raises(BackfillError, match=r"signal.data.collection=<database>.<schema>"
                           r".<table>"):
            jobs.start("bare", ObjectRef("dbo", "t"))
        env.stream("s", ObjectRef("dbo"),
                   **{"signal.data.collection": f"{db['database']}.dbo.dbz_signal",
                      # one row per chunk (about 15 ms each here): the backfill of 300
                      # rows lasts seconds, so the worker's once-a-second look sees ACTIVE
                      "incremental.snapshot.chunk.size": "1"})
        assert jobs.job("s", ObjectRef("dbo", "t")).state is JobState.NOT_STARTED
        with pytest.raises(BackfillError, match="no primary key"):
            jobs.start("s", ObjectRef("dbo", "nokey"))
        assert jobs.job("s", ObjectRef("dbo", "nokey")).state is JobState.UNSUPPORTED
        with pytest.raises(BackfillError, match="no capture instance"):
            jobs.start("s", ObjectRef("dbo", "plain"))
        with pytest.raises(BackfillError, match="no such table"):
            jobs.start("s", ObjectRef("dbo", "missing"))
        with pytest.raises(BackfillError, match="filter 'nope > 1' is not valid"):
            jobs.start("s", ObjectRef("dbo", "t"), "nope > 1")
        assert jobs.job("s", ObjectRef("dbo", "t")).state is JobState.NOT_STARTED

        env.sup.start("s")
        env.running("s")
        job = jobs.start("s", ObjectRef("dbo", "t"), "id <= 300")
        assert job.state is JobState.PENDING
        wait_for(lambda: jobs.job("s", ObjectRef("dbo", "t")).state is JobState.ACTIVE,
                 60, 0.05, what="the backfill job ACTIVE")
        wait_for(lambda: jobs.job("s", ObjectRef("dbo", "t")).state is JobState.COMPLETED,
                 60, what="the backfill job COMPLETED")
        reads = [p for p in env.payloads("s") if p["op"] == "r"]
        assert sorted(p["after"]["id"] for p in reads) == list(range(1, 301))
        assert {p["source"]["snapshot"] for p in reads} == {"incremental"}
        history = [(h["to"], h["detail"]) for h in env.cat.history("s")
                   if h["action"] == "backfill_job"]
        assert [h for h in history if h[1] == "dbo.t"] == [
            ("PENDING", "dbo.t"), ("ACTIVE", "dbo.t"), ("COMPLETED", "dbo.t")]
        # The signal table is captured, so its watermark rows are in the stream's output
        # too (docs/streams.md).
        assert any(v is not None for _, _, v in events(env.topics / "s", "s.dbo.dbz_signal"))
        stopped = jobs.stop("s", ObjectRef("dbo", "t"))
        assert stopped.state is JobState.STOPPED
        env.pause("s")
        # FAILED: a backfill asked for while paused, of a table dropped before the stream
        # resumes; the job fails naming why and the stream goes on.
        tsql(db, "CREATE TABLE dbo.gone (id INT NOT NULL PRIMARY KEY)")
        enable_cdc(db, "dbo", "gone")
        assert jobs.start("s", ObjectRef("dbo", "gone")).state is JobState.PENDING
        tsql(db, "DROP TABLE dbo.gone")
        env.sup.resume("s")
        env.running("s")
        wait_for(lambda: jobs.job("s", ObjectRef("dbo", "gone")).state is JobState.FAILED, 60,
                 what="the backfill job of a dropped table FAILED")
        failed = jobs.job("s", ObjectRef("dbo", "gone"))
        assert failed.errors[-1]["reason"] == "BACKFILL_FAILED"
        assert f"table {db['database']}.dbo.gone is not captured (no change table" in \
            failed.errors[-1]["message"]
        assert env.cat.stream("s").state is State.RUNNING
        env.pause("s")
    finally:
        env.stop_all()


def test_profile_and_discover(sqlserver_db: dict[str, Any], tmp_path: Path) -> None:
    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, name NVARCHAR(20) NULL)",
         "CREATE SCHEMA inv", "CREATE TABLE inv.items (sku VARCHAR(8) NOT NULL PRIMARY KEY)")
    enable_cdc(db, "dbo", "t")
    with pytest.raises(ProfileError, match="a SQL Server profile names one database"):
        source_profile("two", "sqlserver", {"database.hostname": "h", "database.user": "u",
                                             "database.names": "a,b"})
    profile = _profile(db)
    # The CLI: a profile of kind sqlserver, discovered as JSON.
    data = tmp_path / "data"
    args = ["profiles", "create", "ms", "--kind", "sqlserver", "--data-dir", str(data)]
    for key, value in profile.properties.items():
        args += ["-p", f"{key}={value}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(app, ["profiles", "discover", "ms", "--depth", "2", "--json",
                                      "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.output) == {"sqlServerRdbms": {"schemas": [
        {"schema": "dbo", "tables": [{"table": "t"}]},
        {"schema": "inv", "tables": [{"table": "items"}]}]}}
    assert discover(profile, 1) == {"sqlServerRdbms": {"schemas": [{"schema": "dbo"},
                                                                   {"schema": "inv"}]}}
    assert discover(profile, 2, "inv") == {"sqlServerRdbms": {"schemas": [
        {"schema": "inv", "tables": [{"table": "items"}]}]}}
    (schema,) = discover(profile, 3, "dbo", "t")["sqlServerRdbms"]["schemas"]
    assert schema["tables"] == [{"table": "t", "columns": [
        {"column": "id", "dataType": "INT", "unifiedType": "INTEGER", "length": None,
         "precision": schema["tables"][0]["columns"][0]["precision"], "scale":
         schema["tables"][0]["columns"][0]["scale"], "primaryKey": True, "nullable": False,
         "ordinalPosition": 1},
        {"column": "name", "dataType": "NVARCHAR", "unifiedType": "STRING", "length": 20,
         "precision": None, "scale": None, "primaryKey": False, "nullable": True,
         "ordinalPosition": 2}]}]


def test_rest_profile_stream_and_refused_run(sqlserver_db: dict[str, Any],
                                             tmp_path: Path) -> None:
    """The service's Datastream routes in process: a `sqlServerProfile` (Datastream's
    `database` for database.names), discover, a stream with `sqlServerSourceConfig`, its
    object list and backfill job objects, and RunStream at an LSN after the newest refused
    with a 400 naming it (nothing starts)."""
    from fastapi.testclient import TestClient

    from headwater.server.app import build_app
    from headwater.server.service import Service

    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY)")
    enable_cdc(db, "dbo", "t")
    svc = Service.open(tmp_path / "svc", "127.0.0.1:0")
    try:
        c = TestClient(build_app(svc))
        r = c.post("/connectionProfiles", params={"connectionProfileId": "ms"}, json={
            "sqlServerProfile": {"hostname": db["server"], "port": db["port"],
                                 "username": db["user"], "password": "pw-secret",
                                 "database": db["database"], "database.encrypt": "false",
                                 "headwater.sqlserver.driver": DRIVER}})
        assert r.status_code == 201, r.text
        shown = r.json()["sqlServerProfile"]
        assert shown["database.names"] == db["database"]
        assert shown["database.password"] == "[hidden]" and "pw-secret" not in r.text
        r = c.post("/connectionProfiles", params={"connectionProfileId": "out"}, json={
            "destinationProfile": {"kind": "topics", "directory": str(tmp_path / "out")}})
        assert r.status_code == 201, r.text
        found = c.post("/connectionProfiles:discover", json={
            "connectionProfileName": "ms", "hierarchyDepth": 2}).json()
        assert found == {"sqlServerRdbms": {"schemas": [{"schema": "dbo", "tables": [
            {"table": "t"}]}]}}
        objects = {"schemas": [{"schema": "dbo", "tables": [{"table": "t"}]}]}
        r = c.post("/streams", params={"streamId": "s"}, json={
            "sourceConfig": {"sourceConnectionProfile": "ms",
                             "sqlServerSourceConfig": {"includeObjects": objects}},
            "destinationConfig": {"destinationConnectionProfile": "out"},
            "backfillNone": {}})
        assert r.status_code == 201, r.text
        assert r.json()["sourceConfig"]["sqlServerSourceConfig"]["includeObjects"] == objects
        listed = c.get("/streams/s/objects").json()
        assert "dbo.t" in str(listed) and "NOT_STARTED" in str(listed)
        lsn = "7fffffff:00000000:0000"
        r = c.post("/streams/s:run", json={"cdcStrategy": {"specificStartPosition": {
            "sqlServerLsnPosition": {"lsn": lsn}}}})
        assert r.status_code == 400, r.text
        assert f"sqlServerLsnPosition {{lsn: {lsn}}} is not available" in r.text
        assert "after the newest LSN" in r.text
        assert c.get("/streams/s").json()["state"] == "NOT_STARTED"
    finally:
        svc.close()
