"""MariaDB with its schema history in Kafka (KafkaSchemaHistory): DDL while streaming and
while stopped, restarts (one after the broker was killed and restarted on durable storage);
every row event decodes with the columns its table had at that point, and each DDL is in
the history topic once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.testing.capture_thread import Capture
from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.mysql.conftest import MariaEnv, wait_for
from tests.kafka.conftest import kafka_props, read_topic, unique

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KAFKA_HISTORY = "io.debezium.storage.kafka.history.KafkaSchemaHistory"


def history_config(menv: MariaEnv, kafka: KafkaCluster, topic: str) -> Path:
    path = menv.config(kafka_props(kafka, **{
        "schema.history.internal": KAFKA_HISTORY,
        "schema.history.internal.kafka.topic": topic,
        "schema.history.internal.kafka.bootstrap.servers": kafka.bootstrap,
        "schema.history.internal.kafka.query.timeout.ms": 20000,
    }))
    lines = [line for line in path.read_text().splitlines()
             if not line.startswith("schema.history.internal.file.filename=")]
    path.write_text("\n".join(lines) + "\n")
    return path


def rows(kafka: KafkaCluster, topic: str) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for rec in read_topic(kafka.bootstrap, topic):
        if rec.value:
            after = orjson.loads(rec.value)["payload"]["after"]
            if after is not None:
                out[after["id"]] = after
    return out


def test_history_in_kafka_survives_restarts_and_ddl(menv: MariaEnv, kafka: KafkaCluster) -> None:
    menv.prefix = unique("mh")
    history = unique("hist-")
    menv.sql("CREATE TABLE t (id int PRIMARY KEY, a int NOT NULL)")
    menv.sql("INSERT INTO t VALUES (1, 10), (2, 20)")
    config = history_config(menv, kafka, history)
    topic = menv.topic("t")

    cap = Capture(config).start()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        menv.sql("ALTER TABLE t ADD COLUMN b varchar(10) NULL")  # DDL while streaming
        menv.sql("INSERT INTO t VALUES (3, 30, 'x')")
        wait_for(lambda: 3 in rows(kafka, topic), timeout=60, what="row 3")
    finally:
        cap.stop()
    assert rows(kafka, topic)[3] == {"id": 3, "a": 30, "b": "x"}

    menv.sql("ALTER TABLE t ADD COLUMN c int NULL")  # DDL while stopped
    menv.sql("INSERT INTO t VALUES (4, 40, 'y', 400)")
    cap = Capture(config).start()  # recovers the schema from the topic
    try:
        wait_for(lambda: 4 in rows(kafka, topic), timeout=60, what="row 4")
    finally:
        cap.stop()
    assert rows(kafka, topic)[4] == {"id": 4, "a": 40, "b": "y", "c": 400}

    kafka.restart(kill=True)  # durable storage: the history survives the broker
    menv.sql("ALTER TABLE t DROP COLUMN a")
    menv.sql("INSERT INTO t VALUES (5, 'z', 500)")
    cap = Capture(config).start()
    try:
        wait_for(lambda: 5 in rows(kafka, topic), timeout=90, what="row 5")
    finally:
        cap.stop()
    got = rows(kafka, topic)
    assert got[5] == {"id": 5, "b": "z", "c": 500}
    assert got[1] == {"id": 1, "a": 10}  # the snapshot's read, before any DDL

    records = read_topic(kafka.bootstrap, history)
    assert {r.partition for r in records} == {0} and all(r.key is None for r in records)
    ddls = [orjson.loads(r.value)["ddl"] for r in records if r.value]
    for statement in ("ADD COLUMN b", "ADD COLUMN c", "DROP COLUMN a"):
        assert sum(statement in d for d in ddls) == 1, (statement, ddls)
    first = orjson.loads(records[0].value or b"{}")
    assert set(first) == {"source", "position", "ts_ms", "databaseName", "ddl", "tableChanges"}
    assert first["position"].get("snapshot") is True
