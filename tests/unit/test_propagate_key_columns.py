"""``column.propagate.source.type`` on key columns: value schema yes, key schema no.

Why: Debezium's TableSchemaBuilder builds the key schema without column mappers but the value
schema with them, so a primary key column matched by the propagation rule carries the
``__debezium.source.column.*`` parameters in ``before``/``after`` only.  Sinks sizing their
columns from those parameters read the value schema; the key schema must stay the plain one so
that key subjects in a schema registry do not change when the rule is turned on.
"""

from __future__ import annotations

from typing import Any

import orjson

from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable
from headwater.connectors.mysql.tables import build_codec as mysql_codec
from headwater.connectors.mysql.types import MySqlTypeModes
from headwater.connectors.postgres.catalog import ColumnInfo, TableInfo
from headwater.connectors.postgres.position import PostgresPosition, PostgresSourceBlock
from headwater.connectors.postgres.tables import build_codec as pg_codec
from headwater.connectors.postgres.tables import incoming_from_catalog
from headwater.connectors.postgres.types import PgType, TypeModes
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, Column, ConnectSchema, TableSchema
from headwater.relational.column_mappers import ColumnMappers

PROPAGATED = {
    "__debezium.source.column.type": "INT4",
    "__debezium.source.column.length": "10",
    "__debezium.source.column.scale": "0",
    "__debezium.source.column.name": "id",
}
CTX = SourceContext("postgresql", "srv", "headwater-test")


def rendered_schemas(
    table: TableSchema, row: tuple[object, ...]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(key schema, value's `after` row schema) as the JSON format writes them."""
    record = ChangeRecord(
        context=CTX, table=table, op=Op.CREATE, before=None, after=row, source_ts_ms=1,
        processed_ts_ms=1, snapshot=SnapshotMarker.FALSE,
        position=PostgresPosition(100, 100, 90, 5),
    )
    ((_, out),) = DebeziumJsonFormat(PostgresSourceBlock()).render(record)
    assert out.key is not None and out.value is not None
    key = orjson.loads(out.key)
    value = orjson.loads(out.value)
    after = next(f for f in value["schema"]["fields"] if f["field"] == "after")
    return key["schema"], after


def fields(struct: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["field"]: f for f in struct["fields"]}


def pg_table(mappers: ColumnMappers) -> TableSchema:
    columns = (
        ColumnInfo("id", 1, 23, "int4", "integer", -1, True, 23, "int4", PgType(23, "int4")),
        ColumnInfo("name", 2, 25, "text", "text", -1, False, 25, "text", PgType(25, "text")),
    )
    info = TableInfo(1, "public", "t", columns, ("id",), "d", ())
    codec = pg_codec("db", info, incoming_from_catalog(info), TypeModes(), lambda *_: True,
                     column_mappers=mappers)
    return codec.schema


def test_postgres_primary_key_gets_the_parameters_in_the_value_only() -> None:
    table = pg_table(ColumnMappers.from_config(
        {"column.propagate.source.type": r"public\.t\..*"}))
    key, after = rendered_schemas(table, (1, "x"))
    assert fields(after)["id"]["parameters"] == PROPAGATED
    assert fields(after)["name"]["parameters"]["__debezium.source.column.type"] == "TEXT"
    assert fields(key) == {"id": {"type": "int32", "optional": False, "field": "id"}}


def test_postgres_datatype_rule_on_a_key_column() -> None:
    table = pg_table(ColumnMappers.from_config(
        {"datatype.propagate.source.type": r".+\.int4"}))
    key, after = rendered_schemas(table, (1, "x"))
    assert fields(after)["id"]["parameters"] == PROPAGATED
    assert "parameters" not in fields(after)["name"]
    assert "parameters" not in fields(key)["id"]


def test_value_changing_rules_leave_key_columns_alone() -> None:
    """A mask on a key column would give every row one key: not applied (compatibility.md)."""
    table = pg_table(ColumnMappers.from_config({
        "column.mask.with.3.chars": r"public\.t\..*",
        "column.propagate.source.type": r"public\.t\..*",  # loses: masks come first
    }))
    id_column = table.column("id")
    assert id_column.schema.parameters is None and id_column.key_schema is None
    assert (table.column("name").schema.parameters or {}).get("masked") == "true"


def test_mysql_primary_key_gets_the_parameters_in_the_value_only() -> None:
    mysql = MySqlTable("inv", "t", (
        MySqlColumn("id", "INT", nullable=False), MySqlColumn("v", "VARCHAR", 20)), ("id",))
    mappers = ColumnMappers.from_config({"column.propagate.source.type": r"inv\.t\..*"})
    table = mysql_codec(mysql, MySqlTypeModes(), lambda *_: True, column_mappers=mappers).schema
    key, after = rendered_schemas(table, (1, "x"))
    assert fields(after)["id"]["parameters"] == {
        "__debezium.source.column.type": "INT", "__debezium.source.column.name": "id"}
    assert fields(after)["v"]["parameters"]["__debezium.source.column.length"] == "20"
    assert "parameters" not in fields(key)["id"]


def test_a_column_without_a_key_schema_uses_its_schema_in_the_key() -> None:
    schema = ConnectSchema(INT32, optional=False)
    column = Column("id", 0, "int4", schema)
    assert column.schema_in_key is schema
    mapped, _ = ColumnMappers.from_config({"column.propagate.source.type": ".*"}).apply(
        column, int, "public.t.id", "int4", 10, 0, key=True)
    assert mapped.schema_in_key is schema and mapped.schema.parameters
