"""Per-chunk signatures and canonical rows of a Delta target, by a streaming scan.

The table is read batch by batch (`to_pyarrow_dataset().to_batches`), only the compared
columns (SCD2: only open versions, a pushed-down filter), so memory stays at one batch whatever
the table's size; each row's canonical text is hashed exactly as the source's SQL does
(`source.py`), chunk by chunk.  A changelog's current rows (latest event per key,
`current.py`) come from a DataFusion query inside delta-rs, streamed as batches too (the
window over the keys is DataFusion's to hold).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, QueryBuilder

from headwater.pipeline.delta_target import END, q
from headwater.validate.canonical import SEP, python_text
from headwater.validate.current import current_sql, truncate_floor_sql
from headwater.validate.model import Signature, TablePlan

BATCH_ROWS = 65_536


def _chunk_of(plan: TablePlan, values: tuple[object, ...], kinds: list[str], chunk_rows: int,
              buckets: int) -> int:
    """The chunk of a row, from its key alone (so the other columns of a row outside the
    chunks asked for are never made canonical)."""
    if not plan.key:
        return 0
    if plan.int_key:
        key_value = values[0]
        assert isinstance(key_value, int)
        return key_value // chunk_rows
    n = len(plan.key)
    key_text = SEP.join(python_text(k, v) for k, v in zip(kinds[:n], values[:n], strict=True))
    return int(hashlib.md5(key_text.encode(), usedforsecurity=False).hexdigest()[:7], 16) % buckets


def _rows(plan: TablePlan, chunk_rows: int, buckets: int,
          only: set[int] | None) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(chunk, canonical texts) of every target row, or of the rows in the chunks `only`."""
    names = [c for c, _ in plan.columns]
    return canonical_rows(plan, _batches(plan, names), chunk_rows, buckets, only)


def canonical_rows(plan: TablePlan, batches: Iterable[pa.RecordBatch], chunk_rows: int,
                   buckets: int, only: set[int] | None
                   ) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(chunk, canonical texts) of the rows of `batches` (the compared columns in plan order),
    or of those in the chunks `only`: for any target read as Arrow batches (Delta here,
    Iceberg through Spark in `iceberg_side`)."""
    names = [c for c, _ in plan.columns]
    kinds = [k for _, k in plan.columns]
    for batch in batches:
        columns = [batch.column(i).to_pylist() for i in range(len(names))]
        for values in zip(*columns, strict=True):
            chunk = _chunk_of(plan, values, kinds, chunk_rows, buckets)
            if only is None or chunk in only:
                yield chunk, tuple(python_text(k, v) for k, v in zip(kinds, values, strict=True))


def _batches(plan: TablePlan, names: list[str]) -> Iterator[pa.RecordBatch]:
    """The current rows of the target (`current.py`), the compared columns in plan order."""
    table = DeltaTable(plan.target)
    if plan.mode == "changelog":
        query = QueryBuilder().register("t", table)
        floor = pa.table(query.execute(truncate_floor_sql(q, "t")).read_all()).column(0)[0]
        sql = current_sql(q, "t", plan, floor.as_py())
        yield from pa.RecordBatchReader.from_stream(query.execute(sql))
        return
    row_filter = pc.field(END).is_null() if plan.mode == "scd2" else None
    yield from table.to_pyarrow_dataset().to_batches(
        columns=names, filter=row_filter, batch_size=BATCH_ROWS)


class DeltaSide:
    """The target side of a comparison for Delta targets (the plan's `target` is the path)."""

    def signatures(self, plan: TablePlan, chunk_rows: int, buckets: int,
                   only: set[int] | None = None) -> dict[int, Signature]:
        return signatures(plan, chunk_rows, buckets, only)

    def rows(self, plan: TablePlan, chunk_rows: int, buckets: int,
             chunks: set[int]) -> Iterator[tuple[str, ...]]:
        return rows(plan, chunk_rows, buckets, chunks)


def signatures(plan: TablePlan, chunk_rows: int, buckets: int,
               only: set[int] | None = None) -> dict[int, Signature]:
    return signatures_of(_rows(plan, chunk_rows, buckets, only))


def signatures_of(rows: Iterable[tuple[int, tuple[str, ...]]]) -> dict[int, Signature]:
    """Each chunk's signature (row count, sum of the rows' first 60 MD5 bits), as the
    source's SQL computes it (`source.py`)."""
    counts: dict[int, int] = {}
    sums: dict[int, int] = {}
    for chunk, texts in rows:
        digest = hashlib.md5(SEP.join(texts).encode(), usedforsecurity=False).hexdigest()
        counts[chunk] = counts.get(chunk, 0) + 1
        sums[chunk] = sums.get(chunk, 0) + int(digest[:15], 16)
    return {c: Signature(n, sums[c]) for c, n in counts.items()}


def rows(plan: TablePlan, chunk_rows: int, buckets: int,
         chunks: set[int]) -> Iterator[tuple[str, ...]]:
    for _chunk, texts in _rows(plan, chunk_rows, buckets, chunks):
        yield texts
