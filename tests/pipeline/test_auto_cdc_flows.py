"""The AUTO CDC-style API: two flows from one topic (SCD1 with a column list and a soft-delete
rule, SCD2 keyed and sequenced by columns), from a real capture, with a real Spark."""

from __future__ import annotations

from pathlib import Path
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


def test_flows_over_datastream_events(tmp_path: Path, spark: Any) -> None:
    """Datastream events in the topic log through two flows: the rules apply to the object's
    decoded changes, each typed as its own target table's columns; events arrive out of
    order and twice, as Datastream may deliver them."""
    import orjson

    from headwater.model.topic import TopicRecord
    from headwater.topics.log import TopicLog
    from tests.unit.datastream.test_pipeline_order import event

    def ev(key: int, seq: int, ver: int, plan: str, deleted: bool = False) -> bytes:
        change = "INSERT" if ver == 1 else "UPDATE"
        return orjson.dumps(event(key, [seq, seq, 1, 0], ver=ver, deleted=deleted,
                                  change=change, extra={"plan": plan}))

    values = [ev(1, 100, 1, "free"), ev(2, 110, 1, "free"), ev(1, 130, 3, "team"),
              ev(1, 120, 2, "pro"), ev(2, 140, 2, "gone", deleted=True), ev(1, 120, 2, "pro"),
              ev(3, 150, 1, "free")]
    topic = "ds.public.t"
    with TopicLog(tmp_path / "topics") as log:
        log.append({topic: [TopicRecord(None, v, 0) for v in values]})
    flows = [
        create_auto_cdc_flow(target="plans", source=topic, keys=["id"],
                             except_column_list=["ver"], stored_as_scd_type=1),
        create_auto_cdc_flow(target="plans_history", source=topic, keys=["id"],
                             column_list=["id", "plan"], stored_as_scd_type=2),
    ]
    query = start_flows(spark, flows, topics_dir=tmp_path / "topics",
                        delta_path=tmp_path / "delta", checkpoint_dir=tmp_path / "ckpt",
                        once=True)
    query.awaitTermination()
    assert query.exception() is None
    current = sorted(read_table(tmp_path / "delta" / "plans").to_pylist(), key=str)
    assert [(r["id"], r["plan"]) for r in current] == [(1, "team"), (3, "free")]
    assert "ver" not in current[0]
    history = sorted(read_table(tmp_path / "delta" / "plans_history").to_pylist(),
                     key=lambda r: (r["id"], r["__START_AT"]))
    assert [(r["id"], r["plan"], r["__END_AT"] is None) for r in history] == [
        (1, "free", False), (1, "pro", False), (1, "team", True), (2, "free", False),
        (3, "free", True)]
