"""MilliSecondsBehindSource's statistics (Debezium 3.6): min, max, average and the P50, P95 and
P99 of a DDSketch within its 1% relative accuracy, null until a lag is measured."""

from __future__ import annotations

import random
import time

import pytest

from headwater.engine.lag_stats import RELATIVE_ACCURACY, LagStatistics
from headwater.engine.metrics import CaptureMetrics
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import INT32, Column, ConnectSchema, TableId, TableSchema

CTX = SourceContext("test", "srv", "0")
TABLE = TableSchema(TableId("db", "s", "t"), (Column("id", 0, "int", ConnectSchema(INT32)),),
                    ("id",))
NAMES = ("MilliSecondsBehindSourceMinValue", "MilliSecondsBehindSourceMaxValue",
         "MilliSecondsBehindSourceAverageValue", "MilliSecondsBehindSourceP50",
         "MilliSecondsBehindSourceP95", "MilliSecondsBehindSourceP99")


def exact(values: list[int], q: float) -> int:
    """DDSketch's rank convention: the value of rank floor(q·(n-1)) in sorted order."""
    return sorted(values)[int(q * (len(values) - 1))]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_quantiles_within_the_relative_accuracy(seed: int) -> None:
    rng = random.Random(seed)
    # a long-tailed lag: mostly tens of ms, some seconds, a few minutes, some zeros
    values = [int(rng.lognormvariate(3.5, 1.5)) for _ in range(20000)] + [0] * 500
    stats = LagStatistics()
    for v in values:
        stats.add(v)
    for q in (0.5, 0.95, 0.99):
        want = exact(values, q)
        got = stats.quantile(q)
        assert got is not None
        assert abs(got - want) <= RELATIVE_ACCURACY * want + 1e-9, (q, got, want)
    d = stats.as_dict()
    assert d["MilliSecondsBehindSourceMinValue"] == 0
    assert d["MilliSecondsBehindSourceMaxValue"] == max(values)
    assert d["MilliSecondsBehindSourceAverageValue"] == pytest.approx(sum(values) / len(values))
    assert len(stats.buckets) < 2000  # bounded by the range's logarithm, not the count


def test_weights_count_a_batch_once_per_change() -> None:
    one, weighted = LagStatistics(), LagStatistics()
    for v, n in ((10, 90), (1000, 10)):
        for _ in range(n):
            one.add(v)
        weighted.add(v, n)
    assert one.as_dict() == weighted.as_dict()
    assert weighted.quantile(0.5) == pytest.approx(10, rel=RELATIVE_ACCURACY)
    assert weighted.quantile(0.95) == pytest.approx(1000, rel=RELATIVE_ACCURACY)


def test_null_until_measured_off_and_reset() -> None:
    stats = LagStatistics()
    assert stats.as_dict() == dict.fromkeys(NAMES)
    stats.add(42)
    assert stats.as_dict()["MilliSecondsBehindSourceP99"] == pytest.approx(42, rel=0.01)
    stats.reset()
    assert stats.as_dict() == dict.fromkeys(NAMES)
    off = LagStatistics(quantiles=False)  # statistics.metrics.enabled=false
    off.add(42)
    d = off.as_dict()
    assert d["MilliSecondsBehindSourceMaxValue"] == 42
    assert d["MilliSecondsBehindSourceP50"] is None and d["MilliSecondsBehindSourceP99"] is None


def test_the_streaming_context_shows_them_for_streamed_changes_only() -> None:
    m = CaptureMetrics()
    now = int(time.time() * 1000)
    reads = [ChangeRecord(CTX, TABLE, Op.READ, None, (i,), now - 10**6, 0,
                          SnapshotMarker.TRUE, i) for i in range(5)]
    m.record_events(reads)  # snapshot reads set no lag
    assert m.contexts()["streaming"]["MilliSecondsBehindSourceP50"] is None
    changes = [ChangeRecord(CTX, TABLE, Op.CREATE, None, (i,), now - 5000, 0,
                            SnapshotMarker.FALSE, i) for i in range(4)]
    m.record_events(changes)
    streaming = m.contexts()["streaming"]
    assert m.lag_statistics.count == 4
    assert 5000 <= streaming["MilliSecondsBehindSourceMinValue"] < 6000  # type: ignore[operator]
    p99 = streaming["MilliSecondsBehindSourceP99"]
    assert isinstance(p99, float) and 4900 < p99 < 6100
    assert m.as_dict()["MilliSecondsBehindSourceP95"] == streaming["MilliSecondsBehindSourceP95"]
