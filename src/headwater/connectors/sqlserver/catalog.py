"""What the SQL Server connector reads of a database's catalog: its capture instances (with
their captured columns and start LSNs) and each one's table definition (definitions.py) with
the codec that definition gives.

Why per capture instance: after a schema change SQL Server needs a second capture instance of
the table with the new columns; both exist for a while, and Debezium reads each change table
up to the start LSN of the next (newer) instance of the same table.  An instance's definition
is the table's current catalog restricted to the instance's captured columns
(SqlServerConnection.getTableSchemaFromTable); which definition decodes its rows is the schema
history's business (relational.changetables.schema).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any, NamedTuple

from headwater.connectors.sqlserver import queries
from headwater.connectors.sqlserver.config import SqlServerConnectorConfig
from headwater.connectors.sqlserver.definitions import catalog_definitions
from headwater.connectors.sqlserver.types import definition_mapping
from headwater.model.schema import TableId
from headwater.relational.changetables.catalog import fetch_all
from headwater.relational.changetables.codecs import definition_codec
from headwater.relational.codec import RelationalTableCodec
from headwater.relational.table_definition import TableDefinition

log = logging.getLogger("headwater.connectors.sqlserver")


class CaptureInstance(NamedTuple):
    """A capture instance with the codec of its captured (and kept) columns."""

    name: str
    table: TableId
    start_lsn: bytes
    columns: tuple[str, ...]  # every captured column, in change-table order
    codec: RelationalTableCodec  # of `definition` (today's catalog)
    stop_lsn: bytes | None = None  # start LSN of the next instance of the same table
    definition: TableDefinition | None = None

    @property
    def change_columns(self) -> tuple[str, ...]:
        """The change table's data columns (what the change query selects)."""
        return self.columns

    def __str__(self) -> str:
        return f"{self.table} ({self.name})"


def _rows(conn: Any, sql: str, database: str, params: tuple[Any, ...] = ()) -> list[Any]:
    return fetch_all(conn, queries.with_db(sql, database), params)


def capture_instances(conn: Any, cfg: SqlServerConnectorConfig, database: str,
                      catalog: dict[tuple[str, str], TableDefinition] | None = None,
                      ) -> list[CaptureInstance]:
    """The database's capture instances of captured tables, oldest first per table."""
    if catalog is None:
        catalog = catalog_definitions(conn, database)
    captured: dict[int, list[str]] = defaultdict(list)
    for object_id, name in _rows(conn, queries.GET_CAPTURED_COLUMNS, database):
        captured[int(object_id)].append(name)
    mapping = definition_mapping(cfg)
    found: list[CaptureInstance] = []
    for schema, table, ci, object_id, start_lsn in _rows(
            conn, queries.GET_CHANGE_TABLES, database, (database, database)):
        if not cfg.table_filter(schema, table, database):
            continue
        table_id = TableId(database, schema, table)
        current = catalog.get((schema, table), TableDefinition(table_id, ()))
        # Every captured column is selected (a column dropped since is still in the change
        # table, and an older definition may need it); the definition keeps today's.
        columns = tuple(captured[int(object_id)])
        definition = current.with_columns(set(columns))
        codec = definition_codec(cfg, definition, columns, mapping, f"capture instance {ci}")
        found.append(CaptureInstance(ci, table_id, bytes(start_lsn), columns, codec,
                                     definition=definition))
    found.sort(key=lambda c: (c.table.identifier, c.start_lsn))
    out: list[CaptureInstance] = []
    for index, instance in enumerate(found):
        nxt = found[index + 1] if index + 1 < len(found) else None
        stop = nxt.start_lsn if nxt is not None and nxt.table == instance.table else None
        out.append(instance._replace(stop_lsn=stop))
    return out


def change_tables(conn: Any, database: str) -> frozenset[tuple[str, bytes]]:
    """(capture instance, start LSN) of every change table: one cheap query that tells the
    streaming loop when capture instances came or went (a schema change's second instance)."""
    return frozenset((str(ci), bytes(start)) for _s, _t, ci, _o, start in _rows(
        conn, queries.GET_CHANGE_TABLES, database, (database, database)))
