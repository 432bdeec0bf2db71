"""How the pipeline orders Db2 events (`source.connector` "db2").

Order: (commit LSN = IBMSNAP_COMMITSEQ, snapshot-before-stream, change LSN =
IBMSNAP_INTENTSEQ, topic offset).  Snapshot reads carry the snapshot's maximum LSN as commit
LSN and rank there, before the stream events of later transactions.  Db2's source block has no
event serial number (the offsets do): an update is one event at its INTENTSEQ, so (commit,
change) is unique per event and a re-delivery has the same pair.  LSNs are fixed-width hex,
so the string order is the byte order.
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.changetable_ordering import commit_stream_change, lsn_text
from headwater.connectors.registry import EventOrder, lazy_columnar, source_position

LSN_DIGITS = 32
_lsn = lsn_text(LSN_DIGITS, pad=True)


def db2_sequence_key(source: dict[str, Any], total_order: int | None, offset: int) -> str:
    """Sortable sequence of a Db2 event (see the module docstring)."""
    return f"{commit_stream_change(source, _lsn)}{offset:016x}"


db2_position = source_position("db", "commit_lsn", "change_lsn")
_columnar = lazy_columnar("headwater.connectors.db2.ordering_columns", "db2_sequences")

# The position's fields, change LSN first: it is distinct per change (commit LSN is shared by
# a transaction's changes, `db` by a topic's).
DB2_ORDER = EventOrder(db2_sequence_key, db2_position, _columnar,
                       (("change_lsn", "string"), ("commit_lsn", "string"), ("db", "string")))
