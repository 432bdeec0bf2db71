"""KafkaTopicWriter's asynchronous deliveries, with a producer whose delivery reports the test
hands out: a batch's offset callback runs only once every record of it and of every batch
before it is acknowledged, in append order, and never after a failed delivery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from headwater.kafka import writer as writer_mod
from headwater.kafka.settings import kafka_settings
from headwater.kafka.writer import KafkaDeliveryError, KafkaTopicWriter


class _Msg:
    def __init__(self, topic: str) -> None:
        self._topic = topic

    def topic(self) -> str:
        return self._topic


class FakeProducer:
    """Holds every produced record's delivery report until `deliver` hands it out (librdkafka
    serves reports inside poll/flush; this one serves those `deliver` released)."""

    def __init__(self, _conf: dict[str, str]) -> None:
        self.sent: list[tuple[str, bytes | None, Callable[[Any, Any], None]]] = []
        self.ready: list[tuple[Callable[[Any, Any], None], Any, _Msg]] = []
        self.reported = 0

    def produce(self, topic: str, value: bytes | None, key: bytes | None, *,
                timestamp: int, headers: Any, on_delivery: Callable[[Any, Any], None]) -> None:
        self.sent.append((topic, value, on_delivery))

    def deliver(self, index: int, err: Any = None) -> None:
        topic, _value, cb = self.sent[index]
        self.ready.append((cb, err, _Msg(topic)))

    def poll(self, _timeout: float) -> int:
        served, self.ready = self.ready, []
        for cb, err, msg in served:
            cb(err, msg)
        self.reported += len(served)
        return len(served)

    def flush(self, _timeout: float) -> int:
        self.poll(0)
        return len(self.sent) - self.reported


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
    return {"t": [(b"k", v, 0, ()) for v in values]}


def test_offsets_wait_for_every_earlier_record_in_order(writer: KafkaTopicWriter) -> None:
    producer: Any = writer.producer
    stored: list[str] = []
    writer.append(_batch(b"1", b"2"))
    writer.when_durable(lambda: stored.append("a"))
    writer.append(_batch(b"3"))
    writer.when_durable(lambda: stored.append("b"))
    assert stored == []  # append returned without any acknowledgement
    producer.deliver(2)  # the second batch is acknowledged before the first
    writer.maintain()
    assert stored == [] and writer.outstanding == 2
    producer.deliver(0)
    writer.maintain()
    assert stored == []  # record 2 of the first batch is still out
    producer.deliver(1)
    writer.maintain()
    assert stored == ["a", "b"] and writer.outstanding == 0
    writer.when_durable(lambda: stored.append("c"))  # nothing in flight: at once
    assert stored == ["a", "b", "c"]


def test_a_failed_delivery_stores_no_later_offset(writer: KafkaTopicWriter) -> None:
    producer: Any = writer.producer
    stored: list[str] = []
    writer.append(_batch(b"1"))
    writer.when_durable(lambda: stored.append("a"))
    writer.append(_batch(b"2"))
    writer.when_durable(lambda: stored.append("b"))
    producer.deliver(0)
    producer.deliver(1, err="KafkaError{code=MSG_TIMED_OUT}")
    with pytest.raises(KafkaDeliveryError, match="1 record\\(s\\) not delivered, first to t"):
        writer.maintain()
    with pytest.raises(KafkaDeliveryError):
        writer.append(_batch(b"3"))
    writer.close()
    assert stored == []  # not even "a": after a failure the writer stores nothing more


def test_close_stores_what_was_acknowledged_and_gives_up_on_the_rest(
        writer: KafkaTopicWriter, monkeypatch: pytest.MonkeyPatch) -> None:
    producer: Any = writer.producer
    stored: list[str] = []
    writer.append(_batch(b"1"))
    writer.when_durable(lambda: stored.append("a"))
    writer.append(_batch(b"2"))
    writer.when_durable(lambda: stored.append("b"))
    producer.deliver(0)
    monkeypatch.setattr(writer_mod, "_CLOSE_WAIT_S", 0.0)
    writer.close()  # record 2 never acknowledged: "b" is not stored
    assert stored == ["a"]
