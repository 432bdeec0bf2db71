"""Idle metrics follow Debezium: a drained queue shows its full capacity, and the lag behind
the source is measured when an event is processed, not recomputed while nothing happens."""

from __future__ import annotations

import time

import pytest

from headwater.engine.metrics import CaptureMetrics, SchemaHistoryMetrics
from headwater.engine.queue import Batch, ChangeEventQueue
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, Column, ConnectSchema, TableId, TableSchema

CTX = SourceContext("test", "srv", "0")
TABLE = TableSchema(TableId("db", "s", "t"), (Column("id", 0, "int", ConnectSchema(INT32)),),
                    ("id",))


def rec(i: int, op: Op = Op.CREATE, ts_ms: int = 0) -> ChangeRecord:
    return ChangeRecord(CTX, TABLE, op, None, (i,), ts_ms, 0, SnapshotMarker.FALSE, i)


def test_queue_remaining_capacity_is_capacity_minus_queued() -> None:
    q = ChangeEventQueue(max_queue_size=100, max_batch_size=10)
    m = CaptureMetrics()
    m.bind_queue(q)
    assert m.as_dict()["QueueTotalCapacity"] == 100
    assert m.as_dict()["QueueRemainingCapacity"] == 100  # idle: all free
    q.put(Batch([rec(i) for i in range(7)]))
    assert m.as_dict()["QueueRemainingCapacity"] == 93
    assert m.contexts()["streaming"]["QueueRemainingCapacity"] == 93
    q.task_done(sum(b.size for b in q.drain(0.1)))
    assert m.as_dict()["QueueRemainingCapacity"] == 100


def test_unbound_metrics_show_the_configured_capacity_free() -> None:
    m = CaptureMetrics(queue_capacity=8192)
    assert m.as_dict()["QueueRemainingCapacity"] == 8192


def test_behind_source_is_measured_at_processing_and_does_not_grow_while_idle() -> None:
    m = CaptureMetrics()
    assert m.as_dict()["MilliSecondsBehindSource"] == -1  # nothing streamed yet
    m.record_events([rec(1, ts_ms=int(time.time() * 1000) - 1500)])
    lag = m.as_dict()["MilliSecondsBehindSource"]
    assert isinstance(lag, int) and 1500 <= lag < 3000
    time.sleep(0.3)
    assert m.as_dict()["MilliSecondsBehindSource"] == lag  # idle: unchanged
    since = m.as_dict()["MilliSecondsSinceLastEvent"]
    assert isinstance(since, int) and since >= 300  # that is what grows


def test_snapshot_reads_do_not_set_the_lag_and_count_in_their_context() -> None:
    m = CaptureMetrics()
    m.record_events([rec(i, Op.READ, ts_ms=1) for i in range(5)])
    assert m.as_dict()["MilliSecondsBehindSource"] == -1
    m.record_events([rec(9, ts_ms=int(time.time() * 1000))])
    ctx = m.contexts()
    assert ctx["snapshot"]["TotalNumberOfEventsSeen"] == 5
    assert ctx["streaming"]["TotalNumberOfEventsSeen"] == 1
    assert m.as_dict()["TotalNumberOfEventsSeen"] == 6
    assert "schema-history" not in ctx


@pytest.mark.parametrize("recovered", [0, 2])
def test_schema_history_context(recovered: int) -> None:
    h = SchemaHistoryMetrics()
    for i in range(recovered):
        h.recovered(f"CREATE TABLE t{i} (id INT)")
    h.applied("ALTER TABLE t ADD c INT")
    d = h.as_dict()
    assert d["Status"] == "RUNNING"
    assert d["ChangesRecovered"] == recovered
    assert d["ChangesApplied"] == recovered + 1
    assert d["LastAppliedChange"] == "ALTER TABLE t ADD c INT"
