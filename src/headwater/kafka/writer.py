"""The runtime's topic writer over Kafka: asynchronous produce, offsets stored after the acks.

Like Kafka Connect's WorkerSourceTask, `append` hands the batch to the producer and returns
without waiting; the runtime passes each batch's offset and acknowledgement to `when_durable`
(engine/runtime.py's DeferredAckWriter), and they run only once the brokers acknowledged
(acks=all) every record appended before them, from the writer thread (at a later `append`,
`when_durable`, `maintain` or `close`).  So the source position never moves past a record the
brokers do not have, and the producer keeps several batches in flight instead of a round trip
per batch.  The producer is idempotent (`enable.idempotence=true`, at most five requests in
flight per connection): librdkafka retries a failed send itself (until `delivery.timeout.ms`)
without reordering or duplicating within a partition.  A record that still fails fails the next
`append`/`maintain` with KafkaDeliveryError: no offset at or after it is stored, the capture
stops loudly, and a restart re-sends from the last stored offset (at-least-once, as Connect).

Memory: records not yet acknowledged stay in librdkafka's queue, bounded by
`queue.buffering.max.kbytes` (32 MiB by default, Java's `buffer.memory`; settable with
`producer.buffer.memory`); when it is full, `append` serves delivery reports until there is
room, so the capture slows to the brokers' pace instead of growing.

Header values are written as the format made them: the bytes of the configured
`header.converter` (SimpleHeaderConverter by default), the same bytes the topic log stores.

Keys are partitioned as Java's default partitioner does (murmur2 of the key bytes, positive,
modulo the partition count: librdkafka's `murmur2_random`), so the layout equals a Kafka
Connect deployment's.  Key-less records (none in Debezium's table topics) go to a random
partition.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from headwater.kafka.admin import TopicAdmin
from headwater.kafka.settings import KafkaSettings
from headwater.model.topic import HeaderBytes, TopicBatch

log = logging.getLogger("headwater.kafka.writer")

_FLUSH_WAIT_S = 1.0
_CLOSE_WAIT_S = 30.0


class KafkaDeliveryError(RuntimeError):
    """The brokers did not take a record after librdkafka's retries: the capture stops."""


class _InFlight:
    """One appended batch: how many of its records await their delivery report, and the
    callbacks (offset, acknowledgement) that wait for it and every batch before it."""

    __slots__ = ("callbacks", "failures", "outstanding")

    def __init__(self, failures: list[tuple[str, Any]]) -> None:
        self.outstanding = 0
        self.callbacks: list[Callable[[], None]] = []
        self.failures = failures

    def delivered(self, err: Any, msg: Any) -> None:
        self.outstanding -= 1
        if err is not None:
            self.failures.append((msg.topic(), err))


class KafkaTopicWriter:
    """Produces batches to Kafka topics; durable (acknowledged by all in-sync replicas) when
    the `when_durable` callbacks run.  Not thread-safe; the runtime's writer thread is its only
    caller (librdkafka runs delivery reports inside `poll`/`flush`, on that thread too)."""

    def __init__(self, settings: KafkaSettings) -> None:
        from confluent_kafka import Producer

        self.settings = settings
        self.admin = TopicAdmin(settings.common, settings.creation)
        self.producer = Producer(settings.producer_config())
        self._failures: list[tuple[str, Any]] = []
        self._in_flight: deque[_InFlight] = deque()
        self._header_cache: dict[int, tuple[HeaderBytes, list[Any]]] = {}

    @property
    def outstanding(self) -> int:
        """Records produced whose delivery report has not arrived yet."""
        return sum(b.outstanding for b in self._in_flight)

    def append(self, batch: TopicBatch) -> None:
        self._check()
        self.admin.ensure(t for t, records in batch.items() if records)
        entry = _InFlight(self._failures)
        self._in_flight.append(entry)
        produce = self.producer.produce
        poll = self.producer.poll
        on_delivery = entry.delivered
        for topic, records in batch.items():
            for key, value, ts, headers in records:
                kafka_headers = self._headers(headers) if headers else None
                while True:
                    try:
                        produce(topic, value, key, timestamp=ts, headers=kafka_headers,
                                on_delivery=on_delivery)
                        break
                    except BufferError:
                        poll(0.1)  # the local queue is full: let deliveries drain it
                        self._check()
                entry.outstanding += 1
        poll(0)
        self._release()

    def when_durable(self, callback: Callable[[], None]) -> None:
        """Runs `callback` once every record appended so far is acknowledged."""
        if self._in_flight:
            self._in_flight[-1].callbacks.append(callback)
            self._release()
        else:
            self._check()
            callback()

    def _release(self) -> None:
        """Runs the callbacks of the leading batches whose records are all acknowledged;
        none once a delivery failed (KafkaDeliveryError)."""
        self._check()
        in_flight = self._in_flight
        while in_flight and in_flight[0].outstanding == 0:
            for callback in in_flight.popleft().callbacks:
                callback()

    def _check(self) -> None:
        if self._failures:
            topic, err = self._failures[0]
            raise KafkaDeliveryError(
                f"{len(self._failures)} record(s) not delivered, first to {topic}: {err}; the "
                "capture stops without storing an offset at or after them (a restart "
                "re-sends from the last stored offset)")

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

    def flush(self, timeout_s: float | None = None) -> None:
        """Waits for every outstanding delivery report and runs the callbacks (tests, close);
        KafkaDeliveryError if a record failed, TimeoutError if reports are still missing."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self._in_flight and not self._failures:
            if self.producer.flush(_FLUSH_WAIT_S) == 0:
                break
            if deadline is not None and time.monotonic() >= deadline:
                self._release()
                raise TimeoutError(
                    f"{self.outstanding} record(s) still unacknowledged after {timeout_s}s")
        self._release()

    def partitions(self, topic: str) -> int | None:
        return self.admin.partitions.get(topic)

    def maintain(self) -> None:
        self.producer.poll(0)
        self._release()

    def close(self) -> None:
        """Waits (a while) for what is in flight and stores the offsets it releases; after a
        failed delivery, stores nothing more (those records were never acknowledged)."""
        if self._failures:
            self._in_flight.clear()
            return
        try:
            self.flush(_CLOSE_WAIT_S)
        except (KafkaDeliveryError, TimeoutError) as exc:
            log.warning("closing with undelivered records, their offsets not stored: %s", exc)
            self._in_flight.clear()
