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
from headwater.model.schema import TableId
from headwater.relational.changetables.catalog import CatalogColumn, fetch_all, table_codec
from headwater.relational.codec import RelationalTableCodec

log = logging.getLogger("headwater.connectors.db2")


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


def table_columns(conn: Any, schema: str, table: str) -> tuple[list[CatalogColumn], list[str]]:
    """The table's columns (SYSCAT.COLUMNS, in column order) and its primary key (KEYSEQ
    order); a Db2 type's size is its LENGTH (a DECIMAL's precision)."""
    columns: list[CatalogColumn] = []
    keys: list[tuple[int, str]] = []
    for _s, _t, raw_name, _no, nulls, type_name, length, scale, key_seq in fetch_all(
            conn, queries.GET_COLUMNS, (schema, table)):
        name = str(raw_name).strip()
        columns.append(CatalogColumn(name, str(nulls).strip() == "Y", str(type_name).strip(),
                                     length, scale, length))
        if key_seq:
            keys.append((int(key_seq), name))
    return columns, [name for _seq, name in sorted(keys)]


def change_tables(conn: Any, cfg: Db2ConnectorConfig) -> list[ChangeTable]:
    """The registered tables the configuration captures, in (schema, table) order."""
    _max, register, _changes = queries.for_platform(cfg.db2_platform)
    sql = queries.with_schemas(register, cfg.cdc_control_schema, cfg.cdc_change_tables_schema)
    found: list[ChangeTable] = []
    for row in fetch_all(conn, sql):
        schema, table, cd_table = str(row[0]).strip(), str(row[1]).strip(), str(row[3]).strip()
        if not cfg.table_filter(schema, table):
            log.info("CDC is enabled for table %s.%s but the table is not included by "
                     "connector", schema, table)
            continue
        table_id = TableId(cfg.database_dbname, schema, table)
        columns, keys = table_columns(conn, schema, table)
        codec = table_codec(cfg, table_id, columns, keys, column_mapping, log)
        stop = None if cfg.z_stop_lsn_ignore or row[5] is None else bytes(row[5])
        found.append(ChangeTable(table_id, queries.quote(cd_table),
                                 None if row[4] is None else bytes(row[4]), stop,
                                 tuple(c.name for c in columns), codec))
    found.sort(key=lambda c: c.table.identifier)
    return found
