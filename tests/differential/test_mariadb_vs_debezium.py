"""Headwater's MariaDB events against real Debezium 3.5's MariaDB connector, record by record.

One local MariaDB 10.11 database; `io.debezium.connector.mariadb.MariaDbConnector` 3.5.0.Final
runs in a Kafka Connect 4.1.1 worker with its default settings (headwater.testing.connect_worker,
writing to the Apache Kafka node of tests/kafka) and Headwater captures the same database into
its topic log, both with `provide.transaction.metadata=true` and `skipped.operations=none`.
Rows written before they start are snapshotted by both (Debezium first, then Headwater, nothing
written in between, so both read the same rows at the same binlog position); the streamed
workload runs once both stream, so both decode the same binlog.  Covered: every type of the
README's MySQL/MariaDB mapping table (the columns of
tests/integration/mysql/test_mysql_all_types.py) in the snapshot and the stream, updates and
deletes, a primary-key change (delete, tombstone and create, with the __debezium.oldkey/newkey
headers), DDL (ALTER TABLE, CREATE TABLE, RENAME TABLE, DROP TABLE) with its schema change
events, TRUNCATE, multi-statement transactions and their BEGIN/END events, and
`column.propagate.source.type` on one table (its primary key's parameters in the value only).

Every topic's records are compared pairwise by the PostgreSQL differential test's comparison
(keys, key/value schemas with field order, payloads, headers), normalising only the processing
time and the snapshot reads' `source.ts_*` (when each snapshot ran) and the run id header.
The data topics must hold the same number of records; the schema change topic and the
transaction topic do not pair up yet (their differences are rows of the table below).
Both sides' headers are the SimpleHeaderConverter's text (Connect's default header converter,
and Headwater's).  Any other difference must be explained by a row of docs/compatibility.md's
table "MariaDB differences the tests accept", and every row must be needed by this run.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.capture_thread import Capture
from headwater.testing.connect_worker import ConnectWorker
from headwater.testing.debezium_oracle import OracleRecord
from headwater.testing.kafka_cluster import KafkaCluster
from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.localpg import wait_for
from headwater.testing.timeouts import scaled
from tests.integration.mysql.conftest import MariaEnv, maria  # noqa: F401 (fixture)
from tests.integration.mysql.test_mysql_all_types import (
    Col,
    columns_for,
    create_table,
    insert_rows,
)
from tests.kafka.conftest import kafka, read_topic  # noqa: F401 (fixture)

from .compat import load_rules
from .test_postgres_vs_debezium import (
    RUN_ID,
    Captured,
    Normalise,
    differences,
    headwater_records,
    report,
    unexplained,
)

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
COMPAT_DOC = REPO / "docs" / "compatibility.md"
HEADING = "## MariaDB differences the tests accept"
CONNECTOR = "io.debezium.connector.mariadb.MariaDbConnector"
PREFIX = "mdiff"  # the topic prefix of both connectors (topics are unique in the session)
# Topics whose records do not yet pair up one to one (docs/compatibility.md, MariaDB): the
# schema change topic and the transaction topic; their counts are compared by the rules.
UNPAIRED = {PREFIX, f"{PREFIX}.transaction"}
_server_ids = itertools.count(6400)


def simple_header(key: str, text: str) -> Any:
    """A header as the SimpleHeaderConverter writes it: plain text (a struct as its JSON-like
    text); the run id differs between two runs."""
    return RUN_ID if key == "__debezium.context.runId" else text


MARIADB = Normalise(snapshot_fields=("ts_ms", "ts_us", "ts_ns"), header=simple_header)


# ------------------------------------------------------------------------------- the workload

SNAPSHOT_TABLES = ["all_types", "kc", "gone"]
# Debezium 3.5's MariaDB DDL grammar has no INET4/INET6: its connector stops on the CREATE TABLE
# of a table holding one ("DDL statement couldn't be parsed"), so they are left out here
# (docs/compatibility.md, MariaDB).
NOT_IN_DEBEZIUM = {"ip4", "ip6", "ip6m"}
# Literals Debezium 3.5 cannot snapshot, replaced by others (docs/compatibility.md, MariaDB):
# YEAR 0000 fails its snapshot (mariadb-java-client's YearColumn: java.sql.Date.valueOf).
REPLACED_LITERALS = {("yr", "0"): "1999"}


def differential_columns(env: MariaEnv) -> list[Col]:
    out = []
    for c in columns_for(env):
        if c.name in NOT_IN_DEBEZIUM:
            continue
        typical, low, high, special = (REPLACED_LITERALS.get((c.name, lit), lit)
                                       for lit in c.literals)
        out.append(dataclasses.replace(c, literals=(typical, low, high, special)))
    return out


def setup(env: MariaEnv, columns: list[Any]) -> None:
    create_table(env, columns)  # session: sql_mode '' and time zone +02:00, as its test
    insert_rows(env, columns, 0)
    env.sql("CREATE TABLE kc (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, qty INT)")
    env.sql("INSERT INTO kc VALUES (1, 'one', 1), (2, 'two', NULL), (3, 'three', 3)")
    env.sql("CREATE TABLE gone (id INT PRIMARY KEY, v TEXT)")
    env.sql("INSERT INTO gone VALUES (1, 'a'), (2, 'b')")
    env.sql("CREATE TABLE done (id INT PRIMARY KEY)")


def stream(env: MariaEnv, columns: list[Any]) -> None:
    """Each group is one transaction (autocommit statements outside `tx`)."""
    insert_rows(env, columns, 100)  # every type, streamed (five transactions)

    def tx(*statements: str) -> None:
        env.conn.begin()
        for s in statements:
            env.sql(s)
        env.conn.commit()

    tx("UPDATE all_types SET i = 7, vc = 'changed' WHERE id = 100",
       "DELETE FROM all_types WHERE id = 101")
    tx("INSERT INTO kc VALUES (4, 'four', 4)",
       "UPDATE kc SET qty = 10 WHERE id = 1",
       "UPDATE kc SET id = 20 WHERE id = 2",  # a key change: delete, tombstone, create
       "DELETE FROM kc WHERE id = 3")
    env.sql("ALTER TABLE kc ADD COLUMN note VARCHAR(10) DEFAULT 'x' AFTER name")
    tx("INSERT INTO kc (id, name, qty) VALUES (5, 'five', 5)",
       "UPDATE kc SET note = 'y' WHERE id = 1")
    env.sql("ALTER TABLE kc MODIFY COLUMN qty BIGINT NOT NULL DEFAULT 0")
    env.sql("INSERT INTO kc VALUES (6, 'six', 'z', 6)")
    env.sql("CREATE TABLE fresh (id INT AUTO_INCREMENT PRIMARY KEY, d DECIMAL(5,2), "
            "t DATETIME(3))")
    tx("INSERT INTO fresh (d, t) VALUES (1.25, '2020-01-02 03:04:05.678'), (NULL, NULL)",
       "UPDATE fresh SET d = 2.5")
    env.sql("RENAME TABLE fresh TO renamed")
    env.sql("INSERT INTO renamed (d) VALUES (9.99)")
    env.sql("TRUNCATE TABLE kc")
    env.sql("INSERT INTO kc (id, name) VALUES (7, 'seven')")
    env.sql("DROP TABLE gone")
    env.sql("INSERT INTO done VALUES (1)")


# ------------------------------------------------------------------------------------ capture


def common_properties(env: MariaEnv, prefix: str) -> dict[str, str]:
    return {
        "connector.class": CONNECTOR,
        "database.hostname": "127.0.0.1",
        "database.port": str(env.server.port),
        "database.user": env.server.user,
        "database.password": env.server.password,
        "database.include.list": env.db,
        "topic.prefix": prefix,
        "provide.transaction.metadata": "true",
        "skipped.operations": "none",
        # source type parameters on one table's columns, its primary key's in the value only
        "column.propagate.source.type": rf"{env.db}\.kc\..*",
    }


def debezium_config(env: MariaEnv, broker: KafkaCluster, prefix: str) -> dict[str, str]:
    return {
        **common_properties(env, prefix),
        "database.server.id": str(next(_server_ids)),
        "schema.history.internal.kafka.bootstrap.servers": broker.bootstrap,
        "schema.history.internal.kafka.topic": f"history-{prefix}",
        # the brokers do not create topics on first use: Connect creates them
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": str(broker.replication_factor),
    }


def kafka_records(broker: KafkaCluster, prefix: str) -> dict[str, list[OracleRecord]]:
    """Every record of Debezium's topics (`prefix` and `prefix.*`), as the consumer reads it."""
    names = [t for t in broker.admin().list_topics(timeout=10).topics
             if t == prefix or t.startswith(prefix + ".")]
    out: dict[str, list[OracleRecord]] = {}
    for topic in sorted(names):
        out[topic] = [
            OracleRecord(topic, None if r.key is None else r.key.decode(),
                         None if r.value is None else r.value.decode(),
                         tuple((k, v.decode()) for k, v in r.headers or []))
            for r in read_topic(broker.bootstrap, topic)]
    return out


def snapshot_done(records: dict[str, list[OracleRecord]], prefix: str, db: str) -> bool:
    tables = [f"{prefix}.{db}.{t}" for t in SNAPSHOT_TABLES]
    last = any(r.value and '"snapshot":"last"' in r.value
               for t in tables for r in records.get(t, []))
    return last and all(t in records for t in tables)


def has_done(records: dict[str, list[OracleRecord]], prefix: str, db: str) -> bool:
    return any(r.value for r in records.get(f"{prefix}.{db}.done", []))


def statuses(records: dict[str, list[OracleRecord]], prefix: str) -> list[str]:
    return [json.loads(r.value)["payload"]["status"]
            for r in records.get(f"{prefix}.transaction", []) if r.value]


def wait_streamed(fetch: Callable[[], dict[str, list[OracleRecord]]], prefix: str, db: str,
                  who: str, check: Callable[[], None] = lambda: None,
                  timeout: float = 180.0) -> None:
    """Waits until `done`'s row has arrived and its transaction has ended (the END follows
    the transaction's last event)."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        check()
        found = fetch()
        seen = statuses(found, prefix)
        if has_done(found, prefix, db) and seen and seen[-1] == "END":
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{who}: after {timeout}s, done row {has_done(found, prefix, db)}, "
                f"transaction statuses {seen[-6:]} ({len(seen)}), topics "
                f"{ {t: len(rs) for t, rs in found.items()} }")
        time.sleep(1.0)


def capture_both(env: MariaEnv, broker: KafkaCluster, worker: ConnectWorker, prefix: str
                 ) -> Captured:
    columns = differential_columns(env)
    setup(env, columns)
    name = f"dbz-{prefix}"
    worker.put_connector(name, debezium_config(env, broker, prefix))
    hw: Capture | None = None
    topics = env.topics
    try:
        worker.wait_running(name, timeout=120)

        def debezium_snapshot_done() -> bool:
            worker.raise_if_failed(name)
            return snapshot_done(kafka_records(broker, prefix), prefix, env.db)
        wait_for(debezium_snapshot_done, timeout=180, interval=1.0, what="Debezium's snapshot")
        hw = env.capture({**common_properties(env, prefix)})
        wait_for(lambda: snapshot_done(headwater_records(topics), prefix, env.db),
                 timeout=120, what="Headwater's snapshot")
        time.sleep(1.0)  # both stream now (each from its snapshot's binlog position)
        stream(env, columns)
        wait_streamed(lambda: kafka_records(broker, prefix), prefix, env.db, "Debezium",
                      lambda: worker.raise_if_failed(name))
        wait_streamed(lambda: headwater_records(topics), prefix, env.db, "Headwater")
    finally:
        worker.delete_connector(name)
        if hw is not None:
            hw.stop()
    return Captured(kafka_records(broker, prefix), headwater_records(topics))


# -------------------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def worker(kafka: KafkaCluster,  # noqa: F811
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectWorker]:
    """One worker per module, with Connect's default settings."""
    w = ConnectWorker(kafka.bootstrap, plugins=["debezium-mariadb"],
                      base_dir=tmp_path_factory.mktemp("connect")).start()
    print(f"Connect worker ready in {w.started_in:.1f}s")
    try:
        yield w
    finally:
        w.cleanup()


@pytest.fixture(scope="module")
def main_run(maria: LocalMariaDB, kafka: KafkaCluster,  # noqa: F811
             worker: ConnectWorker,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Captured]:
    tmp = tmp_path_factory.mktemp("mariadb-differential")
    env = MariaEnv(maria, tmp)
    try:
        captured = capture_both(env, kafka, worker, PREFIX)
    finally:
        env.close()
    for side in ("debezium", "headwater"):  # both sides' records, for reading a failure
        (tmp / f"{side}.json").write_text(json.dumps(
            {t: [r._asdict() for r in rs] for t, rs in getattr(captured, side).items()},
            indent=1))
    yield captured


def test_same_topics_and_record_counts(main_run: Captured) -> None:
    counts_d = {t: len(r) for t, r in main_run.debezium.items() if t not in UNPAIRED}
    counts_h = {t: len(r) for t, r in main_run.headwater.items() if t not in UNPAIRED}
    assert counts_d == counts_h
    assert main_run.debezium.keys() & main_run.headwater.keys() >= UNPAIRED
    ops = {json.loads(r.value)["payload"].get("op") for rs in main_run.debezium.values()
           for r in rs if r.value}
    assert {"r", "c", "u", "d", "t"} <= ops


def test_every_difference_is_explained(main_run: Captured, tmp_path: Path) -> None:
    left = unexplained(differences(main_run, MARIADB), load_rules(COMPAT_DOC, HEADING))
    assert not left, report(left, tmp_path / "differences.txt")


def test_every_rule_is_still_needed(main_run: Captured) -> None:
    diffs = differences(main_run, MARIADB)
    stale = [r for r in load_rules(COMPAT_DOC, HEADING) if not any(r.explains(d) for d in diffs)]
    assert not stale, "rules no difference needs:\n" + "\n".join(map(str, stale))
