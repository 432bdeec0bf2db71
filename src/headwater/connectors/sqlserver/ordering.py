"""How the pipeline orders SQL Server events (`source.connector` "sqlserver").

Order: (commit LSN, snapshot-before-stream, change LSN, event serial number, topic offset).
Snapshot reads carry the snapshot's LSN as commit LSN and rank there, before the stream events
of later transactions.  A re-delivery has the same (commit LSN, change LSN, serial number).
LSNs are fixed-width hex, so the string order is the tuple order.
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.registry import SNAPSHOT_MARKERS, EventOrder

LSN_DIGITS = 20
_NO_LSN = "0" * LSN_DIGITS


def _lsn(value: Any) -> str:
    return value.replace(":", "") if isinstance(value, str) else _NO_LSN


def sqlserver_sequence_key(source: dict[str, Any], total_order: int | None, offset: int) -> str:
    """Sortable sequence of an SQL Server event (see the module docstring)."""
    is_stream = 0 if source.get("snapshot") in SNAPSHOT_MARKERS else 1
    serial = source.get("event_serial_no") or 0
    return (f"{_lsn(source.get('commit_lsn'))}{is_stream}{_lsn(source.get('change_lsn'))}"
            f"{int(serial):08x}{offset:016x}")


def sqlserver_position(source: dict[str, Any]) -> tuple[Any, ...]:
    return (source.get("db"), source.get("commit_lsn"), source.get("change_lsn"),
            source.get("event_serial_no"))


def _columnar(source: Any, total_order: Any, offsets: Any) -> Any:
    from headwater.connectors.sqlserver.ordering_columns import sqlserver_sequences

    return sqlserver_sequences(source, total_order, offsets)


# The position's fields, change LSN first: it is distinct per change but for the two halves
# of a key change (commit LSN is shared by a transaction's changes, `db` by a topic's).
SQLSERVER_ORDER = EventOrder(
    sqlserver_sequence_key, sqlserver_position, _columnar,
    (("change_lsn", "string"), ("commit_lsn", "string"), ("event_serial_no", "int64"),
     ("db", "string")))
