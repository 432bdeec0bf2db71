"""The runtime's topic writer over Kafka: asynchronous produce, offsets stored after the acks.

Like Kafka Connect's WorkerSourceTask, `append` hands the batch to the producer and returns
without waiting; the runtime passes each batch's offset and acknowledgement to `when_durable`
(engine/runtime.py's DeferredAckWriter), and they run only once the producer has nothing left
unacknowledged (acks=all), from the writer thread: at once when a later `append`, `when_durable`
or `maintain` finds the producer's queue empty, else at a flush (waiting for every outstanding
record) at most `FLUSH_EVERY_S` after the previous one, when the writer is idle, and at `close`.
So the source position never moves past a record the brokers do not have, and the producer
keeps batches in flight instead of a round trip per batch.

Successful deliveries report nothing (`delivery.report.only.error=true`): a report per record
is a Python callback per record on the writer thread (py-spy: `poll` serving them took 152
samples where `produce` took 232), and nothing needs them.  Whether a batch is durable is the
producer's queue length instead (records queued, in flight or with an unserved report): zero
means every record produced so far is acknowledged or failed, and a failure is reported.  The
producer is idempotent (`enable.idempotence=true`, at most five requests in flight per
connection): librdkafka retries a failed send itself (until `delivery.timeout.ms`) without
reordering or duplicating within a partition.  A record that still fails fails the next
`append`/`maintain` with KafkaDeliveryError: no offset is stored from then on, the capture
stops loudly, and a restart re-sends from the last stored offset (at-least-once, as Connect).

Memory: records not yet acknowledged stay in librdkafka's queue, bounded by
`queue.buffering.max.kbytes` (32 MiB by default, Java's `buffer.memory`; settable with
`producer.buffer.memory`); when it is full, `append` waits for deliveries, so the capture
slows to the brokers' pace instead of growing.

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
import time
from collections.abc import Callable, Sequence
from typing import Any

from headwater.config.kafka import KafkaSettings
from headwater.kafka.admin import TopicAdmin
from headwater.model.topic import (
    HeaderBytes,
    PackedRecords,
    RenderedBatch,
    TopicRecord,
    record_parts,
)

log = logging.getLogger("headwater.kafka.writer")

_FLUSH_WAIT_S = 1.0
FLUSH_EVERY_S = 1.0  # the longest a stored offset waits behind the producer under load
_CLOSE_WAIT_S = 30.0


class KafkaDeliveryError(RuntimeError):
    """The brokers did not take a record after librdkafka's retries: the capture stops."""


class KafkaTopicWriter:
    """Produces batches to Kafka topics; durable (acknowledged by all in-sync replicas) when
    the `when_durable` callbacks run.  Not thread-safe; the runtime's writer thread is its only
    caller (librdkafka serves failure reports inside `poll`/`flush`, on that thread too)."""

    def __init__(self, settings: KafkaSettings) -> None:
        from confluent_kafka import Producer

        self.settings = settings
        self.admin = TopicAdmin(settings.common, settings.creation)
        self.producer = Producer({**settings.producer_config(),
                                  "delivery.report.only.error": True,
                                  "on_delivery": self._failed})
        self._failures: list[tuple[str, Any]] = []
        self._waiting: list[Callable[[], None]] = []
        self._flushed_at = time.monotonic()
        self._header_cache: dict[int, tuple[HeaderBytes, list[Any] | None]] = {}

    @property
    def outstanding(self) -> int:
        """Records produced and not yet acknowledged (or failed with an unserved report)."""
        return len(self.producer)

    def _failed(self, err: Any, msg: Any) -> None:
        if err is not None:
            self._failures.append((msg.topic(), err))

    def append(self, batch: RenderedBatch) -> None:
        self._check()
        self.admin.ensure(t for t, records in batch.items() if records)
        for topic, records in batch.items():
            for part in record_parts(records):
                if isinstance(part, PackedRecords):
                    self._produce_packed(topic, part)
                else:
                    self._produce_records(topic, part)
        self._release(flush_due=True)

    # The produce calls below pass all eight of confluent-kafka's arguments by position
    # (topic, value, key, partition, on_delivery, callback, timestamp, headers): its argument
    # parsing then costs 1.06 us a call where keywords cost 1.32 us (confluent-kafka 2.16,
    # 2 KB values, three headers, into a local queue).  Partition -1 is librdkafka's
    # "unassigned": the configured partitioner places the record; a partition a transform
    # chose (PartitionRouting) is used as is, as Connect honours it.  on_delivery None keeps
    # the producer's default (`_failed`).

    def _produce_records(self, topic: str, records: Sequence[TopicRecord]) -> None:
        produce = self.producer.produce
        last: HeaderBytes | None = None
        kafka_headers: list[Any] | None = None
        for key, value, ts, headers, partition in records:
            if headers is not last:  # most records share the format's context headers
                last, kafka_headers = headers, self._headers(headers)
            try:
                produce(topic, value, key, -1 if partition is None else partition, None,
                        None, ts, kafka_headers)
            except BufferError:
                self._produce_when_room(topic, value, key,
                                        -1 if partition is None else partition, ts,
                                        kafka_headers)

    def _produce_packed(self, topic: str, records: PackedRecords) -> None:
        """A column-wise snapshot's records straight from their buffers: one timestamp and
        one header list for all, no TopicRecord made per record."""
        produce = self.producer.produce
        ts, kafka_headers = records.timestamp, self._headers(records.headers)
        for key, value in records.pairs():
            try:
                produce(topic, value, key, -1, None, None, ts, kafka_headers)
            except BufferError:
                self._produce_when_room(topic, value, key, -1, ts, kafka_headers)

    def _produce_when_room(self, topic: str, value: bytes | None, key: bytes | None,
                           partition: int, ts: int, kafka_headers: list[Any] | None) -> None:
        """The local queue is full: lets deliveries drain it until the record fits."""
        while True:
            self.producer.poll(0.1)
            self._check()
            try:
                self.producer.produce(topic, value, key, partition, None, None, ts,
                                      kafka_headers)
                return
            except BufferError:
                continue

    def when_durable(self, callback: Callable[[], None]) -> None:
        """Runs `callback` once every record appended so far is acknowledged."""
        self._waiting.append(callback)
        self._release(flush_due=False)

    def _release(self, *, flush_due: bool) -> None:
        """Runs the waiting callbacks if nothing is outstanding; with `flush_due`, first waits
        for everything outstanding when the last flush is `FLUSH_EVERY_S` old."""
        self.producer.poll(0)
        self._check()
        if not self._waiting:
            return
        if len(self.producer) and flush_due and \
                time.monotonic() - self._flushed_at >= FLUSH_EVERY_S:
            self.flush()
            return
        if len(self.producer) == 0:
            self._run_waiting()

    def _run_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        for callback in waiting:
            callback()

    def _check(self) -> None:
        if self._failures:
            topic, err = self._failures[0]
            raise KafkaDeliveryError(
                f"{len(self._failures)} record(s) not delivered, first to {topic}: {err}; the "
                "capture stops without storing an offset at or after them (a restart "
                "re-sends from the last stored offset)")

    def _headers(self, headers: HeaderBytes) -> list[Any] | None:
        # The bytes are the header converter's already (headwater.converters.headers);
        # librdkafka wants a list, made once per distinct tuple (most records share the
        # format's context headers).
        if not headers:
            return None
        cached = self._header_cache.get(id(headers))
        if cached is not None and cached[0] is headers:
            return cached[1]
        converted: list[Any] | None = list(headers)
        if len(self._header_cache) > 64:
            self._header_cache.clear()
        self._header_cache[id(headers)] = (headers, converted)
        return converted

    def flush(self, timeout_s: float | None = None) -> None:
        """Waits for every outstanding record and runs the waiting callbacks;
        KafkaDeliveryError if a record failed, TimeoutError if some are still out."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self._failures and self.producer.flush(_FLUSH_WAIT_S) > 0:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{len(self.producer)} record(s) still unacknowledged after {timeout_s}s")
        self._flushed_at = time.monotonic()
        self._check()
        self._run_waiting()

    def partitions(self, topic: str) -> int | None:
        return self.admin.partitions.get(topic)

    def maintain(self) -> None:
        """The writer is idle: whatever is in flight is waited for, its offsets stored."""
        self.producer.poll(0)
        self._check()
        if self._waiting:
            self.flush()

    def close(self) -> None:
        """Waits (a while) for what is in flight and stores the offsets it releases; after a
        failed delivery, stores nothing more (those records were never acknowledged)."""
        if self._failures:
            self._waiting.clear()
            return
        try:
            self.flush(_CLOSE_WAIT_S)
        except (KafkaDeliveryError, TimeoutError) as exc:
            log.warning("closing with undelivered records, their offsets not stored: %s", exc)
            self._waiting.clear()
