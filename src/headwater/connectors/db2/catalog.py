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
from headwater.connectors.db2.definitions import catalog_column, definition
from headwater.connectors.db2.types import definition_mapping
from headwater.model.schema import TableId
from headwater.relational.changetables.catalog import fetch_all
from headwater.relational.changetables.codecs import definition_codec
from headwater.relational.codec import RelationalTableCodec
from headwater.relational.table_definition import TableDefinition

log = logging.getLogger("headwater.connectors.db2")

_CD_METADATA = frozenset({"IBMSNAP_COMMITSEQ", "IBMSNAP_INTENTSEQ", "IBMSNAP_OPERATION"})


class ChangeTable(NamedTuple):
    """A registered table: its CD table and the codec of its (kept) columns."""

    table: TableId
    cd_table: str  # CD table name, quoted if necessary (Db2ChangeTable.getCaptureInstance)
    start_lsn: bytes | None  # CD_NEW_SYNCHPOINT
    stop_lsn: bytes | None  # CD_OLD_SYNCHPOINT (unless z.stop.lsn.ignore)
    columns: tuple[str, ...]  # source columns, in table order
    codec: RelationalTableCodec  # of `definition` (today's catalog), for the source columns
    definition: TableDefinition | None = None
    change_columns: tuple[str, ...] = ()  # the CD table's data columns, in its order

    def __str__(self) -> str:
        return f"{self.table} (CD table {self.cd_table})"


def rows(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    return fetch_all(conn, sql, params)


def table_definition(conn: Any, table: TableId) -> TableDefinition:
    """The table's definition from SYSCAT.COLUMNS (definitions.py)."""
    return definition(table, [catalog_column(row) for row in rows(
        conn, queries.GET_COLUMNS, (table.schema or "", table.table))])


def cd_columns(conn: Any, cfg: Db2ConnectorConfig, cd_table: str) -> tuple[str, ...]:
    """The CD table's data columns (after IBMSNAP_COMMITSEQ, _INTENTSEQ, _OPERATION), which
    are the source table's as ADDTABLE found them."""
    names = [str(row[2]).strip() for row in rows(
        conn, queries.GET_COLUMNS, (cfg.cdc_change_tables_schema, cd_table))]
    return tuple(n for n in names if n.upper() not in _CD_METADATA)


def change_tables(conn: Any, cfg: Db2ConnectorConfig) -> list[ChangeTable]:
    """The registered tables the configuration captures, in (schema, table) order."""
    _max, register, _changes = queries.for_platform(cfg.db2_platform)
    sql = queries.with_schemas(register, cfg.cdc_control_schema, cfg.cdc_change_tables_schema)
    found: list[ChangeTable] = []
    mapping = definition_mapping(cfg)
    for row in rows(conn, sql):
        schema, table, cd_table = str(row[0]).strip(), str(row[1]).strip(), str(row[3]).strip()
        if not cfg.table_filter(schema, table):
            log.info("CDC is enabled for table %s.%s but the table is not included by "
                     "connector", schema, table)
            continue
        table_id = TableId(cfg.database_dbname, schema, table)
        current = table_definition(conn, table_id)
        columns = tuple(c.name for c in current.columns)
        codec = definition_codec(cfg, current, columns, mapping, f"table {table_id}")
        stop = None if cfg.z_stop_lsn_ignore or row[5] is None else bytes(row[5])
        found.append(ChangeTable(table_id, queries.quote(cd_table),
                                 None if row[4] is None else bytes(row[4]), stop,
                                 columns, codec, current, cd_columns(conn, cfg, cd_table)))
    found.sort(key=lambda c: c.table.identifier)
    return found


def registrations(conn: Any, cfg: Db2ConnectorConfig) -> frozenset[tuple[Any, ...]]:
    """(source schema, table, CD table, CD_NEW_SYNCHPOINT, CD_OLD_SYNCHPOINT) of every
    registration: one cheap query that tells the streaming loop when a table was registered,
    removed or registered again (a schema change)."""
    _max, register, _changes = queries.for_platform(cfg.db2_platform)
    sql = queries.with_schemas(register, cfg.cdc_control_schema, cfg.cdc_change_tables_schema)
    return frozenset((str(r[0]).strip(), str(r[1]).strip(), str(r[3]).strip(),
                      None if r[4] is None else bytes(r[4]),
                      None if r[5] is None else bytes(r[5])) for r in rows(conn, sql))
