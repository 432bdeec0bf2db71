"""SQL Server's dialect of the change-table chunk source (relational.changetables.chunks).

Debezium 3.x's SQL Server names tables in signals `<database>.<schema>.<table>`, quotes them
`[database].[schema].[table]` (SqlServerConnection.quotedTableIdString), limits a chunk with
`SELECT TOP n`, and with `incremental.snapshot.option.recompile` adds `OPTION(RECOMPILE)` to
the chunk query.  A table is resolved against its database's capture instances (the newest one
of each table); the connection is to that database, as each database is read on its own.
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.sqlserver import queries
from headwater.connectors.sqlserver.catalog import capture_instances
from headwater.connectors.sqlserver.config import SqlServerConnectorConfig
from headwater.connectors.sqlserver.lsn import lsn_text
from headwater.connectors.sqlserver.position import SqlServerPosition
from headwater.connectors.sqlserver.streaming import scalar
from headwater.engine.incremental import IncrementalSnapshotError
from headwater.model.collection import format_collection
from headwater.model.record import SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.chunks import ChangeTableChunkSource
from headwater.relational.changetables.streaming import epoch_us


class SqlServerChunkSource(ChangeTableChunkSource):
    """Chunk, key and watermark queries in T-SQL, per database."""

    cfg: SqlServerConnectorConfig

    def __init__(self, cfg: SqlServerConnectorConfig, context: SourceContext, connect: Any
                 ) -> None:
        self._connect = connect
        super().__init__(cfg, context)

    def signal_table_ids(self) -> list[TableId]:
        return sorted(self.cfg.signal_tables, key=lambda t: t.database)

    def connect(self, database: str) -> Any:
        return self._connect(database)

    def handles(self, conn: Any, database: str) -> list[Any]:
        return list(capture_instances(conn, self.cfg, database))

    def table_id(self, collection: tuple[str, ...]) -> TableId:
        if len(collection) != 3:
            raise IncrementalSnapshotError(
                f"{format_collection(collection)}: name the table as "
                "<database>.<schema>.<table> (Debezium 3.x's SQL Server form)")
        database, schema, table = collection
        if database not in self.cfg.database_names:
            raise IncrementalSnapshotError(
                f"{format_collection(collection)}: database {database!r} is not captured "
                f"(database.names: {', '.join(self.cfg.database_names)})")
        return TableId(database, schema, table)

    def collection(self, table: TableId) -> tuple[str, ...]:
        return (table.database, table.schema or "", table.table)

    def quote(self, name: str) -> str:
        return queries.quote(name)

    def qualified(self, table: TableId) -> str:
        return ".".join(queries.quote(p) for p in (table.database, table.schema or "",
                                                    table.table))

    def select(self, columns: str, table: TableId, where: str, order: str | None,
               limit: int | None) -> str:
        top = f"TOP {int(limit)} " if limit is not None else ""
        return (f"SELECT {top}{columns} FROM {self.qualified(table)}{where}"
                + (f" ORDER BY {order}" if order else ""))

    def chunk_sql(self, sql: str) -> str:
        return sql + " OPTION(RECOMPILE)" if self.cfg.incremental_snapshot_option_recompile \
            else sql

    def snapshot_position(self, conn: Any, database: str) -> SqlServerPosition:
        lsn = lsn_text(bytes(scalar(conn, queries.GET_MAX_LSN, database)))
        return SqlServerPosition(lsn, None, None, epoch_us(None))

    def isolation_statement(self) -> str:
        return queries.ISOLATION[self.cfg.snapshot_isolation_mode]
