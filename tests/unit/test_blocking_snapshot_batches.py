"""BlockingSnapshotBatches: the blocking snapshots' emitter (engine.incremental)."""

from __future__ import annotations

from headwater.engine.incremental import BlockingSnapshotBatches
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, Column, ConnectSchema, TableId, TableSchema

_CONTEXT = SourceContext("test", "server", "0")
_TABLE = TableSchema(TableId("db", "s", "t"), (Column("n", 0, "int", ConnectSchema(INT32)),),
                     ("n",))


def _read(n: int) -> ChangeRecord:
    return ChangeRecord(_CONTEXT, _TABLE, Op.READ, None, (n,), n, n, SnapshotMarker.TRUE, None)


def test_batches_of_size_with_the_last_record_marked_last() -> None:
    emitted: list[list[ChangeRecord]] = []
    batches = BlockingSnapshotBatches(emitted.append, 2)
    for n in range(5):
        batches.add(_read(n))
    assert [[r.after for r in b] for b in emitted] == [[(0,), (1,)], [(2,), (3,)]]
    batches.finish()
    assert [r.after for r in emitted[-1]] == [(4,)]
    assert [r.snapshot for b in emitted for r in b] == [SnapshotMarker.TRUE] * 4 + [
        SnapshotMarker.LAST]


def test_nothing_read_emits_nothing() -> None:
    emitted: list[list[ChangeRecord]] = []
    BlockingSnapshotBatches(emitted.append, 2).finish()
    assert emitted == []
