"""The runtime's topic writer over Kafka: `append` returns once the brokers have every record.

The capture runtime acknowledges a source position only after `append` returned for every event
before it (engine/runtime.py), so `append` produces the batch, flushes, and checks the delivery
report of every record.  The producer is idempotent with `acks=all`: librdkafka retries a failed
send itself (until `delivery.timeout.ms`) without reordering or duplicating; a record that still
fails fails `append`, which fails the capture loudly, and the position never moves past it.  A
restart then re-sends from the last stored offset (at-least-once, as with Kafka Connect).

Header values are written as the format made them: the bytes of the configured
`header.converter` (SimpleHeaderConverter by default), the same bytes the topic log stores.

Keys are partitioned as Java's default partitioner does (murmur2 of the key bytes, positive,
modulo the partition count: librdkafka's `murmur2_random`), so the layout equals a Kafka
Connect deployment's.  Key-less records (none in Debezium's table topics) go to a random
partition.  A partition a transform chose (PartitionRouting) is used as is; one the topic does
not have fails the delivery, and so `append`.
"""

from __future__ import annotations

import logging
from typing import Any

from headwater.kafka.admin import TopicAdmin
from headwater.kafka.settings import KafkaSettings
from headwater.model.topic import HeaderBytes, TopicBatch

log = logging.getLogger("headwater.kafka.writer")

_FLUSH_WAIT_S = 1.0


class KafkaDeliveryError(RuntimeError):
    """The brokers did not take a record after librdkafka's retries: the capture stops."""


class KafkaTopicWriter:
    """Appends batches to Kafka topics, durable (acknowledged by all in-sync replicas) on
    return.  Not thread-safe; the runtime's writer thread is its only caller."""

    def __init__(self, settings: KafkaSettings) -> None:
        from confluent_kafka import Producer

        self.settings = settings
        self.admin = TopicAdmin(settings.common, settings.creation)
        self.producer = Producer(settings.producer_config())
        self._failures: list[tuple[str, Any]] = []
        self._pending = 0
        self._header_cache: dict[int, tuple[HeaderBytes, list[Any]]] = {}

    def _delivered(self, err: Any, msg: Any) -> None:
        self._pending -= 1
        if err is not None:
            self._failures.append((msg.topic(), err))

    def append(self, batch: TopicBatch) -> None:
        self.admin.ensure(t for t, records in batch.items() if records)
        produce = self.producer.produce
        poll = self.producer.poll
        on_delivery = self._delivered
        for topic, records in batch.items():
            for key, value, ts, headers, partition in records:
                kafka_headers = self._headers(headers) if headers else None
                while True:
                    try:
                        if partition is None:
                            produce(topic, value, key, timestamp=ts, headers=kafka_headers,
                                    on_delivery=on_delivery)
                        else:  # chosen by a transform (PartitionRouting), as Connect honours it
                            produce(topic, value, key, partition=partition, timestamp=ts,
                                    headers=kafka_headers, on_delivery=on_delivery)
                        break
                    except BufferError:
                        poll(0.1)  # the local queue is full: let deliveries drain it
                self._pending += 1
        self._flush()

    def _headers(self, headers: HeaderBytes) -> list[Any]:
        # The bytes are the header converter's already (headwater.converters.headers);
        # librdkafka wants a list, made once per distinct tuple (most records share the
        # format's context headers).
        cached = self._header_cache.get(id(headers))
        if cached is not None and cached[0] is headers:
            return cached[1]
        converted: list[Any] = list(headers)
        if len(self._header_cache) > 64:
            self._header_cache.clear()
        self._header_cache[id(headers)] = (headers, converted)
        return converted

    def _flush(self) -> None:
        while self._pending > 0 and not self._failures:
            self.producer.flush(_FLUSH_WAIT_S)
        if self._failures:
            topic, err = self._failures[0]
            raise KafkaDeliveryError(
                f"{len(self._failures)} record(s) not delivered, first to {topic}: {err}; the "
                "capture stops without acknowledging them (a restart re-sends from the last "
                "stored offset)")

    def partitions(self, topic: str) -> int | None:
        return self.admin.partitions.get(topic)

    def maintain(self) -> None:
        self.producer.poll(0)

    def close(self) -> None:
        # Whatever is still queued was never acknowledged to the source: no need to wait long.
        remaining = self.producer.flush(10)
        if remaining:
            log.warning("closing with %d undelivered record(s) (never acknowledged)",
                        remaining)
