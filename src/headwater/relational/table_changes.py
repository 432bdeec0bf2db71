"""Debezium's `tableChanges`: a table definition (relational.table_definition) as the schema
history stores it and as a schema change event carries it, and back.

Two forms, as Debezium 3.x writes them (field names and order from its serializers):

- the history record's JSON (`JsonTableChangeSerializer`): every column with `hasDefaultValue`
  and `enumValues` (an empty array when there are none), `nativeType`, `length` and `scale`
  only when set, the table's `attributes`, and the table comment after the table;
- the Connect struct of the schema change topic (`ConnectTableChangeSerializer` with
  `SchemaFactory`'s schemas): fixed fields, unset ones null, `enumValues` null when empty, no
  `hasDefaultValue` and no `attributes` (3.x's `io.debezium.connector.schema.Table` has none).

Table ids are Debezium's `TableId.toDoubleQuotedString`: each part in double quotes (a `"`
inside doubled), an empty catalog left out; `parse_id` reads one back.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from headwater.model.schema import (
    ARRAY,
    INT32,
    INT64,
    OPTIONAL_BOOLEAN,
    OPTIONAL_INT32,
    OPTIONAL_STRING,
    STRING,
    STRUCT,
    ConnectField,
    ConnectSchema,
)
from headwater.relational.table_definition import ColumnDefinition, TableDefinition

KINDS: Final = ("CREATE", "ALTER", "DROP")


class TableChange(NamedTuple):
    """One element of `tableChanges`: `id` is the double-quoted table id (`quoted_id`)."""

    kind: str  # CREATE, ALTER or DROP
    id: str
    table: TableDefinition


# -- ids ------------------------------------------------------------------------------------


def quoted_id(*parts: str | None) -> str:
    """`TableId.toDoubleQuotedString` of (catalog, schema, table): empty or None parts (other
    than the table) are left out; a part already in double quotes is kept as it is."""
    *containers, table = parts
    kept = [p for p in containers if p]
    return ".".join(_quoted(p) for p in (*kept, table or ""))


def _quoted(part: str) -> str:
    if part and (part[0] == '"' or part[-1] == '"'):
        return part
    return '"' + part.replace('"', '""') + '"'


def parse_id(text: str) -> tuple[str, ...]:
    """The parts of a double-quoted (or plain) table id; ValueError names the id."""
    parts: list[str] = []
    i, n = 0, len(text)
    while i <= n:
        if i < n and text[i] == '"':
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise ValueError(f"table id {text!r}: unterminated quote")
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            parts.append("".join(buf))
            i = j + 1
        else:
            j = text.find(".", i)
            j = n if j < 0 else j
            parts.append(text[i:j])
            i = j
        if i < n and text[i] != ".":
            raise ValueError(f"table id {text!r}: expected '.' at {i}")
        i += 1
    return tuple(parts)


# -- the history record's JSON (JsonTableChangeSerializer) ----------------------------------


def change_document(change: TableChange) -> dict[str, Any]:
    table = change.table
    document: dict[str, Any] = {"type": change.kind, "id": change.id}
    if change.kind != "DROP":
        document["table"] = {
            "defaultCharsetName": table.default_charset_name,
            "primaryKeyColumnNames": list(table.primary_key),
            "columns": [_column_document(c) for c in table.columns],
            "attributes": [{"name": n, "value": v} for n, v in table.attributes],
        }
        document["comment"] = table.comment
    return document


def _column_document(column: ColumnDefinition) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": column.name, "jdbcType": column.jdbc_type}
    if column.native_type is not None:
        doc["nativeType"] = column.native_type
    doc["typeName"] = column.type_name
    doc["typeExpression"] = column.expression
    doc["charsetName"] = column.charset_name
    if column.length is not None:
        doc["length"] = column.length
    if column.scale is not None:
        doc["scale"] = column.scale
    doc.update({"position": column.position, "optional": column.optional,
                "autoIncremented": column.auto_incremented, "generated": column.generated,
                "comment": column.comment, "hasDefaultValue": column.has_default_value})
    if column.default_value_expression is not None:
        doc["defaultValueExpression"] = column.default_value_expression
    doc["enumValues"] = list(column.enum_values)
    return doc


def table_from_document(document: dict[str, Any], table_id: Any) -> TableDefinition:
    """The definition in a history record's `tableChanges` element (JsonTableChangeSerializer
    .fromDocument); KeyError/TypeError/ValueError for a malformed one (the caller names the
    record)."""
    table = document["table"]
    columns = []
    for raw in table["columns"]:
        default = raw.get("defaultValueExpression")
        columns.append(ColumnDefinition(
            name=str(raw["name"]), jdbc_type=int(raw["jdbcType"]),
            type_name=str(raw["typeName"]), position=int(raw["position"]),
            optional=bool(raw["optional"]), length=_optional_int(raw.get("length")),
            scale=_optional_int(raw.get("scale")),
            native_type=_optional_int(raw.get("nativeType")),
            type_expression=raw.get("typeExpression"), charset_name=raw.get("charsetName"),
            auto_incremented=bool(raw.get("autoIncremented")),
            generated=bool(raw.get("generated")), comment=raw.get("comment"),
            has_default_value=bool(raw.get("hasDefaultValue")) or default is not None,
            default_value_expression=default,
            enum_values=tuple(str(v) for v in raw.get("enumValues") or ())))
    return TableDefinition(
        table_id, tuple(sorted(columns, key=lambda c: c.position)),
        tuple(str(k) for k in table.get("primaryKeyColumnNames") or ()),
        table.get("defaultCharsetName"), document.get("comment"),
        tuple((str(a["name"]), a.get("value")) for a in table.get("attributes") or ()))


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


# -- the schema change event's struct (ConnectTableChangeSerializer) ------------------------


def change_struct(change: TableChange) -> dict[str, Any]:
    table = change.table
    return {
        "type": change.kind,
        "id": change.id,
        "table": None if change.kind == "DROP" else {
            "defaultCharsetName": table.default_charset_name,
            "primaryKeyColumnNames": list(table.primary_key),
            "columns": [_column_struct(c) for c in table.columns],
            "comment": table.comment,
        },
    }


def _column_struct(column: ColumnDefinition) -> dict[str, Any]:
    return {
        "name": column.name, "jdbcType": column.jdbc_type, "nativeType": column.native_type,
        "typeName": column.type_name, "typeExpression": column.expression,
        "charsetName": column.charset_name, "length": column.length, "scale": column.scale,
        "position": column.position, "optional": column.optional,
        "autoIncremented": column.auto_incremented, "generated": column.generated,
        "comment": column.comment, "defaultValueExpression": column.default_value_expression,
        "enumValues": list(column.enum_values) or None,
    }


def _schema(type_: str, optional: bool) -> ConnectSchema:
    return ConnectSchema(type_, optional=optional)


_STRINGS = ConnectSchema(ARRAY, optional=True, items=_schema(STRING, False))
COLUMN_SCHEMA: Final = ConnectSchema(
    STRUCT, optional=False, name="io.debezium.connector.schema.Column", version=1, fields=(
        ConnectField("name", _schema(STRING, False)),
        ConnectField("jdbcType", _schema(INT32, False)),
        ConnectField("nativeType", OPTIONAL_INT32),
        ConnectField("typeName", _schema(STRING, False)),
        ConnectField("typeExpression", OPTIONAL_STRING),
        ConnectField("charsetName", OPTIONAL_STRING),
        ConnectField("length", OPTIONAL_INT32),
        ConnectField("scale", OPTIONAL_INT32),
        ConnectField("position", _schema(INT32, False)),
        ConnectField("optional", OPTIONAL_BOOLEAN),
        ConnectField("autoIncremented", OPTIONAL_BOOLEAN),
        ConnectField("generated", OPTIONAL_BOOLEAN),
        ConnectField("comment", OPTIONAL_STRING),
        ConnectField("defaultValueExpression", OPTIONAL_STRING),
        ConnectField("enumValues", _STRINGS),
    ))
TABLE_SCHEMA: Final = ConnectSchema(
    STRUCT, optional=True, name="io.debezium.connector.schema.Table", version=1, fields=(
        ConnectField("defaultCharsetName", OPTIONAL_STRING),
        ConnectField("primaryKeyColumnNames", _STRINGS),
        ConnectField("columns", ConnectSchema(ARRAY, optional=False, items=COLUMN_SCHEMA)),
        ConnectField("comment", OPTIONAL_STRING),
    ))
CHANGE_SCHEMA: Final = ConnectSchema(
    STRUCT, optional=False, name="io.debezium.connector.schema.Change", version=1, fields=(
        ConnectField("type", _schema(STRING, False)),
        ConnectField("id", _schema(STRING, False)),
        ConnectField("table", TABLE_SCHEMA),
    ))
TABLE_CHANGES_SCHEMA: Final = ConnectSchema(ARRAY, optional=False, items=CHANGE_SCHEMA)


# -- the schema change topic ----------------------------------------------------------------
# Debezium 3.x's SchemaFactory.schemaHistoryConnectorKeySchema / ...ValueSchema (the same in
# every 3.x release), which its EventDispatcher uses for every connector's schema change
# records: `io.debezium.connector.<connector>.SchemaChangeKey|Value`, both version 1, where
# <connector> is CommonConnectorConfig.getConnectorName() (Module.name(): `mysql`, `mariadb`,
# `sqlserver`, `db2`) and the value's `source` is the connector's source block schema.

SCHEMA_CHANGE_VERSION: Final = 1  # SCHEMA_HISTORY_CONNECTOR_{KEY,VALUE}_SCHEMA_VERSION


def schema_change_key_schema(connector: str) -> ConnectSchema:
    """`io.debezium.connector.<connector>.SchemaChangeKey` {databaseName (required)}."""
    return ConnectSchema(
        STRUCT, optional=False, name=f"io.debezium.connector.{connector}.SchemaChangeKey",
        version=SCHEMA_CHANGE_VERSION,
        fields=(ConnectField("databaseName", _schema(STRING, False)),))


def schema_change_value_schema(connector: str, source: ConnectSchema) -> ConnectSchema:
    """`io.debezium.connector.<connector>.SchemaChangeValue` {source, ts_ms, databaseName,
    schemaName, ddl, tableChanges}, `source` being the connector's source block schema."""
    return ConnectSchema(
        STRUCT, optional=False, name=f"io.debezium.connector.{connector}.SchemaChangeValue",
        version=SCHEMA_CHANGE_VERSION, fields=(
            ConnectField("source", source),
            ConnectField("ts_ms", _schema(INT64, False)),
            ConnectField("databaseName", OPTIONAL_STRING),
            ConnectField("schemaName", OPTIONAL_STRING),
            ConnectField("ddl", OPTIONAL_STRING),
            ConnectField("tableChanges", TABLE_CHANGES_SCHEMA),
        ))
