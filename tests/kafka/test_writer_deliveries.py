"""KafkaTopicWriter's asynchronous deliveries, with a producer whose acknowledgements the test
hands out: a batch's offset callback runs only once every record appended before it is
acknowledged, callbacks in append order, a flush at most FLUSH_EVERY_S apart under load, and
never an offset after a failed delivery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from headwater.config.kafka import kafka_settings
from headwater.kafka import writer as writer_mod
from headwater.kafka.writer import KafkaDeliveryError, KafkaTopicWriter
from headwater.model.topic import TopicRecord


class _Msg:
    def __init__(self, topic: str) -> None:
        self._topic = topic

    def topic(self) -> str:
        return self._topic


class FakeProducer:
    """librdkafka's contract as the writer uses it: `len` counts records not acknowledged
    (or failed with an unserved report); only failures are reported, inside poll/flush.
    `acknowledge`/`fail` stand for the brokers; `flush` acknowledges everything unless
    `stuck`."""

    def __init__(self, conf: dict[str, Any]) -> None:
        assert conf["delivery.report.only.error"] is True
        self.report: Callable[[Any, Any], None] = conf["on_delivery"]
        self.out: list[str] = []  # topics of the records not acknowledged yet
        self.failed: list[tuple[str, str]] = []
        self.stuck = False
        self.flushes = 0
        self.partitions: list[int | None] = []  # per produce call: the partition named

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None,
                partition: int = -1, on_delivery: Any = None, callback: Any = None,
                timestamp: int = 0, headers: Any = None) -> None:
        # confluent-kafka's argument order (the writer passes them by position); -1 is
        # librdkafka's "unassigned" (the partitioner places the record)
        assert on_delivery is None and callback is None  # the producer's default reports
        self.out.append(topic)
        self.partitions.append(None if partition == -1 else partition)

    def acknowledge(self, n: int) -> None:
        del self.out[:n]

    def fail(self, err: str) -> None:
        self.failed.append((self.out.pop(0), err))

    def __len__(self) -> int:
        return len(self.out) + len(self.failed)

    def poll(self, _timeout: float) -> int:
        served, self.failed = self.failed, []
        for topic, err in served:
            self.report(err, _Msg(topic))
        return len(served)

    def flush(self, _timeout: float) -> int:
        self.flushes += 1
        if not self.stuck:
            self.out.clear()
        self.poll(0)
        return len(self)


class FakeAdmin:
    def __init__(self, *_args: Any) -> None:
        self.partitions: dict[str, int] = {}

    def ensure(self, topics: Any) -> None:
        list(topics)


@pytest.fixture
def writer(monkeypatch: pytest.MonkeyPatch) -> KafkaTopicWriter:
    import confluent_kafka

    monkeypatch.setattr(confluent_kafka, "Producer", FakeProducer)
    monkeypatch.setattr(writer_mod, "TopicAdmin", FakeAdmin)
    settings = kafka_settings({"headwater.topics.store": "kafka",
                               "bootstrap.servers": "b:9092"}, "c")
    return KafkaTopicWriter(settings)


def _batch(*values: bytes) -> Any:
    return {"t": [TopicRecord(b"k", v, 0) for v in values]}


def test_offsets_wait_for_every_earlier_record_in_order(writer: KafkaTopicWriter) -> None:
    producer: Any = writer.producer
    stored: list[str] = []
    writer.append(_batch(b"1", b"2"))
    writer.when_durable(lambda: stored.append("a"))
    writer.append(_batch(b"3"))
    writer.when_durable(lambda: stored.append("b"))
    assert stored == [] and writer.outstanding == 3  # append did not wait
    producer.acknowledge(2)  # the first batch: its callback still waits for the second's
    writer.append(_batch(b"4"))
    assert stored == [] and producer.flushes == 0  # no flush within FLUSH_EVERY_S
    producer.acknowledge(2)
    writer.when_durable(lambda: stored.append("c"))  # nothing out: all run, in order
    assert stored == ["a", "b", "c"] and producer.flushes == 0


def test_under_load_a_flush_stores_offsets_every_interval(
        writer: KafkaTopicWriter, monkeypatch: pytest.MonkeyPatch) -> None:
    producer: Any = writer.producer
    stored: list[int] = []
    monkeypatch.setattr(writer_mod, "FLUSH_EVERY_S", 0.0)
    writer.append(_batch(b"1"))
    writer.when_durable(lambda: stored.append(1))
    writer.append(_batch(b"2"))  # records always out: the interval forces a flush
    assert producer.flushes == 1 and stored == [1]


def test_idle_writer_flushes(writer: KafkaTopicWriter) -> None:
    stored: list[int] = []
    writer.append(_batch(b"1"))
    writer.when_durable(lambda: stored.append(1))
    assert stored == []
    writer.maintain()
    assert stored == [1]


def test_a_failed_delivery_stores_no_later_offset(writer: KafkaTopicWriter) -> None:
    producer: Any = writer.producer
    stored: list[str] = []
    writer.append(_batch(b"1", b"2"))
    writer.when_durable(lambda: stored.append("a"))
    producer.acknowledge(1)
    producer.fail("KafkaError{code=MSG_TIMED_OUT}")
    with pytest.raises(KafkaDeliveryError, match=r"1 record\(s\) not delivered, first to t"):
        writer.maintain()
    with pytest.raises(KafkaDeliveryError):
        writer.append(_batch(b"3"))
    writer.close()
    assert stored == []


def test_close_gives_up_on_records_never_acknowledged(
        writer: KafkaTopicWriter, monkeypatch: pytest.MonkeyPatch) -> None:
    producer: Any = writer.producer
    stored: list[str] = []
    writer.append(_batch(b"1"))
    writer.when_durable(lambda: stored.append("a"))
    producer.stuck = True
    monkeypatch.setattr(writer_mod, "_CLOSE_WAIT_S", 0.0)
    writer.close()
    assert stored == []
    producer.stuck = False
    writer.append(_batch(b"2"))
    writer.when_durable(lambda: stored.append("b"))
    writer.close()  # a graceful stop: everything acknowledged, the offset stored
    assert stored == ["b"]


def test_a_routed_record_names_its_partition_others_leave_it_to_the_key(
        writer: KafkaTopicWriter) -> None:
    """PartitionRouting's choice reaches the producer, as Kafka Connect honours a source
    record's partition."""
    writer.append({"t": [TopicRecord(b"1", b"{}", 1, (), 7), TopicRecord(b"2", b"{}", 2)]})
    assert writer.producer.partitions == [7, None]  # type: ignore[attr-defined]
