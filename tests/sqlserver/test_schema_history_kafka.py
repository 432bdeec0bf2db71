"""The SQL Server schema history in a Kafka topic (KafkaSchemaHistory, on an Apache Kafka node),
on the CDC EMULATION: the snapshot's CREATE and the capture-instance ALTER are records of the
one-partition history topic, and a restart recovers from it (pending old-instance rows keep the
column the catalog dropped)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from headwater.connectors.sqlserver.config import validate_sqlserver_config
from headwater.kafka.consume import read_until_end
from headwater.testing.kafka_cluster import KafkaCluster
from headwater.testing.localpg import wait_for
from tests.sqlserver.conftest import enable_cdc, tsql
from tests.sqlserver.test_emulated_capture import Capture

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaCluster]:
    broker = KafkaCluster().start()
    try:
        yield broker
    finally:
        broker.cleanup()


def history_topic(kafka: KafkaCluster, topic: str) -> list[dict[str, Any]]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "test-history",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest"})
    try:
        return [orjson.loads(m.value()) for m in read_until_end(consumer, {(topic, 0): 0})]
    finally:
        consumer.close()


def test_history_topic_records_and_recovers(sqlserver_db: dict[str, Any],
                                            kafka: KafkaCluster) -> None:
    db = sqlserver_db
    props = {"schema.history.internal":
             "io.debezium.storage.kafka.history.KafkaSchemaHistory",
             "schema.history.internal.kafka.topic": "schema-history.server1",
             "schema.history.internal.kafka.bootstrap.servers": kafka.bootstrap,
             "schema.history.internal.kafka.query.timeout.ms": "20000"}

    def cfg() -> Any:
        return validate_sqlserver_config({
            "topic.prefix": "server1", "database.hostname": db["server"],
            "database.port": str(db["port"]), "database.user": db["user"],
            "database.names": db["database"], "poll.interval.ms": "50",
            "headwater.sqlserver.driver": "headwater.testing.sqlserver_emulation.dbapi",
            **props})[0]

    tsql(db, "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, a INT NULL, note NVARCHAR(20) "
         "NULL)")
    enable_cdc(db, "dbo", "t", "dbo_t")
    first = Capture(cfg())
    first.run()
    try:
        tsql(db, "INSERT INTO dbo.t VALUES (1, 10, 'n1')")
        wait_for(lambda: len(first.records()) >= 1, 30, what="the first insert")
    finally:
        first.stop()
        first.connector.close()
    offset = first.last_offset()
    tsql(db, "INSERT INTO dbo.t VALUES (2, 20, 'n2')", "ALTER TABLE dbo.t DROP COLUMN note")
    enable_cdc(db, "dbo", "t", "dbo_t_v2")
    tsql(db, "INSERT INTO dbo.t VALUES (3, 30)")
    second = Capture(cfg())
    second.run(offset)
    try:
        wait_for(lambda: len(second.records()) >= 2, 30, what="the pending rows")
    finally:
        second.stop()
        second.connector.close()
    two, three = second.records()
    assert (two.after, [c.name for c in two.table.columns]) == ((2, 20, "n2"),
                                                                ["id", "a", "note"])
    assert (three.after, [c.name for c in three.table.columns]) == ((3, 30), ["id", "a"])
    records = history_topic(kafka, "schema-history.server1")
    assert [(r["tableChanges"][0]["type"], bool(r["position"].get("snapshot")))
            for r in records] == [("CREATE", True), ("ALTER", False)]
    assert records[0]["source"] == {"server": "server1", "database": db["database"]}
