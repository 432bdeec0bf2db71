"""Pre-rendered batches and the snapshot worker pool: order, counts, the one `last` event."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.offsets import FileOffsetStore
from headwater.engine.parallel import (
    DONE,
    ROWS,
    ChunkEmitter,
    SnapshotStopped,
    SnapshotTail,
    SnapshotWorkerError,
    WorkerPool,
    WorkerSpec,
    merge_rendered,
)
from headwater.engine.queue import Batch, ChangeEventQueue
from headwater.engine.runtime import CaptureRuntime
from headwater.engine.source import SourceRunContext, StartPlan
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, Column, ConnectSchema, TableId, TableSchema
from headwater.model.topic import RenderedBatch, TopicBatch, TopicRecord

CTX = SourceContext("test", "srv", "0")
TABLE = TableSchema(TableId("db", "s", "t"), (Column("id", 0, "int", ConnectSchema(INT32)),),
                    ("id",))


def rec(i: int) -> ChangeRecord:
    return ChangeRecord(CTX, TABLE, Op.READ, None, (i,), 0, 0, SnapshotMarker.TRUE, 0)


class TextRenderer:
    """Renders a record as b"<id>:<snapshot marker>" on topic "t" (picklable)."""

    def render_batch(self, records: Sequence[Any]) -> TopicBatch:
        return {"t": [TopicRecord(None, f"{r.after[0]}:{r.snapshot.value}".encode(), 0)
                      for r in records]}


def values(batch: RenderedBatch) -> list[str]:
    return [r.value.decode() for recs in batch.values() for r in recs if r.value is not None]


def test_merge_rendered_keeps_topic_order_and_does_not_alias() -> None:
    src: TopicBatch = {"a": [TopicRecord(None, b"1", 0)]}
    dst: dict[str, Sequence[TopicRecord]] = {}
    merge_rendered(dst, src)
    merge_rendered(dst, {"a": [TopicRecord(None, b"2", 0)], "b": [TopicRecord(None, b"3", 0)]})
    assert values(dst) == ["1", "2", "3"]
    assert len(src["a"]) == 1


def test_batch_size_counts_rendered_records_for_queue_capacity() -> None:
    b = Batch([rec(1)], rendered={"t": [TopicRecord(None, b"x", 0)] * 3})
    assert b.size == 4
    q = ChangeEventQueue(max_queue_size=5, max_batch_size=100)
    q.put(b)
    assert q.remaining_capacity == 1
    assert q.drain(0.1) == [b] and q.remaining_capacity == 5


def test_chunk_emitter_batches_and_holds_back_the_tail_in_two_forms() -> None:
    sent: list[tuple[list[str], int]] = []
    em = ChunkEmitter(TextRenderer(), 2, lambda b, n: sent.append((values(b), n)))
    for i in range(5):
        em.add(rec(i))
    tails = em.finish()
    assert sent == [(["0:true", "1:true"], 2), (["2:true", "3:true"], 2)]
    assert tails is not None and em.rows == 5
    assert (values(tails[0]), values(tails[1])) == (["4:true"], ["4:last"])
    assert ChunkEmitter(TextRenderer(), 2, lambda b, n: None).finish() is None


def test_snapshot_tail_emits_earlier_tails_as_true_and_keeps_the_newest_as_last() -> None:
    tail = SnapshotTail()
    t1 = ({"t": [TopicRecord(None, b"1:true", 0)]}, {"t": [TopicRecord(None, b"1:last", 0)]})
    t2 = ({"t": [TopicRecord(None, b"2:true", 0)]}, {"t": [TopicRecord(None, b"2:last", 0)]})
    assert tail.push(t1) is None
    assert tail.push(None) is None  # an empty chunk changes nothing
    previous = tail.push(t2)
    assert previous is not None and values(previous) == ["1:true"]
    last = tail.last()
    assert last is not None and values(last) == ["2:last"]
    assert SnapshotTail().last() is None


class RangeReader:
    """A chunk is (first, end, fail): emits records first..end-1, or raises if fail."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    def read(self, chunk: tuple[int, int, bool], emitter: ChunkEmitter) -> None:
        if chunk[2]:
            raise ValueError("bad chunk")
        for i in range(chunk[0], chunk[1]):
            emitter.add(rec(i))

    def close(self) -> None:
        pass


def open_range_reader(spec: Any) -> RangeReader:
    return RangeReader(spec)


def test_worker_pool_reads_every_chunk_once_in_worker_processes() -> None:
    chunks = [(0, 25, False), (25, 25, False), (25, 60, False), (60, 61, False)]
    spec = WorkerSpec(open_range_reader, None, TextRenderer(), 10)
    got: list[str] = []
    done: dict[int, Any] = {}
    with WorkerPool(spec, 2, chunks, 2) as pool:
        for kind, task, payload, n in pool.messages(threading.Event()):
            if kind == ROWS:
                assert len(values(payload)) == n
                got += values(payload)
            elif kind == DONE:
                done[task] = (payload, n)
    assert sorted(done) == [0, 1, 2, 3]
    assert [done[t][1] for t in range(4)] == [25, 0, 35, 1]
    assert done[1][0] is None
    for t in (0, 2, 3):
        got += values(done[t][0][0])
    assert sorted(int(v.split(":")[0]) for v in got) == list(range(61))
    assert all(v.endswith(":true") for v in got)


def test_worker_pool_reports_a_worker_error_and_honours_stop() -> None:
    spec = WorkerSpec(open_range_reader, None, TextRenderer(), 10)
    with pytest.raises(SnapshotWorkerError, match="bad chunk"), \
            WorkerPool(spec, 2, [(0, 5, False), (5, 6, True)], 2) as pool:
        for _ in pool.messages(threading.Event()):
            pass
    stop = threading.Event()
    stop.set()
    with pytest.raises(SnapshotStopped), WorkerPool(spec, 1, [(0, 5, False)], 2) as pool:
        for _ in pool.messages(stop):
            pass


class ListWriter:
    def __init__(self) -> None:
        self.appended: list[RenderedBatch] = []

    def append(self, batch: RenderedBatch) -> None:
        self.appended.append(batch)

    def maintain(self) -> None:
        pass

    def close(self) -> None:
        pass


class RenderedSnapshot:
    """Emits a record, then a pre-rendered batch, then a record with the final offset."""

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        assert isinstance(ctx.renderer, TextRenderer)  # the runtime hands sources its format
        ctx.emit(Batch([rec(1)]))
        ctx.emit(Batch([rec(2)], rendered={"t": [TopicRecord(None, b"3:true", 0)] * 2}))
        ctx.emit(Batch([rec(4)], offset={"done": True}))
        return {"done": True}


class SnapshotOnly:
    context = CTX
    partition = {"server": "srv"}

    def start(self, offset: dict[str, Any] | None) -> StartPlan:
        return StartPlan(RenderedSnapshot(), None)

    def close(self) -> None:
        pass


def test_runtime_writes_rendered_batches_in_emission_order(tmp_path: Path) -> None:
    writer = ListWriter()
    metrics = CaptureMetrics()
    rt = CaptureRuntime(SnapshotOnly(), TextRenderer(), writer,
                        FileOffsetStore(tmp_path / "o.json", {"server": "srv"}),
                        max_queue_size=100, max_batch_size=100, poll_interval_ms=20,
                        metrics=metrics)
    rt.run()
    written = [v for b in writer.appended for v in values(b)]
    assert written == ["1:true", "2:true", "3:true", "3:true", "4:true"]
    assert metrics.total_events_seen == 5
    assert rt.offsets.load() == {"done": True}


def test_pack_rendered_roundtrips_and_strips_the_shared_schema_prefix() -> None:
    import pickle

    from headwater.engine.parallel import pack_rendered, unpack_rendered

    schema = b'{"schema":{"type":"struct","fields":[]},"payload":'
    batch: TopicBatch = {
        "a": [TopicRecord(b'{"id":%d}' % i, schema + b'{"id":%d}}' % i, i) for i in range(50)],
        "one": [TopicRecord(b"k", b"v", 1)],
        "tomb": [TopicRecord(b"k", None, 2), TopicRecord(b"k2", b"{}", 3)],
        "hdr": [TopicRecord(b"k", b"{}", 4, (("h", b"1"),))],
    }
    packed = pack_rendered(batch)
    assert unpack_rendered(pickle.loads(pickle.dumps(packed))) == batch
    topics, plain = packed
    assert set(plain) == {"tomb", "hdr"}
    a = next(t for t in topics if t[0] == "a")
    assert a[2].startswith(schema) and all(len(v) < 12 for v in a[4])
