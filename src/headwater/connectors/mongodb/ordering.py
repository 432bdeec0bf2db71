"""How the pipeline orders MongoDB events (`source.connector` "mongodb"): a minimal order.

Order: (source.ts_ms, snapshot-before-stream, source.ord, topic offset), fixed-width so the
string order is the tuple order; a re-delivery has the same (ts_ms, ord).  `ts_ms` is the
change's wall time (MongoDB 6+) and `ord` its increment within the cluster-time second, so
events of one second keep their order only as far as the wall times agree.  A fuller order
(cluster time from the resume token) can replace this module as a whole.
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.registry import SNAPSHOT_MARKERS, EventOrder


def mongodb_sequence_key(source: dict[str, Any], offset: int) -> str:
    is_stream = 0 if source.get("snapshot") in SNAPSHOT_MARKERS else 1
    ts = max(int(source.get("ts_ms") or 0), 0)
    order = max(int(source.get("ord") or 0) + 1, 0)
    return f"{ts:016x}{is_stream}{order:08x}{offset:016x}"


def _sequence(source: dict[str, Any], _total_order: int | None, offset: int) -> str:
    return mongodb_sequence_key(source, offset)


def mongodb_position(source: dict[str, Any]) -> tuple[Any, ...]:
    return (source.get("ts_ms"), source.get("ord"))


MONGODB_ORDER = EventOrder(_sequence, mongodb_position)
