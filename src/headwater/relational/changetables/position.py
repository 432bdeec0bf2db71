"""The position of a change-table change (commit LSN, change LSN, event serial number) and the
source block Debezium derives from it, shared by the SQL Server and Db2 connectors.

Why one base: both Debezium connectors store the same three offset values (`commit_lsn`,
`change_lsn`, `event_serial_no`), order changes by them, and write a source block of the
common fields, `ts_us`/`ts_ns`, `schema`, `table`, then the LSNs.  What differs stays in the
connector: the source schema's name and whether the serial number is in the block
(`source_fields`, and the fields given to `lsn_source_schema`).

The order key is numeric: each LSN's three colon-separated parts as integers (Debezium's
`Lsn.toString` groups), then the serial number.  That orders exactly as the LSN bytes do, and
Datastream's `sort_keys`, built from it, must be longs (a string has no order next to them).
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

from headwater.model.record import ChangeRecord, SourceContext
from headwater.model.schema import STRING, ConnectField, ConnectSchema, TableId
from headwater.model.source_block import common_source_values, source_field, source_schema


def lsn_parts(text: str | None) -> tuple[int, int, int]:
    """An LSN's text ("00000027:00000758:0003") as its three numbers; None: zeros."""
    if text is None:
        return (0, 0, 0)
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"not an LSN in three colon-separated groups: {text!r}")
    return (int(parts[0], 16), int(parts[1], 16), int(parts[2], 16))


class LsnPosition(NamedTuple):
    """Where a change sits; snapshot reads carry the snapshot's LSN as `commit_lsn` and no
    change LSN.  Connectors subclass it for their own name and source fields."""

    commit_lsn: str | None  # the transaction's commit LSN, as text
    change_lsn: str | None  # None for snapshot reads
    event_serial_no: int | None  # 1 for inserts and deletes, 2 for updates; None in snapshots
    ts_us: int | None = None  # event time in microseconds, when known

    @property
    def order_key(self) -> tuple[int, ...]:
        """(commit LSN parts, change LSN parts, serial number); a snapshot read has no change
        LSN and no serial number (zeros), so it ranks before every change of a later
        commit LSN."""
        return (*lsn_parts(self.commit_lsn), *lsn_parts(self.change_lsn),
                self.event_serial_no or 0)

    def source_fields(self) -> dict[str, Any]:
        """The position's fields of the source block, in the block's order."""
        return {"change_lsn": self.change_lsn, "commit_lsn": self.commit_lsn,
                "event_serial_no": self.event_serial_no}

    def offset(self) -> dict[str, Any]:
        """The stored offset of this position (Debezium's OffsetContext keys)."""
        return {"commit_lsn": self.commit_lsn, "change_lsn": self.change_lsn,
                "event_serial_no": self.event_serial_no}


def lsn_source_schema(name: str, *position_fields: ConnectField) -> ConnectSchema:
    """A change-table connector's source schema: the common fields, `ts_us`/`ts_ns`,
    `schema`, `table`, then the connector's position fields."""
    return source_schema(
        name,
        source_field("schema", STRING, False),
        source_field("table", STRING, False),
        source_field("change_lsn", STRING, True),
        source_field("commit_lsn", STRING, True),
        *position_fields,
    )


class LsnSourceBlock:
    """The source block of a record with an LsnPosition; subclasses set `schema` and the
    default `kind`."""

    schema: ClassVar[ConnectSchema]
    default_kind: ClassVar[str] = ""

    def __init__(self, kind: str | None = None) -> None:
        self.kind = self.default_kind if kind is None else kind

    def payload(self, record: ChangeRecord) -> dict[str, Any]:
        return self.block(record.context, record.table.id, record.position,
                          record.source_ts_ms, record.snapshot)

    def block(self, context: SourceContext, table: TableId, pos: LsnPosition, ts_ms: int,
              snapshot: Any) -> dict[str, Any]:
        """The block of an event of `table` at `pos`: a change record's, or a schema change
        event's (which Debezium fills from the same offset context)."""
        block = common_source_values(context, ts_ms, snapshot, table.database, pos.ts_us)
        block["schema"] = table.schema
        block["table"] = table.table
        block.update(pos.source_fields())
        return block
