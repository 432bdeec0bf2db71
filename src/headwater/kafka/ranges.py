"""Ranges of the capture's Kafka topics read back: what superseding an interrupted snapshot
needs of the Kafka store (engine/supersede.py's `TopicRanges`, which the local topic log
gives too).

`ends` is the high watermark of every partition of the topics whose names start with the
connector's data topic prefix (`topic.prefix` and the delimiter, as the naming strategy
sanitizes it): the topics a snapshot writes READ events to; other topics of the cluster are
never asked for.  A high watermark counts only records every in-sync replica has, and a
capture that stores it has first waited for all its own records to be acknowledged
(`acks=all`), so the range [stored end, end at the restart) holds the interrupted attempts'
records and nothing of an earlier run.  `read` reads one topic's partitions from a start to
a stop offset (`consume.read_until_end`: a partition that ends short of its stop, e.g.
records removed by retention, raises KafkaReadError instead of being skipped).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from headwater.config.kafka import KafkaSettings
from headwater.kafka.consume import end_offsets, read_until_end, transient
from headwater.model.topic import HeaderBytes

log = logging.getLogger("headwater.kafka.ranges")

_TIMEOUT_S = 120.0
_ASK_S = 10.0


class KafkaTopicRanges:
    """`TopicRanges` of the Kafka store: one position per partition."""

    partitioned = True

    def __init__(self, settings: KafkaSettings, topic_prefix: str) -> None:
        self.settings = settings
        self.topic_prefix = topic_prefix

    def _consumer(self) -> Any:
        from confluent_kafka import Consumer

        return Consumer(self.settings.consumer_config(
            f"headwater-supersede-{self.settings.connector_name}"))

    def ends(self, stopping: threading.Event) -> dict[str, dict[int, int]]:
        consumer = self._consumer()
        try:
            metadata = _metadata(consumer, _TIMEOUT_S, stopping)
            if metadata is None:
                return {}
            names = sorted(t for t in metadata.topics if t.startswith(self.topic_prefix))
            counts = {t: len(metadata.topics[t].partitions) for t in names
                      if metadata.topics[t].error is None and metadata.topics[t].partitions}
            ends = end_offsets(consumer, [(t, p) for t, n in counts.items() for p in range(n)],
                               timeout=_TIMEOUT_S)
        finally:
            consumer.close()
        out: dict[str, dict[int, int]] = {}
        for (t, p), end in ends.items():
            out.setdefault(t, {})[p] = end
        return out

    def read(self, topic: str, ranges: Mapping[int, tuple[int, int]]
             ) -> Iterator[tuple[bytes | None, bytes | None, HeaderBytes]]:
        starts = {(topic, p): start for p, (start, _end) in ranges.items()}
        stops = {(topic, p): end for p, (_start, end) in ranges.items()}
        consumer = self._consumer()
        try:
            for msg in read_until_end(consumer, starts, stops, timeout=_TIMEOUT_S):
                headers = msg.headers()
                yield (msg.key(), msg.value(),
                       tuple((name, value) for name, value in headers) if headers else ())
        finally:
            consumer.close()


def _metadata(consumer: Any, timeout: float, stopping: threading.Event) -> Any:
    """The cluster's metadata, asked again while the brokers are unreachable (a broker
    restarting when the capture starts its snapshot), up to `timeout` seconds; None once
    `stopping` is set (the capture is asked to stop: it does not wait for the brokers)."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while not stopping.is_set():
        try:
            return consumer.list_topics(timeout=_ASK_S)
        except KafkaException as exc:
            err = exc.args[0]
            if not transient(err) or time.monotonic() >= deadline:
                raise
            log.info("the topics' metadata: %s; asking again", err)
            stopping.wait(0.5)
    return None
