"""Column facts of the SQL Server and Db2 table definitions (what the schema history and the
`tableChanges` carry) and the schema history configuration block.

Expected values: mssql-jdbc's / db2jcc's getColumns (java.sql.Types codes, column sizes as
sp_columns and SYSIBM.SQLCOLUMNS report them).  Those Debezium's own tests fix are marked; the
others could not be checked against a live server here."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.config.loader import ConfigError
from headwater.connectors.db2 import definitions as db2
from headwater.connectors.db2.config import validate_db2_config
from headwater.connectors.sqlserver import definitions as sqlserver
from headwater.connectors.sqlserver.config import validate_sqlserver_config
from headwater.model.schema import TableId
from headwater.relational.history_config import KAFKA_HISTORY, open_history_store


def _ss(data_type: str, length: int | None = None, precision: int | None = None,
        scale: int | None = None, dtp: int | None = None) -> sqlserver.CatalogColumn:
    return sqlserver.CatalogColumn("c", 1, True, data_type, length, precision, scale, dtp, None)


@pytest.mark.parametrize(("column", "facts"), [
    (_ss("int", precision=10, scale=0), (4, 10, 0)),
    (_ss("bigint"), (-5, 19, 0)),
    (_ss("tinyint"), (-6, 3, 0)),
    (_ss("bit"), (-7, 1, None)),
    (_ss("numeric", precision=5, scale=2), (2, 5, 2)),  # SqlServerConnectorIT: 5, 2
    (_ss("decimal", precision=8, scale=4), (3, 8, 4)),  # SqlServerConnectorIT: 8, 4
    (_ss("money"), (3, 19, 4)),
    (_ss("smallmoney"), (3, 10, 4)),
    (_ss("float", precision=53), (8, 53, None)),
    (_ss("real", precision=24), (7, 24, None)),  # SqlServerConnectorIT: float(10) is real, 24
    (_ss("date"), (91, 10, None)),
    (_ss("time", dtp=7), (92, 16, 7)),
    (_ss("time", dtp=0), (92, 8, 0)),
    (_ss("datetime"), (93, 23, 3)),
    (_ss("smalldatetime"), (93, 16, 0)),
    (_ss("datetime2", dtp=3), (93, 23, 3)),
    (_ss("datetimeoffset", dtp=7), (-155, 34, 7)),
    (_ss("char", length=10), (1, 10, None)),
    (_ss("varchar", length=128), (12, 128, None)),  # SqlServerConnectorIT: 128
    (_ss("varchar", length=-1), (-1, 2_147_483_647, None)),
    (_ss("nvarchar", length=-1), (-16, 1_073_741_823, None)),
    (_ss("varbinary", length=-1), (-4, 2_147_483_647, None)),
    (_ss("varbinary", length=16), (-3, 16, None)),
    (_ss("uniqueidentifier"), (1, 36, None)),
    (_ss("xml"), (-16, 1_073_741_823, None)),
])
def test_sqlserver_column_facts(column: sqlserver.CatalogColumn,
                                facts: tuple[int, int, int | None]) -> None:
    assert sqlserver.column_facts(column) == facts


def test_sqlserver_definition_marks_identity_computed_and_defaults() -> None:
    columns = [
        sqlserver.CatalogColumn("total", 2, True, "int", None, 10, 0, None, None,
                                computed=True),
        sqlserver.CatalogColumn("id", 1, False, "int", None, 10, 0, None, None, identity=True),
        sqlserver.CatalogColumn("state", 3, False, "char", 1, None, None, None, "('A')"),
    ]
    definition = sqlserver.definition(TableId("db", "dbo", "t"), columns, ("id",))
    assert [(c.name, c.type_name, c.auto_incremented, c.generated, c.has_default_value,
             c.default_value_expression) for c in definition.columns] == [
        ("id", "int identity", True, False, False, None),
        ("total", "int", False, True, True, None),
        ("state", "char", False, False, True, "('A')")]


def _db2(type_name: str, length: int, scale: int) -> db2.CatalogColumn:
    return db2.CatalogColumn("C", 1, True, type_name, length, scale, None)


@pytest.mark.parametrize(("column", "facts"), [
    (_db2("INTEGER", 4, 0), (4, "INTEGER", 10, 0)),
    (_db2("SMALLINT", 2, 0), (5, "SMALLINT", 5, 0)),
    (_db2("REAL", 4, 0), (7, "REAL", 24, None)),  # Db2ConnectorIT: REAL, 24
    (_db2("DECIMAL", 5, 2), (3, "DECIMAL", 5, 2)),  # Db2ConnectorIT: DECIMAL, 5, 2
    (_db2("VARCHAR", 128, 0), (12, "VARCHAR", 128, None)),  # Db2ConnectorIT: VARCHAR, 128
    (_db2("CHARACTER", 3, 0), (1, "CHAR", 3, None)),
    (_db2("TIMESTAMP", 10, 6), (93, "TIMESTAMP", 26, 6)),
    (_db2("TIMESTAMP", 10, 0), (93, "TIMESTAMP", 19, 0)),
    (_db2("DATE", 4, 0), (91, "DATE", 10, None)),
    (_db2("TIME", 3, 0), (92, "TIME", 8, 0)),
    (_db2("BOOLEAN", 1, 0), (16, "BOOLEAN", 1, None)),
])
def test_db2_column_facts(column: db2.CatalogColumn,
                          facts: tuple[int, str, int, int | None]) -> None:
    assert db2.column_facts(column) == facts


BASE = {"topic.prefix": "s", "database.hostname": "h", "database.user": "u"}


@pytest.mark.parametrize("validate", [
    lambda p: validate_sqlserver_config({**BASE, "database.names": "d",
                                         "database.encrypt": "false", **p}),
    lambda p: validate_db2_config({**BASE, "database.dbname": "D", **p}),
], ids=["sqlserver", "db2"])
def test_history_properties(validate: Any) -> None:
    cfg = validate({})[0]
    assert cfg.schema_history.include_schema_changes
    assert str(cfg.schema_history.schema_history_internal_file_filename) == \
        "data/history/s.jsonl"
    cfg = validate({"database.history": "io.debezium.relational.history.KafkaDatabaseHistory",
                    "database.history.kafka.topic": "h",
                    "database.history.kafka.bootstrap.servers": "k:9092",
                    "schema.history.internal.store.only.captured.tables.ddl": "true",
                    "include.schema.changes": "false"})[0]
    history = cfg.schema_history
    assert history.schema_history_internal == KAFKA_HISTORY and history.history_in_kafka
    assert history.schema_history_internal_kafka_topic == "h"
    assert history.store_only_captured_tables_ddl and not history.include_schema_changes
    with pytest.raises(ConfigError) as refused:
        validate({"schema.history.internal.skip.unparseable.ddl": "true",
                  "schema.history.internal": KAFKA_HISTORY})
    text = str(refused.value)
    assert "skip.unparseable.ddl" in text and "no DDL to parse" in text
    assert "schema.history.internal.kafka.topic is required" in text
    cfg = validate({"schema.history.internal.producer.acks": "all"})[0]
    with pytest.raises(ConfigError, match="the history is a file"):
        open_history_store(cfg.schema_history, "s")
