"""Connector offsets in a Kafka topic, in Kafka Connect's format (`offset.storage.topic`).

Why Connect's format: a Debezium deployment's offsets topic can then be read (and written) by
Headwater and the other way round, and the usual tools that inspect or reset Connect offsets
work.  A record's key is the JSON array `["<connector name>",{<source partition>}]`, its value
the offset JSON object (null: the offset was cleared), both as JsonConverter writes them with
schemas off (compact, no spaces); keys are placed by Java's default partitioner, like Connect's
producer.  The topic is compacted.  At start the whole topic is read to its end and the last
value of this connector's key wins.

Durability: `save` returns after the brokers acknowledged the record (acks=all), and the
runtime calls it only after the events before that offset were acknowledged, so the stored
offset is never ahead of the events.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from headwater.config.kafka import KafkaSettings, TopicCreation, TopicCreationGroup
from headwater.kafka.admin import TopicAdmin
from headwater.kafka.consume import partition_counts, read_until_end
from headwater.state_format import offsets_document

log = logging.getLogger("headwater.kafka.offsets")


class KafkaOffsetStoreError(RuntimeError):
    pass


def offset_key(connector_name: str, partition: dict[str, Any]) -> bytes:
    """The record key Kafka Connect writes for a connector's source partition."""
    return orjson.dumps([connector_name, partition])


class KafkaOffsetStore:
    """One connector's offsets in Connect's offsets topic."""

    def __init__(self, settings: KafkaSettings, partition: dict[str, Any]) -> None:
        from confluent_kafka import Producer

        assert settings.offset_topic is not None
        self.settings = settings
        self.topic = settings.offset_topic
        self.partition = partition
        self.key = offset_key(settings.connector_name, partition)
        self._producer: Any = Producer(settings.producer_config())
        self._ensured = False

    def _ensure_topic(self) -> None:
        if self._ensured:
            return
        group = TopicCreationGroup("offsets", (), (), self.settings.offset_partitions,
                                   self.settings.offset_replication_factor,
                                   {"cleanup.policy": "compact"})
        TopicAdmin(self.settings.common, TopicCreation(True, (), group)).ensure([self.topic])
        self._ensured = True

    def load(self) -> dict[str, Any] | None:
        from confluent_kafka import Consumer

        self._ensure_topic()
        consumer = Consumer(self.settings.consumer_config(
            f"headwater-offsets-{self.settings.connector_name}"))
        try:
            count = partition_counts(consumer, [self.topic]).get(self.topic, 0)
            found: bytes | None = None
            seen = False
            for msg in read_until_end(consumer, {(self.topic, p): 0 for p in range(count)}):
                if msg.key() == self.key:
                    found, seen = msg.value(), True
        finally:
            consumer.close()
        if not seen or found is None:
            return None
        return offsets_document(
            found, f"offsets topic {self.topic}: the value for {self.key.decode()}",
            KafkaOffsetStoreError)

    def _write(self, value: bytes | None) -> None:
        self._ensure_topic()
        errors: list[Any] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        self._producer.produce(self.topic, value, self.key, on_delivery=delivered)
        while self._producer.flush(1.0) > 0 and not errors:
            pass
        if errors:
            raise KafkaOffsetStoreError(f"offset not stored in {self.topic}: {errors[0]}")

    def save(self, offset: dict[str, Any]) -> None:
        self._write(orjson.dumps(offset))

    def clear(self) -> None:
        """A tombstone: the connector starts afresh (and compaction drops the old offsets)."""
        self._write(None)
