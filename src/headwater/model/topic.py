"""A record on its way to a topic: what every format produces and every topic writer takes."""

from __future__ import annotations

from typing import NamedTuple

# Record headers: (name, value bytes as the `header.converter` wrote them, None for a null
# value), in order (headwater.converters.headers).
HeaderBytes = tuple[tuple[str, bytes | None], ...]


class TopicRecord(NamedTuple):
    """One record for a topic: key and value bytes (None = null key / tombstone), headers,
    and the partition a transform chose (Debezium's PartitionRouting; None: by key)."""

    key: bytes | None
    value: bytes | None
    timestamp: int  # ms since the epoch
    headers: HeaderBytes = ()
    partition: int | None = None


# Records grouped by topic, each list in emission order: the unit formats produce and topic
# writers append (grouping once in the format avoids a per-record regrouping pass).
TopicBatch = dict[str, list[TopicRecord]]
