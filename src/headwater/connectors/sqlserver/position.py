"""Where an SQL Server change sits (commit LSN, change LSN, event serial number) and the
`io.debezium.connector.sqlserver.Source` block Debezium derives from it.

Debezium's SQL Server offsets are the same three values (`commit_lsn`, `change_lsn`,
`event_serial_no`); snapshot reads carry the snapshot's LSN as `commit_lsn` and no change LSN.
The field order is current Debezium's SourceInfo: the common fields, `ts_us`/`ts_ns`, then
`schema`, `table`, `change_lsn`, `commit_lsn`, `event_serial_no`.  All but the names is the
change-table base (relational.changetables.position).

Datastream's SQL Server `source_metadata` reads three attributes of the position
(formats/datastream/sources.py): `lsn`, the change's own log sequence number (`change_lsn`,
`__$seqval`); `tx_id`, the transaction it belongs to (its commit LSN, the id Debezium's
transaction metadata uses too); `physical_location`, the change's log record as three
integers, the LSN's own parts (virtual log file, log block, slot).
"""

from __future__ import annotations

from headwater.model.schema import INT64
from headwater.model.source_block import source_field
from headwater.relational.changetables.position import (
    LsnPosition,
    LsnSourceBlock,
    lsn_parts,
    lsn_source_schema,
)


class SqlServerPosition(LsnPosition):
    """An SQL Server position; its LSNs are "xxxxxxxx:xxxxxxxx:xxxx" text."""

    __slots__ = ()

    @property
    def lsn(self) -> str | None:
        """Datastream's `lsn`: the change's LSN."""
        return self.change_lsn

    @property
    def tx_id(self) -> str | None:
        """Datastream's `tx_id`: the transaction's commit LSN."""
        return self.commit_lsn

    @property
    def physical_location(self) -> list[int] | None:
        """Datastream's `physical_location`: the change LSN's three parts (VLF, block,
        slot)."""
        return None if self.change_lsn is None else list(lsn_parts(self.change_lsn))


SQLSERVER_SOURCE_SCHEMA = lsn_source_schema(
    "io.debezium.connector.sqlserver.Source", source_field("event_serial_no", INT64, True))


class SqlServerSourceBlock(LsnSourceBlock):
    """`io.debezium.connector.sqlserver.Source` for a record with an SqlServerPosition."""

    schema = SQLSERVER_SOURCE_SCHEMA
    default_kind = "sqlserver"
