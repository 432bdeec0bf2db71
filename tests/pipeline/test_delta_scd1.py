"""Capture from a real PostgreSQL, materialize with a real Spark into real Delta tables."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import pytest

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.decode import PLACEHOLDER
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.runner import start
from headwater.topics import reader
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


@pytest.mark.parametrize("where", ["executors", "driver"])
def test_unchanged_toast_values_are_kept_on_the_column_wise_path(
        env: Env, spark: Any, caplog: pytest.LogCaptureFixture, where: str) -> None:
    """Updates that do not touch TOASTed text and bytea columns arrive with placeholders; the
    Delta table keeps the values, across batches and within one, and after delete + insert;
    netted on the executors (every range sent there) and in the driver (short ranges)."""
    env.sql("CREATE TABLE tt (id int PRIMARY KEY, n int, doc text, raw bytea)")
    env.sql("ALTER TABLE tt ALTER COLUMN raw SET STORAGE EXTERNAL, "
            "ALTER COLUMN doc SET STORAGE EXTERNAL")
    big_text = ("(SELECT string_agg(md5(g::text || random()::text), '') "
                "FROM generate_series(1, 200) g)")
    big_bytes = f"decode({big_text}, 'hex')"
    env.sql(f"INSERT INTO tt SELECT g, 0, {big_text}, {big_bytes} FROM generate_series(1, 40) g")
    props = pipeline_props(env)
    if where == "executors":
        props["headwater.pipeline.executors.min.records"] = 0
    config = env.config(props)
    cap = env.capture(props)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
    finally:
        cap.stop()
    run_once(spark, config)
    cap = env.capture(props)
    try:
        env.sql("UPDATE tt SET n = n + 1")  # doc and raw not sent
        env.sql(f"UPDATE tt SET n = n + 1, doc = {big_text} WHERE id <= 10")  # doc sent again
        env.sql("UPDATE tt SET n = n + 1 WHERE id <= 20")  # ... and not again
        env.sql("DELETE FROM tt WHERE id BETWEEN 31 AND 35")
        env.sql(f"INSERT INTO tt SELECT g, 9, {big_text}, {big_bytes} "
                "FROM generate_series(31, 33) g")
        env.sql("UPDATE tt SET n = n + 1 WHERE id BETWEEN 31 AND 33")
        wait_for(lambda: cap.runtime.metrics.total_events_seen >= 40 + 10 + 20 + 5 + 3 + 3,
                 what="stream events")
    finally:
        cap.stop()
    placeholders = sum(1 for r in reader.read(env.topics, f"{env.prefix}.public.tt")
                       if r.value is not None and PLACEHOLDER.encode() in bytes(r.value))
    assert placeholders >= 60, "the capture sent the TOASTed values: nothing is tested"
    with caplog.at_level("INFO", logger="headwater.pipeline"):
        run_once(spark, config)
    batch_lines = [r.getMessage() for r in caplog.records if "public.tt" in r.getMessage()]
    assert any(("on executors" if where == "executors" else "scan") in m
               for m in batch_lines), batch_lines
    assert not any("event by event" in m for m in batch_lines), batch_lines
    got = delta_rows(env, "tt")
    want = source_rows(env, "tt")
    assert got.keys() == want.keys()
    for k, row in want.items():
        assert got[k]["n"] == row["n"], k
        assert got[k]["doc"] == row["doc"], k
        assert got[k]["raw"] == bytes(row["raw"]), k
