"""A parallel snapshot's chunks as ranges of an integer key, for any database that stores a
table in its key's order (InnoDB's clustered index; SQL Server's and Db2's clustered tables
alike).

Why key ranges: with the table clustered on the key, `WHERE key >= a AND key < b` reads exactly
that slice of the index, so N chunks cost about one pass over the table in total.  A table
whose key is one integer column is cut arithmetically from `MIN(key)`/`MAX(key)` (two index
look-ups) without reading the data.  The cut assumes keys spread evenly, which
auto-incremented keys mostly do; a skewed table makes uneven chunks, never wrong ones, since
the first chunk is open below and the last open above (`plan_ranges`).  Any other table is one
chunk: parallel across tables only.  The connector says which tables have such a key and reads
their MIN/MAX.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from headwater.relational.snapshot import RangeChunk, plan_ranges

# Aim for this many chunks per worker on a big table, so a slow chunk does not idle the rest.
CHUNKS_PER_WORKER = 4
# A table is split only into chunks of at least this many (estimated) rows: below that, the
# per-chunk query start-up and the chunk's held-back tail are not worth it.
MIN_CHUNK_ROWS = 2048


class TableSize(NamedTuple):
    """What the planner knows of a table before reading it."""

    estimated_rows: int  # the catalog's row estimate (-1: unknown)
    key_min: int | None = None  # MIN/MAX of the split key; None: not splittable, or empty
    key_max: int | None = None


def chunk_count(size: TableSize, workers: int) -> int:
    """How many key ranges a table is cut into (1: read whole)."""
    if workers <= 1 or size.key_min is None or size.key_max is None:
        return 1
    span = size.key_max - size.key_min + 1
    wanted = min(workers * CHUNKS_PER_WORKER, max(0, size.estimated_rows) // MIN_CHUNK_ROWS)
    return max(1, min(wanted, span))


def plan_chunks(sizes: Sequence[TableSize], workers: int) -> list[RangeChunk]:
    """Key ranges covering every table exactly once (relational.snapshot.plan_ranges), cut
    evenly over `key_min..key_max`."""

    def cuts(i: int) -> list[int]:
        size = sizes[i]
        n = chunk_count(size, workers)
        if n <= 1 or size.key_min is None or size.key_max is None:
            return []
        step = math.ceil((size.key_max - size.key_min + 1) / n)
        span_last = size.key_max - size.key_min  # offset of the last key from the first
        return [size.key_min + k * step for k in range(1, n) if k * step <= span_last]

    return plan_ranges([size.estimated_rows for size in sizes], cuts)
