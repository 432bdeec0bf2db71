"""One table's batch as a Spark DataFrame: what the Spark-side targets (`delta_spark`) take.

The rows are those of `columnar.ColumnarChanges.rows`, column for column: net changes (the row
columns, `__hw_sequence`, `__hw_op` 'u' or 'd' with only the key columns set for deletes, then
a boolean `__hw_u_<column>` per column in `toast`, true where the target keeps its value) or
changelog rows (`columnar.decode_changelog`; SCD2's events with its `flags`).  Where the
DataFrame comes from is not the target's business: the driver hands over its Arrow table
(`from_columnar`), and the executor-side reading and netting hands over its own DataFrame with
the same columns and metadata, without a change to the target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from headwater.pipeline.columnar import ColumnarChanges
from headwater.pipeline.decode import Column


@dataclass(frozen=True, slots=True)
class ChangeFrame:
    """A table's rows as a DataFrame plus what the target needs to know about them."""

    rows: Any  # pyspark.sql.DataFrame
    topic: str
    schema_name: str | None
    table_name: str | None
    key_columns: tuple[str, ...]
    columns: tuple[Column, ...]
    events: int
    toast: tuple[str, ...] = field(default=())
    target: str | None = None  # a table of its own (AUTO CDC flows), else schema/table
    # A folder the target may write the batch's intermediate results into (the executors'
    # staging folder of the batch, removed with it); None: the target picks its own.
    staging: str | None = None


def from_columnar(spark: Any, changes: ColumnarChanges) -> ChangeFrame:
    """The driver's decoded batch as a DataFrame (Arrow in, no row-by-row conversion).

    The Spark schema is given, not inferred: Spark would read a timestamp without a time zone
    as a local `timestamp`, where delta-rs (and the tables it made) keep `timestamp_ntz`."""
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = from_arrow_schema(changes.rows.schema, prefer_timestamp_ntz=True)
    rows = spark.createDataFrame(changes.rows, schema=schema)
    return ChangeFrame(rows, changes.topic, changes.schema_name,
                       changes.table_name, changes.key_columns, tuple(changes.columns),
                       changes.events, tuple(changes.toast), changes.target)
