"""Debezium 3.x's PartitionRouting transform on a real PostgreSQL capture into a real Kafka
topic of three partitions (issue 30, Must show 4): every event of a row goes to the partition
of its `region`, as Debezium computes it (Java's String.hashCode, sign bit cleared, modulo
`partition.topic.num`), deletes by their `before` (`change.region`).  The expected partitions
are worked out by hand below, not by Headwater's hash code."""

from __future__ import annotations

import orjson
import pytest

from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic, unique

pytestmark = pytest.mark.integration

# "eu".hashCode() = 101*31 + 117 = 3248 -> 3248 % 3 = 2
# "us".hashCode() = 117*31 + 115 = 3742 -> 1
# "apac".hashCode() = ((97*31 + 112)*31 + 97)*31 + 99 = 3000465 -> 0
PARTITION = {"eu": 2, "us": 1, "apac": 0}


def test_partition_routing_sends_each_region_to_its_partition(env: Env,
                                                              kafka: KafkaCluster) -> None:
    env.sql("CREATE TABLE orders (id int PRIMARY KEY, region text NOT NULL, v int)")
    env.sql("ALTER TABLE orders REPLICA IDENTITY FULL")  # a delete's `before` has the region
    env.sql("INSERT INTO orders VALUES (1, 'eu', 0), (2, 'us', 0), (3, 'apac', 0)")
    prefix = unique("pr")
    props = kafka_props(kafka, **{
        "topic.prefix": prefix,
        "topic.creation.default.partitions": 3,
        "transforms": "part",
        "transforms.part.type": "io.debezium.transforms.partitions.PartitionRouting",
        "transforms.part.partition.payload.fields": "change.region",
        "transforms.part.partition.topic.num": 3,
    })
    topic = f"{prefix}.public.orders"
    cap = env.capture(props)
    try:
        wait_for(lambda: len(read_topic(kafka.bootstrap, topic)) >= 3 or cap.error,
                 what="the snapshot's records", timeout=90)
        env.sql("INSERT INTO orders VALUES (4, 'eu', 0), (5, 'apac', 0)")
        env.sql("UPDATE orders SET v = 1 WHERE id IN (2, 3)")
        env.sql("DELETE FROM orders WHERE id = 1")
        wait_for(lambda: len(read_topic(kafka.bootstrap, topic)) >= 3 + 2 + 2 + 2 or cap.error,
                 what="the streamed records", timeout=90)
    finally:
        cap.stop()
    assert cap.error is None
    seen = []
    for rec in read_topic(kafka.bootstrap, topic):
        if rec.value is None:  # the delete's tombstone: no payload, keeps the key's partition
            continue
        payload = orjson.loads(rec.value)["payload"]
        row = payload["after"] or payload["before"]
        assert rec.partition == PARTITION[row["region"]], (payload["op"], row, rec.partition)
        seen.append((payload["op"], row["id"]))
    assert sorted(seen) == sorted([("r", 1), ("r", 2), ("r", 3), ("c", 4), ("c", 5),
                                   ("u", 2), ("u", 3), ("d", 1)])
