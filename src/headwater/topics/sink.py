"""Adapts the topic log to the runtime's writer interface."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from headwater.model.topic import RenderedBatch
from headwater.topics.compactor import compact_topic
from headwater.topics.log import TopicLog
from headwater.topics.retention import apply_retention
from headwater.topics.retention_config import RetentionRules

log = logging.getLogger("headwater.topics.sink")


class TopicLogSink:
    """The runtime's durable writer over a local TopicLog (append returns after fsync).

    Retention and compaction run here, in the writer, because only the lock holder may remove
    or rewrite segments; every `retention.check.interval.ms` (they list and stat the sealed
    segments), compaction first so that retention by size counts what it left."""

    def __init__(self, root: Path, segment_bytes: int, segment_ms: int,
                 retention: RetentionRules | None = None) -> None:
        self.log = TopicLog(root, segment_bytes=segment_bytes, segment_ms=segment_ms)
        self.retention = retention if retention is not None and retention.active else None
        self._next_retention = 0.0

    def append(self, batch: RenderedBatch) -> None:
        self.log.append(batch)

    def maintain(self) -> None:
        self.log.maintain()
        if self.retention is not None and time.monotonic() >= self._next_retention:
            self._next_retention = time.monotonic() + self.retention.check_interval_ms / 1000
            self.retain()

    def retain(self) -> int:
        """Applies compaction and retention to every topic now; the number of segments
        removed by retention."""
        assert self.retention is not None
        now = int(time.time() * 1000)
        removed = 0
        for topic in self.log.topics():
            policy = self.retention.for_topic(topic)
            compact_topic(self.log.root, topic, policy, now,
                          segment_bytes=self.log.segment_bytes)
            removed += apply_retention(self.log.root, topic, policy, now)
        return removed

    def close(self) -> None:
        self.log.close()
