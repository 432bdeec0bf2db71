"""`headwater validate CONFIG`: every pipeline target against its source table.

One configuration, as the pipeline takes it: the connector's properties (the source to
connect to) plus `headwater.pipeline.*` (where the targets are).  Only SCD1 Delta targets
hold one row per source row; other modes and targets are refused by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from headwater.config import ConfigError
from headwater.ops.validate import catalog
from headwater.ops.validate.compare import Options, compare_table
from headwater.ops.validate.model import TableResult
from headwater.ops.validate.source import SqlSource
from headwater.pipeline.config import PipelineConfig


def check_pipeline(cfg: PipelineConfig, source: str) -> None:
    problems = []
    if cfg.target != "delta":
        problems.append(f"headwater.pipeline.target: validate compares Delta targets only, "
                        f"not {cfg.target!r}")
    if cfg.mode != "scd1":
        problems.append(f"headwater.pipeline.mode: validate compares scd1 targets (one row per "
                        f"source row), not {cfg.mode!r}")
    if not cfg.delta_path.is_dir():
        problems.append(f"headwater.pipeline.delta.path: {cfg.delta_path} does not exist")
    if problems:
        raise ConfigError(problems, source)


def dialect_of(connector: Any) -> str:
    """The validate dialect the connector's registration declares (ConfigError naming the
    database when it declares none: validate reads PostgreSQL and MySQL/MariaDB only)."""
    from headwater.connectors.registry import registration_for_class

    reg = registration_for_class(connector.connector_class)
    if not reg.validate_dialect:
        raise ConfigError([f"connector.class: headwater validate cannot read {reg.name} "
                           f"databases ({connector.connector_class}); it compares PostgreSQL "
                           "and MySQL/MariaDB sources"])
    return reg.validate_dialect


@contextmanager
def connect(connector: Any) -> Iterator[SqlSource]:
    """A read-only connection to the captured database."""
    if dialect_of(connector) == "mysql":
        import pymysql  # type: ignore[import-untyped]

        conn: Any = pymysql.connect(**connector.connect_kwargs())
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
    found = catalog.targets(pipeline.delta_path)
    if tables:
        names = {f"{s}.{t}" for s, t, _ in found}
        unknown = [t for t in tables if t not in names]
        if unknown:
            raise ConfigError([f"--table {t}: no target table {t} under "
                               f"{pipeline.delta_path}" for t in unknown])
        found = [f for f in found if f"{f[0]}.{f[1]}" in tables]
    results: list[TableResult] = []
    problems: list[str] = []
    with connect(connector) as src:
        for schema, table, path in found:
            # <schema> is the PostgreSQL schema, or the MariaDB database.
            plan = catalog.plan(src, schema, table, path)
            if isinstance(plan, str):
                problems.append(plan)
                continue
            results.append(compare_table(src, plan, options))
    if not found:
        problems.append(f"no target tables under {pipeline.delta_path}")
    return results, problems

