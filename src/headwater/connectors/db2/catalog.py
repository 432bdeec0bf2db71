"""What the Db2 connector reads of a database's catalog: the tables registered for SQL
Replication capture (ASN's IBMSNAP_REGISTER: source table, CD table, CD_NEW_SYNCHPOINT and
CD_OLD_SYNCHPOINT), their columns' types and primary keys (SYSCAT.COLUMNS), turned into one
table codec per registered table.

Why the register: a Db2 table is captured when the ASN Capture program (or the
ASNCDC.ADDTABLE procedure of Debezium's setup) registered it and writes its changes to a CD
table; the connector reads what the register lists, as Debezium's listOfChangeTables does.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from headwater.connectors.db2 import queries
from headwater.connectors.db2.config import Db2ConnectorConfig
from headwater.connectors.db2.types import column_mapping
from headwater.model.schema import Column, TableId, TableSchema
from headwater.relational.codec import RelationalTableCodec

log = logging.getLogger("headwater.connectors.db2")


class ColumnInfo(NamedTuple):
    name: str
    nullable: bool
    type_name: str
    length: int | None
    scale: int | None
    key_seq: int | None


class ChangeTable(NamedTuple):
    """A registered table: its CD table and the codec of its (kept) columns."""

    table: TableId
    cd_table: str  # CD table name, quoted if necessary (Db2ChangeTable.getCaptureInstance)
    start_lsn: bytes | None  # CD_NEW_SYNCHPOINT
    stop_lsn: bytes | None  # CD_OLD_SYNCHPOINT (unless z.stop.lsn.ignore)
    columns: tuple[str, ...]  # source columns, in table order (the CD table's data columns)
    codec: RelationalTableCodec

    def __str__(self) -> str:
        return f"{self.table} (CD table {self.cd_table})"


def rows(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    cur = conn.cursor()
    try:
        cur.execute(sql, params)
        return list(cur.fetchall())
    finally:
        cur.close()


def _codec(cfg: Db2ConnectorConfig, table: TableId,
           infos: list[ColumnInfo]) -> RelationalTableCodec:
    columns: list[Column] = []
    converters = []
    keep: list[int] = []
    for index, info in enumerate(infos):
        if not cfg.column_filter(table.schema or "", table.table, info.name):
            continue
        mapping = column_mapping(
            info.type_name, info.length, info.scale, info.nullable,
            time_mode=cfg.time_precision_mode, decimal_mode=cfg.decimal_handling_mode,
            binary_mode=cfg.binary_handling_mode, column=info.name)
        if mapping is None:
            log.warning("table %s, column %s: type %s is not mapped; column left out", table,
                        info.name, info.type_name)
            continue
        schema, convert, fallback = mapping
        columns.append(Column(info.name, len(columns), info.type_name, schema,
                              length=info.length, scale=info.scale, fallback=fallback))
        converters.append(convert)
        keep.append(index)
    keys = tuple(i.name for i in sorted((i for i in infos if i.key_seq), key=lambda i: i.key_seq
                                        or 0))
    key_override = cfg.key_columns(table.schema or "", table.table)
    kept = {c.name for c in columns}
    key = tuple(k for k in (key_override or keys) if k in kept)
    return RelationalTableCodec(TableSchema(table, tuple(columns), key), tuple(converters),
                                tuple(keep), len(infos))


def table_columns(conn: Any, schema: str, table: str) -> list[ColumnInfo]:
    return [ColumnInfo(str(name).strip(), str(nulls).strip() == "Y", str(type_name).strip(),
                       length, scale, key_seq)
            for _s, _t, name, _no, nulls, type_name, length, scale, key_seq in rows(
                conn, queries.GET_COLUMNS, (schema, table))]


def change_tables(conn: Any, cfg: Db2ConnectorConfig) -> list[ChangeTable]:
    """The registered tables the configuration captures, in (schema, table) order."""
    _max, register, _changes = queries.for_platform(cfg.db2_platform)
    sql = queries.with_schemas(register, cfg.cdc_control_schema, cfg.cdc_change_tables_schema)
    found: list[ChangeTable] = []
    for row in rows(conn, sql):
        schema, table, cd_table = str(row[0]).strip(), str(row[1]).strip(), str(row[3]).strip()
        if not cfg.table_filter(schema, table):
            log.info("CDC is enabled for table %s.%s but the table is not included by "
                     "connector", schema, table)
            continue
        table_id = TableId(cfg.database_dbname, schema, table)
        infos = table_columns(conn, schema, table)
        stop = None if cfg.z_stop_lsn_ignore or row[5] is None else bytes(row[5])
        found.append(ChangeTable(table_id, queries.quote(cd_table),
                                 None if row[4] is None else bytes(row[4]), stop,
                                 tuple(i.name for i in infos), _codec(cfg, table_id, infos)))
    found.sort(key=lambda c: c.table.identifier)
    return found
