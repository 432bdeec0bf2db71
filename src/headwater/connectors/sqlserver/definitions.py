"""SQL Server table definitions (relational.table_definition) from the catalog, with the
column facts Debezium reads through mssql-jdbc's `DatabaseMetaData.getColumns`
(sp_columns_100): the JDBC type code, the type name (`int identity` for an identity column),
the column size and the decimal digits.

Why here: the schema history and the `tableChanges` of schema change events carry these facts,
and the connector builds its codecs back from them after a restart.  The catalog is read with
three queries (INFORMATION_SCHEMA.COLUMNS, sys.columns, the primary keys); the JDBC facts are
derived from the declared type as the driver reports them.  They follow mssql-jdbc's
documented mapping and SQL Server's sp_columns sizes; they could not be checked against a live
server here (docs/sqlserver.md).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Final, NamedTuple

from headwater.connectors.sqlserver import queries
from headwater.model.schema import TableId
from headwater.relational.table_definition import ColumnDefinition, TableDefinition, jdbc_column

# java.sql.Types (and microsoft.sql.Types.DATETIMEOFFSET) by SQL Server type.
JDBC_TYPES: Final = {
    "bit": -7, "tinyint": -6, "smallint": 5, "int": 4, "bigint": -5, "decimal": 3,
    "numeric": 2, "money": 3, "smallmoney": 3, "float": 8, "real": 7, "date": 91, "time": 92,
    "datetime": 93, "smalldatetime": 93, "datetime2": 93, "datetimeoffset": -155, "char": 1,
    "varchar": 12, "text": -1, "nchar": -15, "nvarchar": -9, "ntext": -16, "binary": -2,
    "varbinary": -3, "image": -4, "timestamp": -2, "rowversion": -2, "uniqueidentifier": 1,
    "xml": -16, "sysname": -9, "hierarchyid": -3, "sql_variant": -150,
}
# (max) types: the driver reports the LONG* code (Debezium's isMaxColumn relies on it).
_MAX_TYPES: Final[dict[str, tuple[int, int, int | None]]] = {
    "varchar": (-1, 2_147_483_647, None), "nvarchar": (-16, 1_073_741_823, None),
    "varbinary": (-4, 2_147_483_647, None)}
# Fixed column sizes and decimal digits (sp_columns' PRECISION and SCALE).
_FIXED: Final[dict[str, tuple[int, int | None]]] = {
    "bit": (1, None), "tinyint": (3, 0), "smallint": (5, 0), "int": (10, 0), "bigint": (19, 0),
    "money": (19, 4), "smallmoney": (10, 4), "float": (53, None), "real": (24, None),
    "date": (10, None), "datetime": (23, 3), "smalldatetime": (16, 0),
    "text": (2_147_483_647, None), "ntext": (1_073_741_823, None),
    "image": (2_147_483_647, None), "timestamp": (8, None), "rowversion": (8, None),
    "uniqueidentifier": (36, None), "xml": (1_073_741_823, None), "sysname": (128, None),
    "hierarchyid": (892, None),
}
# Fractional-second types: size of the text form without fractions.
_FRACTIONS: Final = {"time": 8, "datetime2": 19, "datetimeoffset": 26}
SYSTEM_SCHEMAS: Final = frozenset({"cdc", "sys"})


class CatalogColumn(NamedTuple):
    """One row of INFORMATION_SCHEMA.COLUMNS (plus sys.columns' flags)."""

    name: str
    position: int
    nullable: bool
    data_type: str
    char_length: int | None
    precision: int | None
    scale: int | None
    datetime_precision: int | None
    default: str | None
    identity: bool = False
    computed: bool = False


def column_facts(column: CatalogColumn) -> tuple[int, int, int | None]:
    """(JDBC type, column size, decimal digits) as mssql-jdbc reports them."""
    name = column.data_type
    if name in _MAX_TYPES and column.char_length == -1:
        return _MAX_TYPES[name]
    jdbc = JDBC_TYPES.get(name, 1111)
    if name in _FIXED:
        return (jdbc, *_FIXED[name])
    if name in ("decimal", "numeric"):
        return jdbc, column.precision or 18, column.scale or 0
    if name in _FRACTIONS:
        digits = 7 if column.datetime_precision is None else column.datetime_precision
        return jdbc, _FRACTIONS[name] + (digits + 1 if digits else 0), digits
    return jdbc, column.char_length or column.precision or 0, None


def definition(table: TableId, columns: list[CatalogColumn],
               key: tuple[str, ...]) -> TableDefinition:
    """A table's definition as JdbcConnection.readTableColumn builds it."""
    out: list[ColumnDefinition] = []
    for column in sorted(columns, key=lambda c: c.position):
        jdbc, size, digits = column_facts(column)
        type_name = column.data_type + (" identity" if column.identity else "")
        out.append(jdbc_column(column.name, jdbc, type_name, column.position,
                               nullable=column.nullable, column_size=size,
                               decimal_digits=digits, auto_incremented=column.identity,
                               generated=column.computed, default=column.default))
    return TableDefinition(table, tuple(out), key)


def _rows(conn: Any, sql: str, database: str) -> list[Any]:
    cur = conn.cursor()
    try:
        cur.execute(queries.with_db(sql, database))
        return list(cur.fetchall())
    finally:
        cur.close()


def catalog_definitions(conn: Any, database: str) -> dict[tuple[str, str], TableDefinition]:
    """Every user table of `database` (system schemas left out, as Debezium's SQL Server
    system-table filter does), by (schema, table)."""
    flags = {(s, t, c): (bool(i), bool(g))
             for s, t, c, i, g in _rows(conn, queries.GET_COLUMN_FLAGS, database)}
    columns: dict[tuple[str, str], list[CatalogColumn]] = defaultdict(list)
    for schema, table, name, pos, nullable, data_type, length, precision, scale, dtp, default \
            in _rows(conn, queries.GET_COLUMNS, database):
        identity, computed = flags.get((schema, table, name), (False, False))
        columns[(schema, table)].append(CatalogColumn(
            name, int(pos), nullable == "YES", str(data_type).lower(), length, precision, scale,
            dtp, None if default is None else str(default), identity, computed))
    keys: dict[tuple[str, str], list[str]] = defaultdict(list)
    for schema, table, name in _rows(conn, queries.GET_PRIMARY_KEYS, database):
        keys[(schema, table)].append(name)
    out: dict[tuple[str, str], TableDefinition] = {}
    for schema, table in _rows(conn, queries.GET_TABLES, database):
        if schema.lower() in SYSTEM_SCHEMAS or table.lower() == "systranschemas":
            continue
        out[(schema, table)] = definition(TableId(database, schema, table),
                                          columns.get((schema, table), []),
                                          tuple(keys[(schema, table)]))
    return out
