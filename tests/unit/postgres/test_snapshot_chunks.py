"""Block-range chunk planning for the parallel PostgreSQL snapshot."""

from __future__ import annotations

import pytest

from headwater.connectors.postgres.snapshot_chunks import (
    MAX_CHUNK_BLOCKS,
    MIN_CHUNK_BLOCKS,
    TableSize,
    chunk_blocks,
    plan_chunks,
    tid,
)
from headwater.relational.snapshot import RangeChunk as Chunk


def covered(chunks: list[Chunk], table: int, blocks: int) -> list[int]:
    """Every block 0..blocks+10 (rows appended after sizing included) mapped to its chunks."""
    hits = []
    for b in range(blocks + 10):
        hits.append(sum(
            1 for c in chunks if c.table == table
            and (c.low is None or b >= c.low)
            and (c.high is None or b < c.high)
        ))
    return hits


@pytest.mark.parametrize("blocks", [0, 1, 63, 64, 65, 100, 1000, 77_000, 300_001])
@pytest.mark.parametrize("workers", [2, 3, 4, 8])
def test_chunks_cover_every_block_exactly_once(blocks: int, workers: int) -> None:
    chunks = plan_chunks([TableSize(blocks, -1, True)], workers)
    assert set(covered(chunks, 0, blocks)) == {1}
    assert chunks[0].low is None and chunks[-1].high is None
    for c in chunks[1:]:
        assert c.low is not None and c.low % chunk_blocks(blocks, workers) == 0


def test_chunk_size_is_bounded_and_aims_at_several_chunks_per_worker() -> None:
    assert chunk_blocks(10, 4) == MIN_CHUNK_BLOCKS
    assert chunk_blocks(10_000_000, 2) == MAX_CHUNK_BLOCKS
    assert chunk_blocks(1600, 4) == 100  # 16 chunks: 4 per worker
    assert len(plan_chunks([TableSize(1600, -1, True)], 4)) == 16


def test_unsplittable_tables_and_one_worker_give_one_chunk_per_table() -> None:
    sizes = [TableSize(5000, 100, False), TableSize(5000, 100, True)]
    assert plan_chunks(sizes, 1) == [Chunk(0, None, None), Chunk(1, None, None)]
    assert Chunk(0, None, None) in plan_chunks(sizes, 4)
    assert len(plan_chunks(sizes, 4)) > 2


def test_largest_tables_are_planned_first() -> None:
    chunks = plan_chunks(
        [TableSize(10, 1, True), TableSize(9000, 1, True), TableSize(0, 0, True)], 2)
    tables = [c.table for c in chunks]
    assert tables[0] == 1 and tables[-2:] == [0, 2]


def test_where_clause_uses_tid_ranges() -> None:
    assert Chunk(0, None, None).where("ctid", tid) == ""
    assert Chunk(0, None, 32).where("ctid", tid) == "ctid < '(32,0)'::tid"
    assert Chunk(0, 32, 64).where("ctid", tid) == "ctid >= '(32,0)'::tid AND ctid < '(64,0)'::tid"
    assert Chunk(0, 64, None).where("ctid", tid) == "ctid >= '(64,0)'::tid"
