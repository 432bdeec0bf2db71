"""Where an SQL Server change sits (commit LSN, change LSN, event serial number) and the
`io.debezium.connector.sqlserver.Source` block Debezium derives from it.

Debezium's SQL Server offsets are the same three values (`commit_lsn`, `change_lsn`,
`event_serial_no`); snapshot reads carry the snapshot's LSN as `commit_lsn` and no change LSN.
The field order is current Debezium's SourceInfo: the common fields, `ts_us`/`ts_ns`, then
`schema`, `table`, `change_lsn`, `commit_lsn`, `event_serial_no`.  All but the names is the
change-table base (relational.changetables.position).
"""

from __future__ import annotations

from headwater.model.schema import INT64
from headwater.model.source_block import source_field
from headwater.relational.changetables.position import (
    LsnPosition,
    LsnSourceBlock,
    lsn_source_schema,
)


class SqlServerPosition(LsnPosition):
    """An SQL Server position; its LSNs are "xxxxxxxx:xxxxxxxx:xxxx" text."""

    __slots__ = ()


SQLSERVER_SOURCE_SCHEMA = lsn_source_schema(
    "io.debezium.connector.sqlserver.Source", source_field("event_serial_no", INT64, True))


class SqlServerSourceBlock(LsnSourceBlock):
    """`io.debezium.connector.sqlserver.Source` for a record with an SqlServerPosition."""

    schema = SQLSERVER_SOURCE_SCHEMA
    default_kind = "sqlserver"
