"""The Spark Structured Streaming query that materializes change topics into Delta tables.

Spark's file source follows the topic log (sealed segments only: in-progress files are hidden),
and its checkpoint records which segments each micro-batch covered.  `foreachBatch` hands a
batch to `apply_batch`, which groups the records by topic, decodes them by their embedded
schemas, computes the net change per key and applies it with delta-rs, marking the commit with
the batch id, so a batch replayed after a crash is applied exactly once.

`once=True` runs with `Trigger.AvailableNow`: everything there now, then stop.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Protocol

from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.decode import ChangeEvent, TableChanges, decode_topic
from headwater.pipeline.delta_target import DeltaTarget
from headwater.pipeline.net import NetChange, dedup, net_changes
from headwater.pipeline.scd2 import tracked_columns
from headwater.pipeline.source import NAME as SOURCE_NAME
from headwater.pipeline.source import is_table_topic, read_range, register

log = logging.getLogger("headwater.pipeline")



def spark_session(app: str = "headwater-pipeline", master: str | None = None) -> Any:
    """A local Spark session set up for this machine (see README: loopback, venv python)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    logging.getLogger("py4j").setLevel(logging.ERROR)
    builder = (
        SparkSession.builder.appName(app)
        .master(master or os.environ.get("HEADWATER_SPARK_MASTER", "local[*]"))
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        # Batches are collected to the driver (delta-rs writes from there): room for them.
        .config("spark.driver.memory", os.environ.get("HEADWATER_SPARK_DRIVER_MEMORY", "4g"))
        .config("spark.driver.maxResultSize", "4g")
    )
    return builder.getOrCreate()


class Target(Protocol):
    """Where net changes go: Delta tables, or tables of a JDBC database."""

    def apply_scd1(self, changes: TableChanges, net: list[NetChange], truncate: str | None,
                   batch_id: int) -> None: ...

    def apply_scd2(self, changes: TableChanges, events: list[ChangeEvent], truncate: str | None,
                   batch_id: int, tracked: frozenset[str] | None = None) -> None: ...

    def append_changelog(self, changes: TableChanges, batch_id: int) -> None: ...


def make_target(cfg: PipelineConfig, spark: Any = None) -> Target:
    if cfg.target == "jdbc":
        # Imported by name: the JDBC target pulls in database drivers only when chosen.
        module = importlib.import_module("headwater.pipeline.jdbc_target")
        target: Target = module.JdbcTarget(cfg, spark)
        return target
    return DeltaTarget(cfg.delta_path, cfg.pipeline_id, cfg.schema_evolution)


def apply_batch(
    by_topic: dict[str, list[tuple[int, Any, Any]]], batch_id: int, cfg: PipelineConfig,
    target: Target,
) -> int:
    """Applies one micro-batch: (offset, key, value) records per topic; returns the events."""
    total = 0
    for topic, records in sorted(by_topic.items()):
        records.sort(key=lambda r: r[0])
        t0 = time.monotonic()
        changes = decode_topic(topic, records)
        log.info("batch %d: %s: decoded %d events in %.1fs", batch_id, topic,
                 len(changes.events), time.monotonic() - t0)
        if not changes.events:
            continue
        total += len(changes.events)
        if cfg.mode == "changelog":
            target.append_changelog(changes, batch_id)
        elif cfg.mode == "scd1":
            name = f"{changes.schema_name}.{changes.table_name}"
            net, truncate = net_changes(changes.events, name)
            target.apply_scd1(changes, net, truncate, batch_id)
        else:
            events = dedup(changes.events)
            truncate = max((e.sequence for e in events if e.op == "t"), default=None)
            tracked = tracked_columns(
                [c.name for c in changes.column_list], cfg.track_history_column_list,
                cfg.track_history_except_column_list)
            target.apply_scd2(changes, events, truncate, batch_id, tracked)
        log.info("batch %d: %s: %d events applied (%s)", batch_id, topic, len(changes.events),
                 cfg.mode)
    return total


def start(spark: Any, cfg: PipelineConfig, once: bool = False) -> Any:
    """Starts the streaming query and returns it (call awaitTermination on it)."""
    target = make_target(cfg, spark)
    cfg.topics_dir.mkdir(parents=True, exist_ok=True)
    register(spark)
    reader = (
        spark.readStream.format(SOURCE_NAME)
        .option("path", str(cfg.topics_dir))
        .option("topics", cfg.topics_glob)
    )
    if cfg.max_records_per_trigger:
        reader = reader.option("max_records", str(cfg.max_records_per_trigger))
    source = reader.load()

    def on_batch(df: Any, batch_id: int) -> None:
        started = time.monotonic()
        by_topic: dict[str, list[tuple[int, Any, Any]]] = {}
        for topic, first, end in df.collect():
            if is_table_topic(topic):
                by_topic[topic] = list(read_range(cfg.topics_dir, topic, first, end))
        collected = time.monotonic()
        n = apply_batch(by_topic, batch_id, cfg, target)
        log.info("batch %d: %d events; read %.1fs, decode+apply %.1fs", batch_id, n,
                 collected - started, time.monotonic() - collected)

    writer = (
        source.writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(cfg.checkpoint_dir))
        .queryName(f"headwater-{cfg.topic_prefix}")
    )
    writer = (
        writer.trigger(availableNow=True) if once
        else writer.trigger(processingTime=f"{cfg.trigger_interval_ms} milliseconds")
    )
    return writer.start()


def run(cfg: PipelineConfig, once: bool = False) -> None:
    spark = spark_session()
    try:
        query = start(spark, cfg, once=once)
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
    finally:
        spark.stop()


def topics_path(cfg: PipelineConfig) -> Path:
    return cfg.topics_dir / cfg.topics_glob
