"""Adapts the topic log to the runtime: takes rendered topic records, groups them by topic."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from headwater.model.topic import TopicRecord
from headwater.topics.log import OutRecord, TopicLog


class TopicLogSink:
    """The runtime's durable writer over a local TopicLog (append returns after fsync)."""

    def __init__(self, root: Path, segment_bytes: int, segment_ms: int) -> None:
        self.log = TopicLog(root, segment_bytes=segment_bytes, segment_ms=segment_ms)

    def append(self, records: Sequence[TopicRecord]) -> None:
        by_topic: dict[str, list[OutRecord]] = {}
        for r in records:
            out = OutRecord(r.key, r.value, r.timestamp, r.headers)
            lst = by_topic.get(r.topic)
            if lst is None:
                by_topic[r.topic] = [out]
            else:
                lst.append(out)
        self.log.append(by_topic)

    def maintain(self) -> None:
        self.log.maintain()

    def close(self) -> None:
        self.log.close()
