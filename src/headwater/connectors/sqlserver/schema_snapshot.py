"""Which tables an SQL Server snapshot records in the schema history (a CREATE each), as
Debezium's SqlServerSnapshotChangeEventSource decides (`readTableStructure`,
`getTablesForSchemaChange`, RelationalTableFilters' schema snapshot filter):

- by default every user table of the database (SQL Server's system tables left out), captured
  or not;
- `schema.history.internal.store.only.captured.databases.ddl`: the tables of the schemas the
  schema filters admit;
- `schema.history.internal.store.only.captured.tables.ddl`: the tables the table filters admit.

A table with capture instances is recorded with the columns of its newest one (the ones its
snapshot reads); the others with all their columns.  In Debezium's order (TableId's text).
A schema recorded at a stored offset (snapshot.mode=recovery) takes, for a table with several
instances, the one that offset is reading (the last to start at or before it): its rows are
the next to decode.  (Debezium takes the newest there too, whose columns the older instance's
rows do not have.)
"""

from __future__ import annotations

from typing import Any

from headwater.relational.table_definition import TableDefinition


def schema_tables(connector: Any, catalog: dict[tuple[str, str], TableDefinition],
                  instances: list[Any], at: bytes | None = None) -> list[TableDefinition]:
    """The definitions to record; `instances` oldest first per table (catalog.py), `at` the
    stored commit LSN of a recovery."""
    cfg, history = connector.cfg, connector.history_cfg
    newest: dict[Any, TableDefinition] = {}
    for instance in instances:
        if instance.definition is None:
            continue
        if at is None or instance.start_lsn <= at or instance.table not in newest:
            newest[instance.table] = instance.definition
    chosen = {d.id: d for d in catalog.values()}
    chosen.update(newest)
    out = []
    for table, definition in chosen.items():
        schema = table.schema or ""
        if history.store_only_captured_tables_ddl and not cfg.table_filter(schema, table.table):
            continue
        if history.store_only_captured_databases_ddl and not connector.captures_schema(schema):
            continue
        out.append(definition)
    return sorted(out, key=lambda d: f"{d.id.database}.{d.id.schema}.{d.id.table}")
