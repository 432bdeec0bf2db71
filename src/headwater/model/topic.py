"""A record on its way to a topic: what every format produces and every topic writer takes."""

from __future__ import annotations

from typing import NamedTuple


class TopicRecord(NamedTuple):
    """One record for a topic: JSON bytes of key and value (None = null key / tombstone)."""

    key: bytes | None
    value: bytes | None
    timestamp: int  # ms since the epoch
    headers: tuple[tuple[str, bytes], ...] = ()


# Records grouped by topic, each list in emission order: the unit formats produce and topic
# writers append (grouping once in the format avoids a per-record regrouping pass).
TopicBatch = dict[str, list[TopicRecord]]
