"""Where an SQL Server change sits (commit LSN, change LSN, event serial number) and the
`io.debezium.connector.sqlserver.Source` block Debezium derives from it.

Debezium's SQL Server offsets are the same three values (`commit_lsn`, `change_lsn`,
`event_serial_no`); snapshot reads carry the snapshot's LSN as `commit_lsn` and no change LSN.
The field order is current Debezium's SourceInfo: the common fields, `ts_us`/`ts_ns`, then
`schema`, `table`, `change_lsn`, `commit_lsn`, `event_serial_no`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from headwater.model.record import ChangeRecord
from headwater.model.schema import INT64, STRING, STRUCT, ConnectSchema
from headwater.model.source_block import COMMON_SOURCE_FIELDS, SOURCE_TIME_FIELDS, source_field


class SqlServerPosition(NamedTuple):
    commit_lsn: str | None  # "xxxxxxxx:xxxxxxxx:xxxx"
    change_lsn: str | None  # None for snapshot reads
    event_serial_no: int | None  # 1 for inserts and deletes, 2 for updates; None in snapshots
    ts_us: int | None = None  # commit time in microseconds, when known

    @property
    def order_key(self) -> tuple[str, str, int]:
        return (self.commit_lsn or "", self.change_lsn or "", self.event_serial_no or 0)

    def source_fields(self) -> dict[str, Any]:
        return {"change_lsn": self.change_lsn, "commit_lsn": self.commit_lsn,
                "event_serial_no": self.event_serial_no}

    def offset(self) -> dict[str, Any]:
        """The stored offset of this position (Debezium's SqlServerOffsetContext keys)."""
        return {"commit_lsn": self.commit_lsn, "change_lsn": self.change_lsn,
                "event_serial_no": self.event_serial_no}


SQLSERVER_SOURCE_SCHEMA = ConnectSchema(
    STRUCT,
    optional=False,
    name="io.debezium.connector.sqlserver.Source",
    fields=(
        *COMMON_SOURCE_FIELDS,
        *SOURCE_TIME_FIELDS,
        source_field("schema", STRING, False),
        source_field("table", STRING, False),
        source_field("change_lsn", STRING, True),
        source_field("commit_lsn", STRING, True),
        source_field("event_serial_no", INT64, True),
    ),
)


class SqlServerSourceBlock:
    """`io.debezium.connector.sqlserver.Source` for a record with an SqlServerPosition."""

    schema = SQLSERVER_SOURCE_SCHEMA

    def __init__(self, kind: str = "sqlserver") -> None:
        self.kind = kind

    def payload(self, record: ChangeRecord) -> dict[str, Any]:
        pos: SqlServerPosition = record.position
        table = record.table.id
        ts_us = pos.ts_us if pos.ts_us is not None else record.source_ts_ms * 1000
        return {
            "version": record.context.connector_version,
            "connector": record.context.kind,
            "name": record.context.server_name,
            "ts_ms": record.source_ts_ms,
            "snapshot": record.snapshot,
            "db": table.database,
            "sequence": None,
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": table.schema,
            "table": table.table,
            "change_lsn": pos.change_lsn,
            "commit_lsn": pos.commit_lsn,
            "event_serial_no": pos.event_serial_no,
        }
