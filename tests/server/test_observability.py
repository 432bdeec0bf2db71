"""`/metrics` of `headwater serve` against a real PostgreSQL connector: Debezium's names and
labels, and values that match what happened (events seen = events in the topic, a full free
queue when idle, a lag behind the source that does not grow while idle)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from headwater.ops.prometheus import parse
from headwater.testing.localpg import LocalPostgres
from headwater.testing.replay import events
from headwater.testing.timeouts import scaled

from .conftest import Served, wait_state

pytestmark = [pytest.mark.integration]
CAPACITY = 4096


@pytest.fixture(scope="module")
def pg() -> Iterator[LocalPostgres]:
    server = LocalPostgres().start()
    try:
        yield server
    finally:
        server.cleanup()


def scrape(c: httpx.Client) -> dict[tuple[str, str], float]:
    """{(metric, context): value} of connector `pgm`."""
    r = c.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out: dict[tuple[str, str], float] = {}
    for (name, labels), value in parse(r.text).items():
        lab = dict(labels)
        if name.startswith("debezium_metrics_") and lab.get("name") == "pgm":
            assert lab["plugin"] == "postgres"
            if "table" not in lab:
                out[(name.removeprefix("debezium_metrics_"), lab["context"])] = value
    return out


def seen(m: dict[tuple[str, str], float]) -> int:
    return int(m.get(("TotalNumberOfEventsSeen", "snapshot"), 0)
               + m.get(("TotalNumberOfEventsSeen", "streaming"), 0))


def topic_events(root: Path) -> int:
    try:
        return sum(1 for _, _, v in events(root, "pgm.public.t") if v is not None)
    except FileNotFoundError:
        return 0


def wait_metrics(c: httpx.Client, ok: object, timeout: float = 60) -> dict[tuple[str, str],
                                                                            float]:
    deadline = time.monotonic() + scaled(timeout)
    m = scrape(c)
    while not ok(m) and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.3)
        m = scrape(c)
    return m


def test_metrics_idle_and_under_load(pg: LocalPostgres, served: Served) -> None:
    pg.create_database("metrics_db")
    pg.psql("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL); "
            "INSERT INTO t SELECT g, 0 FROM generate_series(1, 25) g", dbname="metrics_db")
    cfg = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": "127.0.0.1", "database.port": pg.port,
           "database.user": pg.user, "database.password": "unused",
           "database.dbname": "metrics_db", "topic.prefix": "pgm", "plugin.name": "pgoutput",
           "slot.name": "metrics_slot", "publication.name": "metrics_pub",
           "poll.interval.ms": 100, "max.queue.size": CAPACITY, "max.batch.size": 512,
           "headwater.topics.segment.ms": 200,
           "notification.enabled.channels": "log,sink,jmx",
           "notification.sink.topic.name": "pgm_notifications"}
    root = served.data_dir / "connectors" / "pgm" / "topics"
    with served.client() as c:
        assert c.post("/connectors", json={"name": "pgm", "config": cfg}).status_code == 201
        wait_state(c, "pgm", "RUNNING", 120)
        m = wait_metrics(c, lambda m: m.get(("SnapshotCompleted", "snapshot")) == 1
                         and m.get(("Connected", "streaming")) == 1)
        assert m[("TotalNumberOfEventsSeen", "snapshot")] == 25
        assert m[("TotalTableCount", "snapshot")] == 1
        # Idle after the snapshot: the whole queue is free, nothing streamed yet.
        assert m[("QueueTotalCapacity", "streaming")] == CAPACITY
        assert m[("QueueRemainingCapacity", "streaming")] == CAPACITY
        assert m[("MilliSecondsBehindSource", "streaming")] == -1
        assert ("MilliSecondsBehindSourceP50", "streaming") not in m  # null: not exported
        # Debezium's initial snapshot notifications, on the REST endpoint and the sink topic.
        found = c.get("/connectors/pgm/notifications").json()["notifications"]
        assert [n["type"] for n in found] == ["STARTED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED",
                                              "COMPLETED"]
        assert {n["aggregateType"] for n in found} == {"Initial Snapshot"}
        assert found[1]["additionalData"]["current_collection_in_progress"] == "public.t"
        assert found[2]["additionalData"]["total_rows_scanned"] == "25"
        sunk = [v for _, _, v in events(root, "pgm_notifications")]
        assert [v["type"] for v in sunk] == [n["type"] for n in found]
        assert c.get("/connectors/nope/notifications").status_code == 404

        stop = threading.Event()
        written = [0]

        def load() -> None:
            conn = pg.connect("metrics_db", autocommit=True)
            cur = conn.cursor()
            i = 100
            while not stop.is_set():
                cur.execute("INSERT INTO t SELECT g, 1 FROM generate_series(%s, %s) g",
                            (i, i + 19))
                written[0] += 20
                i += 20
                time.sleep(0.01)
            conn.close()

        loader = threading.Thread(target=load, daemon=True)
        loader.start()
        try:
            time.sleep(3)
            busy = scrape(c)
            assert busy[("TotalNumberOfEventsSeen", "streaming")] > 0
            assert busy[("MilliSecondsBehindSource", "streaming")] >= 0
        finally:
            stop.set()
            loader.join(30)
        assert written[0] > 100
        total = 25 + written[0]
        m = wait_metrics(c, lambda m: seen(m) >= total, 120)
        assert seen(m) == total
        deadline = time.monotonic() + scaled(60)
        while topic_events(root) < total and time.monotonic() < deadline:
            time.sleep(0.3)
        assert topic_events(root) == seen(m) == total
        assert m[("NumberOfCommittedTransactions", "streaming")] >= written[0] // 20
        # Idle: the queue is free again and the lag is the last event's, not growing.
        first = wait_metrics(c, lambda m: m[("QueueRemainingCapacity", "streaming")]
                             == CAPACITY)
        assert first[("QueueRemainingCapacity", "streaming")] == CAPACITY
        lag = first[("MilliSecondsBehindSource", "streaming")]
        assert 0 <= lag < 30_000
        time.sleep(2.5)
        second = scrape(c)
        assert second[("MilliSecondsBehindSource", "streaming")] == lag
        assert (second[("MilliSecondsSinceLastEvent", "streaming")]
                >= first[("MilliSecondsSinceLastEvent", "streaming")] + 2000)
        assert second[("QueueRemainingCapacity", "streaming")] == CAPACITY
        # Debezium 3.6's statistics of the lag, over every streamed change
        low, high = (second[(f"MilliSecondsBehindSource{n}", "streaming")]
                     for n in ("MinValue", "MaxValue"))
        p50, p95, p99 = (second[(f"MilliSecondsBehindSourceP{q}", "streaming")]
                         for q in (50, 95, 99))
        # (each quantile within the sketch's 1% of a lag measured)
        assert 0 <= low * 0.99 - 1 <= p50 <= p95 <= p99 <= high * 1.01 + 1
        assert low <= second[("MilliSecondsBehindSourceAverageValue", "streaming")] <= high
        text = c.get("/metrics").text
        assert 'headwater_connectors{state="RUNNING"} 1' in text
        assert 'headwater_connector_state{connector="pgm",state="RUNNING"} 1' in text
        assert 'debezium_metrics_RowsScanned{context="snapshot",name="pgm",' \
               'plugin="postgres",table=' in text


def test_json_logs_with_mdc_and_admin_loggers(pg: LocalPostgres, served: Served) -> None:
    """A connector's every line carries Debezium's MDC (JSON format from its property), its
    configuration is summarised (never one dumped line, never a secret), and a level set
    through /admin/loggers reaches the service and the running worker."""
    import orjson

    pg.create_database("logs_db")
    pg.psql("CREATE TABLE t (id INT PRIMARY KEY)", dbname="logs_db")
    cfg = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": "127.0.0.1", "database.port": pg.port,
           "database.user": pg.user, "database.password": "s3cret-pw",
           "database.dbname": "logs_db", "topic.prefix": "pgl", "plugin.name": "pgoutput",
           "slot.name": "logs_slot", "publication.name": "logs_pub",
           "table.include.list": "public.t,public.missing",
           "headwater.ops.log.format": "json"}
    with served.client() as c:
        loggers = c.get("/admin/loggers").json()
        assert "root" in loggers and "level" in loggers["root"]
        assert c.get("/admin/loggers/no.such.logger").status_code == 404
        bad = c.put("/admin/loggers/headwater", json={"level": "LOUD"})
        assert bad.status_code == 400 and "Invalid log level" in bad.json()["message"]
        assert c.post("/connectors", json={"name": "pgl", "config": cfg}).status_code == 201
        wait_state(c, "pgl", "RUNNING", 120)
        changed = c.put("/admin/loggers/headwater.server", json={"level": "DEBUG"})
        assert changed.status_code == 200 and "headwater.server" in changed.json()
        assert c.get("/admin/loggers/headwater.server").json()["level"] == "DEBUG"
        worker_log = served.data_dir / "connectors" / "pgl" / "worker.log"
        deadline = time.monotonic() + scaled(30)
        while "heartbeat:" not in worker_log.read_text() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert c.put("/admin/loggers/headwater.server", json={"level": "INFO"},
                     params={"scope": "cluster"}).status_code == 204
    text = worker_log.read_text()
    assert "s3cret-pw" not in text
    docs = [orjson.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert any(d["logger"] == "headwater.server.worker" and d["level"] == "DEBUG"
               and d["message"].startswith("heartbeat:") for d in docs)
    streaming = [d for d in docs if d["mdc"].get("dbz.connectorContext") == "streaming"]
    assert streaming, "no line logged while streaming"
    for d in streaming:
        assert d["mdc"]["dbz.connectorType"] == "postgres"
        assert d["mdc"]["dbz.connectorName"] == "pgl"
        assert d["mdc"]["dbz.taskId"] == "0"
    assert not any("connector configuration" in d["message"] for d in docs)
    assert [d["message"] for d in docs if d["level"] == "WARNING"
            and "matches no existing table" in d["message"]] == [
        "table.include.list: 'public.missing' matches no existing table; nothing is captured "
        "for it until such a table exists"]


def test_incremental_snapshot_notifications_on_rest(pg: LocalPostgres, served: Served) -> None:
    pg.create_database("notes_db")
    pg.psql("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL); "
            "INSERT INTO t SELECT g, 0 FROM generate_series(1, 25) g; "
            "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, "
            "type varchar(32) NOT NULL, data varchar(2048))", dbname="notes_db")
    cfg = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
           "database.hostname": "127.0.0.1", "database.port": pg.port,
           "database.user": pg.user, "database.password": "unused",
           "database.dbname": "notes_db", "topic.prefix": "pgm", "plugin.name": "pgoutput",
           "slot.name": "notes_slot", "publication.name": "notes_pub",
           "snapshot.mode": "no_data", "poll.interval.ms": 100,
           "signal.data.collection": "public.debezium_signal",
           "incremental.snapshot.chunk.size": 10,
           "notification.enabled.channels": "jmx"}
    with served.client() as c:
        assert c.post("/connectors", json={"name": "pgm", "config": cfg}).status_code == 201
        wait_state(c, "pgm", "RUNNING", 120)
        m = wait_metrics(c, lambda m: m.get(("Connected", "streaming")) == 1, 120)
        assert m[("Connected", "streaming")] == 1  # (scrape: the connector named pgm)
        pg.psql("INSERT INTO debezium_signal VALUES ('go', 'execute-snapshot', "
                "'{\"data-collections\": [\"public.t\"]}')", dbname="notes_db")
        deadline = time.monotonic() + scaled(120)
        while time.monotonic() < deadline:
            found = c.get("/connectors/pgm/notifications").json()["notifications"]
            if found and found[-1]["type"] == "COMPLETED":
                break
            time.sleep(0.3)
    assert [(n["aggregateType"], n["type"]) for n in found] == [
        ("Initial Snapshot", "SKIPPED"), *[("Incremental Snapshot", t) for t in (
            "STARTED", "IN_PROGRESS", "IN_PROGRESS", "IN_PROGRESS", "TABLE_SCAN_COMPLETED",
            "COMPLETED")]]
    assert {n["id"] for n in found[1:]} == {"go"}
    assert [n["additionalData"]["last_processed_key"] for n in found[2:5]] == ["10", "20", "25"]
    assert found[5]["additionalData"]["total_rows_scanned"] == "25"
