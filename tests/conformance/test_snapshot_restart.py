"""An initial snapshot stopped part-way (kill -9, or SIGTERM) while the source deletes rows:
the next run snapshots again, and the rows deleted in between must not stay in the topic.

The first attempt's READs of deleted rows are superseded by deletes (engine/supersede.py);
replaying the topic must give the source table exactly, with no phantom rows."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable

import pytest

from headwater.pipeline.decode import decode_topic
from headwater.pipeline.net import net_changes
from headwater.testing.timeouts import scaled
from headwater.topics import reader

from .harness import Harness, wait
from .workload import create_t

pytestmark = pytest.mark.integration

# 5,000 rows: each stop lands 1,000-1,400 records into its run's snapshot, far from its end;
# 20,000 cost four times the final snapshot and replays.
ROWS = 5_000
# How long the capture runs between two looks at its topic (`_run_until`).
STEP_S = 0.05


def _run_until(proc: subprocess.Popen[bytes], done: Callable[[], bool], what: str,
               timeout: float) -> None:
    """Lets the capture run STEP_S at a time (SIGCONT, then SIGSTOP) until `done()` holds while
    it is stopped, and returns with it stopped.  Polling a running capture raced it: on a
    loaded machine one look at the topic could take longer than the rest of the snapshot, which
    then completed before the stop (seen in a CI run: sqlserver, sigkill-twice)."""
    os.kill(proc.pid, signal.SIGSTOP)
    deadline = time.monotonic() + scaled(timeout)
    while not done():
        if proc.poll() is not None:
            raise AssertionError(f"the capture exited ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            os.kill(proc.pid, signal.SIGCONT)
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(STEP_S)
        os.kill(proc.pid, signal.SIGSTOP)


def _stop_mid_snapshot(cdc: Harness, proc: subprocess.Popen[bytes], sig: int,
                       deleted: list[int], step: int, start: int) -> None:
    """Runs the capture until part of this run's snapshot is in the topic (1,000 records beyond
    the `start` records earlier runs left), deletes rows it has read (and some it has not)
    while the capture is alive, then stops it with `sig` before the snapshot ends.  (A second
    stop once waited for 1,000 records in all: it killed the second run before that wrote a
    READ, and hid that a third run superseded the second attempt's READs only.)"""
    topic = cdc.topics / cdc.driver.topic("t")
    _run_until(proc, lambda: topic.exists() and cdc.count("t") > start + 1000,
               "the first READ events", timeout=120)
    q = cdc.driver.quote("t")
    doomed = [k for k in range(step, ROWS + 1, 97) if k not in deleted][:60]
    cdc.driver.execute(f"DELETE FROM {q} WHERE id IN ({', '.join(map(str, doomed))})")
    deleted.extend(doomed)
    os.kill(proc.pid, sig)  # a stopped process takes SIGKILL at once, SIGTERM once continued
    os.kill(proc.pid, signal.SIGCONT)
    proc.wait(60)
    assert not cdc.offset().get("snapshot_completed"), (
        "the snapshot completed before the stop: the test did not stop it part-way")
    assert cdc.count("t") - start < ROWS  # this run's snapshot did not reach its end


@pytest.mark.parametrize(("sig", "stops"), [(signal.SIGKILL, 2), (signal.SIGTERM, 1)],
                         ids=["sigkill-twice", "sigterm"])
def test_stopped_initial_snapshot_leaves_no_phantom_rows(cdc: Harness, sig: int,
                                                         stops: int) -> None:
    create_t(cdc.driver, ROWS)
    # Small batches and queue: the snapshot is written in many fsynced steps, so it can be
    # stopped part-way.
    config = cdc.config({"max.batch.size": 16, "max.queue.size": 32,
                         "snapshot.fetch.size": 16})
    deleted: list[int] = []
    for n in range(stops):
        start = cdc.count("t") if (cdc.topics / cdc.driver.topic("t")).exists() else 0
        proc = cdc.process(config)
        _stop_mid_snapshot(cdc, proc, sig, deleted, step=1 + n * 13, start=start)
    # Rows deleted while nothing runs are also gone from the next snapshot.
    q = cdc.driver.quote("t")
    cdc.driver.execute(*(f"DELETE FROM {q} WHERE id = {k}" for k in (2, 3, 5, 7)))
    # The last run is not stopped: it snapshots in the default batch sizes (the small ones
    # would make its snapshot hundreds of fsynced steps).
    proc = cdc.process(cdc.config())
    try:
        wait(lambda: cdc.offset().get("snapshot_completed"), "the snapshot to complete",
             timeout=300)
        cdc.driver.execute(f"DELETE FROM {q} WHERE id = 11", f"INSERT INTO {q} VALUES (1, 1, 'x')"
                           if 1 in deleted else f"UPDATE {q} SET ver = 1 WHERE id = 1")
        cdc.converge("t", timeout=120)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert proc.stderr is not None
    assert code == 0, proc.stderr.read().decode()[-3000:]
    assert "snapshot_started" not in cdc.offset()
    got = cdc.replayed("t")
    assert len(got) == ROWS - len(set(deleted) | {2, 3, 5, 7, 11}) + (1 in deleted)
    # the superseded READs got deletes marked as snapshot events
    snapshot_deletes = [v for _, _, v in cdc.records("t")
                        if v is not None and v["op"] == "d" and v["source"]["snapshot"] == "true"]
    assert snapshot_deletes
    # what the pipeline merges into Delta/JDBC: the net change per key, in its own ordering
    topic = cdc.driver.topic("t")
    changes = decode_topic(topic, [(r.offset, r.key, r.value)
                                   for r in reader.read(cdc.topics, topic)])
    net, _ = net_changes(changes.events, topic)
    target = {c.key[0]: c.row["ver"] for c in net if not c.delete and c.row is not None}
    assert target == cdc.source("t")
