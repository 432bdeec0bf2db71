"""JDBC targets (`headwater.pipeline.target=jdbc`): their tables, columns and current rows.

The pipeline writes every source table `<schema>.<table>` (MongoDB: collection
`<database>.<collection>`) to `<jdbc schema>.<table>` (its own
`_headwater*` bookkeeping tables and `_hw_stg_*` staging tables are left out).  The target side
is hashed by the target database itself: a `SqlSource` in the target's dialect whose relation
is the mode's current rows (`current.py`) as a derived table, so a big target is one grouped
scan there too, as the source is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.jdbc_dialect import DIALECTS, parse_jdbc_url
from headwater.validate.canonical import sql_kind
from headwater.validate.catalog import TargetColumns
from headwater.validate.current import current_sql, truncate_floor_sql
from headwater.validate.model import TablePlan
from headwater.validate.source import SqlSource

_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "mysql", "performance_schema", "sys")
_VALIDATE_DIALECT = {"postgresql": "postgres", "mariadb": "mysql"}
PAGE_ROWS = 10_000  # rows per query of `JdbcTargets.stream`


class JdbcTargets:
    """One read connection to the pipeline's JDBC target database, in its schema."""

    def __init__(self, cfg: PipelineConfig, conn: Any, dialect: str, schema: str,
                 where: str) -> None:
        self.cfg = cfg
        self.where = where  # the database, without the URL's parameters (a password)
        self.conn = conn
        self.jdbc_dialect = DIALECTS[dialect]
        self.schema = schema
        self.side = SqlSource(conn, _VALIDATE_DIALECT[dialect], self._relation)

    def label(self, table: str) -> str:
        return f"{self.schema}.{table} ({self.where})"

    def tables(self) -> list[str]:
        with self.conn.cursor() as cur:
            cur.execute("SELECT table_name FROM information_schema.tables "
                        "WHERE table_schema = %s ORDER BY table_name", (self.schema,))
            names = [str(r[0]) for r in cur.fetchall()]
        return [n for n in names if not n.startswith(("_headwater", "_hw_stg_"))]

    def columns(self, table: str) -> TargetColumns:
        with self.conn.cursor() as cur:
            cur.execute(self.jdbc_dialect.columns_query, (self.schema, table))
            return {str(n): (sql_kind(str(t)), str(t)) for n, t in cur.fetchall()}

    def stream(self, plan: TablePlan, columns: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
        """The plan's current rows' `columns`, for a side hashed here rather than in the
        database (MongoDB's documents: `mongodb_side`).  Paged by the first column, unique
        among the current rows (`__hw_id`), so a big table is neither held by the driver's
        buffered cursor nor scanned again per page (an index range each)."""
        q = self.side.q
        first = q(columns[0])
        select = f"SELECT {', '.join(q(c) for c in columns)} FROM {self._relation(plan)}"
        after: Any = None
        page = PAGE_ROWS
        while True:
            where = "" if after is None else f" WHERE {first} > %s"
            with self.conn.cursor() as cur:
                cur.execute(f"{select}{where} ORDER BY {first} LIMIT {page}",
                            () if after is None else (after,))
                rows = cur.fetchall()
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1][0]

    def _relation(self, plan: TablePlan) -> str:
        q = self.side.q
        table = f"{q(self.schema)}.{q(plan.table)}"
        if plan.mode == "scd1":
            return table
        floor = None
        if plan.mode == "changelog":
            with self.conn.cursor() as cur:
                cur.execute(truncate_floor_sql(q, table))
                row = cur.fetchone()
                floor = None if row is None or row[0] is None else str(row[0])
        return f"({current_sql(q, table, plan, floor)}) hw_current"


@contextmanager
def open_targets(cfg: PipelineConfig) -> Iterator[JdbcTargets]:
    """A connection to the JDBC target, read-only in intent (autocommit: every query sees the
    latest commits, as the rechecks need while capture runs)."""
    if not cfg.jdbc_url:
        raise ValueError("headwater.pipeline.jdbc.url is required for a JDBC target")
    location = parse_jdbc_url(cfg.jdbc_url)
    dialect = DIALECTS[location.dialect]
    password = (cfg.jdbc_password.reveal() if cfg.jdbc_password is not None
                else location.params.get("password"))
    conn = dialect.connect(location, cfg.jdbc_user or location.params.get("user"), password)
    if location.dialect == "postgresql":
        conn.commit()
        conn.autocommit = True
        schema = cfg.jdbc_schema or location.params.get("currentSchema") or "public"
    else:
        conn.autocommit(True)
        schema = cfg.jdbc_schema or location.database or ""
    try:
        where = f"{location.dialect}://{location.host}:{location.port}/{location.database or ''}"
        yield JdbcTargets(cfg, conn, location.dialect, schema, where)
    finally:
        conn.close()


def source_schema(src: SqlSource, cfg: PipelineConfig, table: str) -> str | list[str]:
    """The source schema (MariaDB: database) of target table `table`, or the candidates when
    there is not exactly one: several tables of that name are told apart by the topics the
    pipeline reads (`<topic.prefix>.<schema>.<table>` in the topic log)."""
    with src.conn.cursor() as cur:
        cur.execute("SELECT table_schema FROM information_schema.tables WHERE table_name = %s "
                    "ORDER BY table_schema", (table,))
        found = [str(r[0]) for r in cur.fetchall() if str(r[0]) not in _SYSTEM_SCHEMAS]
    if len(found) > 1:
        topics = {p.name for p in cfg.topics_dir.iterdir()} if cfg.topics_dir.is_dir() else set()
        found = [s for s in found if f"{cfg.topic_prefix}.{s}.{table}" in topics] or found
    return found[0] if len(found) == 1 else found
