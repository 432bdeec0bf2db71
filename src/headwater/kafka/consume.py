"""Reading Kafka partitions to their end: the one consumer pattern the stores and the pipeline
share.

"The end" is taken once, before reading: each partition's high watermark (ListOffsets
`latest`), as Kafka Connect's `KafkaBasedLog.readToEnd` takes `endOffsets` and then reads until
its position reaches them.  An end that a fetch reports (librdkafka's PARTITION_EOF) moves with
a writer: a fetch at the end waits for the next record and returns it, so a reader of a
partition written every few ms (the capture's own offsets, a table topic under load) never
saw an EOF and chased the writer for minutes (issue 26: the three-node failure test stood
still at its first leader kill while the capture was storing offsets).  A partition whose end
is its start is done without a fetch.  Consumers here are assigned partitions explicitly (no
group membership, no committed offsets): where to start is always the caller's stored state.

A leader change is ridden through, as the Java clients do: ListOffsets answers that mean "ask
again" (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, OFFSET_NOT_AVAILABLE while a new
leader's high watermark catches up, a timeout or refused connection to the dead node, the
handle of a broker that left the metadata destroyed under a request) are
retried with back-off until the deadline, and the consumer's transport errors are
informational (librdkafka reconnects and refetches the metadata itself); only a fatal error,
a non-retriable error of a partition, or no progress within the deadline raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

log = logging.getLogger("headwater.kafka.consume")

_POLL_S = 0.2
_FIRST_WAIT_S = 0.05
_MAX_WAIT_S = 1.0
_ASK_S = 3.0
_CONSUME_MAX = 10_000


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


def transient(err: Any) -> bool:
    """Whether a client error is one librdkafka recovers from by itself (a broker down or
    restarting, a leader moving): retry or wait, do not fail."""
    from confluent_kafka import KafkaError

    if err.fatal():
        return False
    return bool(err.retriable()) or err.code() in (
        KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT,
        KafkaError._WAIT_COORD, KafkaError._DESTROY_BROKER, KafkaError._NODE_UPDATE,
        KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.REQUEST_TIMED_OUT,
        KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.NOT_ENOUGH_REPLICAS)


def end_offsets(consumer: Any, partitions: list[tuple[str, int]], timeout: float = 60.0
                ) -> dict[tuple[str, int], int]:
    """The end (high watermark: the next offset a reader can get) of each partition, retrying
    transient errors with back-off until `timeout` (KafkaReadError then, or at once on any
    other error)."""
    from confluent_kafka import KafkaException, TopicPartition

    deadline = time.monotonic() + timeout
    ends: dict[tuple[str, int], int] = {}
    for t, p in partitions:
        wait = _FIRST_WAIT_S
        while True:
            left = deadline - time.monotonic()
            try:
                _low, high = consumer.get_watermark_offsets(
                    TopicPartition(t, p), timeout=max(min(left, _ASK_S), 0.5))
                ends[(t, p)] = high
                break
            except KafkaException as exc:
                err = exc.args[0]
                if not transient(err):
                    raise KafkaReadError(f"the end of {t}[{p}]: {err}") from exc
                if time.monotonic() + wait > deadline:
                    raise KafkaReadError(f"the end of {t}[{p}] not known within "
                                         f"{timeout:.0f}s: {err}") from exc
                log.debug("end of %s[%d]: %s; asking again", t, p, err)
                time.sleep(wait)
                wait = min(wait * 2, _MAX_WAIT_S)
                _refresh_leaders(consumer, t)
    return ends


def read_until_end(consumer: Any, starts: Mapping[tuple[str, int], int],
                   stops: Mapping[tuple[str, int], int] | None = None,
                   timeout: float = 120.0) -> Iterator[Any]:
    """The records of each (topic, partition) from its start offset to the `stops` offset
    (exclusive; without `stops`, to each partition's end when the call starts), in offset
    order per partition; Kafka messages.

    Raises KafkaReadError on a consumer error that is not transient, when a partition ends
    before its stop (records removed: retention, a recreated topic), or when no progress is
    made within `timeout` seconds."""
    from confluent_kafka import TopicPartition

    if stops is None:
        stops = end_offsets(consumer, sorted(starts), timeout)
    pending = {tp for tp in starts if stops.get(tp, 1 << 62) > starts[tp]}
    if not pending:
        return
    consumer.assign([TopicPartition(t, p, starts[(t, p)]) for (t, p) in sorted(pending)])
    deadline = time.monotonic() + timeout
    # the next offset wanted of each partition read to a stop: what is left of the ranges
    # bounds the messages still to come, and `consume` waits for its whole count or its
    # timeout (asked for more than is left, the last call of a range waited its full timeout)
    at = {tp: starts[tp] for tp in pending if tp in stops}
    bounded = len(at) == len(pending)
    try:
        while pending:
            # Many messages per call: one `poll` per message cost the pipeline more than the
            # decoding of what it fetched.
            left = sum(stops[tp] - at[tp] for tp in pending) if bounded else _CONSUME_MAX
            msgs = consumer.consume(max(1, min(_CONSUME_MAX, left)), _POLL_S)
            if not msgs:
                if time.monotonic() > deadline:
                    raise KafkaReadError(f"no progress reading {sorted(pending)} for "
                                         f"{timeout:.0f}s")
                continue
            deadline = time.monotonic() + timeout
            for msg in msgs:
                tp = (msg.topic(), msg.partition())
                if msg.error() is not None:
                    if _read_error(consumer, msg, tp, stops.get(tp) if tp in pending else None,
                                   timeout):
                        pending.discard(tp)
                    continue
                if tp not in pending:
                    continue
                if tp in stops and msg.offset() >= stops[tp]:
                    pending.discard(tp)
                    consumer.incremental_unassign([TopicPartition(tp[0], tp[1])])
                    continue
                if tp in at:
                    at[tp] = msg.offset() + 1
                yield msg
                if tp in stops and msg.offset() + 1 >= stops[tp]:
                    pending.discard(tp)
                    consumer.incremental_unassign([TopicPartition(tp[0], tp[1])])
    finally:
        consumer.unassign()


def read_range(consumer: Any, topic: str, partition: int, start: int, stop: int,
               timeout: float = 120.0) -> Iterator[tuple[np.ndarray, list[Any]]]:
    """The records of one partition from `start` to `stop` (exclusive), a `consume` call's
    worth at a time: `(offsets, messages)`, the offsets as an int64 array.  The checks of
    `read_until_end` hold (an end short of `stop` raises, transient errors are ridden through,
    offsets only go up: a compacted gap is fine, a repeat or a step back raises), but they are
    made per call, not per record: an executor's task reads its slice so, and a Python step per
    record cost it more than Spark's Kafka source's JVM (bench/kafka_task_reader.py)."""
    from confluent_kafka import TopicPartition

    tp = (topic, partition)
    if stop <= start:
        return
    consumer.assign([TopicPartition(topic, partition, start)])
    at = start
    deadline = time.monotonic() + timeout
    try:
        while at < stop:
            msgs = consumer.consume(min(_CONSUME_MAX, stop - at), _POLL_S)
            if not msgs:
                if time.monotonic() > deadline:
                    raise KafkaReadError(f"no progress reading {topic}[{partition}] at offset "
                                         f"{at} for {timeout:.0f}s")
                continue
            deadline = time.monotonic() + timeout
            errors = [m for m in msgs if m.error() is not None]
            # the partition's end at or past the stop ends the range: the records before the
            # stop have come, and the last offsets may be a transaction's marker, never delivered
            ended = False
            if errors:
                for msg in errors:
                    ended = _read_error(consumer, msg, tp, stop, timeout) or ended
                msgs = [m for m in msgs if m.error() is None]
                if not msgs:
                    if ended:
                        return
                    continue
            offsets = np.fromiter([m.offset() for m in msgs], np.int64, len(msgs))
            if offsets[0] < at or (len(offsets) > 1 and not (offsets[1:] > offsets[:-1]).all()):
                raise KafkaReadError(f"{topic}[{partition}]: offsets out of order after {at}: "
                                     f"{offsets[:5].tolist()}...")
            if offsets[-1] >= stop:  # (a compacted gap can carry a call past the stop)
                keep = int(np.searchsorted(offsets, stop))
                offsets, msgs = offsets[:keep], msgs[:keep]
                at = stop
            else:
                at = int(offsets[-1]) + 1
            if len(msgs):
                yield offsets, msgs
            if ended:
                return
    finally:
        consumer.unassign()


def _read_error(consumer: Any, msg: Any, tp: tuple[str, int], stop: int | None,
                timeout: float) -> bool:
    """A message carrying an error while reading `tp` up to `stop` (None: to its end); True
    when the partition is read to its end.  An end before the stop is checked (`_check_end`:
    a new leader's watermark catching up, more will come), a transient error passes,
    anything else raises."""
    from confluent_kafka import KafkaError

    err = msg.error()
    if err.code() == KafkaError._PARTITION_EOF:
        if stop is not None and msg.offset() < stop:
            _check_end(consumer, tp, stop, timeout)
            return False
        return True
    if transient(err):
        log.debug("reading %s[%d]: %s (the client recovers)", tp[0], tp[1], err)
        return False
    raise KafkaReadError(f"reading {tp[0]}[{tp[1]}]: {err}")


def _check_end(consumer: Any, tp: tuple[str, int], stop: int, timeout: float) -> None:
    """A fetch reported an end before `stop`.  Where the partition really ends decides: short
    of `stop`, records were removed; at or past it, the fetch met a leader whose watermark was
    still catching up, and reading goes on."""
    end = end_offsets(consumer, [tp], timeout)[tp]
    if end < stop:
        raise KafkaReadError(
            f"{tp[0]}[{tp[1]}] ends at offset {end}, before {stop}: records were removed "
            "(retention, a recreated topic)")


def _refresh_leaders(consumer: Any, topic: str) -> None:
    """Asks for the topic's metadata, which updates the client's leaders.  librdkafka sends
    ListOffsets to the leader its cache names and refreshes that cache only on its own
    schedule for a consumer with nothing assigned: after a leader was killed, every retry
    went to the dead node until the deadline."""
    from confluent_kafka import KafkaException

    try:
        consumer.list_topics(topic, timeout=_ASK_S)
    except KafkaException as exc:  # the next ListOffsets says what is wrong
        log.debug("metadata of %s: %s", topic, exc)
