"""Capture from a real PostgreSQL, materialize with a real Spark into real Delta tables."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import pytest

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.runner import start
from tests.integration.postgres.conftest import Env, wait_for

pytestmark = pytest.mark.integration


def pipeline_props(env: Env, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Connector and pipeline properties in one file, as a user would keep them."""
    return {
        "headwater.pipeline.delta.path": env.tmp / "delta",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
        **(extra or {}),
    }


def run_once(spark: Any, config: Path) -> None:
    query = start(spark, load_pipeline_config(config), once=True)
    query.awaitTermination()
    assert query.exception() is None


def delta_rows(env: Env, table: str, key: str = "id") -> dict[Any, dict[str, Any]]:
    rows = read_table(env.tmp / "delta" / "public" / table).to_pylist()
    return {r[key]: r for r in rows}


def source_rows(env: Env, table: str, key: str = "id") -> dict[Any, dict[str, Any]]:
    with env.conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {table}")
        names = [d.name for d in cur.description]
        return {r[names.index(key)]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}


def test_snapshot_and_stream_materialize_equal_to_source(env: Env, spark: Any) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), "
            "day date, at timestamp, atz timestamptz, ok boolean, big bigint)")
    env.sql("INSERT INTO t SELECT g, 'n' || g, g * 1.25, DATE '2024-01-01' + g, "
            "TIMESTAMP '2024-01-01 10:00:00.123456' + g * interval '1 hour', "
            "TIMESTAMPTZ '2024-01-01 10:00:00+02' + g * interval '1 minute', g % 2 = 0, "
            "g::bigint * 1000000000 FROM generate_series(1, 200) g")
    props = pipeline_props(env)
    cap = env.capture(props)
    config = env.config(props)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("UPDATE t SET name = 'changed', price = NULL WHERE id <= 20")
        env.sql("DELETE FROM t WHERE id BETWEEN 21 AND 40")
        env.sql("UPDATE t SET id = id + 1000 WHERE id BETWEEN 41 AND 45")  # key changes
        env.sql("INSERT INTO t (id, name) VALUES (5000, 'late')")
        wait_for(lambda: cap.runtime.metrics.total_events_seen >= 200 + 20 + 20 + 10 + 1,
                 what="stream events")
    finally:
        cap.stop()
    run_once(spark, config)
    got = delta_rows(env, "t")
    want = source_rows(env, "t")
    assert got.keys() == want.keys()
    for k, row in want.items():
        g = got[k]
        assert g["name"] == row["name"]
        assert g["price"] == row["price"]
        assert g["day"] == row["day"]
        assert g["at"] == row["at"]
        assert (g["atz"] is None and row["atz"] is None) or g["atz"] == row["atz"]
        assert g["ok"] == row["ok"] and g["big"] == row["big"]
    assert isinstance(got[1]["price"], decimal.Decimal) or got[1]["price"] is None
    # A second run with nothing new changes nothing; more changes apply incrementally.
    run_once(spark, config)
    assert delta_rows(env, "t") == got
