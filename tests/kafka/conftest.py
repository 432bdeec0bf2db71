"""Fixtures: one Apache Kafka node (KRaft, headwater.testing.kafka_cluster) for the whole
session of Kafka tests (a JVM broker costs ~10 s to start; topics have unique names, and a
test that restarts it gets it back with its data), and a reader of whole topics."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson
import pytest

from headwater.kafka.consume import partition_counts, read_until_end
from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.mysql.conftest import maria, menv  # noqa: F401 (fixtures)
from tests.integration.postgres.conftest import env, pg  # noqa: F401 (fixtures)
from tests.pipeline.conftest import _spark_sessions, spark  # noqa: F401 (fixtures)

_counter = itertools.count()


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaCluster]:
    pytest.importorskip("confluent_kafka")
    broker = KafkaCluster(nodes=1).start()
    try:
        yield broker
    finally:
        broker.cleanup()


def unique(name: str) -> str:
    return f"{name}{next(_counter)}"


class Rec(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]] | None


def read_topic(bootstrap: str, topic: str) -> list[Rec]:
    """Every record of a topic, partition by partition, in offset order."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "headwater-test",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest"})
    try:
        count = partition_counts(consumer, [topic]).get(topic, 0)
        out = [Rec(m.partition(), m.offset(), m.key(), m.value(), m.headers())
               for m in read_until_end(consumer, {(topic, p): 0 for p in range(count)})]
    finally:
        consumer.close()
    return sorted(out, key=lambda r: (r.partition, r.offset))


def stored_offset(bootstrap: str, topic: str) -> dict[str, Any] | None:
    """The last offset a connector stored in an offsets topic (None: none yet)."""
    records = [r for r in read_topic(bootstrap, topic) if r.key]
    return orjson.loads(records[-1].value) if records and records[-1].value else None


def kafka_props(broker: KafkaCluster, **extra: Any) -> dict[str, Any]:
    return {
        "headwater.topics.store": "kafka",
        "bootstrap.servers": broker.bootstrap,
        "topic.creation.default.partitions": 3,
        "topic.creation.default.replication.factor": broker.replication_factor,
        "offset.storage.topic": unique("hw-offsets-"),
        **extra,
    }
