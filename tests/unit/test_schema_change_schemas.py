"""The schema change topic's key and value schemas, pinned against Debezium 3.x.

Debezium 3.x builds them once for every connector: SchemaFactory.schemaHistoryConnectorKeySchema
and schemaHistoryConnectorValueSchema (debezium-connector-common, the same in 3.0.0.Final to
3.6.1.Final), used by its EventDispatcher for MySQL, MariaDB, SQL Server and Db2 alike:

    SchemaBuilder.struct()
        .name("io.debezium.connector." + config.getConnectorName() + ".SchemaChangeKey")
        .version(SCHEMA_HISTORY_CONNECTOR_KEY_SCHEMA_VERSION)            // 1
        .field("databaseName", Schema.STRING_SCHEMA)
    SchemaBuilder.struct()
        .name("io.debezium.connector." + config.getConnectorName() + ".SchemaChangeValue")
        .version(SCHEMA_HISTORY_CONNECTOR_VALUE_SCHEMA_VERSION)          // 1
        .field("source", config.getSourceInfoStructMaker().schema())
        .field("ts_ms", Schema.INT64_SCHEMA)
        .field("databaseName", Schema.OPTIONAL_STRING_SCHEMA)
        .field("schemaName", Schema.OPTIONAL_STRING_SCHEMA)
        .field("ddl", Schema.OPTIONAL_STRING_SCHEMA)
        .field("tableChanges", SchemaBuilder.array(serializer.getChangeSchema()).build())

The expected JsonConverter forms below are written out by hand from that code, not derived from
Headwater's own definitions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.db2.position import Db2SourceBlock
from headwater.connectors.db2.schema_events import Db2SchemaEventShape
from headwater.connectors.mysql.config import validate_mysql_config
from headwater.connectors.mysql.position import MySqlPosition, MySqlSourceBlock
from headwater.connectors.mysql.schema_state import SchemaState
from headwater.connectors.sqlserver.position import SqlServerSourceBlock
from headwater.converters.connect_json import schema_to_json
from headwater.model.record import SourceContext
from headwater.model.schema import ConnectSchema
from headwater.relational.changetables.schema_events import SchemaEventShape


def _key_json(connector: str) -> dict[str, Any]:
    return {"type": "struct", "fields": [
        {"type": "string", "optional": False, "field": "databaseName"}],
        "optional": False, "name": f"io.debezium.connector.{connector}.SchemaChangeKey",
        "version": 1}


def _value_fields(schema: ConnectSchema) -> list[tuple[str, str, bool, str | None, int | None]]:
    return [(f.name, f.schema.type, f.schema.optional, f.schema.name, f.schema.version)
            for f in schema.fields]


# The tableChanges element: SchemaFactory.schemaHistoryChangeSchema / TableSchema / ColumnSchema.
CHANGE_FIELDS = [("type", "string", False), ("id", "string", False), ("table", "struct", True)]
TABLE_FIELDS = [("defaultCharsetName", "string", True), ("primaryKeyColumnNames", "array", True),
                ("columns", "array", False), ("comment", "string", True)]
COLUMN_FIELDS = [
    ("name", "string", False), ("jdbcType", "int32", False), ("nativeType", "int32", True),
    ("typeName", "string", False), ("typeExpression", "string", True),
    ("charsetName", "string", True), ("length", "int32", True), ("scale", "int32", True),
    ("position", "int32", False), ("optional", "boolean", True),
    ("autoIncremented", "boolean", True), ("generated", "boolean", True),
    ("comment", "string", True), ("defaultValueExpression", "string", True),
    ("enumValues", "array", True)]


def _check(key: ConnectSchema, value: ConnectSchema, connector: str,
           source: ConnectSchema) -> None:
    assert schema_to_json(key) == _key_json(connector)
    assert (value.type, value.optional, value.name, value.version) == (
        "struct", False, f"io.debezium.connector.{connector}.SchemaChangeValue", 1)
    assert _value_fields(value) == [
        ("source", "struct", False, f"io.debezium.connector.{connector}.Source", source.version),
        ("ts_ms", "int64", False, None, None),
        ("databaseName", "string", True, None, None),
        ("schemaName", "string", True, None, None),
        ("ddl", "string", True, None, None),
        ("tableChanges", "array", False, None, None),
    ]
    assert value.fields[0].schema == source  # the data events' source block, the same schema
    change = value.fields[5].schema.items
    assert change is not None
    assert (change.name, change.version, change.optional) == (
        "io.debezium.connector.schema.Change", 1, False)
    assert [(f.name, f.schema.type, f.schema.optional) for f in change.fields] == CHANGE_FIELDS
    table = change.fields[2].schema
    assert (table.name, table.version) == ("io.debezium.connector.schema.Table", 1)
    assert [(f.name, f.schema.type, f.schema.optional) for f in table.fields] == TABLE_FIELDS
    column = table.fields[2].schema.items
    assert column is not None
    assert (column.name, column.version) == ("io.debezium.connector.schema.Column", 1)
    assert [(f.name, f.schema.type, f.schema.optional) for f in column.fields] == COLUMN_FIELDS


CONTEXT_SQLSERVER = SourceContext("sqlserver", "server1", "3.0.0")
CONTEXT_DB2 = SourceContext("db2", "server1", "3.0.0")


def test_sqlserver_schemas_are_debeziums() -> None:
    block = SqlServerSourceBlock()
    shape = SchemaEventShape(CONTEXT_SQLSERVER, block)
    _check(shape.key_schema, shape.value_schema, "sqlserver", block.schema)


def test_db2_schemas_are_debeziums() -> None:
    block = Db2SourceBlock()
    shape = Db2SchemaEventShape(CONTEXT_DB2, block)
    _check(shape.key_schema, shape.value_schema, "db2", block.schema)


def _state(tmp_path: Path, kind: str) -> SchemaState:
    cfg, _ = validate_mysql_config({
        "topic.prefix": "m", "database.hostname": "h", "database.user": "u",
        "database.server.id": "5500", "connector.class": kind,
        "schema.history.internal.file.filename": str(tmp_path / "history.jsonl")})
    return SchemaState(cfg, SourceContext(kind, "m", "3.0.0"))


@pytest.mark.parametrize("kind", ["mysql", "mariadb"])
def test_binlog_schemas_are_debeziums(tmp_path: Path, kind: str) -> None:
    """MySQL's and MariaDB's: named after the connector (MariaDbConnectorConfig.getConnectorName
    is "mariadb"), version 1, with the connector's own source block (`mariadb.Source` for
    MariaDB, as its data events)."""
    state = _state(tmp_path, kind)
    _check(state.key_schema, state.value_schema, kind, MySqlSourceBlock(kind).schema)


@pytest.mark.parametrize("kind", ["mysql", "mariadb"])
def test_binlog_event_has_the_fields_of_its_schemas(tmp_path: Path, kind: str) -> None:
    """The event's key, value and tableChanges element carry exactly the schemas' fields: no
    `attributes` in the topic's table (the history's JSON keeps them)."""
    state = _state(tmp_path, kind)
    position = MySqlPosition("bin.000001", 4, 0, 1, None, None, None)
    [event] = state.apply("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(9))", "db",
                          position, 1_700_000_000_000)
    assert event.key_schema is state.key_schema and event.value_schema is state.value_schema
    assert list(event.key) == [f.name for f in event.key_schema.fields]
    assert list(event.value) == [f.name for f in event.value_schema.fields]
    source = event.value_schema.fields[0].schema
    assert list(event.value["source"]) == [f.name for f in source.fields]
    [element] = event.value["tableChanges"]
    assert [name for name, _, _ in CHANGE_FIELDS] == list(element)
    assert [name for name, _, _ in TABLE_FIELDS] == list(element["table"])
    assert [name for name, _, _ in COLUMN_FIELDS] == list(element["table"]["columns"][0])
    assert (event.value["databaseName"], event.value["ddl"]) == (
        "db", "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(9))")
