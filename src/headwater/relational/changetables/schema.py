"""The table definitions a change-table stream decodes with, moved forward by schema changes
and kept in the schema history (Debezium's SqlServerDatabaseSchema / Db2DatabaseSchema
`applySchemaChange`: record, then emit).

One object per source partition (an SQL Server database; the Db2 database).  It starts from
the snapshot (`snapshot`: a CREATE per table) or from the history at the stored offset
(`recover`), learns tables new to capture (`create`) and a table's new capture instance or
registration (`alter`, skipped when the definition did not change).  Each change is in the
history (durably) before its event is handed on, so an offset stored after the event never
points past an unrecorded definition.

`schema.history.internal.store.only.captured.databases.ddl` leaves out (history and event) the
tables of schemas the schema filters exclude (HistorizedRelationalDatabaseSchema
.skipSchemaChangeEvent); `include.schema.changes=false` keeps the history and drops the events.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from headwater.model.record import SchemaChangeEvent, SnapshotMarker
from headwater.model.schema import TableId
from headwater.relational.changetables.history import ChangeTableHistory
from headwater.relational.changetables.position import LsnPosition
from headwater.relational.changetables.schema_events import STREAMED_DDL, SchemaEventShape
from headwater.relational.table_definition import TableDefinition

log = logging.getLogger("headwater.relational.changetables")


def _keep_all(_table: TableId) -> bool:
    return False


class ChangeTableSchema:
    """Definitions by table, the history they are recorded in, the events they make."""

    def __init__(self, shape: SchemaEventShape, history: ChangeTableHistory, *,
                 include_events: bool = True,
                 skip: Callable[[TableId], bool] = _keep_all) -> None:
        self.shape = shape
        self.history = history
        self.include_events = include_events
        self.skip = skip
        self.tables: dict[TableId, TableDefinition] = {}
        self.version = 0  # moves with every change of `tables` (codec caches compare it)

    def definition(self, table: TableId) -> TableDefinition | None:
        return self.tables.get(table)

    def recover(self, database: str, stored: dict[str, Any]) -> None:
        """The definitions in force at the `stored` offset (of `database`'s partition)."""
        self.tables = self.history.recover(self.shape.source(database), stored)
        self.version += 1
        log.info("%s: recovered %d table definitions of %s up to commit_lsn %s, change_lsn "
                 "%s", self.history, len(self.tables), database, stored.get("commit_lsn"),
                 stored.get("change_lsn"))

    def snapshot(self, definitions: Sequence[TableDefinition], position: LsnPosition,
                 last: bool) -> list[SchemaChangeEvent]:
        """A CREATE per table at the snapshot's position (RelationalSnapshotChangeEventSource
        step 6); with `last` (no data follows) the last event is the snapshot's last."""
        kept = [d for d in definitions if not self.skip(d.id)]
        events = []
        for index, definition in enumerate(kept):
            marker = SnapshotMarker.LAST if last and index == len(kept) - 1 \
                else SnapshotMarker.TRUE
            events.extend(self._apply("CREATE", definition, position, marker))
        return events

    def create(self, definition: TableDefinition,
               position: LsnPosition) -> list[SchemaChangeEvent]:
        """A table new to capture while streaming (its first capture instance)."""
        if self.skip(definition.id):
            self._put(definition)
            return []
        log.info("table %s is new to capture: CREATE at commit_lsn %s", definition.id,
                 position.commit_lsn)
        return self._apply("CREATE", definition, position, SnapshotMarker.FALSE)

    def alter(self, definition: TableDefinition,
              position: LsnPosition) -> list[SchemaChangeEvent]:
        """The table's definition from here on; nothing when it did not change."""
        if self.tables.get(definition.id) == definition:
            log.info("table %s: definition unchanged, no schema change", definition.id)
            return []
        if self.skip(definition.id):
            self._put(definition)
            return []
        log.info("table %s: schema change (ALTER) at commit_lsn %s, change_lsn %s",
                 definition.id, position.commit_lsn, position.change_lsn)
        return self._apply("ALTER", definition, position, SnapshotMarker.FALSE)

    def _put(self, definition: TableDefinition) -> None:
        self.tables[definition.id] = definition
        self.version += 1

    def _apply(self, kind: str, definition: TableDefinition, position: LsnPosition,
               marker: SnapshotMarker) -> list[SchemaChangeEvent]:
        shape = self.shape
        table = definition.id
        streamed = marker is SnapshotMarker.FALSE
        change = shape.change(kind, definition)
        self.history.record(
            shape.source(table.database), shape.position(position, not streamed),
            shape.database_name(table, not streamed), table.schema,
            None if not streamed else STREAMED_DDL, change)
        self._put(definition)
        if not self.include_events:
            return []
        ts_ms = int(time.time() * 1000)
        return [shape.event(change, position, marker, ts_ms, streamed)]
