"""Kafka Connect worker properties -> librdkafka settings, topic creation groups, the Java
partitioner (pure Python, checked against Kafka's own test vectors and librdkafka)."""

from __future__ import annotations

import random

import pytest

from headwater.config.kafka import kafka_settings, parse_jaas
from headwater.config.loader import ConfigError
from headwater.kafka.murmur2 import murmur2, partition_for


def test_murmur2_matches_kafka_test_vectors() -> None:
    # org.apache.kafka.common.utils.UtilsTest#testMurmur2
    cases = {b"21": -973932308, b"foobar": -790332482,
             b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
             b"abc": 479470107}
    assert {k: murmur2(k) for k in cases} == cases


def test_librdkafka_murmur2_random_places_keys_like_java() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    rng = random.Random(3)
    for _ in range(3000):
        key = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60)))
        n = rng.randrange(1, 64)
        assert partition_for(key, n) == confluent_kafka.murmur2(key, n)


def test_jaas_plain_and_scram() -> None:
    assert parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required '
                      'username="alice" password="s3\\"cret";') == ("alice", 's3"cret')
    assert parse_jaas("org.apache.kafka.common.security.scram.ScramLoginModule required "
                      "username=bob password=pw;") == ("bob", "pw")
    with pytest.raises(ValueError, match="not supported"):
        parse_jaas("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;")


def test_worker_properties_map_to_librdkafka() -> None:
    s = kafka_settings({
        "headwater.topics.store": "kafka", "bootstrap.servers": "b1:9092,b2:9092",
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
                            'required username="u" password="p";',
        "ssl.truststore.type": "PEM", "ssl.truststore.location": "/etc/ca.pem",
        "producer.linger.ms": "20", "producer.max.request.size": "2097152",
        "producer.buffer.memory": "33554432",
        "topic.creation.default.partitions": "6",
        "topic.creation.default.replication.factor": "3",
        "topic.creation.groups": "compacted",
        "topic.creation.compacted.include": r"inv\.public\.(a|b)",
        "topic.creation.compacted.cleanup.policy": "compact",
        "topic.creation.compacted.partitions": "2",
    }, "inventory-connector")
    p = s.producer_config()
    assert p["bootstrap.servers"] == "b1:9092,b2:9092"
    assert (p["sasl.username"], p["sasl.password"]) == ("u", "p")
    assert p["ssl.ca.location"] == "/etc/ca.pem"
    assert p["security.protocol"] == "SASL_SSL"
    assert p["linger.ms"] == "20" and p["message.max.bytes"] == "2097152"
    assert p["queue.buffering.max.kbytes"] == "32768"
    assert (p["acks"], p["enable.idempotence"], p["partitioner"]) == (
        "all", "true", "murmur2_random")
    assert s.creation.for_topic("inv.public.a") == (2, 3, {"cleanup.policy": "compact"})
    assert s.creation.for_topic("inv.public.c") == (6, 3, {})


@pytest.mark.parametrize(("props", "message"), [
    ({"headwater.topics.store": "kafka"}, "bootstrap.servers: required"),
    ({"bootstrap.servers": "b:9092"}, "nothing uses Kafka"),
    ({"headwater.topics.store": "kafka", "bootstrap.servers": "b", "producer.acks": "1"},
     "must be all"),
    ({"headwater.topics.store": "kafka", "bootstrap.servers": "b",
      "producer.max.block.ms": "5"}, "no librdkafka equivalent"),
    ({"headwater.topics.store": "kafka", "bootstrap.servers": "b",
      "ssl.truststore.location": "/x.jks"}, "PEM"),
    ({"headwater.topics.store": "kafka", "bootstrap.servers": "b",
      "topic.creation.default.partitions": "3"}, "both required"),
    ({"headwater.topics.store": "kafka", "bootstrap.servers": "b",
      "topic.creation.default.partitions": "3",
      "topic.creation.default.replication.factor": "1",
      "topic.creation.x.partitions": "1"}, "not listed"),
    ({"headwater.topics.store": "kafak"}, "not one of"),
])
def test_invalid_or_unused_settings_are_errors(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        kafka_settings(props, "c")



def test_producer_defaults_bound_unacknowledged_records_and_batch_compressed() -> None:
    base = {"headwater.topics.store": "kafka", "bootstrap.servers": "b:9092"}
    conf = kafka_settings(base, "c").producer_config()
    assert conf["queue.buffering.max.kbytes"] == "32768"
    assert (conf["linger.ms"], conf["compression.type"]) == ("50", "lz4")
    own = kafka_settings({**base, "producer.buffer.memory": "1048576"}, "c")
    assert own.producer_config()["queue.buffering.max.kbytes"] == "1024"
