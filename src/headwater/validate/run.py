"""`headwater validate CONFIG`: every pipeline target against its source table.

One configuration, as the pipeline takes it: the connector's properties (the source to
connect to) plus `headwater.pipeline.*` (where the targets are: Delta, JDBC or Iceberg,
`iceberg_side.py`, in any mode; the mode says which target rows are the source's current
rows, `current.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from headwater.config import ConfigError
from headwater.pipeline.config import PipelineConfig
from headwater.validate import catalog
from headwater.validate.compare import Options, compare_table
from headwater.validate.jdbc_side import open_targets, source_schema
from headwater.validate.model import TableResult
from headwater.validate.source import SqlSource
from headwater.validate.target import DeltaSide

MONGODB = "mongodb"


def check_pipeline(cfg: PipelineConfig, source: str) -> None:
    problems = []
    if cfg.target not in ("delta", "jdbc", "iceberg"):
        problems.append(f"headwater.pipeline.target: validate compares Delta, JDBC and Iceberg "
                        f"targets, not {cfg.target!r}")
    if cfg.mode not in catalog.MODE_COLUMNS:
        problems.append(f"headwater.pipeline.mode: validate compares scd1, scd2 and changelog "
                        f"targets, not {cfg.mode!r}")
    if cfg.target == "delta" and not cfg.delta_path.is_dir():
        problems.append(f"headwater.pipeline.delta.path: {cfg.delta_path} does not exist")
    if cfg.target == "iceberg" and not cfg.iceberg_warehouse.is_dir():
        problems.append(f"headwater.pipeline.iceberg.warehouse: {cfg.iceberg_warehouse} "
                        "does not exist")
    if problems:
        raise ConfigError(problems, source)


def selected_targets(pipeline: PipelineConfig, tables: tuple[str, ...]
                     ) -> list[tuple[str, str, Any]]:
    """The Delta targets under the pipeline's path, only `tables` when named (ConfigError
    naming each that has no target)."""
    return catalog.named(catalog.targets(pipeline.delta_path), tables, lambda t: (
        f"--table {t}: no target table {t} under {pipeline.delta_path}"))


def dialect_of(connector: Any) -> str:
    """The validate dialect the connector's registration declares, `mongodb` for a document
    connector (ConfigError naming the database when it is neither: validate reads PostgreSQL,
    MySQL/MariaDB and MongoDB only)."""
    from headwater.connectors.registry import registration_for_class

    reg = registration_for_class(connector.connector_class)
    if reg.event_model == "documents":
        return MONGODB
    if not reg.validate_dialect:
        raise ConfigError([f"connector.class: headwater validate cannot read {reg.name} "
                           f"databases ({connector.connector_class}); it compares PostgreSQL, "
                           "MySQL/MariaDB and MongoDB sources"])
    return reg.validate_dialect


@contextmanager
def connect(connector: Any) -> Iterator[SqlSource]:
    """A read-only connection to the captured database."""
    if dialect_of(connector) == "mysql":
        import pymysql  # type: ignore[import-untyped]

        # TIMESTAMP columns read as UTC, as the connector converts them.
        conn: Any = pymysql.connect(**connector.connect_kwargs(),
                                    init_command="SET time_zone = '+00:00'")
        dialect = "mysql"
    else:
        import psycopg2

        conn = psycopg2.connect(**connector.dsn_kwargs())
        conn.set_session(readonly=True, autocommit=True)
        dialect = "postgres"
    try:
        yield SqlSource(conn, dialect)
    finally:
        conn.close()


def validate(connector: Any, pipeline: PipelineConfig, options: Options,
             tables: tuple[str, ...] = ()) -> tuple[list[TableResult], list[str]]:
    """Results per compared table, and the tables that could not be compared (why)."""
    if dialect_of(connector) == MONGODB:
        from headwater.validate.mongodb_run import validate_documents

        return validate_documents(connector, pipeline, options, tables)
    if pipeline.target == "jdbc":
        return _validate_jdbc(connector, pipeline, options, tables)
    if pipeline.target == "iceberg":
        return _validate_iceberg(connector, pipeline, options, tables)
    found = selected_targets(pipeline, tables)
    results: list[TableResult] = []
    problems: list[str] = []
    side = DeltaSide()
    with connect(connector) as src:
        for schema, table, path in found:
            # <schema> is the PostgreSQL schema, or the MariaDB database.
            plan = catalog.plan(src, schema, table, str(path), catalog.delta_columns(path),
                                pipeline.mode)
            if isinstance(plan, str):
                problems.append(plan)
                continue
            results.append(compare_table(src, side, plan, options))
    if not found:
        problems.append(f"no target tables under {pipeline.delta_path}")
    return results, problems


def _validate_jdbc(connector: Any, pipeline: PipelineConfig, options: Options,
                   tables: tuple[str, ...]) -> tuple[list[TableResult], list[str]]:
    results: list[TableResult] = []
    problems: list[str] = []
    with connect(connector) as src, open_targets(pipeline) as jdbc:
        found: list[tuple[str, str]] = []
        for table in jdbc.tables():
            schema = source_schema(src, pipeline, table)
            if isinstance(schema, str):
                found.append((schema, table))
            elif not tables:
                problems.append(f"{jdbc.label(table)}: source table " + (
                    f"ambiguous ({', '.join(f'{s}.{table}' for s in schema)})" if schema
                    else f"{table} not found in any schema"))
        found = catalog.named(found, tables, lambda t: (
            f"--table {t}: no target table for {t} in {jdbc.schema} ({jdbc.where})"))
        for schema, table in found:
            plan = catalog.plan(src, schema, table, jdbc.label(table), jdbc.columns(table),
                                pipeline.mode, jdbc.side.dialect)
            if isinstance(plan, str):
                problems.append(plan)
                continue
            results.append(compare_table(src, jdbc.side, plan, options))
        if not found and not problems:
            problems.append(f"no target tables in {jdbc.schema} ({jdbc.where})")
    return results, problems


def _validate_iceberg(connector: Any, pipeline: PipelineConfig, options: Options,
                      tables: tuple[str, ...]) -> tuple[list[TableResult], list[str]]:
    from headwater.validate import iceberg_side

    results: list[TableResult] = []
    problems: list[str] = []
    with connect(connector) as src, iceberg_side.open_targets(pipeline) as ice:
        found = ice.selected(tables)
        for schema, table in found:
            plan = catalog.plan(src, schema, table, ice.label(schema, table),
                                ice.columns(schema, table), pipeline.mode)
            if isinstance(plan, str):
                problems.append(plan)
                continue
            results.append(compare_table(src, ice.side(schema, table), plan, options))
        if not found:
            problems.append(ice.none_found())
    return results, problems
