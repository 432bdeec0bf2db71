"""Statistics of `MilliSecondsBehindSource`, as Debezium 3.6's StreamingStatisticsMXBean shows
them: `MilliSecondsBehindSourceMinValue`, `...MaxValue`, `...AverageValue` and the quantiles
`...P50`, `...P95`, `...P99`.

Why a DDSketch: Debezium computes the quantiles with DataDog's DDSketch at 1% relative
accuracy (`LongDDSketchStatistics`, `DDSketches.unboundedDense(0.01)`); the same sketch here
gives the same guarantee (every quantile within 1% of an exact one) in memory that grows with
the logarithm of the lag's range, not with the number of changes: a lag of 1 ms to one day
needs at most ~850 buckets.  Values below 1 ms (no lag) are counted apart, as DDSketch's zero
bucket.

Each `add` takes a weight: the runtime measures the lag once per batch of the queue (for its
last streamed change) and counts it for every streamed change of that batch, so the per-event
cost of a capture does not grow (docs/operations.md#metrics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

RELATIVE_ACCURACY: Final = 0.01  # Debezium's (LongDDSketchStatistics)
_GAMMA: Final = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
_LOG_GAMMA: Final = math.log(_GAMMA)


@dataclass(slots=True)
class LagStatistics:
    """Min, max, average and a DDSketch of the lags measured; empty until the first."""

    quantiles: bool = True  # statistics.metrics.enabled (Debezium: quantiles null when off)
    count: int = 0
    total: int = 0
    min_value: int = 0
    max_value: int = 0
    zero: int = 0
    buckets: dict[int, int] = field(default_factory=dict)

    def add(self, lag_ms: int, weight: int = 1) -> None:
        if self.count == 0 or lag_ms < self.min_value:
            self.min_value = lag_ms
        if self.count == 0 or lag_ms > self.max_value:
            self.max_value = lag_ms
        self.count += weight
        self.total += lag_ms * weight
        if not self.quantiles:
            return
        if lag_ms < 1:
            self.zero += weight
        else:
            i = math.ceil(math.log(lag_ms) / _LOG_GAMMA)
            self.buckets[i] = self.buckets.get(i, 0) + weight

    def reset(self) -> None:
        """Debezium's `resetLagBehindSource()`."""
        self.count = self.total = self.min_value = self.max_value = self.zero = 0
        self.buckets.clear()

    def quantile(self, q: float) -> float | None:
        """The value at quantile `q` (DDSketch's rank: the first bucket whose cumulative count
        exceeds q·(count-1)); None when empty or quantiles are off, as Debezium's."""
        if not self.quantiles or self.count == 0:
            return None
        rank = q * (self.count - 1)
        seen = self.zero
        if seen > rank:
            return 0.0
        for i in sorted(self.buckets):
            seen += self.buckets[i]
            if seen > rank:
                # the bucket's value within RELATIVE_ACCURACY of all it holds
                return 2 * _GAMMA ** i / (_GAMMA + 1)
        return float(self.max_value)

    def as_dict(self) -> dict[str, object]:
        """Debezium's attribute names; null (None) until a lag is measured."""
        empty = self.count == 0
        return {
            "MilliSecondsBehindSourceMinValue": None if empty else self.min_value,
            "MilliSecondsBehindSourceMaxValue": None if empty else self.max_value,
            "MilliSecondsBehindSourceAverageValue": None if empty else self.total / self.count,
            "MilliSecondsBehindSourceP50": self.quantile(0.50),
            "MilliSecondsBehindSourceP95": self.quantile(0.95),
            "MilliSecondsBehindSourceP99": self.quantile(0.99),
        }
