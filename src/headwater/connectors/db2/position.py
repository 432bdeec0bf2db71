"""Where a Db2 change sits (commit LSN, change LSN, event serial number) and the
`io.debezium.connector.db2.Source` block Debezium derives from it.

Debezium's Db2 offsets are `commit_lsn`, `change_lsn` and `event_serial_no` (Db2OffsetContext);
unlike SQL Server, the serial number is *not* in the source block, whose field order is
current Debezium's Db2SourceInfoStructMaker: the common fields, `ts_us`/`ts_ns`, then `schema`,
`table`, `change_lsn`, `commit_lsn`.  Snapshot reads carry the snapshot's maximum LSN as
`commit_lsn` and no change LSN.  The rest is the change-table base
(relational.changetables.position).
"""

from __future__ import annotations

from typing import Any

from headwater.relational.changetables.position import (
    LsnPosition,
    LsnSourceBlock,
    lsn_source_schema,
)


class Db2Position(LsnPosition):
    """A Db2 position: IBMSNAP_COMMITSEQ and IBMSNAP_INTENTSEQ as text."""

    __slots__ = ()

    def source_fields(self) -> dict[str, Any]:
        """Without `event_serial_no`: Db2's source block does not carry it."""
        return {"change_lsn": self.change_lsn, "commit_lsn": self.commit_lsn}


DB2_SOURCE_SCHEMA = lsn_source_schema("io.debezium.connector.db2.Source")


class Db2SourceBlock(LsnSourceBlock):
    """`io.debezium.connector.db2.Source` for a record with a Db2Position."""

    schema = DB2_SOURCE_SCHEMA
    default_kind = "db2"
