"""Adapts the topic log to the runtime's writer interface."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from headwater.model.topic import TopicBatch
from headwater.topics.log import TopicLog
from headwater.topics.retention import apply_retention
from headwater.topics.retention_config import RetentionRules

log = logging.getLogger("headwater.topics.sink")

# How often retention looks at the sealed segments (it lists and stats them).
RETENTION_CHECK_S = 10.0


class TopicLogSink:
    """The runtime's durable writer over a local TopicLog (append returns after fsync).

    Retention runs here, in the writer, because only the lock holder may remove segments."""

    def __init__(self, root: Path, segment_bytes: int, segment_ms: int,
                 retention: RetentionRules | None = None) -> None:
        self.log = TopicLog(root, segment_bytes=segment_bytes, segment_ms=segment_ms)
        self.retention = retention if retention is not None and retention.active else None
        self._next_retention = 0.0

    def append(self, batch: TopicBatch) -> None:
        self.log.append(batch)

    def maintain(self) -> None:
        self.log.maintain()
        if self.retention is not None and time.monotonic() >= self._next_retention:
            self._next_retention = time.monotonic() + RETENTION_CHECK_S
            self.retain()

    def retain(self) -> int:
        """Applies retention to every topic now; the number of segments removed."""
        assert self.retention is not None
        now = int(time.time() * 1000)
        return sum(apply_retention(self.log.root, t, self.retention.for_topic(t), now)
                   for t in self.log.topics())

    def close(self) -> None:
        self.log.close()
