"""How a parallel PostgreSQL snapshot splits its tables: block (ctid) ranges of the heap.

Why block ranges rather than primary-key ranges: PostgreSQL 14+ runs
`WHERE ctid >= '(a,0)' AND ctid < '(b,0)'` as a TID Range Scan that reads only those heap
blocks, sequentially, so N chunks cost one pass over the table in total.  The boundaries come
from the relation's size in blocks, with no query over the data (key quantiles would need a
scan or a sample first), and the split works for tables without a primary key too.  The
ranges are exact for the snapshot: the snapshot transaction holds ACCESS SHARE locks, so no
VACUUM FULL or CLUSTER can move a tuple it sees; rows appended later land in new blocks that
the last, open-ended chunk covers (and the snapshot does not see them anyway).

Below PostgreSQL 14, and for partitioned tables (one ctid space per partition), each table is
one chunk: the parallelism is then across tables only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from headwater.relational.snapshot import RangeChunk, plan_ranges

# A chunk is between these many heap blocks (8 KiB each): small enough to balance the workers,
# large enough that the per-chunk COPY start-up is negligible.
MIN_CHUNK_BLOCKS = 32
MAX_CHUNK_BLOCKS = 4096
# Aim for this many chunks per worker on a big table, so a slow chunk does not idle the rest.
CHUNKS_PER_WORKER = 4


class TableSize(NamedTuple):
    blocks: int  # heap blocks now (pg_relation_size / block_size)
    estimated_rows: int  # pg_class.reltuples (-1: never analyzed)
    splittable: bool  # a plain heap table on PostgreSQL 14+


def tid(block: int) -> str:
    """A chunk bound (`RangeChunk.where`): the block's first tuple."""
    return f"'({block},0)'::tid"


def chunk_blocks(blocks: int, workers: int) -> int:
    """Blocks per chunk for a table of `blocks` read by `workers` processes."""
    wanted = math.ceil(blocks / max(1, workers * CHUNKS_PER_WORKER))
    return max(MIN_CHUNK_BLOCKS, min(MAX_CHUNK_BLOCKS, wanted))


def plan_chunks(sizes: Sequence[TableSize], workers: int) -> list[RangeChunk]:
    """Block ranges covering every table exactly once (relational.snapshot.plan_ranges), a
    small remainder folded into its neighbour."""

    def cuts(i: int) -> list[int]:
        size = sizes[i]
        step = chunk_blocks(size.blocks, workers)
        if workers <= 1 or not size.splittable or size.blocks < 2 * step:
            return []
        starts = list(range(0, size.blocks, step))
        if size.blocks - starts[-1] < step // 2:
            starts.pop()
        return starts[1:]

    return plan_ranges([size.blocks for size in sizes], cuts)


_SIZES_SQL = """
SELECT c.oid, pg_relation_size(c.oid) / current_setting('block_size')::int,
       c.reltuples::bigint, c.relkind = 'r'
FROM pg_class c WHERE c.oid = ANY(%s)
"""


def table_sizes(cur: Any, oids: Sequence[int]) -> dict[int, TableSize]:
    """Sizes of the given tables, as the chunk planner and the progress bars need them."""
    if not oids:
        return {}
    tid_range = int(cur.connection.server_version) >= 140000
    cur.execute(_SIZES_SQL, (list(oids),))
    return {
        int(oid): TableSize(int(blocks), int(rows), bool(plain) and tid_range)
        for oid, blocks, rows, plain in cur.fetchall()
    }
