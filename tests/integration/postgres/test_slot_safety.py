"""An invalidated slot stops the connector with a clear error; when_needed re-snapshots."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.testing.localpg import LocalPostgres
from headwater.testing.replay import replay

from .conftest import Capture, Env, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture()
def small_wal_env(tmp_path: Path) -> Iterator[Env]:
    server = LocalPostgres(settings={"max_slot_wal_keep_size": "1MB", "wal_keep_size": "0",
                                     "max_wal_size": "32MB", "min_wal_size": "32MB"}).start()
    try:
        env = Env(server, tmp_path)
        yield env
        env.conn.close()
    finally:
        server.cleanup()


def test_invalidated_slot_fails_clearly_then_when_needed_resnapshots(small_wal_env: Env) -> None:
    env = small_wal_env
    env.sql("CREATE TABLE t (id int PRIMARY KEY, pad text)")
    env.sql("INSERT INTO t VALUES (1, 'a')")
    cap = env.capture()
    wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
    cap.stop()
    # While the connector is down, write far more WAL than the slot may keep.
    for _ in range(6):
        env.sql("INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series(2, 5000) g "
                "ON CONFLICT (id) DO UPDATE SET pad = excluded.pad || 'y'")
        env.sql("SELECT pg_switch_wal()")
    env.sql("CHECKPOINT")
    wait_for(lambda: env.sql("SELECT wal_status FROM pg_replication_slots WHERE slot_name = %s",
                             (env.slot,))[0][0] == "lost", what="slot invalidated")
    failing = Capture(env.config())
    with pytest.raises(Exception, match="invalidated"):
        failing.runtime.run()
    cap = env.capture({"snapshot.mode": "when_needed"})
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="re-snapshot")
    finally:
        cap.stop()
    table = replay(env.topics, f"{env.prefix}.public.t")
    assert len(table) == 5000


def test_slot_invalidated_for_idleness_on_postgresql_18_names_the_reason(tmp_path: Path) -> None:
    """PostgreSQL 18 invalidates a slot left idle past idle_replication_slot_timeout (at a
    checkpoint); the error says so (pg_replication_slots.invalidation_reason, 17+)."""
    server = LocalPostgres(version="18",
                           settings={"idle_replication_slot_timeout": "1s"}).start()
    try:
        env = Env(server, tmp_path)
        env.sql("CREATE TABLE t (id int PRIMARY KEY)")
        cap = env.capture()
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        cap.stop()

        def invalidated() -> bool:
            env.sql("CHECKPOINT")
            rows = env.sql("SELECT invalidation_reason FROM pg_replication_slots "
                           "WHERE slot_name = %s", (env.slot,))
            return bool(rows[0][0] == "idle_timeout")

        wait_for(invalidated, timeout=30, interval=0.5, what="the slot invalidated as idle")
        with pytest.raises(Exception, match="invalidated by the server \\(reason idle_timeout"):
            Capture(env.config()).runtime.run()
        env.conn.close()
    finally:
        server.cleanup()
