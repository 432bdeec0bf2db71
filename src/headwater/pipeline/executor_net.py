"""A batch's staged parts netted across parts on the executors, as a DataFrame: what a target
that writes through Spark (`delta_spark.SparkDeltaTarget.merge_net`) takes, so that no row of
the batch passes through the driver.

The driver's net across parts (`tasks.net_across_parts`) reads every staged part and nets it
in Arrow: cheap per batch, but it is driver work that a second executor does not shorten, and
its rows then travel back to the executors for the MERGE.  Here the staged Parquet files are
read by Spark, shuffled by key (`repartition` on the key columns, so every fragment of a key
lands in one task) and netted in each task by the same Arrow code (`part_net.net_fragments`,
in `mapInArrow`): per key the result is the driver's, since a key's fragments are netted
together and `net_fragments` does not depend on their order (it sorts by sequence).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.pipeline.change_frame import ChangeFrame
from headwater.pipeline.columnar import TOAST_FLAG, ColumnarChanges
from headwater.pipeline.part_net import net_fragments
from headwater.pipeline.spark_merge import q
from headwater.pipeline.tasks import PartResult, rows_schema, staged_batch


def net_frame(spark: Any, parts: list[PartResult]) -> ChangeFrame | None:
    """One topic's SCD1 batch from its staged parts, netted by Spark tasks and staged as
    Parquet beside them (None: no events); raises `tasks.Refused` as `net_across_parts`
    does.  The DataFrame reads the staged net, which stays until the batch is written."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    staged = _read_parts(spark, parts)
    if staged is None:
        return None
    changes, files, fragments, read = staged
    out_schema = from_arrow_schema(rows_schema(changes, "scd1"), prefer_timestamp_ntz=True)
    out_arrow = to_arrow_schema(out_schema, timestamp_utc=True)
    in_types = {f.name: f.type for f in fragments}
    columns, keys, toast = list(changes.columns), changes.key_columns, list(changes.toast)

    def net(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = pa.Table.from_batches(list(batches))
        if rows.num_rows == 0:
            return
        # back to the decoder's Arrow types (Spark hands timestamps with a zone, for one),
        # so that the net's comparisons and carried values are the driver path's
        rows = pa.table({n: rows.column(n).cast(in_types[n]) for n in rows.column_names})
        netted = net_fragments(rows, columns, keys, toast)
        yield from netted.cast(out_arrow).to_batches()

    parallelism = int(spark.sparkContext.defaultParallelism)
    netted = read.repartition(parallelism, *(F.col(q(k)) for k in keys)).mapInArrow(
        net, out_schema)
    # Staged once more, beside the parts: the target reads the net rows more than once (a
    # count, the state's MERGE, the table's), and a file read again is the same rows without
    # netting again, where Delta refuses a cached MERGE source; like the parts, it goes with
    # the batch's staging folder.
    folder = str(Path(files[0]).parent / "net")
    netted.write.mode("overwrite").parquet(folder)
    return _frame(spark.read.schema(out_schema).parquet(folder), changes)


def changelog_frame(spark: Any, parts: list[PartResult]) -> ChangeFrame | None:
    """One topic's changelog batch from its staged parts, as a DataFrame that reads them (None:
    no events); raises `tasks.Refused` as `net_across_parts` does.  Every event's row, in the
    column-wise decoder's layout and types (`tasks.rows_schema`); the target drops the
    re-deliveries (`spark_merge.first_deliveries`) and appends the rest, so no row of the
    batch passes through the driver."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)
    from pyspark.sql.pandas.types import from_arrow_schema

    staged = _read_parts(spark, parts)
    if staged is None:
        return None
    changes, _files, fragments, read = staged
    out_schema = from_arrow_schema(rows_schema(changes, "changelog"),
                                   prefer_timestamp_ntz=True)
    # (a column missing from every part comes back null, a widened type cast back, as
    # `StagedChanges.to_columnar` does for the driver)
    rows = read.select(*((F.col(q(f.name)) if f.name in fragments.names
                          else F.lit(None)).cast(f.dataType).alias(f.name)
                         for f in out_schema.fields))
    return _frame(rows, changes)


def history_frame(spark: Any, parts: list[PartResult]) -> ChangeFrame | None:
    """One topic's SCD2 batch from its staged parts, as a DataFrame that reads them (None: no
    events); raises `tasks.Refused` as `net_across_parts` does, and for a table without key
    columns (the event path's history skips its events, as the reference does).  Every
    event's row (`tasks.rows_schema(changes, "scd2")`: the changelog's columns plus the
    unchanged-TOAST flags, false where a part has none); the target builds the history from
    them on the executors (`spark_merge.scd2_history`), in the batch's staging folder."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)
    from pyspark.sql.pandas.types import from_arrow_schema

    from headwater.pipeline.tasks import Refused

    staged = _read_parts(spark, parts)
    if staged is None:
        return None
    changes, files, fragments, read = staged
    if not changes.key_columns:
        raise Refused("SCD2 of a table without key columns")
    out_schema = from_arrow_schema(rows_schema(changes, "scd2"), prefer_timestamp_ntz=True)
    flags = {TOAST_FLAG + c for c in changes.toast}

    def column(name: str) -> Any:
        if name not in fragments.names:
            return F.lit(False) if name in flags else F.lit(None)
        return F.coalesce(F.col(q(name)), F.lit(False)) if name in flags else F.col(q(name))

    rows = read.select(*(column(f.name).cast(f.dataType).alias(f.name)
                         for f in out_schema.fields))
    return dataclasses.replace(_frame(rows, changes),
                               staging=str(Path(files[0]).parent / "history"))


def _read_parts(spark: Any, parts: list[PartResult]
                ) -> tuple[ColumnarChanges, list[str], pa.Schema, Any] | None:
    """The batch's staged parts as Spark reads them (None: no events): the batch's changes
    summary, the part files, their union schema and the DataFrame.  The parts' columns differ
    (a part's TOAST flags and carried sequences): Spark reads them with their union, a column
    a file lacks as nulls."""
    from pyspark.sql.pandas.types import from_arrow_schema

    batch = staged_batch(parts)
    if batch is None:
        return None
    changes, files = batch
    fragments = pa.unify_schemas([pq.read_schema(f) for f in files],
                                 promote_options="permissive")
    read = (spark.read.schema(from_arrow_schema(fragments, prefer_timestamp_ntz=True))
            .parquet(*files))
    return changes, files, fragments, read


def _frame(rows: Any, changes: ColumnarChanges) -> ChangeFrame:
    return ChangeFrame(rows, changes.topic, changes.schema_name, changes.table_name,
                       changes.key_columns, tuple(changes.columns), changes.events,
                       tuple(changes.toast), changes.target)
