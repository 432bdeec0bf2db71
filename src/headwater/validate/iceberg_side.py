"""Iceberg targets (`headwater.pipeline.target=iceberg`): their tables, columns and current rows,
read through Spark with Iceberg's runtime, as the pipeline writes them.

The pipeline's Spark session helper (`spark_session`: Iceberg's runtime jars) and the
pipeline's own catalog registration (`iceberg_target.register_catalog`: a Hadoop catalog on
`headwater.pipeline.iceberg.warehouse`, named `headwater.pipeline.iceberg.catalog`) open the
warehouse; Spark applies the tables' position deletes (merge-on-read) when it reads.  A
source table `<schema>.<table>` is `<catalog>.<schema>.<table>`; the pipeline's state tables
(namespace `_headwater_state`) are left out.

The mode's current rows (`current.py`) are a Spark SQL query; each Spark partition's rows are
made canonical and hashed in a Python task (`mapInArrow`, the same code as the Delta side's,
`target.canonical_rows`), which sends back one partial signature per chunk: only those reach
the driver, so memory stays at one Arrow batch per task whatever the table's size.  The rows of
differing chunks come back as their canonical texts.

MongoDB's document tables (`mongodb_run`) are opened the same way; their current `__hw_id` and
`__hw_doc` are streamed to the driver (`IcebergTargets.stream`) and hashed there by the one
document side (`mongodb_side.DocumentSide`), as the Delta and JDBC document tables are.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.iceberg_target import STATE_NAMESPACE, IcebergTarget
from headwater.pipeline.quiet import log_dir
from headwater.pipeline.spark_merge import q
from headwater.pipeline.spark_session import session_for
from headwater.validate.canonical import kind
from headwater.validate.catalog import TargetColumns, named
from headwater.validate.current import current_sql, truncate_floor_sql
from headwater.validate.model import Signature, TablePlan
from headwater.validate.target import canonical_rows, signatures_of

_PARTIAL = "chunk long, rows long, hash_sum string"  # a Python int can pass 64 bits


class IcebergTargets:
    """The pipeline's Iceberg warehouse, read through a Spark session."""

    def __init__(self, spark: Any, cfg: PipelineConfig) -> None:
        self.spark = spark
        # Registers the catalog in the session as the pipeline does (refusing a name the
        # session gives another warehouse); writes nothing.
        self.target = IcebergTarget(spark, cfg.iceberg_warehouse, cfg.iceberg_catalog,
                                    cfg.pipeline_id)
        self.catalog = cfg.iceberg_catalog
        self.where = str(self.target.warehouse)

    def tables(self) -> list[tuple[str, str]]:
        """(schema, table) of the target tables (not the pipeline's state tables)."""
        return [(p[0], p[1]) for p in self.target.tables()
                if len(p) == 2 and p[0] != STATE_NAMESPACE]

    def selected(self, tables: tuple[str, ...]) -> list[tuple[str, str]]:
        """(schema, table) of the target tables, only `tables` (`schema.table`) when named
        (ConfigError naming each that has no target)."""
        return named(self.tables(), tables, lambda t: (
            f"--table {t}: no target table {self.catalog}.{t} in the Iceberg warehouse "
            f"{self.where}"))

    def none_found(self) -> str:
        return f"no target tables in the Iceberg warehouse {self.where} (catalog {self.catalog})"

    def name(self, schema: str, table: str) -> str:
        """The table in Spark SQL: `catalog`.`schema`.`table`."""
        return ".".join(q(p) for p in (self.catalog, schema, table))

    def label(self, schema: str, table: str) -> str:
        return f"{self.catalog}.{schema}.{table} ({self.where})"

    def columns(self, schema: str, table: str) -> TargetColumns:
        """Column name -> (canonical kind, type) as Spark gives the table's rows to Arrow."""
        arrow = self.spark.table(self.name(schema, table)).limit(0).toArrow().schema
        return {f.name: (kind(f.type), str(f.type)) for f in arrow}

    def side(self, schema: str, table: str) -> IcebergSide:
        return IcebergSide(self.spark, self.name(schema, table))

    def stream(self, plan: TablePlan, columns: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
        """The `columns` of table `plan.schema`.`plan.table`'s current rows (SCD1: every row,
        SCD2: the open versions, `current.py`), for a side hashed in the driver rather than in
        Spark tasks (MongoDB's documents: `mongodb_side.DocumentSide`).  Streamed a Spark
        partition at a time (`toLocalIterator`), so the driver never holds the table."""
        if plan.mode not in ("scd1", "scd2"):
            raise ValueError(f"no streamed current rows for mode {plan.mode!r}")
        frame = self.spark.sql(current_sql(q, self.name(plan.schema, plan.table), plan))
        for row in frame.select(*(q(c) for c in columns)).toLocalIterator():
            yield tuple(row)


class IcebergSide:
    """The target side of one table's comparison (`compare.Side`)."""

    def __init__(self, spark: Any, name: str) -> None:
        self.spark = spark
        self.name = name

    def _current(self, plan: TablePlan) -> Any:
        """The target's current rows (`current.py`), the compared columns in plan order."""
        floor = None
        if plan.mode == "changelog":
            found = self.spark.sql(truncate_floor_sql(q, self.name)).collect()[0][0]
            floor = None if found is None else str(found)
        frame = self.spark.sql(current_sql(q, self.name, plan, floor))
        return frame.select(*(q(c) for c, _ in plan.columns))

    def signatures(self, plan: TablePlan, chunk_rows: int, buckets: int,
                   only: set[int] | None = None) -> dict[int, Signature]:
        def partial(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            found = signatures_of(canonical_rows(plan, batches, chunk_rows, buckets, only))
            chunks = sorted(found)
            yield pa.record_batch({
                "chunk": pa.array(chunks, pa.int64()),
                "rows": pa.array([found[c].rows for c in chunks], pa.int64()),
                "hash_sum": pa.array([str(found[c].hash_sum) for c in chunks], pa.string())})

        counts: dict[int, int] = {}
        sums: dict[int, int] = {}
        for r in self._current(plan).mapInArrow(partial, _PARTIAL).collect():
            counts[r.chunk] = counts.get(r.chunk, 0) + r.rows
            sums[r.chunk] = sums.get(r.chunk, 0) + int(r.hash_sum)
        return {c: Signature(n, sums[c]) for c, n in counts.items()}

    def rows(self, plan: TablePlan, chunk_rows: int, buckets: int,
             chunks: set[int]) -> Iterator[tuple[str, ...]]:
        n = len(plan.columns)

        def texts(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            found = [t for _, t in canonical_rows(plan, batches, chunk_rows, buckets, chunks)]
            yield pa.record_batch({f"c{i}": pa.array([t[i] for t in found], pa.string())
                                   for i in range(n)})

        schema = ", ".join(f"c{i} string" for i in range(n))
        for r in self._current(plan).mapInArrow(texts, schema).collect():
            yield tuple(r)


@contextmanager
def open_targets(cfg: PipelineConfig) -> Iterator[IcebergTargets]:
    """The Iceberg warehouse through the pipeline's Spark session (its `spark.*` settings;
    Spark's logs to `<checkpoint dir>/logs/validate/spark.log`).  A session already active in
    this process is used and left running (the tests' own, with Iceberg's jars); one started
    here is stopped at the end."""
    # (Spark's progress bars would share the terminal with the result.)
    props = {"spark.ui.showConsoleProgress": "false", **dict(cfg.spark_conf)}
    with session_for("headwater-validate", log_dir(cfg.checkpoint_dir) / "validate",
                     props) as spark:
        yield IcebergTargets(spark, cfg)
