"""Reading Kafka partitions to their end (headwater.kafka.consume) against a scripted consumer:
the end is taken before reading, so a partition that a writer keeps appending to is read to
where it ended, not chased (issue 26); a leader change is ridden through."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")

from confluent_kafka import KafkaError, KafkaException

from headwater.kafka.consume import KafkaReadError, end_offsets, read_until_end


class Msg:
    def __init__(self, topic: str, partition: int, offset: int,
                 error: KafkaError | None = None) -> None:
        self._t, self._p, self._o, self._e = topic, partition, offset, error

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def error(self) -> KafkaError | None:
        return self._e


class Consumer:
    """Answers ListOffsets from `answers` (an int: the high watermark; a KafkaError: raised)
    and consumes from `stream`."""

    def __init__(self, answers: list[int | KafkaError], stream: Iterator[Msg] | None = None
                 ) -> None:
        self.answers = answers
        self.stream = stream if stream is not None else iter(())
        self.refreshed = 0
        self.assigned: list[Any] = []

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        answer = self.answers.pop(0)
        if isinstance(answer, KafkaError):
            raise KafkaException(answer)
        return 0, answer

    def list_topics(self, topic: str, timeout: float) -> None:
        self.refreshed += 1

    def assign(self, tps: list[Any]) -> None:
        self.assigned = tps

    def incremental_unassign(self, tps: list[Any]) -> None:
        pass

    def unassign(self) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[Msg]:
        """Up to two messages a call (fewer than asked, as a real fetch may give)."""
        return list(itertools.islice(self.stream, min(num_messages, 2)))


def busy_writer() -> Iterator[Msg]:
    """A partition appended to faster than it is read: a fetch never finds its end."""
    offset = 0
    while True:
        yield Msg("t", 0, offset)
        offset += 1


def test_reads_to_the_end_taken_before_reading_not_after_a_writer() -> None:
    consumer = Consumer([3], busy_writer())
    got = [m.offset() for m in read_until_end(consumer, {("t", 0): 0}, timeout=5)]
    assert got == [0, 1, 2]


def test_consume_asks_for_no_more_than_is_left_of_the_ranges() -> None:
    """librdkafka's consume waits for its whole count or its timeout: asked for more than the
    ranges hold, the last call of every batch waited its timeout for nothing."""
    asked: list[int] = []

    class Counting(Consumer):
        def consume(self, num_messages: int, timeout: float) -> list[Msg]:
            asked.append(num_messages)
            return super().consume(num_messages, timeout)

    stream = iter([Msg("t", 0, 0), Msg("t", 1, 0), Msg("t", 0, 1), Msg("t", 1, 1),
                   Msg("t", 0, 2)])
    got = read_until_end(Counting([], stream), {("t", 0): 0, ("t", 1): 0},
                         {("t", 0): 3, ("t", 1): 2}, timeout=5)
    assert [(m.partition(), m.offset()) for m in got] == [(0, 0), (1, 0), (0, 1), (1, 1),
                                                          (0, 2)]
    assert asked == [5, 3, 1]


def test_a_partition_at_its_end_is_not_fetched() -> None:
    consumer = Consumer([7])
    assert list(read_until_end(consumer, {("t", 0): 7}, timeout=5)) == []
    assert consumer.assigned == []


def test_transport_errors_while_reading_are_ridden_through() -> None:
    stream = iter([Msg("t", 0, 0), Msg("", -1, -1, KafkaError(KafkaError._TRANSPORT)),
                   Msg("t", 0, 1)])
    consumer = Consumer([2], stream)
    assert [m.offset() for m in read_until_end(consumer, {("t", 0): 0}, timeout=5)] == [0, 1]


def test_a_partition_error_that_is_not_transient_stops_the_read() -> None:
    stream = iter([Msg("t", 0, 0, KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))])
    with pytest.raises(KafkaReadError, match=r"reading t\[0\]"):
        list(read_until_end(Consumer([2], stream), {("t", 0): 0}, timeout=5))


def test_an_early_end_from_a_new_leader_waits_but_a_shorter_partition_fails() -> None:
    eof = KafkaError(KafkaError._PARTITION_EOF)
    # The fetch reports an end at 1 (a new leader's watermark catching up); ListOffsets says
    # 3: reading goes on.
    stream = iter([Msg("t", 0, 0), Msg("t", 0, 1, eof), Msg("t", 0, 1), Msg("t", 0, 2)])
    got = read_until_end(Consumer([3], stream), {("t", 0): 0}, {("t", 0): 3}, timeout=5)
    assert [m.offset() for m in got] == [0, 1, 2]
    # The partition really ends at 1: records were removed.
    stream = iter([Msg("t", 0, 0), Msg("t", 0, 1, eof)])
    with pytest.raises(KafkaReadError, match="records were removed"):
        list(read_until_end(Consumer([1], stream), {("t", 0): 0}, {("t", 0): 3}, timeout=5))


def test_end_offsets_retry_a_moving_leader_with_fresh_metadata() -> None:
    consumer = Consumer([KafkaError(KafkaError._TIMED_OUT),
                         KafkaError(KafkaError._DESTROY_BROKER),
                         KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION),
                         KafkaError(KafkaError.OFFSET_NOT_AVAILABLE), 42])
    assert end_offsets(consumer, [("t", 0)], timeout=30) == {("t", 0): 42}
    assert consumer.refreshed == 4


def test_end_offsets_fail_at_once_on_an_error_that_retrying_cannot_fix() -> None:
    consumer = Consumer([KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), 42])
    with pytest.raises(KafkaReadError, match=r"the end of t\[0\]"):
        end_offsets(consumer, [("t", 0)], timeout=30)


def test_end_offsets_give_up_at_the_deadline_naming_the_partition() -> None:
    consumer = Consumer([KafkaError(KafkaError._TIMED_OUT)] * 1000)
    with pytest.raises(KafkaReadError, match=r"the end of t\[0\] not known within 0s"):
        end_offsets(consumer, [("t", 0)], timeout=0.2)
