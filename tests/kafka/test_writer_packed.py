"""The Kafka writer produces a column-wise snapshot's PackedRecords straight from their
buffers (alone and chained with ordinary records): what lands in the topic is, record for
record and in order, what reading those batches as TopicRecords gives: key, value, timestamp
and the header converter's bytes."""

from __future__ import annotations

from headwater.config.kafka import kafka_settings
from headwater.kafka.consume import read_until_end
from headwater.kafka.writer import KafkaTopicWriter
from headwater.model.topic import RecordChain, TopicRecord
from headwater.testing.kafka_cluster import KafkaCluster
from tests.kafka.conftest import unique
from tests.unit.test_packed_records import packed


def test_packed_and_chained_records_land_as_their_records(kafka: KafkaCluster) -> None:
    from confluent_kafka import Consumer

    topic = unique("packed-")
    settings = kafka_settings({
        "headwater.topics.store": "kafka", "bootstrap.servers": kafka.bootstrap,
        "topic.creation.default.partitions": "1",  # one partition: the order is checkable
        "topic.creation.default.replication.factor": str(kafka.replication_factor)},
        "packed-test")
    ctx = (("__debezium.context.connectorLogicalName", b"kb"), ("__debezium.context.taskId",
                                                                 b"0"))
    first = packed([b"1}", b"2}"], [b'{"a":1}}', b'{"a":2}}'], ts=1700000000001, headers=ctx)
    plain = [TopicRecord(b'{"id":3}', b'{"a":3}', 1700000000002, ctx),
             TopicRecord(b'{"id":4}', None, 1700000000003, (("__debezium.newkey", None),))]
    second = packed([b"5}", b"6}", b"7}"], [b"5}", b"6}", b"7}"], ts=1700000000004)
    writer = KafkaTopicWriter(settings)
    writer.append({topic: first})
    writer.append({topic: RecordChain((plain, second, first))})
    writer.flush(60)
    writer.close()

    expected = [*first, *plain, *second, *first]
    consumer = Consumer(settings.consumer_config("packed-test"))
    try:
        got = [(m.key(), m.value(), m.timestamp()[1], m.headers() or [])
               for m in read_until_end(consumer, {(topic, 0): 0})]
    finally:
        consumer.close()
    assert got == [(r.key, r.value, r.timestamp, list(r.headers)) for r in expected]
