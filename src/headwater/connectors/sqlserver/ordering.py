"""How the pipeline orders SQL Server events (`source.connector` "sqlserver").

Order: (commit LSN, snapshot-before-stream, change LSN, event serial number, topic offset).
Snapshot reads carry the snapshot's LSN as commit LSN and rank there, before the stream events
of later transactions.  A re-delivery has the same (commit LSN, change LSN, serial number).
LSNs are fixed-width hex, so the string order is the tuple order.
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.changetable_ordering import commit_stream_change, lsn_text
from headwater.connectors.registry import EventOrder, lazy_columnar, source_position

LSN_DIGITS = 20
_lsn = lsn_text(LSN_DIGITS, pad=False)


def sqlserver_sequence_key(source: dict[str, Any], total_order: int | None, offset: int) -> str:
    """Sortable sequence of an SQL Server event (see the module docstring)."""
    serial = source.get("event_serial_no") or 0
    return f"{commit_stream_change(source, _lsn)}{int(serial):08x}{offset:016x}"


sqlserver_position = source_position("db", "commit_lsn", "change_lsn", "event_serial_no")
_columnar = lazy_columnar("headwater.connectors.sqlserver.ordering_columns",
                          "sqlserver_sequences")


# The position's fields, change LSN first: it is distinct per change but for the two halves
# of a key change (commit LSN is shared by a transaction's changes, `db` by a topic's).
SQLSERVER_ORDER = EventOrder(
    sqlserver_sequence_key, sqlserver_position, _columnar,
    (("change_lsn", "string"), ("commit_lsn", "string"), ("event_serial_no", "int64"),
     ("db", "string")))
