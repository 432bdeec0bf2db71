"""Per-chunk signatures and canonical rows of a Delta target, by a streaming scan.

The table is read batch by batch (`to_pyarrow_dataset().to_batches`), only the compared
columns, so memory stays at one batch whatever the table's size; each row's canonical text is
hashed exactly as the source's SQL does (`source.py`), chunk by chunk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from deltalake import DeltaTable

from headwater.ops.validate.canonical import SEP, python_text
from headwater.ops.validate.model import Signature, TablePlan

BATCH_ROWS = 65_536


def _chunk_of(plan: TablePlan, texts: tuple[str, ...], key_value: object, chunk_rows: int,
              buckets: int) -> int:
    if not plan.key:
        return 0
    if plan.int_key:
        assert isinstance(key_value, int)
        return key_value // chunk_rows
    key_text = SEP.join(texts[:len(plan.key)]).encode()
    return int(hashlib.md5(key_text, usedforsecurity=False).hexdigest()[:7], 16) % buckets


def _rows(plan: TablePlan) -> Iterator[tuple[object, tuple[str, ...]]]:
    """(first key value, canonical texts) of every target row."""
    names = [c for c, _ in plan.columns]
    kinds = [k for _, k in plan.columns]
    dataset = DeltaTable(plan.target).to_pyarrow_dataset()
    for batch in dataset.to_batches(columns=names, batch_size=BATCH_ROWS):
        columns = [batch.column(i).to_pylist() for i in range(len(names))]
        for values in zip(*columns, strict=True):
            yield values[0], tuple(python_text(k, v) for k, v in zip(kinds, values, strict=True))


def signatures(plan: TablePlan, chunk_rows: int, buckets: int,
               only: set[int] | None = None) -> dict[int, Signature]:
    counts: dict[int, int] = {}
    sums: dict[int, int] = {}
    for first, texts in _rows(plan):
        chunk = _chunk_of(plan, texts, first, chunk_rows, buckets)
        if only is not None and chunk not in only:
            continue
        digest = hashlib.md5(SEP.join(texts).encode(), usedforsecurity=False).hexdigest()
        counts[chunk] = counts.get(chunk, 0) + 1
        sums[chunk] = sums.get(chunk, 0) + int(digest[:15], 16)
    return {c: Signature(n, sums[c]) for c, n in counts.items()}


def rows(plan: TablePlan, chunk_rows: int, buckets: int,
         chunks: set[int]) -> Iterator[tuple[str, ...]]:
    for first, texts in _rows(plan):
        if _chunk_of(plan, texts, first, chunk_rows, buckets) in chunks:
            yield texts
