"""Adapts the topic log to the runtime's writer interface."""

from __future__ import annotations

from pathlib import Path

from headwater.model.topic import TopicBatch
from headwater.topics.log import TopicLog


class TopicLogSink:
    """The runtime's durable writer over a local TopicLog (append returns after fsync)."""

    def __init__(self, root: Path, segment_bytes: int, segment_ms: int) -> None:
        self.log = TopicLog(root, segment_bytes=segment_bytes, segment_ms=segment_ms)

    def append(self, batch: TopicBatch) -> None:
        self.log.append(batch)

    def maintain(self) -> None:
        self.log.maintain()

    def close(self) -> None:
        self.log.close()
