"""The server restarts under writes: the capture reconnects by itself and the topic holds
every version of every row, once the duplicates a reconnect may re-deliver are dropped."""

from __future__ import annotations

import pytest

from .harness import Harness, wait
from .workload import Bumper, create_t

pytestmark = pytest.mark.integration

KEYS = 200


def test_server_restart_under_writes_reconnects_and_loses_nothing(cdc: Harness) -> None:
    create_t(cdc.driver, KEYS)
    bumper = Bumper(cdc.driver, KEYS)
    extra: dict[str, object] = {"retriable.restart.connector.wait.ms": 200}
    if cdc.driver.name == "mariadb":
        # MariaDB's binlog client reconnects after `connect.keep.alive.interval.ms`, as
        # Debezium's keep-alive thread does: its 60 s default was a minute of idle waiting here.
        extra["connect.keep.alive.interval.ms"] = 1000
    cap = cdc.capture(extra)
    try:
        wait(lambda: cap.runtime.metrics.snapshot_completed and cap.runtime.metrics.connected,
             "streaming", capture=cap)
        bumper.start()
        wait(lambda: bumper.commits > 300, "writes", capture=cap)
        cdc.driver.restart_server()
        restarted = bumper.commits
        wait(lambda: bumper.commits > restarted + 300, "writes after the restart", capture=cap)
        wait(lambda: cap.runtime.metrics.connected, "the capture reconnected", capture=cap)
        bumper.finish()
        cdc.converge("t", capture=cap)
    finally:
        bumper.stop.set()
        cap.stop()
    assert bumper.failures > 0, "the writer never saw the server go away"
    versions: dict[int, set[int]] = {}
    for _, key, value in cdc.records("t"):
        if value is not None and value["op"] == "u":
            versions.setdefault(key["id"], set()).add(value["after"]["ver"])
    final = cdc.source("t")
    assert sum(final.values()) > 600
    missing = {k: sorted(set(range(1, v + 1)) - versions.get(k, set()))
               for k, v in final.items() if versions.get(k, set()) != set(range(1, v + 1))}
    assert not missing, f"versions missing (key: versions): {dict(list(missing.items())[:5])}"
