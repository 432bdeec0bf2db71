"""Datastream resources of the service: connection profiles (secrets hidden), discover, a
stream created, started, paused, its errors, deleted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater.testing.localpg import LocalPostgres, wait_for

from .conftest import Served

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


def state(c: httpx.Client, name: str) -> Any:
    return c.get(f"/streams/{name}").json()["state"]


def test_profiles_discover_and_a_stream(pg: LocalPostgres, served: Served, tmp_path: Path
                                        ) -> None:
    pg.create_database("api_s")
    pg.psql("CREATE TABLE items (id INT PRIMARY KEY, name TEXT)", dbname="api_s")
    pg.psql("INSERT INTO items VALUES (1, 'a'), (2, 'b')", dbname="api_s")
    with served.client() as c:
        r = c.post("/connectionProfiles", params={"connectionProfileId": "src"}, json={
            "postgresqlProfile": {"hostname": "127.0.0.1", "port": pg.port,
                                  "username": pg.user, "password": "pw-secret",
                                  "database": "api_s"}})
        assert r.status_code == 201, r.text
        assert r.json()["postgresqlProfile"]["database.password"] == "[hidden]"
        r = c.post("/connectionProfiles", params={"connectionProfileId": "dst"}, json={
            "destinationProfile": {"kind": "topics", "directory": str(tmp_path / "out")}})
        assert r.status_code == 201, r.text
        listed = c.get("/connectionProfiles")
        assert "pw-secret" not in listed.text and len(listed.json()["connectionProfiles"]) == 2
        assert c.get("/connectionProfiles/nope").json()["error_code"] == 404
        found = c.post("/connectionProfiles:discover", json={
            "connectionProfileName": "src", "fullHierarchy": True}).json()
        schemas = found["postgresqlRdbms"]["postgresqlSchemas"]
        public = next(s for s in schemas if s["schema"] == "public")
        assert [t["table"] for t in public["postgresqlTables"]] == ["items"]

        r = c.post("/streams", params={"streamId": "s1"}, json={
            "sourceConfig": {"sourceConnectionProfile": "src", "postgresqlSourceConfig": {
                "includeObjects": {"postgresqlSchemas": [{"schema": "public",
                                                          "postgresqlTables": [
                                                              {"table": "items"}]}]}}},
            "destinationConfig": {"destinationConnectionProfile": "dst"},
            "backfillAll": {}})
        assert r.status_code == 201, r.text
        assert r.json()["state"] == "NOT_STARTED"
        assert c.post("/streams", params={"streamId": "s1"}, json={
            "sourceConfig": {"sourceConnectionProfile": "src"},
            "destinationConfig": {"destinationConnectionProfile": "dst"}}).status_code == 409
        assert c.post("/streams/s1:start").json()["state"] in ("STARTING", "RUNNING")
        wait_for(lambda: state(c, "s1") == "RUNNING", 120, 0.5, "stream RUNNING")
        assert c.get("/streams").json()["streams"][0]["name"] == "s1"
        r = c.post("/streams/s1:drain", params={"timeout": 120})
        assert r.json()["state"] == "PAUSED", r.text
        assert c.patch("/streams/s1", json={"state": "RUNNING"}).json()["state"] in (
            "STARTING", "RUNNING")
        wait_for(lambda: state(c, "s1") == "RUNNING", 120, 0.5, "stream RUNNING again")
        assert c.delete("/streams/s1").status_code == 400  # active: pause first
        assert c.patch("/streams/s1", json={"state": "PAUSED"}).status_code == 200
        wait_for(lambda: state(c, "s1") == "PAUSED", 120, 0.5, "stream PAUSED")
        assert c.get("/streams/s1/errors").json() == {"errors": []}
        assert c.delete("/connectionProfiles/src").status_code == 409  # used by s1
        assert c.delete("/streams/s1").status_code == 204
        assert c.delete("/connectionProfiles/src").status_code == 204


def test_run_positions_and_backfill_jobs(pg: LocalPostgres, served: Served, tmp_path: Path
                                         ) -> None:
    """RunStream's cdcStrategy (an unavailable LSN is a 400 naming it) and the objects'
    backfill jobs: list, startBackfillJob (partial, refused filter, UNSUPPORTED keyless
    table), stopBackfillJob."""
    pg.create_database("api_b")
    pg.psql("CREATE TABLE items (id INT PRIMARY KEY); CREATE TABLE nokey (v INT); "
            "INSERT INTO items VALUES (1), (2)", dbname="api_b")
    with served.client() as c:
        assert c.post("/connectionProfiles", params={"connectionProfileId": "src"}, json={
            "postgresqlProfile": {"hostname": "127.0.0.1", "port": pg.port,
                                  "username": pg.user, "password": "x",
                                  "database": "api_b"}}).status_code == 201
        assert c.post("/connectionProfiles", params={"connectionProfileId": "dst"}, json={
            "destinationProfile": {"kind": "topics", "directory": str(tmp_path / "out")}}
        ).status_code == 201
        assert c.post("/streams", params={"streamId": "b"}, json={
            "sourceConfig": {"sourceConnectionProfile": "src"},
            "destinationConfig": {"destinationConnectionProfile": "dst"},
            "backfillNone": {}}).status_code == 201
        lsn = {"cdcStrategy": {"specificStartPosition": {"postgresqlLsnPosition": {
            "lsn": "0/10"}}}}
        r = c.post("/streams/b:run", json=lsn)
        assert r.status_code == 400 and "postgresqlLsnPosition {lsn: 0/10} is not " \
            "available" in r.text, r.text
        r = c.post("/streams/b:run", json={"cdcStrategy": {}})
        assert r.status_code == 400 and "give exactly one of" in r.text
        assert state(c, "b") == "NOT_STARTED"
        r = c.post("/streams/b:run", json={"cdcStrategy": {"mostRecentStartPosition": {}}})
        assert r.status_code == 200, r.text
        wait_for(lambda: state(c, "b") == "RUNNING", 120, 0.5, "stream RUNNING")

        def jobs() -> dict[str, Any]:
            doc = c.get("/streams/b/objects").json()["streamObjects"]
            return {o["displayName"]: o["backfillJob"] for o in doc}

        assert {j["state"] for j in jobs().values()} == {"NOT_STARTED"}
        r = c.post("/streams/b/objects/public.nokey:startBackfillJob")
        assert r.status_code == 400 and "no primary key" in r.text
        assert jobs()["public.nokey"]["state"] == "UNSUPPORTED"
        r = c.post("/streams/b/objects/public.items:startBackfillJob",
                   json={"filter": "id <= "})
        assert r.status_code == 400 and "backfill of public.items: filter 'id <= ' is not " \
            "valid" in r.text, r.text
        r = c.post("/streams/b/objects/public.items:startBackfillJob", json={"filter": "id <= 1"})
        assert r.json()["object"]["backfillJob"]["state"] == "PENDING", r.text
        wait_for(lambda: jobs()["public.items"]["state"] == "COMPLETED", 120, 0.5,
                 "the backfill job COMPLETED")
        r = c.post("/streams/b/objects/public.items:stopBackfillJob")
        assert r.json()["object"]["backfillJob"]["state"] == "STOPPED", r.text
        assert c.post("/streams/b:drain", params={"timeout": 120}).json()["state"] == "PAUSED"
        assert c.delete("/streams/b").status_code == 204
