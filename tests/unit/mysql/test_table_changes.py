"""Debezium's tableChanges element and its Connect schema."""

from __future__ import annotations

import pytest

from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.table_changes import table_change, table_changes
from headwater.relational.table_changes import TABLE_CHANGES_SCHEMA

DDL = """CREATE TABLE t (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  name VARCHAR(40) CHARACTER SET latin1 DEFAULT 'x' COMMENT 'the name',
  price DECIMAL(10,2) NOT NULL,
  kind ENUM('a','b'),
  flag TINYINT(1),
  ok BOOLEAN,
  at TIMESTAMP(3) NULL,
  dt DATETIME,
  doc JSON,
  total INT AS (id * 2) VIRTUAL,
  PRIMARY KEY (id)
) DEFAULT CHARSET=utf8mb4 COMMENT 'tbl'"""


def _create() -> dict[str, object]:
    schema = MySqlSchema()
    [change] = schema.apply(DDL, "db")
    return table_change(change)


def test_create_element() -> None:
    element = _create()
    assert element["type"] == "CREATE" and element["id"] == '"db"."t"'
    table = element["table"]
    assert isinstance(table, dict)
    assert table["defaultCharsetName"] == "utf8mb4"
    assert table["primaryKeyColumnNames"] == ["id"]
    assert table["comment"] == "tbl" and table["attributes"] == []
    columns = {c["name"]: c for c in table["columns"]}
    assert [c["position"] for c in table["columns"]] == list(range(1, 11))
    assert columns["id"] | {} == {
        "name": "id", "jdbcType": -5, "nativeType": None, "typeName": "BIGINT UNSIGNED",
        "typeExpression": "BIGINT UNSIGNED", "charsetName": None, "length": None,
        "scale": None, "position": 1, "optional": False, "autoIncremented": True,
        "generated": True, "comment": None, "defaultValueExpression": None,
        "enumValues": None}
    assert (columns["name"]["jdbcType"], columns["name"]["charsetName"],
            columns["name"]["length"], columns["name"]["defaultValueExpression"],
            columns["name"]["comment"]) == (12, "latin1", 40, "x", "the name")
    assert (columns["price"]["jdbcType"], columns["price"]["length"],
            columns["price"]["scale"]) == (3, 10, 2)
    assert (columns["kind"]["jdbcType"], columns["kind"]["enumValues"]) == (1, ["a", "b"])
    assert columns["flag"]["jdbcType"] == 5  # TINYINT is SMALLINT in Debezium's table
    assert columns["ok"]["jdbcType"] == 16
    assert columns["at"]["jdbcType"] == 2014 and columns["at"]["length"] == 3
    assert columns["dt"]["jdbcType"] == 93
    assert columns["doc"]["jdbcType"] == 1111
    # Debezium's column listeners mark AUTO_INCREMENT (and SERIAL) columns generated, not
    # GENERATED ALWAYS AS columns
    assert columns["total"]["generated"] is False


def test_alter_rename_drop_and_filtering() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE a (x INT NOT NULL, UNIQUE KEY (x))", "db")
    changes = schema.apply("RENAME TABLE a TO b; TRUNCATE b; DROP TABLE b; CREATE DATABASE z",
                           "db")
    elements = table_changes(changes)
    assert [(e["type"], e["id"]) for e in elements] == [
        ("ALTER", '"db"."b"'), ("DROP", '"db"."b"')]
    # a unique key over NOT NULL columns keys a table without a primary key
    assert elements[0]["table"]["primaryKeyColumnNames"] == ["x"]
    with pytest.raises(ValueError, match="TRUNCATE"):
        table_change(changes[1])
    with pytest.raises(ValueError, match="CREATE_DATABASE"):
        table_change(changes[3])


def test_nullable_unique_key_is_not_a_key() -> None:
    schema = MySqlSchema()
    [change] = schema.apply("CREATE TABLE a (x INT, UNIQUE KEY (x))", "db")
    assert table_change(change)["table"]["primaryKeyColumnNames"] == []


def test_topic_element_matches_the_connect_schema() -> None:
    """The schema change topic's element has exactly the fields of Debezium 3.x's Connect
    schema (SchemaFactory.schemaHistoryChangeSchema / TableSchema / ColumnSchema): no
    `attributes`, which only the history's JSON form has."""
    schema = TABLE_CHANGES_SCHEMA
    assert schema.type == "array" and not schema.optional
    change = schema.items
    assert change is not None and change.name == "io.debezium.connector.schema.Change"
    schema_change = MySqlSchema()
    [ddl] = schema_change.apply(DDL, "db")
    [element] = table_changes([ddl], attributes=False)
    assert [f.name for f in change.fields] == list(element) == ["type", "id", "table"]
    table = change.fields[2].schema
    assert table.name == "io.debezium.connector.schema.Table"
    assert [f.name for f in table.fields] == list(element["table"]) == [
        "defaultCharsetName", "primaryKeyColumnNames", "columns", "comment"]
    column = table.fields[2].schema.items
    assert column is not None and column.name == "io.debezium.connector.schema.Column"
    column_fields = [f.name for f in column.fields]
    assert column_fields == list(element["table"]["columns"][0])
    assert _create()["table"]["attributes"] == []  # type: ignore[index]  # the history's form
    required = {f.name for f in column.fields if not f.schema.optional}
    assert required == {"name", "jdbcType", "typeName", "position"}


def test_national_types_have_their_own_jdbc_types() -> None:
    schema = MySqlSchema()
    [change] = schema.apply(
        "CREATE TABLE n (a NCHAR(3), b NVARCHAR(10), c NATIONAL VARCHAR(5), "
        "d NATIONAL CHARACTER(2), e CHAR(1), f VARCHAR(1))", "db")
    table = table_change(change)["table"]
    assert isinstance(table, dict)
    assert [(c["typeName"], c["jdbcType"]) for c in table["columns"]] == [
        ("NCHAR", -15), ("NVARCHAR", -9), ("NATIONAL VARCHAR", -9),
        ("NATIONAL CHARACTER", -15), ("CHAR", 1), ("VARCHAR", 12)]
