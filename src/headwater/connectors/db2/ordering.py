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

from headwater.connectors.registry import SNAPSHOT_MARKERS, EventOrder

LSN_DIGITS = 32
_NO_LSN = "0" * LSN_DIGITS


def _lsn(value: Any) -> str:
    return value.replace(":", "").rjust(LSN_DIGITS, "0") if isinstance(value, str) else _NO_LSN


def db2_sequence_key(source: dict[str, Any], total_order: int | None, offset: int) -> str:
    """Sortable sequence of a Db2 event (see the module docstring)."""
    is_stream = 0 if source.get("snapshot") in SNAPSHOT_MARKERS else 1
    return (f"{_lsn(source.get('commit_lsn'))}{is_stream}{_lsn(source.get('change_lsn'))}"
            f"{offset:016x}")


def db2_position(source: dict[str, Any]) -> tuple[Any, ...]:
    return (source.get("db"), source.get("commit_lsn"), source.get("change_lsn"))


def _columnar(source: Any, total_order: Any, offsets: Any) -> Any:
    from headwater.connectors.db2.ordering_columns import db2_sequences

    return db2_sequences(source, total_order, offsets)


# The position's fields, change LSN first: it is distinct per change (commit LSN is shared by
# a transaction's changes, `db` by a topic's).
DB2_ORDER = EventOrder(db2_sequence_key, db2_position, _columnar,
                       (("change_lsn", "string"), ("commit_lsn", "string"), ("db", "string")))
