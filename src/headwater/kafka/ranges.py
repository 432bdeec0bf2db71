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

`ends` asks through the admin client (metadata, ListOffsets), again while the brokers are
unreachable, and gives up when the capture stops: it runs before every data snapshot, also
when a broker is down then, where a consumer's `close` (waiting for its group's coordinator)
held the snapshot over a minute.  `read` runs only after an interrupted snapshot, right
after `ends` found the brokers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from headwater.config.kafka import KafkaSettings
from headwater.kafka.consume import KafkaReadError, read_until_end, transient
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
        # The admin client, not a consumer: a consumer's `close` waits for its group's
        # coordinator, and held the snapshot (and a SIGTERM) over a minute after a broker
        # restart in the fault harness (seeds 5001, 5002).
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(dict(self.settings.common))
        metadata = _metadata(admin, _TIMEOUT_S, stopping)
        if metadata is None:
            return {}
        names = sorted(t for t in metadata.topics if t.startswith(self.topic_prefix))
        partitions = [(t, p) for t in names if metadata.topics[t].error is None
                      for p in sorted(metadata.topics[t].partitions)]
        out: dict[str, dict[int, int]] = {}
        for (t, p), end in _latest(admin, partitions, _TIMEOUT_S, stopping).items():
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


def _metadata(client: Any, timeout: float, stopping: threading.Event) -> Any:
    """The cluster's metadata, asked again while the brokers are unreachable (a broker
    restarting when the capture starts its snapshot), up to `timeout` seconds; None once
    `stopping` is set (the capture is asked to stop: it does not wait for the brokers)."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while not stopping.is_set():
        try:
            return client.list_topics(timeout=_ASK_S)
        except KafkaException as exc:
            err = exc.args[0]
            if not transient(err) or time.monotonic() >= deadline:
                raise
            log.info("the topics' metadata: %s; asking again", err)
            stopping.wait(0.5)
    return None


def _latest(admin: Any, partitions: list[tuple[str, int]], timeout: float,
            stopping: threading.Event) -> dict[tuple[str, int], int]:
    """The high watermark of each partition (ListOffsets `latest`), asked again for the
    partitions whose answer was transient (a leader not ready after a restart) until
    `timeout`; {} once `stopping` is set."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    latest: Any = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    deadline = time.monotonic() + timeout
    out: dict[tuple[str, int], int] = {}
    pending = list(partitions)
    while pending:
        if stopping.is_set():
            return {}
        futures = admin.list_offsets({TopicPartition(t, p): latest for t, p in pending},
                                     request_timeout=_ASK_S)
        failed: list[tuple[str, int]] = []
        for tp, future in futures.items():
            try:
                out[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException as exc:
                err = exc.args[0]
                if not transient(err) or time.monotonic() >= deadline:
                    raise KafkaReadError(
                        f"the end of {tp.topic}[{tp.partition}]: {err}") from exc
                failed.append((tp.topic, tp.partition))
        pending = failed
        if pending:
            log.info("the end of %d partitions not known yet; asking again", len(pending))
            stopping.wait(0.5)
    return out
