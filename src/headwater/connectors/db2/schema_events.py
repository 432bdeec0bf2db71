"""The Db2 connector's schema change events and history records: what differs from SQL
Server's (relational.changetables.schema_events), from Debezium's Db2 classes.

- The partition is `{"server": <topic.prefix>}` (Db2Partition): one database per connector.
- Offsets: a snapshot's is `commit_lsn`, `snapshot`, `snapshot_completed` (no change LSN or
  serial number), a stream's `event_serial_no`, `commit_lsn`, `change_lsn`
  (Db2OffsetContext.getOffset; HashMap order).
- Table ids have an empty catalog (`new TableId("", schema, table)` in
  Db2Connection.listOfChangeTables), so ids are `"SCHEMA"."TABLE"` and a streamed event's
  `databaseName` is "" (the catalog); a snapshot event's is the snapshot's catalog name, the
  database's real name (Debezium asks `CURRENT SERVER`; Headwater uses `database.dbname`,
  the same name unless the database is reached through an alias).
"""

from __future__ import annotations

from typing import Any

from headwater.model.schema import TableId
from headwater.relational.changetables.position import LsnPosition
from headwater.relational.changetables.schema_events import SchemaEventShape


class Db2SchemaEventShape(SchemaEventShape):
    CONNECTOR = "db2"

    def source(self, database: str) -> dict[str, Any]:
        return {"server": self.context.server_name}

    def position(self, position: LsnPosition, snapshot: bool) -> dict[str, Any]:
        if snapshot and position.change_lsn is None:
            return {"commit_lsn": position.commit_lsn, "snapshot": "INITIAL",
                    "snapshot_completed": False}
        return {"event_serial_no": position.event_serial_no or 0,
                "commit_lsn": position.commit_lsn, "change_lsn": position.change_lsn}

    def database_name(self, table: TableId, snapshot: bool) -> str:
        return table.database if snapshot else ""

    def id_parts(self, table: TableId) -> tuple[str | None, ...]:
        return (None, table.schema, table.table)

    def table_id(self, parts: tuple[str, ...]) -> TableId:
        if len(parts) != 2:
            raise ValueError(f"table id {'.'.join(parts)!r} is not schema.table")
        return TableId(self.database, parts[0], parts[1])
