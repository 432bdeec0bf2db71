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
