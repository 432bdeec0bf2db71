"""Schema change events and history records of the change-table connectors: what Debezium's
SqlServerSchemaChangeEventEmitter / Db2SchemaChangeEventEmitter, its EventDispatcher and
HistorizedRelationalDatabaseSchema.record make of one table definition.

The event (topic `<topic.prefix>`): key `io.debezium.connector.<connector>.SchemaChangeKey`
{databaseName}; value `...SchemaChangeValue` {source, ts_ms, databaseName, schemaName, ddl,
tableChanges} with one table change (these connectors change one table per event).  The
history record: the partition as `source`, the offset as `position`, the same names and one
table change.  Neither connector has DDL text: a snapshot CREATE has none (null), a streamed
CREATE or ALTER says "N/A".

`SchemaEventShape` holds what differs by connector, each overriding only that (the partition,
the offset's keys, the database name, the table id's parts), as the SQL Server and Db2 folders
do in `schema_events.py`.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from headwater.model.record import SchemaChangeEvent, SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.position import LsnPosition, LsnSourceBlock
from headwater.relational.table_changes import (
    TableChange,
    change_struct,
    quoted_id,
    schema_change_key_schema,
    schema_change_value_schema,
)
from headwater.relational.table_definition import TableDefinition

STREAMED_DDL = "N/A"


class SchemaEventShape:
    """The SQL Server shape; Db2's overrides `source`, `position`, `database_name`,
    `id_parts` and `table_id`."""

    CONNECTOR: ClassVar[str] = "sqlserver"  # Debezium's Module.name()

    def __init__(self, context: SourceContext, source_block: LsnSourceBlock,
                 database: str = "") -> None:
        self.context = context
        self.source_block = source_block
        self.database = database  # the connector's database, where its table ids lack one
        self.key_schema = schema_change_key_schema(self.CONNECTOR)
        self.value_schema = schema_change_value_schema(self.CONNECTOR, source_block.schema)

    # -- what differs by connector ---------------------------------------------------------------

    def source(self, database: str) -> dict[str, Any]:
        """The history record's `source` for a table of `database`: the offset partition
        (SqlServerPartition: server and database)."""
        return {"server": self.context.server_name, "database": database}

    def position(self, position: LsnPosition, snapshot: bool) -> dict[str, Any]:
        """The offset at the change, keys in Debezium's order (its offset is a HashMap).  A
        snapshot's offset says so and has `event_serial_no` 1 (SqlServerOffsetContext); one
        at a stored offset (snapshot.mode=recovery) keeps its change LSN and serial number."""
        if snapshot:
            return {"event_serial_no": position.event_serial_no or 1,
                    "commit_lsn": position.commit_lsn, "change_lsn": position.change_lsn,
                    "snapshot": "INITIAL", "snapshot_completed": False}
        return {"event_serial_no": position.event_serial_no or 0,
                "commit_lsn": position.commit_lsn, "change_lsn": position.change_lsn}

    def database_name(self, table: TableId, snapshot: bool) -> str:
        """`databaseName`: the table id's catalog (the snapshot's catalog is the same)."""
        return table.database

    def id_parts(self, table: TableId) -> tuple[str | None, ...]:
        """The parts of Debezium's table id (catalog, schema, table)."""
        return (table.database, table.schema, table.table)

    def table_id(self, parts: tuple[str, ...]) -> TableId:
        """The connector's TableId of a recorded id's parts (the inverse of `id_parts`)."""
        if len(parts) != 3:
            raise ValueError(f"table id {'.'.join(parts)!r} is not database.schema.table")
        return TableId(parts[0], parts[1], parts[2])

    # -- built from those ------------------------------------------------------------------------

    def change(self, kind: str, definition: TableDefinition) -> TableChange:
        return TableChange(kind, quoted_id(*self.id_parts(definition.id)), definition)

    def event(self, change: TableChange, position: LsnPosition, snapshot: Any,
              ts_ms: int, streamed: bool) -> SchemaChangeEvent:
        """The schema change event of one table change at `position`; `snapshot` is the
        source block's marker, `ts_ms` its time (the snapshot's read time, or now)."""
        table = change.table.id
        database = self.database_name(table, not streamed)
        now = int(time.time() * 1000)
        value = {
            "source": self.source_block.block(self.context, table, position, ts_ms, snapshot),
            "ts_ms": now,
            "databaseName": database,
            "schemaName": table.schema,
            "ddl": STREAMED_DDL if streamed else None,
            "tableChanges": [change_struct(change)],
        }
        return SchemaChangeEvent(self.context, database, now, self.key_schema,
                                 {"databaseName": database}, self.value_schema, value, position)
