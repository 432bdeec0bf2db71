"""SCD type 2 into JDBC targets from a real capture, against a hand-computed history."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.runner import start
from tests.integration.postgres.conftest import Env, wait_for
from tests.pipeline_jdbc.conftest import TargetDb

pytestmark = pytest.mark.integration


def run_once(spark: Any, env: Env, props: dict[str, Any]) -> None:
    query = start(spark, load_pipeline_config(env.config(props)), once=True)
    query.awaitTermination()
    assert query.exception() is None


def history(target: TargetDb) -> list[tuple[Any, ...]]:
    rows = sorted(target.rows("c"), key=lambda r: (r["id"], r["__START_AT"]))
    return [(r["id"], r["name"], r["city"], r["__END_AT"] is None) for r in rows]


def test_scd2_history_matches_hand_computed(env: Env, target: TargetDb, jdbc_spark: Any) -> None:
    props = target.props(**{
        "headwater.pipeline.mode": "scd2",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
        "headwater.pipeline.track.history.except.column.list": "visits",
    })
    env.sql("CREATE TABLE c (id int PRIMARY KEY, name text, city text, visits int)")
    env.sql("INSERT INTO c VALUES (1, 'Ann', 'Oslo', 0), (2, 'Bob', 'Rome', 0)")
    cap = env.capture(props)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("UPDATE c SET city = 'Bergen' WHERE id = 1")       # new version of 1
        env.sql("UPDATE c SET visits = 5 WHERE id = 1")            # untracked: in place
        env.sql("DELETE FROM c WHERE id = 2")                      # closes 2
        wait_for(lambda: cap.runtime.metrics.total_events_seen >= 2 + 3, what="events")
    finally:
        cap.stop()
    run_once(spark=jdbc_spark, env=env, props=props)
    assert history(target) == [
        (1, "Ann", "Oslo", False),
        (1, "Ann", "Bergen", True),
        (2, "Bob", "Rome", False),
    ]
    # A later run continues the stored history (read back from the target, not from memory).
    cap = env.capture(props)
    try:
        env.sql("INSERT INTO c VALUES (3, 'Cy', 'Nice', 1)")       # opens 3
        env.sql("UPDATE c SET visits = 6 WHERE id = 1")            # untracked: in place
        env.sql("UPDATE c SET name = 'Anne' WHERE id = 1")         # new version of 1
        env.sql("INSERT INTO c VALUES (2, 'Bob', 'Pisa', 0)")      # 2 again, a new version
        wait_for(lambda: cap.runtime.metrics.total_events_seen >= 4, what="events")
    finally:
        cap.stop()
    run_once(spark=jdbc_spark, env=env, props=props)
    assert history(target) == [
        (1, "Ann", "Oslo", False),
        (1, "Ann", "Bergen", False),
        (1, "Anne", "Bergen", True),
        (2, "Bob", "Rome", False),
        (2, "Bob", "Pisa", True),
        (3, "Cy", "Nice", True),
    ]
    rows = {(r["id"], r["city"], r["name"]): r for r in target.rows("c")}
    assert rows[(1, "Bergen", "Ann")]["visits"] == 6  # updated in place, no new version
    # Intervals chain: each closed version ends where the next one of its key starts.
    ann = sorted((r for r in rows.values() if r["id"] == 1), key=lambda r: r["__START_AT"])
    assert ann[0]["__END_AT"] == ann[1]["__START_AT"]
    assert ann[1]["__END_AT"] == ann[2]["__START_AT"]
