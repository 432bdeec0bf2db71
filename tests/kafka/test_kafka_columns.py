"""The compiled range reader (`headwater.kafka.columns`, C over the librdkafka confluent-kafka
ships) gives exactly the records confluent-kafka's per-record reader gives: the same offsets,
keys and values, nulls where the records' are (tombstones, null keys; an empty value is not
a null), across a transaction's markers and an aborted transaction's records, from a
partition's start or its middle; and an executor's slice (`kafka_tasks.read_slice`) is the
same read either way."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest

from headwater.kafka import columns
from headwater.kafka.consume import KafkaReadError, read_range
from headwater.pipeline import kafka_tasks
from headwater.testing.kafka_cluster import KafkaCluster
from tests.kafka.conftest import Rec, read_topic, unique

pytestmark = [pytest.mark.integration]

PARTITIONS = 3


def settings(kafka: KafkaCluster) -> dict[str, str]:
    return {"bootstrap.servers": kafka.bootstrap, "group.id": unique("columns-"),
            "enable.auto.commit": "false", "enable.partition.eof": "true",
            "auto.offset.reset": "earliest"}


def make_topic(kafka: KafkaCluster, name: str) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, kafka.replication_factor)])[name].result(60)


def record(i: int) -> tuple[bytes | None, bytes | None]:
    """Keys and values of every kind: null keys, tombstones, empty values, big values."""
    key = None if i % 7 == 3 else b'{"id":%d}' % i
    if i % 5 == 4:
        return key, None
    if i % 11 == 6:
        return key, b""
    return key, b'{"n":%d,"pad":"%s"}' % (i, b"x" * (i % 9 * 700))


@pytest.fixture(scope="module")
def topic(kafka: KafkaCluster) -> Iterator[str]:
    """A topic of 3 partitions: plain records, then a committed transaction, an aborted one
    (records a read_committed reader skips) and plain records again."""
    from confluent_kafka import Producer

    name = unique("hw-columns-")
    make_topic(kafka, name)
    plain = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5})
    for i in range(3000):
        key, value = record(i)
        plain.produce(name, value, key, partition=i % PARTITIONS)
    plain.flush(60)
    tx = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": unique("tx-")})
    tx.init_transactions(60)
    for commit in (True, False, True):
        tx.begin_transaction()
        for i in range(3000, 3300):
            key, value = record(i)
            tx.produce(name, value, key, partition=i % PARTITIONS)
        if commit:
            tx.commit_transaction(60)
        else:
            # Delivered first, so that the aborted records are in the log for a reader to skip:
            # an abort purges what is still queued, and a Kafka 4 broker (transactions v2,
            # partitions joined by the produce itself) can then refuse the abort of a
            # transaction it never saw (INVALID_TXN_STATE, seen in a loaded CI run).
            tx.flush(60)
            tx.abort_transaction(60)
    for i in range(3300, 3600):
        key, value = record(i)
        plain.produce(name, value, key, partition=i % PARTITIONS)
    plain.flush(60)
    yield name


def ends(kafka: KafkaCluster, name: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(settings(kafka))
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(name, p), 30)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


def collected(kafka: KafkaCluster, name: str, partition: int, start: int, stop: int,
              chunk: int = columns.CHUNK) -> tuple[list[int], list[bytes | None],
                                                   list[bytes | None], list[int]]:
    offsets: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    sizes: list[int] = []
    for got, k, v in columns.read_columns(settings(kafka), name, partition, start, stop,
                                          chunk=chunk):
        assert got.dtype == np.int64 and len(got) == len(k) == len(v)
        assert k.type == v.type == pa.large_binary()
        k.validate(full=True)
        v.validate(full=True)
        offsets += got.tolist()
        keys += k.to_pylist()
        values += v.to_pylist()
        sizes.append(len(got))
    return offsets, keys, values, sizes


def test_ranges_are_confluent_kafkas_records(kafka: KafkaCluster, topic: str) -> None:
    assert columns.available()
    every = read_topic(kafka.bootstrap, topic)
    assert any(r.key is None for r in every) and any(r.value is None for r in every)
    assert any(r.value == b"" for r in every)
    end = ends(kafka, topic)
    for partition in range(PARTITIONS):
        mine: list[Rec] = [r for r in every if r.partition == partition]
        # the transactions left gaps (their markers, the aborted records)
        assert len(mine) < end[partition]
        for start, stop in ((0, end[partition]), (end[partition] // 3, 2 * end[partition] // 3),
                            (mine[-1].offset - 50, end[partition]), (17, 18)):
            want = [r for r in mine if start <= r.offset < stop]
            offsets, keys, values, sizes = collected(kafka, topic, partition, start, stop, 500)
            assert offsets == [r.offset for r in want]
            assert keys == [r.key for r in want]
            assert values == [r.value for r in want]
            assert all(n >= 500 for n in sizes[:-1]) and sum(sizes) == len(want)


def test_an_end_short_of_the_stop_raises(kafka: KafkaCluster, topic: str) -> None:
    end = ends(kafka, topic)[1]
    with pytest.raises(KafkaReadError, match="before"):
        collected(kafka, topic, 1, end - 5, end + 5)


def test_a_slice_is_the_same_either_way(kafka: KafkaCluster, topic: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`read_slice` with the compiled reader and with confluent-kafka's (where the compiled
    one is not available): the same offsets, keys and values."""
    end = ends(kafka, topic)
    conf = settings(kafka)
    fast = kafka_tasks.read_slice(conf, 1, topic, 2, 100, end[2])
    monkeypatch.setattr(columns, "available", lambda: False)
    slow = kafka_tasks.read_slice(conf, 1, topic, 2, 100, end[2])
    assert len(fast.offsets) > 1000
    assert fast.offsets.tolist() == slow.offsets.tolist()
    assert fast.keys.to_pylist() == slow.keys.to_pylist()
    assert fast.values.to_pylist() == slow.values.to_pylist()


def test_bad_settings_are_named(kafka: KafkaCluster, topic: str) -> None:
    with pytest.raises(ValueError, match=r"no\.such\.setting"):
        collected_with = {**settings(kafka), "no.such.setting": "1"}
        list(columns.read_columns(collected_with, topic, 0, 0, 10))


def test_a_range_ending_at_a_transactions_marker_ends(kafka: KafkaCluster) -> None:
    """The high watermark after a committed transaction is one past its marker, which no
    reader is given: the partition's end reported at the stop ends the range (without
    waiting for a record that never comes)."""
    from confluent_kafka import Producer

    name = unique("hw-columns-tail-")
    make_topic(kafka, name)
    tx = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": unique("tx-")})
    tx.init_transactions(60)
    tx.begin_transaction()
    for i in range(30):
        tx.produce(name, b'{"i":%d}' % i, None, partition=0)
    tx.commit_transaction(60)
    # (the coordinator writes the markers after the commit returns: the end, the last stable
    # offset of a read_committed reader, moves past them a moment later)
    deadline = time.monotonic() + 30
    while (end := ends(kafka, name)[0]) < 31 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert end == 31  # 30 records and the marker
    got: list[int] = []
    for offsets, _k, _v in columns.read_columns(settings(kafka), name, 0, 0, end, timeout=10):
        got += offsets.tolist()
    assert got == list(range(30))
    # and confluent-kafka's reader, where the compiled one is not available (it used to wait
    # for offset 30 until its timeout and raise)
    from confluent_kafka import Consumer

    consumer = Consumer(settings(kafka))
    try:
        slow = [int(o) for offsets, _m in read_range(consumer, name, 0, 0, end, timeout=10)
                for o in offsets]
    finally:
        consumer.close()
    assert slow == list(range(30))
