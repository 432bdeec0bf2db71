"""`headwater validate` with Iceberg targets: the real PostgreSQL connector captures a table of
mixed types (snapshot, then streamed inserts, updates and deletes), the real pipeline
materializes it (`--once`) into Iceberg tables (SCD1 and changelog, the modes the Iceberg target
writes) and validate must say equal; then the Iceberg tables are changed behind the pipeline's
back with Spark SQL (UPDATE, DELETE, INSERT) and validate must name the table, each key and
column, and exit 1.  One Spark session for the module (the pipeline tests' fixture): the
pipeline and validate both run in it."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)
from typer.testing import CliRunner

from headwater.cli import app
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.runner import start
from headwater.testing.replay import replay
from tests.integration.postgres.conftest import Env, env, pg, wait_for  # noqa: F401  (fixtures)
from tests.pipeline.conftest import _spark_sessions, spark  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

runner = CliRunner()
_targets = itertools.count()

TABLE = """
CREATE TABLE things (
  id int PRIMARY KEY,
  ver int NOT NULL,
  name text,
  amount numeric(12,2),
  placed timestamp(6),
  changed timestamptz,
  due date,
  paid boolean,
  ratio float8,
  took time,
  raw bytea
)"""

NOT_COMPARED = {"took", "raw"}  # a time of day held as text of the pipeline's own; binary


def row(i: int) -> tuple[Any, ...]:
    return (i, 0, ["Zoë 😀", "O'Brien", "", None][i % 4], Decimal(i * 37 % 100000) / 100 - 300,
            dt.datetime(1999, 12, 31, 23, 59, 59, 123456) + dt.timedelta(hours=i),
            None if i % 6 == 0 else dt.datetime(2001, 2, 3, 4, 5, 6, 789000, tzinfo=dt.UTC)
            + dt.timedelta(minutes=i),
            dt.date(1000, 1, 1) + dt.timedelta(days=i * 997), i % 2 == 0, i / 3,
            dt.time(i % 24, i % 60), bytes([i % 256]))


def capture(e: Env) -> None:
    """200 rows by snapshot, then streamed: 20 inserts, 40 updates, 15 deletes."""
    e.conn.autocommit = True
    e.sql(TABLE)
    insert = f"INSERT INTO things VALUES ({', '.join(['%s'] * 11)})"
    for i in range(1, 201):
        e.sql(insert, row(i))
    cap = e.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, timeout=60, what="snapshot")
        for i in range(201, 221):
            e.sql(insert, row(i))
        for i in range(10, 50):
            e.sql("UPDATE things SET ver = ver + 1, name = %s, amount = amount + 1, "
                  "changed = now() WHERE id = %s", (f"u{i}", i))
        e.sql("DELETE FROM things WHERE id BETWEEN 100 AND 114")

        def caught_up() -> bool:
            captured = {dict(k)["id"]: r["ver"]
                        for k, r in replay(e.topics, f"{e.prefix}.public.things").items()}
            return captured == dict(e.sql("SELECT id, ver FROM things"))

        wait_for(caught_up, timeout=90, what="the capture to catch up")
    finally:
        cap.stop()


def pipeline(e: Env, spark: Any, mode: str) -> tuple[Path, str]:  # noqa: F811
    """Runs the pipeline once into an Iceberg warehouse of its own; returns its configuration
    and the table's name in Spark SQL (a catalog of its own: a session keeps a catalog's
    warehouse once loaded)."""
    n = next(_targets)
    catalog = f"ice_{uuid.uuid4().hex[:10]}"
    cfg = e.config({"headwater.pipeline.mode": mode,
                    "headwater.pipeline.target": "iceberg",
                    "headwater.pipeline.iceberg.warehouse": e.tmp / f"iceberg-{n}",
                    "headwater.pipeline.iceberg.catalog": catalog,
                    "headwater.pipeline.checkpoint.dir": e.tmp / f"checkpoint-{n}"})
    query = start(spark, load_pipeline_config(cfg), once=True)
    query.awaitTermination()
    assert query.exception() is None
    return cfg.rename(e.tmp / f"pipeline-{n}.properties"), f"{catalog}.public.things"


def validate(cfg: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    base = ["validate", str(cfg), "--rechecks", "0", "--chunk-rows", "100", *args]
    as_json = runner.invoke(app, [*base, "--json"])
    text = runner.invoke(app, base)
    assert as_json.exit_code == text.exit_code, (as_json.output, text.output)
    return as_json.exit_code, orjson.loads(as_json.stdout), text.output


def assert_equal(cfg: Path, name: str, mode: str) -> None:
    code, doc, text = validate(cfg)
    assert code == 0, text
    [t] = doc["tables"]
    assert (t["table"], t["mode"], t["source_rows"], t["target_rows"]) == (
        "public.things", mode, 205, 205), t
    assert t["target"].startswith(name + " ("), t["target"]
    assert t["chunks"] == 3, t
    assert {c.split(" ")[0] for c in t["not_compared"]} == NOT_COMPARED, t["not_compared"]
    assert {"ver", "name", "amount", "placed", "changed", "due", "paid", "ratio"} <= set(
        t["compared_columns"])
    assert "public.things: EQUAL (source 205 rows, target 205; 3 chunks)" in text


def test_scd1_and_changelog_iceberg_targets(env: Env, spark: Any) -> None:  # noqa: F811
    capture(env)
    scd1, scd1_name = pipeline(env, spark, "scd1")
    changelog, changelog_name = pipeline(env, spark, "changelog")
    assert_equal(scd1, scd1_name, "scd1")
    assert_equal(changelog, changelog_name, "changelog")

    # Behind the pipeline's back: a changed value, a deleted row, an added one.
    spark.sql(f"UPDATE {scd1_name} SET name = 'tampered' WHERE id = 5")
    spark.sql(f"DELETE FROM {scd1_name} WHERE id = 9")
    (spark.table(scd1_name).where("id = 7").withColumn("id", F.lit(999).cast("int"))
     .writeTo(scd1_name).append())
    code, doc, text = validate(scd1)
    assert code == 1, text
    [t] = doc["tables"]
    assert not t["equal"] and t["target"].startswith(scd1_name), t
    assert t["rows"] == [
        {"key": {"id": "5"}, "kind": "changed",
         "columns": {"name": {"source": "O'Brien", "target": "tampered"}}},
        {"key": {"id": "9"}, "kind": "missing"},
        {"key": {"id": "999"}, "kind": "extra"},
    ], t["rows"]
    assert "public.things: DIFFERS (source 205 rows, target 205;" in text
    assert "changed id=5: name: source \"O'Brien\", target 'tampered'" in text
    assert "missing in target: id=9" in text and "extra in target (not in source): id=999" in text

    # A changelog's current row is its latest event: changing an older one changes nothing,
    # the latest one (id 12 was updated after its snapshot row) is a difference.
    spark.sql(f"UPDATE {changelog_name} SET name = 'older' WHERE id = 12 AND __op = 'r'")
    assert validate(changelog)[0] == 0
    spark.sql(f"UPDATE {changelog_name} SET amount = 0 WHERE id = 12 AND __op = 'u'")
    code, doc, text = validate(changelog)
    assert code == 1, text
    assert doc["tables"][0]["rows"] == [
        {"key": {"id": "12"}, "kind": "changed",
         "columns": {"amount": {"source": "-294.56", "target": "0"}}}], doc["tables"][0]
    assert "changed id=12: amount: source '-294.56', target '0'" in text


@pytest.mark.parametrize("mode", ["scd1", "scd2"])
def test_refuses_a_missing_warehouse(env: Env, mode: str) -> None:  # noqa: F811
    cfg = env.config({"headwater.pipeline.target": "iceberg", "headwater.pipeline.mode": mode,
                      "headwater.pipeline.iceberg.warehouse": env.tmp / "nowhere"})
    result = runner.invoke(app, ["validate", str(cfg)])
    assert result.exit_code == 2, result.output
    assert (f"headwater.pipeline.iceberg.warehouse: {env.tmp / 'nowhere'} does not exist"
            in " ".join(result.output.split())), result.output
