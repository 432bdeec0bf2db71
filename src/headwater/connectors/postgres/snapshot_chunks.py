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


class Chunk(NamedTuple):
    """Blocks [first_block, end_block) of one table; None means open on that side."""

    table: int  # index into the snapshot's table list
    first_block: int | None
    end_block: int | None

    def where(self) -> str:
        """The SQL condition selecting the chunk's rows ('' for the whole table)."""
        conds = []
        if self.first_block is not None:
            conds.append(f"ctid >= '({int(self.first_block)},0)'::tid")
        if self.end_block is not None:
            conds.append(f"ctid < '({int(self.end_block)},0)'::tid")
        return " AND ".join(conds)


def chunk_blocks(blocks: int, workers: int) -> int:
    """Blocks per chunk for a table of `blocks` read by `workers` processes."""
    wanted = math.ceil(blocks / max(1, workers * CHUNKS_PER_WORKER))
    return max(MIN_CHUNK_BLOCKS, min(MAX_CHUNK_BLOCKS, wanted))


def plan_chunks(sizes: Sequence[TableSize], workers: int) -> list[Chunk]:
    """Chunks covering every table exactly once, largest tables first.

    Largest-first keeps the workers busy until the end (a big table scheduled last would be
    read by few workers while the others idle).  The last chunk of a table is open-ended.
    """
    order = sorted(range(len(sizes)), key=lambda i: -max(0, sizes[i].blocks))
    chunks: list[Chunk] = []
    for i in order:
        size = sizes[i]
        step = chunk_blocks(size.blocks, workers)
        if workers <= 1 or not size.splittable or size.blocks < 2 * step:
            chunks.append(Chunk(i, None, None))
            continue
        starts = list(range(0, size.blocks, step))
        if size.blocks - starts[-1] < step // 2:  # fold a small remainder into its neighbour
            starts.pop()
        for n, first in enumerate(starts):
            end = starts[n + 1] if n + 1 < len(starts) else None
            chunks.append(Chunk(i, first or None, end))
    return chunks


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
