"""The REST API without a database: plugins, validation, errors, secrets, lifecycle of a
connector whose database is not there (FAILED with a trace), offsets while STOPPED."""

from __future__ import annotations

from typing import Any

from headwater.testing.localpg import free_port

from .conftest import Served, wait_state

PG = "io.debezium.connector.postgresql.PostgresConnector"


def pg_config(**extra: str) -> dict[str, Any]:
    return {"connector.class": PG, "database.hostname": "127.0.0.1",
            "database.port": free_port(), "database.user": "u",
            "database.password": "s3cret-pw", "database.dbname": "d", "topic.prefix": "p",
            "errors.max.retries": 0, **extra}


def test_root_plugins_and_version(served: Served) -> None:
    with served.client() as c:
        root = c.get("/").json()
        assert set(root) == {"version", "commit", "kafka_cluster_id"}
        plugins = c.get("/connector-plugins").json()
        classes = {p["class"] for p in plugins}
        assert PG in classes and "io.debezium.connector.mysql.MySqlConnector" in classes
        assert all(p["type"] == "source" and p["version"] for p in plugins)
        keys = c.get(f"/connector-plugins/{PG}/config").json()
        pw = next(k for k in keys if k["name"] == "database.password")
        assert pw["type"] == "PASSWORD"
        assert c.get("/connector-plugins/nope/config").json()["error_code"] == 404


def test_validate_reports_per_property_errors_and_hides_secrets(served: Served) -> None:
    with served.client() as c:
        cfg = pg_config()
        del cfg["database.hostname"]
        cfg["database.port"] = "not-a-port"
        infos = c.put(f"/connector-plugins/{PG}/config/validate", json=cfg).json()
        assert infos["name"] == PG and infos["error_count"] >= 2
        by = {x["value"]["name"]: x["value"] for x in infos["configs"]}
        assert by["database.hostname"]["errors"] and by["database.port"]["errors"]
        assert by["database.password"]["value"] == "[hidden]"
        assert "s3cret-pw" not in str(infos)
        ok = c.put(f"/connector-plugins/{PG}/config/validate", json=pg_config()).json()
        assert ok["error_count"] == 0, ok


def test_errors_have_kafka_connect_shape(served: Served) -> None:
    with served.client() as c:
        r = c.get("/connectors/missing")
        assert r.status_code == 404 and r.json()["error_code"] == 404
        r = c.post("/connectors", json={"name": "bad", "config": {"connector.class": PG}})
        assert r.status_code == 400 and "database.hostname" in r.json()["message"]
        r = c.post("/connectors", content=b"{not json", headers={
            "Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error_code"] == 400
        assert c.get("/connectors").json() == []


def test_connector_lifecycle_without_database(served: Served) -> None:
    with served.client() as c:
        r = c.post("/connectors", json={"name": "pg1", "config": pg_config()})
        assert r.status_code == 201, r.text
        info = r.json()
        assert info["name"] == "pg1" and info["type"] == "source"
        assert info["tasks"] == [{"connector": "pg1", "task": 0}]
        assert info["config"]["database.password"] == "[hidden]"
        assert c.post("/connectors", json={"name": "pg1", "config": pg_config()}
                      ).status_code == 409
        failed = wait_state(c, "pg1", "FAILED")
        assert failed["tasks"][0]["state"] == "FAILED" and failed["tasks"][0]["trace"]
        expanded = c.get("/connectors", params=[("expand", "status"), ("expand", "info")]
                         ).json()
        assert expanded["pg1"]["status"]["connector"]["state"] == "FAILED"
        assert expanded["pg1"]["info"]["config"]["database.password"] == "[hidden]"
        tasks = c.get("/connectors/pg1/tasks").json()
        assert tasks[0]["id"] == {"connector": "pg1", "task": 0}
        assert "s3cret-pw" not in c.get("/connectors/pg1/tasks").text
        r = c.post("/connectors/pg1/restart", params={"includeTasks": "true",
                                                      "onlyFailed": "true"})
        assert r.status_code == 202 and r.json()["connector"]["state"] == "RESTARTING"
        wait_state(c, "pg1", "FAILED")
        assert c.put("/connectors/pg1/pause").status_code == 202
        wait_state(c, "pg1", "PAUSED")
        # offsets only while STOPPED
        r = c.patch("/connectors/pg1/offsets", json={"offsets": []})
        assert r.status_code == 400 and "STOPPED" in r.json()["message"]
        assert c.put("/connectors/pg1/stop").status_code == 204
        status = c.get("/connectors/pg1/status").json()
        assert status["connector"]["state"] == "STOPPED" and status["tasks"] == []
        assert c.get("/connectors/pg1/offsets").json() == {"offsets": []}
        part = {"server": "p"}
        r = c.patch("/connectors/pg1/offsets", json={"offsets": [
            {"partition": part, "offset": {"lsn": 42}}]})
        assert r.status_code == 200, r.text
        assert c.get("/connectors/pg1/offsets").json() == {
            "offsets": [{"partition": part, "offset": {"lsn": 42}}]}
        r = c.patch("/connectors/pg1/offsets", json={"offsets": [
            {"partition": {"server": "other"}, "offset": {"lsn": 1}}]})
        assert r.status_code == 400
        assert c.delete("/connectors/pg1/offsets").json()["message"].startswith(
            "The offsets for this connector have been reset")
        assert c.get("/connectors/pg1/offsets").json() == {"offsets": []}
        # a config read back ([hidden] password) and sent again keeps the password
        cfg = c.get("/connectors/pg1/config").json()
        assert cfg["database.password"] == "[hidden]"
        cfg["poll.interval.ms"] = "200"
        assert c.put("/connectors/pg1/config", json=cfg).status_code == 200
        assert c.get("/connectors/pg1/topics").json() == {"pg1": {"topics": []}}
        assert c.put("/connectors/pg1/resume").status_code == 202
        wait_state(c, "pg1", "FAILED")
        assert c.delete("/connectors/pg1").status_code == 204
        assert c.get("/connectors").json() == []
        # PUT config of a new name creates it
        r = c.put("/connectors/pg2/config", json=pg_config())
        assert r.status_code == 201 and r.json()["name"] == "pg2"


def test_a_property_accepted_but_not_honoured_is_refused(served: Served) -> None:
    """`headwater.ops.*` passes the connector's own validation: a misspelt key there would
    be stored and silently ignored, so the service refuses it."""
    cfg = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": "127.0.0.1", "database.user": "u", "database.dbname": "d",
           "topic.prefix": "p", "headwater.ops.log.formt": "json"}
    with served.client() as c:
        r = c.post("/connectors", json={"name": "typo", "config": cfg})
        assert r.status_code == 400, r.text
        assert "headwater.ops.log.formt: unknown property" in r.json()["message"]
        cfg["headwater.ops.log.format"] = cfg.pop("headwater.ops.log.formt")
        cfg["headwater.ops.log.format"] = "xml"
        r = c.post("/connectors", json={"name": "typo", "config": cfg})
        assert r.status_code == 400 and "unknown log format" in r.json()["message"]
