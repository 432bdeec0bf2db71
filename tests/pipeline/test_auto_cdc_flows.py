"""The AUTO CDC-style API: two flows from one topic (SCD1 with a column list and a soft-delete
rule, SCD2 keyed and sequenced by columns), from a real capture, with a real Spark."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.pipeline import create_auto_cdc_flow, start_flows
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.flows import _sortable
from tests.integration.postgres.conftest import Env, wait_for

pytestmark = pytest.mark.integration


def test_flows_apply_their_own_rules(env: Env, spark: Any) -> None:
    env.sql("CREATE TABLE acct (id int PRIMARY KEY, email text NOT NULL, plan text, "
            "deleted boolean NOT NULL DEFAULT false, version int NOT NULL)")
    env.sql("ALTER TABLE acct REPLICA IDENTITY FULL")
    env.sql("INSERT INTO acct VALUES (1, 'a@x', 'free', false, 1), (2, 'b@x', 'free', false, 1)")
    cap = env.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("UPDATE acct SET plan = 'pro', version = 2 WHERE id = 1")
        env.sql("UPDATE acct SET deleted = true, version = 2 WHERE id = 2")  # soft delete
        env.sql("UPDATE acct SET plan = 'team', version = 3 WHERE id = 1")
        wait_for(lambda: cap.runtime.metrics.total_events_seen >= 5, what="events")
    finally:
        cap.stop()
    topic = f"{env.prefix}.public.acct"
    flows = [
        create_auto_cdc_flow(
            target="accounts", source=topic, keys=["id"],
            apply_as_deletes=lambda row: bool(row["deleted"]),
            except_column_list=["deleted", "version"], stored_as_scd_type=1),
        create_auto_cdc_flow(
            target="accounts_history", source=topic, keys=["email"], sequence_by="version",
            column_list=["email", "plan", "version"], stored_as_scd_type=2),
    ]
    query = start_flows(spark, flows, topics_dir=env.topics, delta_path=env.tmp / "delta",
                        checkpoint_dir=env.tmp / "ckpt", once=True)
    query.awaitTermination()
    assert query.exception() is None
    current = read_table(env.tmp / "delta" / "accounts").to_pylist()
    assert current == [{"id": 1, "email": "a@x", "plan": "team"}]  # 2 soft-deleted, cols dropped
    history = sorted(read_table(env.tmp / "delta" / "accounts_history").to_pylist(),
                     key=lambda r: (r["email"], r["version"]))
    assert [(r["email"], r["plan"], r["version"], r["__END_AT"] is None) for r in history] == [
        ("a@x", "free", 1, False), ("a@x", "pro", 2, False), ("a@x", "team", 3, True),
        ("b@x", "free", 1, False), ("b@x", "free", 2, True)]


def test_sortable_orders_like_the_values() -> None:
    values = [-1000, -2.5, -1, 0, 1, 2.5, 10, 1000]
    assert sorted(values, key=_sortable) == values
    assert sorted(["2024-01-02", "2023-12-31"], key=_sortable) == ["2023-12-31", "2024-01-02"]
    with pytest.raises(ValueError, match="either"):
        create_auto_cdc_flow(target="x", source="y", column_list=["a"],
                             except_column_list=["b"])
