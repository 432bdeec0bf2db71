"""Spark's built-in JSON file source reads the topic log written by a real capture."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    import logging

    from pyspark.sql import SparkSession

    # py4j logs its shutdown at interpreter exit, after pytest has closed the streams.
    logging.getLogger("py4j").setLevel(logging.ERROR)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[1]")
        .appName("headwater-topic-log-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()


def test_spark_json_source_reads_segments(env: Env, spark: Any) -> None:
    from pyspark.sql import functions as sf

    env.sql("CREATE TABLE public.t (id int PRIMARY KEY, name text, amount numeric(10,2))")
    env.sql("INSERT INTO t SELECT g, 'n' || g, g * 1.5 FROM generate_series(1, 500) g")
    cap = env.capture({"headwater.topics.segment.bytes": 65536})  # several sealed segments
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("UPDATE t SET name = 'changed' WHERE id <= 10")
        env.sql("DELETE FROM t WHERE id > 490")
        wait_for(lambda: cap.runtime.metrics.total_events_seen >= 520, what="stream")
    finally:
        cap.stop()  # seals the in-progress segment: everything is visible to Spark now
    topic_dir = env.topics / f"{env.prefix}.public.t"
    assert len(list(topic_dir.glob("*.jsonl"))) > 1
    df = spark.read.schema(
        "offset LONG, timestamp LONG, key STRING, value STRING, headers MAP<STRING,STRING>"
    ).json(str(topic_dir))
    rows = df.select(
        "offset",
        sf.get_json_object("value", "$.payload.op").alias("op"),
        sf.get_json_object("key", "$.payload.id").cast("int").alias("id"),
        sf.get_json_object("value", "$.schema.name").alias("schema_name"),
    ).collect()
    assert sorted(r["offset"] for r in rows) == list(range(len(rows)))
    ops = [r["op"] for r in sorted(rows, key=lambda r: r["offset"])]
    assert ops.count("r") == 500 and ops.count("u") == 10 and ops.count("d") == 10
    assert ops.count(None) == 10  # tombstones: null value
    assert {r["schema_name"] for r in rows if r["op"]} == {f"{env.prefix}.public.t.Envelope"}
    # A header reads as its bytes' text: SimpleHeaderConverter's, the worker default's.
    logical = df.select(sf.col("headers").getItem("__debezium.context.connectorLogicalName")
                        .alias("name")).distinct().collect()
    assert [r["name"] for r in logical] == [env.prefix]
