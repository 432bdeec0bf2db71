"""How the pipeline orders MySQL/MariaDB events (`source.connector` "mysql" or "mariadb").

Order: (binlog file number, position of the row event in it, snapshot-before-stream, row within
the event, topic offset).  A snapshot read carries the binlog position the snapshot is
consistent with (and row 0), so it ranks below every stream event from that position on and
above the stream events before it.  A re-delivery has the same (file, pos, row).  The layout is
fixed-width, so the string order is the tuple order.
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.registry import (
    SNAPSHOT_MARKERS,
    EventOrder,
    lazy_columnar,
    source_position,
)


def binlog_number(file: Any) -> int:
    """The number of a binlog file from its name's suffix: `mysql-bin.000003` -> 3 (0 if none)."""
    if not isinstance(file, str):
        return 0
    digits = len(file) - len(file.rstrip("0123456789"))
    return int(file[len(file) - digits:]) if digits else 0


def mysql_sequence_key(source: dict[str, Any], offset: int) -> str:
    """Sortable sequence of a MySQL/MariaDB event (see the module docstring)."""
    is_stream = 0 if source.get("snapshot") in SNAPSHOT_MARKERS else 1
    pos = source.get("pos") or 0
    row = 0 if not is_stream else source.get("row") or 0
    return (f"{binlog_number(source.get('file')):08x}{pos:016x}{is_stream}{row:08x}"
            f"{offset:016x}")


def _sequence(source: dict[str, Any], _total_order: int | None, offset: int) -> str:
    return mysql_sequence_key(source, offset)


mysql_position = source_position("file", "pos", "row")
_columnar = lazy_columnar("headwater.connectors.mysql.ordering_columns", "mysql_sequences")


MYSQL_ORDER = EventOrder(_sequence, mysql_position, _columnar,
                         (("file", "string"), ("pos", "int64"), ("row", "int64")))
