"""Turning a captured table's catalog columns into its codec, for the SQL Server and Db2
connectors.

Why shared: both connectors keep the columns the column filters admit, map each through their
type table under the configured `time.precision.mode`, `decimal.handling.mode` and
`binary.handling.mode`, leave out (and say so) a type the table does not know, and key the
table by `message.key.columns` or else its primary key.  Only how a server's catalog is read
(which query, which size a type's mapping reads) stays in the connector's catalog.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from headwater.model.schema import Column, TableId, TableSchema
from headwater.relational.changetables.config import ChangeTableConnectorConfig
from headwater.relational.changetables.types import Mapping
from headwater.relational.codec import RelationalTableCodec

# A connector's type table: (type name, size, scale, optional, *, time_mode, decimal_mode,
# binary_mode, column) -> (schema, convert, NOT NULL fallback), None for an unknown type.
ColumnMapping = Callable[..., Mapping | None]


class CatalogColumn(NamedTuple):
    """One captured column as its server's catalog describes it."""

    name: str
    nullable: bool
    type_name: str
    size: int | None  # what the type table reads: a precision or a length
    scale: int | None
    length: int | None  # the column's length in the table schema


def fetch_all(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Every row of `sql`."""
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        return list(cur.fetchall())
    finally:
        cur.close()


def table_codec(cfg: ChangeTableConnectorConfig, table: TableId,
                columns: Sequence[CatalogColumn], keys: Sequence[str],
                column_mapping: ColumnMapping, log: logging.Logger) -> RelationalTableCodec:
    """The codec of `table`: its kept columns (in change-table order) and key."""
    kept: list[Column] = []
    converters = []
    positions: list[int] = []
    for index, info in enumerate(columns):
        if not cfg.column_filter(table.schema or "", table.table, info.name):
            continue
        mapping = column_mapping(
            info.type_name, info.size, info.scale, info.nullable,
            time_mode=cfg.time_precision_mode, decimal_mode=cfg.decimal_handling_mode,
            binary_mode=cfg.binary_handling_mode, column=info.name)
        if mapping is None:
            log.warning("table %s, column %s: type %s is not mapped; column left out", table,
                        info.name, info.type_name)
            continue
        schema, convert, fallback = mapping
        kept.append(Column(info.name, len(kept), info.type_name, schema, length=info.length,
                           scale=info.scale, fallback=fallback))
        converters.append(convert)
        positions.append(index)
    key_override = cfg.key_columns(table.schema or "", table.table)
    names = {c.name for c in kept}
    key = tuple(k for k in (key_override or keys) if k in names)
    return RelationalTableCodec(TableSchema(table, tuple(kept), key), tuple(converters),
                                tuple(positions), len(columns))
