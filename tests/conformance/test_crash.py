"""kill -9 of the capture process under writes, again and again: once a clean run caught up,
the topic replays to the source table and holds every committed change in order (re-delivery
after a kill aside)."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

from .harness import Harness, wait
from .workload import Load, check_histories, create_t

pytestmark = pytest.mark.integration

ROWS = 2000


# 12 kills (--long): the same cycle as 3, four times over; each kill costs a capture process's
# start, so it held a CI worker for ~2.5 minutes over the five connectors.
@pytest.mark.parametrize("kills", [3, pytest.param(12, marks=[pytest.mark.slow, pytest.mark.long])],
                         ids=["3-kills", "12-kills"])
def test_kill_minus_nine_under_writes_loses_nothing(cdc: Harness, kills: int) -> None:
    create_t(cdc.driver, ROWS)
    config = cdc.config({"max.batch.size": 64, "max.queue.size": 256})
    rng = random.Random(kills)
    load = Load(cdc.driver, ROWS, seed=kills)
    proc = cdc.process(config)
    try:
        # The snapshot's end, not its first stored progress: a kill during the snapshot makes
        # the restart read the table again and supersede keys deleted since with deletes, so
        # the history between the two reads is (rightly) not in the topic, and the check
        # below would count it lost (seen on a loaded machine, where the snapshot is slow).
        wait(lambda: cdc.offset().get("snapshot_completed"), "the snapshot's end in the offsets",
             timeout=120)
        load.start()
        for _ in range(kills):
            time.sleep(rng.uniform(0.5, 2.0))
            if proc.poll() is not None:
                assert proc.stderr is not None
                raise AssertionError(f"capture exited: {proc.stderr.read().decode()[-3000:]}")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc = cdc.process(config)
        # the workload the assertion below asks for, however slowly a loaded machine runs it
        wait(lambda: load.transactions > 50 * kills / 3 + 10, "the load's transactions",
             timeout=120)
        load.finish()
        cdc.converge("t", timeout=180)
    finally:
        load.stop.set()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert proc.stderr is not None
    assert code == 0, proc.stderr.read().decode()[-3000:]
    assert load.transactions > 50 * kills / 3
    assert check_histories(load.committed, cdc, ROWS, redelivery=True) > 100
