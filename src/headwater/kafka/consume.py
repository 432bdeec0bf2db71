"""Reading Kafka partitions to their end: the one consumer pattern the stores and the pipeline
share.

"The end" is the one a fetch reports (the high watermark in the fetch response, which
librdkafka turns into a PARTITION_EOF event): the end the reader has actually reached.  A
partition whose high watermark (ListOffsets) is already at the start offset is done without a
fetch: on Apache Kafka an empty partition's first fetch waits `fetch.wait.max.ms` for data
that does not come, and a fresh 25-partition offsets topic then cost seconds at every capture
start.  Consumers here are assigned partitions explicitly (no group membership, no committed
offsets): where to start is always the caller's stored state.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

_POLL_S = 0.2


class KafkaReadError(RuntimeError):
    pass


def partition_counts(consumer: Any, topics: list[str], timeout: float = 30.0
                     ) -> dict[str, int]:
    """Partition count of each existing topic among `topics` (absent when it does not
    exist)."""
    metadata = consumer.list_topics(timeout=timeout)
    out: dict[str, int] = {}
    for name in topics:
        topic = metadata.topics.get(name)
        if topic is not None and topic.error is None and topic.partitions:
            out[name] = len(topic.partitions)
    return out


def read_until_end(consumer: Any, starts: Mapping[tuple[str, int], int],
                   stops: Mapping[tuple[str, int], int] | None = None,
                   timeout: float = 120.0) -> Iterator[Any]:
    """The records of each (topic, partition) from its start offset to its end (or to the
    `stops` offset, exclusive), in offset order per partition; Kafka messages.

    Raises KafkaReadError on a consumer error or when the end is not reached within
    `timeout` seconds without progress."""
    from confluent_kafka import KafkaError, TopicPartition

    pending = {tp for tp in starts if stops is None or stops.get(tp, 1 << 62) > starts[tp]}
    pending -= _already_at_end(consumer, pending, starts)
    if not pending:
        return
    consumer.assign([TopicPartition(t, p, starts[(t, p)]) for (t, p) in sorted(pending)])
    deadline = time.monotonic() + timeout
    try:
        while pending:
            msg = consumer.poll(_POLL_S)
            if msg is None:
                if time.monotonic() > deadline:
                    raise KafkaReadError(f"no progress reading {sorted(pending)} for "
                                         f"{timeout:.0f}s")
                continue
            tp = (msg.topic(), msg.partition())
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if stops is not None and tp in stops and msg.offset() < stops[tp]:
                        raise KafkaReadError(
                            f"{tp[0]}[{tp[1]}] ends at offset {msg.offset()}, before "
                            f"{stops[tp]}: records were removed (retention, a recreated topic)")
                    pending.discard(tp)
                    continue
                raise KafkaReadError(f"reading {tp[0]}[{tp[1]}]: {err}")
            deadline = time.monotonic() + timeout
            if tp not in pending:
                continue
            if stops is not None and tp in stops and msg.offset() >= stops[tp]:
                pending.discard(tp)
                consumer.incremental_unassign([TopicPartition(tp[0], tp[1])])
                continue
            yield msg
            if stops is not None and tp in stops and msg.offset() + 1 >= stops[tp]:
                pending.discard(tp)
                consumer.incremental_unassign([TopicPartition(tp[0], tp[1])])
    finally:
        consumer.unassign()


def _already_at_end(consumer: Any, partitions: set[tuple[str, int]],
                    starts: Mapping[tuple[str, int], int]) -> set[tuple[str, int]]:
    """The partitions whose high watermark is at (or before) their start offset: nothing to
    read.  A partition whose watermark cannot be asked now is left to the fetch."""
    from confluent_kafka import KafkaException, TopicPartition

    done: set[tuple[str, int]] = set()
    for t, p in partitions:
        try:
            _low, high = consumer.get_watermark_offsets(TopicPartition(t, p), timeout=5)
        except KafkaException:
            continue
        if high <= starts[(t, p)]:
            done.add((t, p))
    return done


def end_offsets(consumer: Any, partitions: list[tuple[str, int]],
                hints: Mapping[tuple[str, int], int] | None = None,
                timeout: float = 60.0) -> dict[tuple[str, int], int]:
    """The end (next offset) of each partition, as a fetch reports it.

    Reads from max(hint, ListOffsets(latest) - 1, low watermark), so only the last record is
    fetched: the PARTITION_EOF that follows carries the end."""
    from confluent_kafka import KafkaError, TopicPartition

    if not partitions:
        return {}
    starts: dict[tuple[str, int], int] = {}
    for t, p in partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(t, p), timeout=timeout)
        starts[(t, p)] = max(low, high - 1, (hints or {}).get((t, p), 0), 0)
    ends: dict[tuple[str, int], int] = {}
    consumer.assign([TopicPartition(t, p, o) for (t, p), o in starts.items()])
    deadline = time.monotonic() + timeout
    try:
        while len(ends) < len(starts):
            msg = consumer.poll(_POLL_S)
            if msg is None:
                if time.monotonic() > deadline:
                    raise KafkaReadError("no end-of-partition within "
                                         f"{timeout:.0f}s for {sorted(set(starts) - set(ends))}")
                continue
            err = msg.error()
            tp = (msg.topic(), msg.partition())
            if err is None:
                continue
            if err.code() == KafkaError._PARTITION_EOF:
                ends[tp] = msg.offset()
                continue
            raise KafkaReadError(f"reading the end of {tp[0]}[{tp[1]}]: {err}")
    finally:
        consumer.unassign()
    return ends
