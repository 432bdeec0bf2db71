"""The Spark Structured Streaming query that materializes change topics into Delta tables.

Spark's file source follows the topic log (sealed segments only: in-progress files are hidden),
and its checkpoint records which segments each micro-batch covered.  `foreachBatch` hands a
batch to `apply_batch`, which groups the records by topic, decodes them by their embedded
schemas, computes the net change per key and applies it with delta-rs, marking the commit with
the batch id, so a batch replayed after a crash is applied exactly once.

`once=True` runs with `Trigger.AvailableNow`: everything there now, then stop.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.delta_target import DeltaTarget
from headwater.pipeline.net import dedup, net_changes
from headwater.pipeline.scd2 import tracked_columns

log = logging.getLogger("headwater.pipeline")

RAW_SCHEMA = "offset LONG, timestamp LONG, key STRING, value STRING"
NON_TABLE_SUFFIXES = (".transaction",)
NON_TABLE_PREFIXES = ("__debezium-heartbeat",)


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
    )
    return builder.getOrCreate()


def is_table_topic(topic: str) -> bool:
    return not topic.endswith(NON_TABLE_SUFFIXES) and not topic.startswith(NON_TABLE_PREFIXES)


def apply_batch(rows: Any, batch_id: int, cfg: PipelineConfig, target: DeltaTarget) -> int:
    """Applies one micro-batch (an Arrow table: topic, offset, key, value); returns events."""
    by_topic: dict[str, list[tuple[int, Any, Any]]] = {}
    topics = rows.column("topic").to_pylist()
    offsets = rows.column("offset").to_pylist()
    keys = rows.column("key").to_pylist()
    values = rows.column("value").to_pylist()
    for topic, offset, key, value in zip(topics, offsets, keys, values, strict=True):
        if is_table_topic(topic):
            by_topic.setdefault(topic, []).append((offset, key, value))
    total = 0
    for topic, records in sorted(by_topic.items()):
        records.sort(key=lambda r: r[0])
        changes = decode_topic(topic, records)
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
    from pyspark.sql import functions as sf

    target = DeltaTarget(cfg.delta_path, cfg.pipeline_id)
    cfg.topics_dir.mkdir(parents=True, exist_ok=True)
    source = (
        spark.readStream.schema(RAW_SCHEMA)
        .option("maxFilesPerTrigger", cfg.max_files_per_trigger)
        .json(str(cfg.topics_dir / cfg.topics_glob / "*.jsonl"))
        .withColumn("topic", sf.element_at(sf.split(sf.input_file_name(), "/"), -2))
    )

    def on_batch(df: Any, batch_id: int) -> None:
        rows = df.select("topic", "offset", "key", "value").toArrow()
        n = apply_batch(rows, batch_id, cfg, target)
        log.info("batch %d done: %d events", batch_id, n)

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
