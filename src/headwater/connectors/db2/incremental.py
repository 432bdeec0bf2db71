"""Db2's dialect of the change-table chunk source (relational.changetables.chunks).

Debezium's Db2 connector names tables in signals `<schema>.<table>` (its table ids have an empty
catalog), quotes a name only when it holds a lower-case letter (Db2ObjectNameQuoter), and runs
its incremental snapshot through the same signal-based source as SQL Server; the signal table
must be registered for capture (ASNCDC.ADDTABLE) so its rows reach the CD tables.  Names are
matched in upper case, as Db2 folds unquoted names.  Chunks are limited with `FETCH FIRST n ROWS
ONLY` (Db2's own form, on LUW and z/OS alike; Debezium's generic JDBC form is `LIMIT n`).
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.db2 import queries
from headwater.connectors.db2.catalog import change_tables
from headwater.connectors.db2.config import Db2ConnectorConfig
from headwater.connectors.db2.lsn import lsn_text
from headwater.connectors.db2.position import Db2Position
from headwater.connectors.db2.streaming import max_lsn
from headwater.engine.incremental import IncrementalSnapshotError
from headwater.model.collection import format_collection
from headwater.model.record import SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.chunks import ChangeTableChunkSource
from headwater.relational.changetables.streaming import epoch_us


class Db2ChunkSource(ChangeTableChunkSource):
    """Chunk, key and watermark queries in Db2 SQL."""

    cfg: Db2ConnectorConfig

    def __init__(self, cfg: Db2ConnectorConfig, context: SourceContext, connect: Any) -> None:
        self._connect = connect
        super().__init__(cfg, context)

    def signal_table_ids(self) -> list[TableId]:
        return [TableId(self.cfg.database_dbname, schema, table)
                for schema, table in self.cfg.signal_names]

    def connect(self, database: str) -> Any:
        return self._connect()

    def handles(self, conn: Any, database: str) -> list[Any]:
        return list(change_tables(conn, self.cfg))

    def same_name(self, a: str, b: str) -> bool:
        return a.upper() == b.upper()

    def table_id(self, collection: tuple[str, ...]) -> TableId:
        if len(collection) != 2:
            raise IncrementalSnapshotError(
                f"{format_collection(collection)}: name the table as <schema>.<table>")
        schema, table = collection
        return TableId(self.cfg.database_dbname, schema, table)

    def collection(self, table: TableId) -> tuple[str, ...]:
        return (table.schema or "", table.table)

    def quote(self, name: str) -> str:
        return queries.quote(name)

    def qualified(self, table: TableId) -> str:
        return queries.table_name(table.schema or "", table.table)

    def select(self, columns: str, table: TableId, where: str, order: str | None,
               limit: int | None) -> str:
        sql = f"SELECT {columns} FROM {self.qualified(table)}{where}"
        if order:
            sql += f" ORDER BY {order}"
        if limit is not None:
            sql += f" FETCH FIRST {int(limit)} ROWS ONLY"
        return sql

    def snapshot_position(self, conn: Any, database: str) -> Db2Position:
        return Db2Position(lsn_text(max_lsn(conn, self.cfg)), None, None, epoch_us(None))

    def isolation_statement(self) -> str:
        return queries.ISOLATION[self.cfg.snapshot_isolation_mode]
