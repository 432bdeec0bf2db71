"""How the pipeline orders MongoDB events (`source.connector` "mongodb").

Order: (`source.ts_ms`, snapshot-before-stream, `source.ord` for stream events, position in
the transaction, topic offset), fixed-width hex, so the string order is the tuple order.

Why these fields.  A change stream event's position is its cluster time, a BSON Timestamp
(seconds, increment); Debezium puts the increment in `ord` and, since 3.4 (DBZ-9683), the
event's `wallTime` (the primary's clock, in ms) in `ts_ms` when the server sends one (MongoDB
6.0+), else the cluster time's seconds x 1000 (`ts_us`/`ts_ns` are the same instant, no finer).
The resume token, which alone orders exactly, is not in the event.  (ts_ms, ord) follows the
cluster order as long as the primary's wall clock does not step back: within one wall-clock
millisecond the increment orders, across milliseconds the clock does, and the increment
restarts only when the cluster time's second changes.

Snapshot reads are not at a cluster time: Debezium stamps them with the connector's clock when
the document was read (`ts_ms`) and the increment of the point the stream resumes from (`ord`,
or -1), which means nothing for the read.  A MongoDB snapshot is not a consistent cut: a read
shows the document as of its read time, and the stream replays the changes from before the
snapshot started.  So a read ranks by its read time: above stream events that happened
before it (the read already shows them), below the ones after it; a stream event in the very
same millisecond wins (its image is the newer, or an equal one).  Its `ord` is taken as 0.

Events of one transaction share their cluster time (and `lsid`/`txnNumber`); the
transaction block's `total_order`, when `provide.transaction.metadata` is on, then the topic
offset (the connector emits a transaction's events in order) order them.

Position (re-deliveries of at-least-once capture): (ts_ms, ord, lsid, txnNumber).  Two changes
of one document inside one transaction share it, so the pipeline's document path adds the
event's content to the de-duplication id (`pipeline.documents.events`): a re-delivery is the
same bytes, two changes are not.
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.registry import (
    SNAPSHOT_MARKERS,
    EventOrder,
    source_position,
)

_MAX_MS = 1 << 64
_MAX_U32 = 1 << 32


def _int(value: Any, limit: int) -> int:
    """A non-negative integer field of the source block (absent, negative or odd: 0)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value >= limit:
        return 0
    return value


def mongodb_sequence_key(source: dict[str, Any], total_order: int | None, offset: int) -> str:
    """Sortable sequence of a MongoDB event (see the module docstring)."""
    is_stream = 0 if source.get("snapshot") in SNAPSHOT_MARKERS else 1
    ts_ms = _int(source.get("ts_ms"), _MAX_MS)
    order = _int(source.get("ord"), _MAX_U32) if is_stream else 0
    return (f"{ts_ms:016x}{is_stream}{order:08x}{_int(total_order, _MAX_U32):08x}"
            f"{offset:016x}")


mongodb_position = source_position("ts_ms", "ord", "lsid", "txnNumber")


# No column-wise builder: MongoDB topics take the pipeline's document path, never the
# relational column-wise reader.
MONGODB_ORDER = EventOrder(mongodb_sequence_key, mongodb_position)
