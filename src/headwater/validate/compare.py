"""Compares one table: chunk signatures, then rows of the differing chunks, then columns.

While capture runs, the target lags the source, so a chunk can differ only because its last
changes are not applied yet.  Differing chunks are therefore compared again, up to `rechecks`
times `recheck_wait_s` apart (both sides re-hashed, those chunks only): only differences that
persist are reported, as rows.  With capture stopped and the pipeline caught up, no recheck is
needed (`rechecks=0`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from headwater.validate.model import RowDiff, Signature, TablePlan, TableResult


class Side(Protocol):
    """What a target side gives: a Delta scan (`target.DeltaSide`) or a database
    (`source.SqlSource` over a JDBC target's current rows)."""

    def signatures(self, plan: TablePlan, chunk_rows: int, buckets: int,
                   only: set[int] | None = None) -> dict[int, Signature]: ...

    def rows(self, plan: TablePlan, chunk_rows: int, buckets: int,
             chunks: set[int]) -> Iterator[tuple[str, ...]]: ...


class Source(Side, Protocol):
    """The source side: a database's grouped SQL scan (`source.SqlSource`) or a MongoDB
    collection streamed from a cursor (`mongodb_side.MongoSource`); the row count sizes the
    buckets of a non-integer key."""

    def count(self, plan: TablePlan) -> int: ...


@dataclass(frozen=True, slots=True)
class Options:
    chunk_rows: int = 100_000
    rechecks: int = 2
    recheck_wait_s: float = 5.0
    max_rows: int = 100  # differing rows listed per table


def _differing(a: dict[int, Signature], b: dict[int, Signature]) -> set[int]:
    return {c for c in a.keys() | b.keys() if a.get(c) != b.get(c)}


def compare_table(src: Source, target: Side, plan: TablePlan, options: Options
                  ) -> TableResult:
    result = TableResult(plan)
    buckets = 1
    if plan.key and not plan.int_key:
        buckets = max(1, math.ceil(src.count(plan) / options.chunk_rows))
    ours = src.signatures(plan, options.chunk_rows, buckets)
    theirs = target.signatures(plan, options.chunk_rows, buckets)
    result.source_rows = sum(s.rows for s in ours.values())
    result.target_rows = sum(s.rows for s in theirs.values())
    result.chunks = len(ours.keys() | theirs.keys())
    differing = _differing(ours, theirs)
    for _ in range(options.rechecks):
        if not differing:
            break
        time.sleep(options.recheck_wait_s)
        differing = _differing(src.signatures(plan, options.chunk_rows, buckets, differing),
                               target.signatures(plan, options.chunk_rows, buckets, differing))
    result.differing_chunks = sorted(differing)
    if not differing:
        return result
    if not plan.key:
        result.problem = (f"{plan.name} has no primary key: the tables differ (source "
                          f"{result.source_rows} rows, target {result.target_rows}) but rows "
                          "cannot be matched to name them")
        return result
    source_rows = src.rows(plan, options.chunk_rows, buckets, differing)
    target_rows = target.rows(plan, options.chunk_rows, buckets, differing)
    result.rows, result.truncated = _row_diffs(plan, source_rows, target_rows, options.max_rows)
    return result


def _row_diffs(plan: TablePlan, source_rows: Iterable[tuple[str, ...]],
               target_rows: Iterable[tuple[str, ...]], limit: int
               ) -> tuple[list[RowDiff], bool]:
    n = len(plan.key)
    names = [c for c, _ in plan.columns]
    ours = {r[:n]: r for r in source_rows}
    theirs = {r[:n]: r for r in target_rows}
    diffs: list[RowDiff] = []
    for key in sorted(ours.keys() | theirs.keys()):
        a, b = ours.get(key), theirs.get(key)
        if a == b:
            continue
        shown = dict(zip(plan.key, key, strict=True))
        if b is None:
            diffs.append(RowDiff(shown, "missing"))
        elif a is None:
            diffs.append(RowDiff(shown, "extra"))
        else:
            diffs.append(RowDiff(shown, "changed", {
                names[i]: {"source": a[i], "target": b[i]}
                for i in range(n, len(names)) if a[i] != b[i]}))
    return diffs[:limit], len(diffs) > limit


def render(result: TableResult) -> list[str]:
    """Readable lines for one table."""
    p = result.plan
    if result.problem is not None and not result.differing_chunks:
        return [f"{p.name}: NOT COMPARED: {result.problem}"]
    head = (f"{p.name}: {'EQUAL' if result.equal else 'DIFFERS'} (source {result.source_rows} "
            f"rows, target {result.target_rows}; {result.chunks} chunks"
            + (f", {len(result.differing_chunks)} differing" if result.differing_chunks else "")
            + ")")
    lines = [head]
    if result.problem is not None:
        lines.append(f"  {result.problem}")
    for r in result.rows:
        key = ", ".join(f"{k}={v}" for k, v in r.key.items())
        if r.kind == "missing":
            lines.append(f"  missing in target: {key}")
        elif r.kind == "extra":
            lines.append(f"  extra in target (not in source): {key}")
        else:
            cols = "; ".join(f"{c}: source {v['source']!r}, target {v['target']!r}"
                             for c, v in r.columns.items())
            lines.append(f"  changed {key}: {cols}")
    if result.truncated:
        lines.append(f"  ... more differing rows (first {len(result.rows)} listed)")
    if p.not_compared:
        lines.append(f"  not compared: {', '.join(p.not_compared)}")
    return lines
