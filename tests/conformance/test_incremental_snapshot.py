"""Ad hoc snapshots driven by signals through the signal table: an incremental snapshot under a
write load must replay to the source; pause, resume and stop act between chunks."""

from __future__ import annotations

import time

import pytest

from .harness import Harness, wait
from .signals import chunk_key, create_signal_table, incremental_reads, send, snapshot_done
from .workload import Load, create_t, streamed

pytestmark = pytest.mark.integration


def test_incremental_snapshot_under_load_replays_to_the_source(cdc: Harness) -> None:
    d, rows = cdc.driver, 5000
    props = create_signal_table(d)
    create_t(d, rows)
    cap = cdc.capture({"snapshot.mode": "no_data", "incremental.snapshot.chunk.size": 250,
                       **props})
    load = Load(d, rows, seed=5)
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        load.start()
        wait(lambda: load.transactions > 20, "the load", capture=cap)
        send(d, "ad-hoc-1", "execute-snapshot",
             {"data-collections": [d.collection("t")], "type": "incremental"})
        wait(lambda: snapshot_done(cdc), "the incremental snapshot", 240, cap, interval=0.3)
        during = load.transactions
        wait(lambda: load.transactions > during + 20, "writes after the snapshot", capture=cap)
        load.finish()
        cdc.converge("t", capture=cap)
    finally:
        load.stop.set()
        cap.stop()
    reads = incremental_reads(cdc)
    # every chunk was read, in key order; rows the load changed meanwhile were dropped
    assert reads == sorted(reads) and len(set(reads)) == len(reads)
    assert rows // 2 < len(reads) <= load.next_key
    assert reads[0] <= 10 and reads[-1] > rows - 100
    # streaming went on: every committed change exactly once, per key in commit order
    history: dict[int, list[object]] = {}
    for change in load.committed:
        history.setdefault(change[0], []).append(change)
    got: dict[int, list[object]] = {}
    for change in streamed(cdc):
        got.setdefault(change[0], []).append(change)
    assert got == history


def test_pause_resume_and_stop_signals(cdc: Harness) -> None:
    d, rows = cdc.driver, 20000
    props = create_signal_table(d)
    create_t(d, rows)
    cap = cdc.capture({"snapshot.mode": "no_data", "incremental.snapshot.chunk.size": 50,
                       **props})
    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        send(d, "go", "execute-snapshot", {"data-collections": [d.collection("t")]})
        wait(lambda: chunk_key(cdc) >= 500, "first chunks", capture=cap, interval=0.05)
        send(d, "p", "pause-snapshot")
        wait(lambda: cdc.offset().get("incremental_snapshot_paused") is True, "paused",
             capture=cap, interval=0.05)
        time.sleep(0.5)  # a chunk in flight completes
        paused_at = chunk_key(cdc)
        send(d, "l", "log", {"message": "still paused"})  # a transaction: offsets move on
        time.sleep(1.5)
        assert chunk_key(cdc) == paused_at < rows
        send(d, "r", "resume-snapshot")
        wait(lambda: chunk_key(cdc) > paused_at, "resumed", capture=cap, interval=0.05)
        send(d, "s", "stop-snapshot", {"data-collections": [d.collection("t")],
                                       "type": "incremental"})
        wait(lambda: "incremental_snapshot_collections" not in cdc.offset(), "stopped",
             capture=cap, interval=0.05)
        stopped = len(incremental_reads(cdc))
        d.execute("INSERT INTO t VALUES (30000, 1, 'x')")
        wait(lambda: any(v["op"] == "c" for v in cdc.values("t")), "streaming goes on",
             capture=cap)
        time.sleep(1.0)
    finally:
        cap.stop()
    reads = incremental_reads(cdc)
    assert len(reads) == stopped < rows  # no chunk after the stop
    assert {v["source"]["snapshot"] for v in cdc.values("t") if v["op"] == "r"} == {
        "incremental"}
    assert reads == list(range(1, stopped + 1))
    assert [v["op"] for v in cdc.values("t")][-1] == "c"
