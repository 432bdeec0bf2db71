"""The snapshot hands over to streaming while a load writes: every change committed after a
row was read reaches the topic once, in order; none committed before it does."""

from __future__ import annotations

import pytest

from .harness import Harness, wait
from .workload import Load, check_histories, create_t

pytestmark = pytest.mark.integration

ROWS = 20_000


def test_snapshot_to_stream_handover_under_concurrent_writes(cdc: Harness) -> None:
    create_t(cdc.driver, ROWS)
    load = Load(cdc.driver, ROWS, seed=1)
    load.start()
    wait(lambda: load.transactions > 20, "the load")
    started = load.transactions
    cap = cdc.capture({"max.batch.size": 512, "max.queue.size": 2048,
                       "snapshot.fetch.size": 1000})
    try:
        wait(lambda: cap.runtime.metrics.snapshot_completed, "the snapshot", 120, cap,
             interval=0.01)
        during = load.transactions - started
        wait(lambda: load.transactions > during + 100, "writes after the snapshot", capture=cap)
        load.finish()
        cdc.converge("t", capture=cap)
    finally:
        load.stop.set()
        cap.stop()
    # Any write during the snapshot makes the hand-over real; how many depends on the CPU the
    # load gets beside the snapshot (MongoDB's raw read of 20,000 documents takes about a second).
    assert during > 0, "the load did not write while the snapshot ran"
    reads = [v for v in cdc.values("t") if v["op"] == "r"]
    assert len(reads) > ROWS // 2
    assert reads[-1]["source"]["snapshot"] == "last"
    assert check_histories(load.committed, cdc, ROWS) > 100
