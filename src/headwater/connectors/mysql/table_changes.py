"""Debezium's `tableChanges` element: the table definition a schema change event carries.

Consumers of the schema change topic (and the schema history records) read the full table
after each DDL from here rather than parsing DDL themselves, so the shape and the JDBC type
codes follow Debezium 3.x (`JsonTableChangeSerializer` for the history,
`ConnectTableChangeSerializer` / `SchemaFactory` for the topic, whose Connect schema is
relational.table_changes.TABLE_CHANGES_SCHEMA) field for field.
Type codes are the `java.sql.Types` values Debezium's MySQL DDL parser assigns (TINYINT is
SMALLINT there, TIMESTAMP is TIMESTAMP_WITH_TIMEZONE, ENUM/SET are CHAR, JSON and spatial
types are OTHER).

A DROP element carries the dropped table's last definition; renames are ALTER elements under
the new id (see `SchemaChange`).  `table_change` refuses database-level changes and TRUNCATE,
which have no tableChanges element.  The history's table has `attributes` (always empty for
MySQL); the topic's has none (`attributes=False`): 3.x's `io.debezium.connector.schema.Table`
schema has no such field (SchemaFactory.schemaHistoryTableSchema).
"""

from __future__ import annotations

from typing import Any

from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable
from headwater.connectors.mysql.ddl import SchemaChange
from headwater.connectors.mysql.ddl_types import NATIONAL_JDBC_TYPES
from headwater.relational.table_changes import quoted_id

TABLE_CHANGE_KINDS = frozenset({"CREATE", "ALTER", "DROP"})

# java.sql.Types codes.
_BIT, _TINYINT, _SMALLINT, _INTEGER, _BIGINT = -7, -6, 5, 4, -5
_FLOAT, _DOUBLE, _DECIMAL = 6, 8, 3
_CHAR, _VARCHAR, _BINARY, _VARBINARY, _BLOB = 1, 12, -2, -3, 2004
_DATE, _TIME, _TIMESTAMP, _TIMESTAMP_TZ = 91, 92, 93, 2014
_BOOLEAN, _OTHER = 16, 1111

JDBC_TYPES: dict[str, int] = {
    "BIT": _BIT, "TINYINT": _SMALLINT, "SMALLINT": _SMALLINT, "MEDIUMINT": _INTEGER,
    "INT": _INTEGER, "BIGINT": _BIGINT, "BOOLEAN": _BOOLEAN, "FLOAT": _FLOAT,
    "DOUBLE": _DOUBLE, "DECIMAL": _DECIMAL, "DATE": _DATE, "TIME": _TIME,
    "DATETIME": _TIMESTAMP, "TIMESTAMP": _TIMESTAMP_TZ, "YEAR": _INTEGER,
    "CHAR": _CHAR, "VARCHAR": _VARCHAR, "TINYTEXT": _VARCHAR, "TEXT": _VARCHAR,
    "MEDIUMTEXT": _VARCHAR, "LONGTEXT": _VARCHAR, "ENUM": _CHAR, "SET": _CHAR,
    "BINARY": _BINARY, "VARBINARY": _VARBINARY, "TINYBLOB": _BLOB, "BLOB": _BLOB,
    "MEDIUMBLOB": _BLOB, "LONGBLOB": _BLOB,
    **NATIONAL_JDBC_TYPES,  # NCHAR -15, NVARCHAR -9 (and their spellings), as Debezium
}  # everything else (JSON, spatial types, UUID, INET4/6, VECTOR): OTHER


def key_columns(table: MySqlTable) -> tuple[str, ...]:
    """The primary key, else the first unique key whose columns are all NOT NULL."""
    if table.primary_key:
        return table.primary_key
    for key in table.unique_keys:
        try:
            if all(not table.column(name).nullable for name in key):
                return key
        except KeyError:
            continue
    return ()


def type_expression(column: MySqlColumn) -> str:
    """The type as Debezium names it: the base type plus UNSIGNED where it applies."""
    return column.type_name + " UNSIGNED" if column.unsigned else column.type_name


def column_dict(column: MySqlColumn, position: int) -> dict[str, Any]:
    """One `io.debezium.connector.schema.Column`; `position` is 1-based."""
    type_name = type_expression(column)
    return {
        "name": column.name,
        "jdbcType": JDBC_TYPES.get(column.type_name, _OTHER),
        "nativeType": None,
        "typeName": type_name,
        "typeExpression": type_name,
        "charsetName": column.charset,
        "length": column.length,
        "scale": column.scale,
        "position": position,
        "optional": column.nullable,
        "autoIncremented": column.auto_increment,
        "generated": column.generated,
        "comment": column.comment,
        "defaultValueExpression": column.default,
        "enumValues": list(column.members) if column.members else None,
    }


def table_dict(table: MySqlTable, attributes: bool = True) -> dict[str, Any]:
    """The table; `attributes` (always empty here) in the history's form only."""
    table_ = {
        "defaultCharsetName": table.default_charset,
        "primaryKeyColumnNames": list(key_columns(table)),
        "columns": [column_dict(c, i) for i, c in enumerate(table.columns, start=1)],
        "comment": table.comment,
    }
    if attributes:
        table_["attributes"] = []
    return table_


def table_change(change: SchemaChange, attributes: bool = True) -> dict[str, Any]:
    """The tableChanges element for a CREATE, ALTER or DROP of a table (`attributes=False`:
    the schema change topic's form)."""
    if change.kind not in TABLE_CHANGE_KINDS or change.table is None:
        raise ValueError(f"a {change.kind} change has no tableChanges element")
    table = change.table_after if change.kind != "DROP" else change.previous
    return {
        "type": change.kind,
        "id": quoted_id(change.database, change.table),
        "table": table_dict(table, attributes) if table is not None else None,
    }


def table_changes(changes: list[SchemaChange], attributes: bool = True) -> list[dict[str, Any]]:
    """The tableChanges array for the changes of one DDL event (other kinds left out);
    `attributes=False` for the schema change topic."""
    return [table_change(c, attributes) for c in changes
            if c.kind in TABLE_CHANGE_KINDS and c.table is not None]
