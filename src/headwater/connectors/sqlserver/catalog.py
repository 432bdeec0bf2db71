"""What the SQL Server connector reads of a database's catalog: its capture instances (with
their captured columns and start LSNs), the columns' types and the primary keys, turned into
one table codec per capture instance.

Why per capture instance: after a schema change SQL Server needs a second capture instance of
the table with the new columns; both exist for a while, and Debezium reads each change table
up to the start LSN of the next (newer) instance of the same table.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any, NamedTuple

from headwater.connectors.sqlserver import queries
from headwater.connectors.sqlserver.config import SqlServerConnectorConfig
from headwater.connectors.sqlserver.types import column_mapping
from headwater.model.schema import TableId
from headwater.relational.changetables.catalog import CatalogColumn, fetch_all, table_codec
from headwater.relational.codec import RelationalTableCodec

log = logging.getLogger("headwater.connectors.sqlserver")


class ColumnInfo(NamedTuple):
    name: str
    nullable: bool
    data_type: str
    length: int | None
    precision: int | None
    scale: int | None
    datetime_precision: int | None


class CaptureInstance(NamedTuple):
    """A capture instance with the codec of its captured (and kept) columns."""

    name: str
    table: TableId
    start_lsn: bytes
    columns: tuple[str, ...]  # captured columns, in change-table order
    codec: RelationalTableCodec
    stop_lsn: bytes | None = None  # start LSN of the next instance of the same table

    def __str__(self) -> str:
        return f"{self.table} ({self.name})"


def _rows(conn: Any, sql: str, database: str, params: tuple[Any, ...] = ()) -> list[Any]:
    return fetch_all(conn, queries.with_db(sql, database), params)


def _catalog_column(info: ColumnInfo) -> CatalogColumn:
    """Temporal types' size is their fractional-second precision (DATETIME_PRECISION)."""
    size = info.datetime_precision if info.data_type in (
        "time", "datetime2", "datetimeoffset") else info.precision
    return CatalogColumn(info.name, info.nullable, info.data_type, size, info.scale,
                         info.length or info.precision)


def capture_instances(conn: Any, cfg: SqlServerConnectorConfig,
                      database: str) -> list[CaptureInstance]:
    """The database's capture instances of captured tables, oldest first per table."""
    types: dict[tuple[str, str], dict[str, ColumnInfo]] = defaultdict(dict)
    for schema, table, name, _pos, nullable, data_type, length, precision, scale, dtp in _rows(
            conn, queries.GET_COLUMNS, database):
        types[(schema, table)][name] = ColumnInfo(
            name, nullable == "YES", str(data_type).lower(), length, precision, scale, dtp)
    keys: dict[tuple[str, str], list[str]] = defaultdict(list)
    for schema, table, name in _rows(conn, queries.GET_PRIMARY_KEYS, database):
        keys[(schema, table)].append(name)
    captured: dict[int, list[str]] = defaultdict(list)
    for object_id, name in _rows(conn, queries.GET_CAPTURED_COLUMNS, database):
        captured[int(object_id)].append(name)
    found: list[CaptureInstance] = []
    for schema, table, ci, object_id, start_lsn in _rows(
            conn, queries.GET_CHANGE_TABLES, database, (database, database)):
        if not cfg.table_filter(schema, table, database):
            continue
        table_id = TableId(database, schema, table)
        names = captured[int(object_id)]
        infos = [types[(schema, table)][n] for n in names if n in types[(schema, table)]]
        codec = table_codec(cfg, table_id, [_catalog_column(i) for i in infos],
                            keys[(schema, table)], column_mapping, log)
        found.append(CaptureInstance(ci, table_id, bytes(start_lsn),
                                     tuple(i.name for i in infos), codec))
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
