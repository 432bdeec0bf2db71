"""How the pipeline orders PostgreSQL events (`source.connector` "postgresql").

Order: (commit position, snapshot-before-stream, LSN, order in the transaction, topic offset).
The commit position is `source.sequence[0]` (the last commit LSN when the event was emitted,
increasing from one transaction to the next); snapshot reads, which have none, rank at their
consistent point, below stream events of later transactions.  A re-delivery has the same
(LSN, txId).  The layout is fixed-width, so the string order is the tuple order.
"""

from __future__ import annotations

from typing import Any

import orjson

from headwater.connectors.registry import (
    SNAPSHOT_MARKERS,
    EventOrder,
    lazy_columnar,
    source_position,
)


def postgres_sequence_key(source: dict[str, Any], total_order: int | None, offset: int) -> str:
    """Sortable sequence of a PostgreSQL event (see the module docstring)."""
    lsn = source.get("lsn") or 0
    seq0: int | None = None
    sequence = source.get("sequence")
    if sequence:
        try:
            first = orjson.loads(sequence)[0]
            seq0 = int(first) if first is not None else None
        except (ValueError, IndexError, TypeError):
            seq0 = None
    is_stream = 0 if source.get("snapshot") in SNAPSHOT_MARKERS else 1
    primary = seq0 if seq0 is not None else lsn
    return f"{primary:016x}{is_stream}{lsn:016x}{total_order or 0:08x}{offset:016x}"


postgres_position = source_position("lsn", "txId")
_columnar = lazy_columnar("headwater.connectors.postgres.ordering_columns", "postgres_sequences")


POSTGRES_ORDER = EventOrder(postgres_sequence_key, postgres_position, _columnar,
                            (("lsn", "int64"), ("txId", "int64")))
