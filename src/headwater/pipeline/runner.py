"""The Spark Structured Streaming query that materializes change topics into Delta tables.

The pipeline's source (`positions`) gives each micro-batch as offset ranges per topic;
`foreachBatch` hands them to `apply_batch`, which reads the records from the segment files,
decodes them by their embedded schemas, computes the net change per key and applies it, marking
the commit with the batch id, so a batch replayed after a crash is applied exactly once. SCD1
into Delta, the bulk of the work, goes column-wise (`columnar`) whenever a batch has the common
shape, else event by event (`decode`, `net`), which every other mode and target uses. MongoDB
topics, whose events carry documents rather than rows, take the document path (`documents`),
and Datastream events theirs (`datastream`): the configuration's event model chooses
(`PipelineConfig.event_model`); `start` refuses a combination the capabilities table does not
support (`capabilities`) before any batch.

`once=True` runs to everything there now, then stops (`read_limits.once_trigger`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import logging
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, cast

from headwater.pipeline import (
    capabilities,
    changelog_once,
    columnar,
    executor_net,
    positions,
    tasks,
)
from headwater.pipeline.change_frame import ChangeFrame
from headwater.pipeline.checkpoint import open_checkpoint
from headwater.pipeline.config import PipelineConfig, capability_cell, require_supported
from headwater.pipeline.datastream.apply import (
    apply_events,
    apply_files,
    is_datastream_topic,
    objects,
    topic_events,
    typed_changes,
)
from headwater.pipeline.datastream.files import LOG_NAME
from headwater.pipeline.decode import ChangeEvent, Column, TableChanges, decode_topic
from headwater.pipeline.delta_spark import SparkDeltaTarget
from headwater.pipeline.delta_target import DeltaTarget, SchemaEvolutionError
from headwater.pipeline.documents.route import apply_documents, is_document_topic
from headwater.pipeline.flows import AutoCdcFlow, transform
from headwater.pipeline.iceberg_target import IcebergTarget
from headwater.pipeline.net import NetChange, dedup, net_changes
from headwater.pipeline.scd2 import tracked_columns
from headwater.pipeline.source import is_table_topic, read_range
from headwater.pipeline.spark_session import spark_session as spark_session  # noqa: PLC0414 (re-exported)
from headwater.pipeline.status import PipelineMonitor
from headwater.topics.damage import TopicLogDamaged

log = logging.getLogger("headwater.pipeline")

Ranges = dict[str, tuple[int, int]]  # topic -> [start, end) offsets of one micro-batch


class Target(Protocol):
    """Where net changes go: Delta tables, Iceberg tables, or tables of a JDBC database."""

    def apply_scd1(self, changes: TableChanges, net: list[NetChange], truncate: str | None,
                   batch_id: int) -> None: ...

    def apply_scd2(self, changes: TableChanges, events: list[ChangeEvent], truncate: str | None,
                   batch_id: int, tracked: frozenset[str] | None = None) -> None: ...

    def append_changelog(self, changes: TableChanges, batch_id: int) -> None: ...

    def changelog_since(self, changes: Any, since: str, keys: Sequence[str]) -> Any: ...


class FrameTarget(Protocol):
    """A target that takes a mode's batches as DataFrames (`ChangeFrame`), built on the
    executors (`FRAMES`); which modes, its `frame_modes` says."""

    frame_modes: frozenset[str]

    def merge_net(self, frame: ChangeFrame, batch_id: int) -> None: ...

    def append_changelog_net(self, frame: ChangeFrame, batch_id: int) -> None: ...

    def merge_history(self, frame: ChangeFrame, batch_id: int,
                      tracked: frozenset[str] | None = None) -> None: ...


class ColumnarTarget(Protocol):
    """A target that takes the driver's column-wise rows (`columnar.ColumnarChanges`) in the
    modes its `columnar_modes` names; other targets get the batch event by event."""

    columnar_modes: frozenset[str]

    def apply_scd1_net(self, changes: columnar.ColumnarChanges, batch_id: int) -> None: ...

    def append_changelog_rows(self, changes: columnar.ColumnarChanges, batch_id: int
                              ) -> None: ...

    def apply_scd2_rows(self, changes: columnar.ColumnarChanges, batch_id: int,
                        tracked: frozenset[str] | None = None) -> None: ...

    def changelog_since(self, changes: Any, since: str, keys: Sequence[str]) -> Any: ...


def columnar_modes(target: Any) -> frozenset[str]:
    """The modes in which `target` takes column-wise rows (none: events only)."""
    modes: frozenset[str] = getattr(target, "columnar_modes", frozenset())
    return modes


def maintain_target(target: Any, batch_id: int) -> None:
    """The target's table maintenance after a batch (compaction, checkpoints, snapshot expiry:
    the Delta and Iceberg targets' `maintain`); a JDBC database maintains its own tables."""
    maintain: Callable[[int], None] | None = getattr(target, "maintain", None)
    if maintain is not None:
        maintain(batch_id)


def frame_modes(target: Any) -> frozenset[str]:
    """The modes whose batches `target` takes as DataFrames (none: the driver's Arrow rows)."""
    modes: frozenset[str] = getattr(target, "frame_modes", frozenset())
    return modes


def make_target(cfg: PipelineConfig, spark: Any = None) -> Target:
    if cfg.target == "jdbc":
        # Imported by name: the JDBC target pulls in database drivers only when chosen.
        module = importlib.import_module("headwater.pipeline.jdbc_target")
        target: Target = module.JdbcTarget(cfg, spark)
        return target
    if cfg.target == "iceberg":
        if spark is None:
            raise ValueError("headwater.pipeline.target=iceberg needs the pipeline's Spark "
                             "session")
        return IcebergTarget(spark, cfg.iceberg_warehouse, cfg.iceberg_catalog,
                             cfg.pipeline_id, cfg.schema_evolution,
                             cfg.iceberg_compact_interval_batches)
    return DELTA_TARGETS[cfg.delta_writer](cfg, spark)


def _delta_rs(cfg: PipelineConfig, _spark: Any) -> DeltaTarget:
    return DeltaTarget(cfg.delta_path, cfg.pipeline_id, cfg.schema_evolution,
                       cfg.compact_interval_batches)


def _delta_spark(cfg: PipelineConfig, spark: Any) -> DeltaTarget:
    if spark is None:
        raise ValueError("headwater.pipeline.delta.writer=spark needs the pipeline's Spark "
                         "session")
    return SparkDeltaTarget(spark, cfg.delta_path, cfg.pipeline_id, cfg.schema_evolution,
                            cfg.compact_interval_batches)


# `headwater.pipeline.delta.writer` -> the Delta target it builds: chosen once, at start; both
# are `DeltaTarget`s (the Spark one overrides the column-wise writes and maintenance), so every
# batch takes the same route whichever writes.
DELTA_TARGETS: dict[str, Callable[[PipelineConfig, Any], DeltaTarget]] = {
    "delta-rs": _delta_rs,
    "spark": _delta_spark,
}


def columnar_enabled() -> bool:
    """`HEADWATER_PIPELINE_COLUMNAR=0` sends every batch event by event (a way back, and the
    benchmark's reference)."""
    return os.environ.get("HEADWATER_PIPELINE_COLUMNAR", "1") != "0"


ColumnarPath = tuple[Callable[[str, columnar.Lines], columnar.ColumnarChanges | None],
                     Callable[[columnar.ColumnarChanges, int], None]]


def columnar_path(mode: str, target: Target, cfg: PipelineConfig | None = None
                  ) -> ColumnarPath | None:
    """(decode, write) of the mode when the target has a column-wise path for it (its
    `columnar_modes`), else None: SCD1, SCD2 and the changelog into Delta and Iceberg."""
    if mode not in columnar_modes(target) or not columnar_enabled():
        return None
    rows = cast(ColumnarTarget, target)
    if mode == "scd1":
        return columnar.decode_net, rows.apply_scd1_net
    if mode == "changelog":
        return columnar.decode_changelog, functools.partial(append_changelog_once, rows)
    if mode == "scd2":
        return (functools.partial(columnar.decode_changelog, flags=True),
                functools.partial(apply_history_rows, target, cfg))
    raise ValueError(f"columnar_modes of {type(target).__name__} names an unknown mode "
                     f"{mode!r}")


def history_tracked(cfg: PipelineConfig | None, columns: Sequence[Column]
                    ) -> frozenset[str]:
    """The columns whose change opens a new SCD2 version (`scd2.tracked_columns` of the
    configuration's track lists; without a configuration, a direct call's, every column)."""
    if cfg is None:
        return frozenset(c.name for c in columns)
    return tracked_columns([c.name for c in columns], cfg.track_history_column_list,
                           cfg.track_history_except_column_list)


def apply_history_rows(target: Any, cfg: PipelineConfig | None,
                       changes: columnar.ColumnarChanges, batch_id: int) -> None:
    """The column-wise SCD2 write of a batch the driver decoded or netted in Arrow: the
    target's history MERGE of its events (`apply_scd2_rows`)."""
    cast(ColumnarTarget, target).apply_scd2_rows(changes, batch_id,
                                                 history_tracked(cfg, changes.columns))


def append_changelog_once(target: ColumnarTarget,
                          changes: columnar.ColumnarChanges, batch_id: int) -> None:
    """The column-wise changelog write: the batch's rows without re-deliveries
    (`changelog_once`)."""
    target.append_changelog_rows(changelog_once.first_rows(changes, target), batch_id)


def topic_model(cfg: PipelineConfig, topics_dir: Path, topic: str, first: int, end: int
                ) -> str:
    """The event model of a topic of the topic log: the configuration's; when it declares
    none (a pipeline-only file over mixed topics), learnt from the topic's first record and
    checked against the capabilities table like a declared one is at start."""
    if cfg.event_model is not None:
        return cfg.event_model
    if is_datastream_topic(topics_dir, topic, first, end):
        model = capabilities.DATASTREAM
    elif is_document_topic(topics_dir, topic, first, end):
        model = capabilities.DOCUMENTS
    else:
        return capabilities.ROWS
    capabilities.require(dataclasses.replace(capability_cell(cfg), model=model))
    return model


def apply_batch(
    topics_dir: Path, ranges: Ranges, batch_id: int, cfg: PipelineConfig, target: Target,
    counts: dict[str, int] | None = None, spark: Any = None,
) -> int:
    """Applies one micro-batch (offset ranges per topic); returns the number of events and,
    with `counts`, adds each topic's number of events to it (the status file's rows per
    table).

    With a Spark session, the column-wise modes read, decode and net on the executors
    (`tasks`: one Spark job for all the batch's topics) every topic range of at least
    `headwater.pipeline.executors.min.records` whose event model the stage takes in the mode
    (`tasks.STAGED_MODES`: Debezium rows, Datastream's SCD1); without one (direct calls,
    the Kafka batch), and for shorter ranges, the driver does it."""
    total = 0
    path = columnar_path(cfg.mode, target, cfg)
    staged: dict[str, list[tasks.PartResult]] = {}
    if spark is not None and path is not None:
        # (a short range costs the driver milliseconds, a Spark job seconds)
        models = {t: topic_model(cfg, topics_dir, t, *r) for t, r in ranges.items()
                  if r[1] - r[0] >= max(cfg.executors_min_records, 1)}
        chosen = {t: ranges[t] for t, m in models.items()
                  if cfg.mode in tasks.STAGED_MODES.get(m, frozenset())}
        if chosen:
            staged = tasks.run_stage(spark, topics_dir, cfg.checkpoint_dir, batch_id,
                                     cfg.mode, chosen, models=models)
    for topic, (first, end) in sorted(ranges.items()):
        n = None
        if topic in staged and path is not None:
            n = apply_staged(spark, topic, staged[topic], batch_id, cfg, path[1], target)
        if n is None:
            n = _apply_topic(topics_dir, topic, first, end, batch_id, cfg, target,
                             None if topic in staged else path)
        total += n
        if counts is not None and n:
            counts[topic] = counts.get(topic, 0) + n
    if staged:
        tasks.clear_staging(cfg.checkpoint_dir, upto=batch_id)
    return total


def apply_staged(spark: Any, topic: str, parts: list[tasks.PartResult], batch_id: int,
                  cfg: PipelineConfig, write: Callable[[columnar.ColumnarChanges, int], None],
                  target: Target | None = None) -> int | None:
    """One topic's batch from the executors' staged parts; None when the stage left it to
    the event path.  A target that takes DataFrames in the mode (`frame_modes`) gets an SCD1
    batch netted across parts on the executors (`executor_net.net_frame`), a changelog
    batch as the staged parts read by Spark (`executor_net.changelog_frame`) and an SCD2
    batch as its events read by Spark (`executor_net.history_frame`); the others, and
    Datastream's tables (typed and deduplicated by `uuid` in the driver's net), get the rows
    netted (SCD1) or put in offset order (changelog) in the driver, in Arrow.  Each table of
    the topic (Datastream: each `object`) is netted before any is written: a refusal sends
    the whole topic to the event path."""
    t0 = time.monotonic()
    datastream = any(p.model == capabilities.DATASTREAM for p in parts)
    on_executors = cfg.mode in frame_modes(target) and not datastream
    # (every target has `column_types`; only Delta and Iceberg have the column-wise path)
    types = cast(DeltaTarget, target).column_types if datastream else None
    batches: list[tasks.StagedChanges | ChangeFrame] = []
    try:
        for table in tasks.tables(parts):
            one = (FRAMES[cfg.mode](spark, table) if on_executors
                   else tasks.net_across_parts(table, cfg.mode, types))
            if one is not None:
                batches.append(one)
    except tasks.Refused as exc:
        log.info("batch %d: %s: event by event (%s)", batch_id, topic, exc)
        return None
    t1 = time.monotonic()
    events = 0
    for staged in batches:
        if isinstance(staged, ChangeFrame):
            frames = cast(FrameTarget, target)
            if cfg.mode == "scd1":
                frames.merge_net(staged, batch_id)
            elif cfg.mode == "scd2":
                frames.merge_history(staged, batch_id, history_tracked(cfg, staged.columns))
            else:
                frames.append_changelog_net(staged, batch_id)
            events += staged.events
        else:
            hand_over(staged, write, batch_id)
            events += staged.changes.events
    if batches:
        log.info("batch %d: %s: %d events of %d tables in %d parts on executors (%s); net "
                 "across parts %.2fs, write %.2fs", batch_id, topic, events, len(batches),
                 len({p.part for p in parts}),
                 f"{cfg.mode}, on the executors" if on_executors else cfg.mode,
                 t1 - t0, time.monotonic() - t1)
    return events


# The executors' DataFrame of a staged batch per mode, for a target that takes them: the SCD1
# net, the changelog's rows, SCD2's events.
FRAMES: dict[str, Callable[[Any, list[tasks.PartResult]], ChangeFrame | None]] = {
    "scd1": executor_net.net_frame,
    "changelog": executor_net.changelog_frame,
    "scd2": executor_net.history_frame,
}


def hand_over(staged: tasks.StagedChanges, write: Callable[[columnar.ColumnarChanges, int], None],
              batch_id: int) -> None:
    """The executor stage's result to the target: the rows netted across parts in the driver,
    in Arrow, for the target's column-wise write."""
    write(staged.to_columnar(), batch_id)


def _apply_topic(topics_dir: Path, topic: str, first: int, end: int, batch_id: int,
                 cfg: PipelineConfig, target: Target, path: ColumnarPath | None) -> int:
    """One topic's range of a batch; returns the number of events applied."""
    t0 = time.monotonic()
    model = topic_model(cfg, topics_dir, topic, first, end)
    if model == capabilities.DATASTREAM:  # Datastream events (JSON)
        return apply_events(topic_events(topics_dir, topic, first, end), topic, batch_id,
                            cfg.mode, target, cfg.track_history_column_list,
                            cfg.track_history_except_column_list)
    if model == capabilities.DOCUMENTS:  # MongoDB: documents, no schema
        return apply_documents(topic, read_range(topics_dir, topic, first, end), batch_id,
                               cfg.mode, target, cfg.documents, cfg.track_history_column_list,
                               cfg.track_history_except_column_list)
    if path is not None:
        decode, write = path
        try:
            lines = columnar.scan(topics_dir, topic, first, end)
            t1 = time.monotonic()
            decoded = decode(topic, lines)
        except columnar.NotColumnar as exc:
            log.info("batch %d: %s: event by event (%s)", batch_id, topic, exc)
        else:
            if decoded is None:
                return 0
            t2 = time.monotonic()
            write(decoded, batch_id)
            log.info("batch %d: %s: %d events, %d rows (%s); scan %.2fs, decode %.2fs, "
                     "write %.2fs", batch_id, topic, decoded.events, decoded.rows.num_rows,
                     cfg.mode, t1 - t0, t2 - t1, time.monotonic() - t2)
            return int(decoded.events)
    changes = decode_topic(topic, list(read_range(topics_dir, topic, first, end)))
    log.info("batch %d: %s: decoded %d events in %.1fs", batch_id, topic,
             len(changes.events), time.monotonic() - t0)
    if not changes.events:
        return 0
    apply_changes(changes, batch_id, target, cfg.mode, cfg.track_history_column_list,
                  cfg.track_history_except_column_list)
    return len(changes.events)


def apply_changes(
    changes: TableChanges, batch_id: int, target: Target, mode: str,
    track: Sequence[str] | None = None, track_except: Sequence[str] | None = None,
) -> None:
    """Applies one table's decoded changes in `mode` (scd1, scd2, changelog)."""
    if mode == "changelog":
        target.append_changelog(changelog_once.first_events(changes, target), batch_id)
    elif mode == "scd1":
        name = f"{changes.schema_name}.{changes.table_name}"
        net, truncate = net_changes(changes.events, name)
        target.apply_scd1(changes, net, truncate, batch_id)
    else:
        events = dedup(changes.events)
        truncate = max((e.sequence for e in events if e.op == "t"), default=None)
        tracked = tracked_columns([c.name for c in changes.column_list], track, track_except)
        target.apply_scd2(changes, events, truncate, batch_id, tracked)
    log.info("batch %d: %s: %d events applied (%s)", batch_id, changes.topic,
             len(changes.events), mode)


def start_flows(
    spark: Any, flows: Sequence[AutoCdcFlow], *, topics_dir: Path | str,
    delta_path: Path | str, checkpoint_dir: Path | str, once: bool = False,
    pipeline_id: str = "headwater-flows", trigger_interval_ms: int = 1000,
    compact_interval_batches: int = 100,
) -> Any:
    """Starts one streaming query applying AUTO CDC-style flows; returns the query."""
    by_source: dict[str, list[AutoCdcFlow]] = {}
    for flow in flows:
        by_source.setdefault(flow.source, []).append(flow)
    target = DeltaTarget(Path(delta_path), pipeline_id,
                         compact_interval_batches=compact_interval_batches)

    def apply_flows(changes: TableChanges, flows: Sequence[AutoCdcFlow], batch_id: int
                    ) -> None:
        for flow in flows:
            mode = "scd1" if flow.stored_as_scd_type == 1 else "scd2"
            apply_changes(transform(flow, changes), batch_id, target, mode,
                          flow.track_history_column_list, flow.track_history_except_column_list)

    def apply(ranges: Ranges, batch_id: int) -> None:
        for topic, (first, end) in sorted(ranges.items()):
            # (flows have no configuration: the model is learnt, the table refuses)
            if is_document_topic(Path(topics_dir), topic, first, end):
                capabilities.require_flow(capabilities.DOCUMENTS, topic)
            flows = by_source.get(topic, ())
            if is_datastream_topic(Path(topics_dir), topic, first, end):
                # each flow's changes typed as its own table's columns
                for name, items in objects(topic_events(Path(topics_dir), topic, first, end),
                                           topic):
                    for flow in flows:
                        apply_flows(typed_changes(target, name, items, flow.target), [flow],
                                    batch_id)
                continue
            changes = decode_topic(topic, list(read_range(Path(topics_dir), topic, first, end)))
            if changes.events:
                apply_flows(changes, flows, batch_id)
        target.maintain(batch_id)

    options = _topic_log_options(Path(topics_dir), ",".join(by_source), Path(checkpoint_dir))
    return _start_query(spark, "topics", options, Path(checkpoint_dir), "headwater-flows",
                        apply, once, trigger_interval_ms, None)


def start(spark: Any, cfg: PipelineConfig, once: bool = False,
          monitor: PipelineMonitor | None = None) -> Any:
    """Starts the streaming query and returns it (call awaitTermination on it); `monitor`
    counts each batch of the topic log (pipeline/status.py).  An unsupported combination of
    reader, event model, target and mode is refused here, before anything is read
    (`capabilities.UnsupportedCombination`)."""
    require_supported(cfg)
    target = make_target(cfg, spark)
    if cfg.kafka is not None:
        return _start_kafka(spark, cfg, target, once)
    if cfg.source == "datastream-files":
        return _start_files_query(spark, cfg, target, once)

    def apply(ranges: Ranges, batch_id: int) -> None:
        started = time.monotonic()
        counts: dict[str, int] = {}
        apply_batch(cfg.topics_dir, ranges, batch_id, cfg, target, counts, spark)
        maintain_target(target, batch_id)
        if monitor is not None:
            read_to = _checkpointed_offsets(cfg.checkpoint_dir / "offsets" / str(batch_id))
            monitor.batch(batch_id, counts, newest_source_ts(cfg.topics_dir, ranges),
                          time.monotonic() - started,
                          read_to or {t: e for t, (_f, e) in ranges.items()})

    options = _topic_log_options(cfg.topics_dir, cfg.topics_glob, cfg.checkpoint_dir)
    return _start_query(spark, "topics", options, cfg.checkpoint_dir,
                        f"headwater-{cfg.topic_prefix}", apply, once, cfg.trigger_interval_ms,
                        cfg.max_records_per_trigger)


def newest_source_ts(topics_dir: Path, ranges: Ranges) -> int | None:
    """The newest source `ts_ms` among the last record of each topic's range (the freshness
    of what a batch applied; reads one segment per topic, never the whole batch again)."""
    from headwater.pipeline.status import newest_ts_ms

    newest: int | None = None
    for topic, (_first, end) in ranges.items():
        for _offset, _key, value in read_range(topics_dir, topic, end - 1, end):
            ts = newest_ts_ms(value)
            if ts is not None and (newest is None or ts > newest):
                newest = ts
    return newest


def _start_kafka(spark: Any, cfg: PipelineConfig, target: Target, once: bool) -> Any:
    """The query over Kafka (headwater.topics.store=kafka): pipeline.kafka_source."""
    import orjson

    from headwater.pipeline import kafka_source
    from headwater.pipeline.kafka_batch import apply_kafka_batch
    from headwater.pipeline.kafka_decoders import decoder_for

    assert cfg.kafka is not None
    consumer = cfg.kafka.consumer_config(f"headwater-pipeline-{cfg.pipeline_id}")
    topics = kafka_source.KafkaTopics(consumer, cfg.topics_glob)

    decode = decoder_for(dict(cfg.converter_props))

    def apply(ranges: Ranges, batch_id: int) -> None:
        apply_kafka_batch(topics, ranges, batch_id, cfg, target, decode, spark)
        maintain_target(target, batch_id)

    options = {"consumer": orjson.dumps(consumer).decode(), "topics": cfg.topics_glob}
    query = _start_query(spark, "kafka", options, cfg.checkpoint_dir,
                         f"headwater-{cfg.topic_prefix}", apply, once, cfg.trigger_interval_ms,
                         cfg.max_records_per_trigger, table_topic=_kafka_table_slot)
    query.headwater_close = topics.close  # the batches' consumer: `close_query` closes it
    return query


def close_query(query: Any) -> None:
    """Releases what a query's batches held outside Spark (the Kafka consumer)."""
    close = getattr(query, "headwater_close", None)
    if close is not None:
        close()


def _kafka_table_slot(name: str) -> bool:
    return is_table_topic(name.rpartition("#")[0])


def _start_files_query(spark: Any, cfg: PipelineConfig, target: Target, once: bool) -> Any:
    """The query over the files destination's directory (`datastream.file_source`): its
    offsets are lines of the checkpoint's file log, handed to `apply` as the range of the
    pseudo-topic "files"."""
    root = cfg.files_dir or cfg.topics_dir
    log_path = cfg.checkpoint_dir / LOG_NAME

    def apply(ranges: Ranges, batch_id: int) -> None:
        for start, end in ranges.values():
            apply_files(root, log_path, start, end, batch_id, cfg.mode, target,
                        cfg.track_history_column_list, cfg.track_history_except_column_list)
        maintain_target(target, batch_id)

    options = {"path": str(root), "log": str(log_path), "format": cfg.files_format}
    return _start_query(spark, "files", options, cfg.checkpoint_dir,
                        f"headwater-{cfg.topic_prefix}", apply, once, cfg.trigger_interval_ms,
                        cfg.max_files_per_trigger)


def _checkpointed_offsets(path: Path) -> dict[str, int] | None:
    try:
        lines = path.read_text().splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if len(lines) != 3 or lines[0] != "v1":
        return None  # another layout, or more than one source: let Spark say
    try:
        offsets = json.loads(lines[2])
    except ValueError:
        return None
    if not isinstance(offsets, dict) or not all(
            isinstance(k, str) and type(v) is int for k, v in offsets.items()):
        return None
    return offsets


def checkpointed_ranges(checkpoint: Path, batch_id: int) -> Ranges | None:
    """The offset ranges of a micro-batch, from the query's own offset log.

    Spark writes a batch's end offsets (`offsets/<id>`) before it runs the batch, and the
    batch starts where the previous one ended (`offsets/<id - 1>`, kept until a later batch
    commits), also when a batch is replayed after a crash.  Reading the two small files spares
    each micro-batch a Spark job that would only hand back those same ranges.  None when the
    log is not there or not in the expected layout: then the batch's rows are collected.
    """
    end = _checkpointed_offsets(checkpoint / "offsets" / str(batch_id))
    start = {} if batch_id == 0 else _checkpointed_offsets(
        checkpoint / "offsets" / str(batch_id - 1))
    if end is None or start is None:
        return None
    return {t: (start.get(t, 0), o) for t, o in end.items()}


def clear_unstarted_checkpoint(checkpoint: Path) -> None:
    """Removes what a crash left in the offset log of a query that never planned a batch.

    Spark writes `offsets/<id>` through a temporary file renamed into place.  Killed before
    the first rename, it leaves only that temporary file (and its checksum), and on restart
    Spark sees no batch yet but a non-empty offset log and refuses the checkpoint
    (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY).  With no batch planned, nothing was applied,
    so the leftovers carry nothing to keep."""
    offsets = checkpoint / "offsets"
    if not offsets.is_dir():
        return
    leftovers = [p for p in offsets.iterdir() if p.is_file()]
    if not leftovers or any(p.name.isdigit() for p in leftovers):
        return
    log.warning("%s: no batch was planned before the last stop; removing the interrupted "
                "offset log write (%s)", checkpoint, ", ".join(sorted(p.name for p in leftovers)))
    for p in leftovers:
        p.unlink()


def consumer_id(checkpoint: Path) -> str:
    """The pipeline's name in `<topics dir>/.consumers/` (topics/retention.py): one per
    checkpoint, since the checkpoint is what holds the pipeline's progress."""
    import hashlib

    digest = hashlib.sha256(str(Path(checkpoint).resolve()).encode()).hexdigest()[:16]
    return f"pipeline-{digest}"


def _topic_log_options(topics_dir: Path, topics: str, checkpoint: Path) -> dict[str, str]:
    """The `topics` store's options (`source.TopicLogPositions`)."""
    from headwater.state_format import TOPIC_LOG, open_state_dir

    topics_dir.mkdir(parents=True, exist_ok=True)
    open_state_dir(topics_dir, TOPIC_LOG, stamp=False)  # read, never written, here
    return {"path": str(topics_dir), "topics": topics, "consumer_id": consumer_id(checkpoint)}


def _start_query(
    spark: Any, store: str, options: Mapping[str, str], checkpoint: Path, name: str,
    apply: Callable[[Ranges, int], None], once: bool,
    trigger_interval_ms: int, max_records: int | None,
    table_topic: Callable[[str], bool] = is_table_topic,
) -> Any:
    """The query of the pipeline's Spark source (`positions`) over `store` (its `options`),
    `apply` given each micro-batch's ranges."""
    from headwater.pipeline.read_limits import finish_when_caught_up, once_trigger

    open_checkpoint(checkpoint)  # (again for `start_flows`, which has no `run`)
    clear_unstarted_checkpoint(checkpoint)
    positions.register(spark)
    reader = (
        spark.readStream.format(positions.NAME).option("store", store).options(**options)
        # (pyspark 4.1 hands the source no start: it reads it here, see read_limits)
        .option("checkpoint", str(checkpoint))
        .option("once", "true" if once else "false")
    )
    if max_records:
        reader = reader.option("max_records", str(max_records))
    source = reader.load()
    # What stopped the query, for `run` to raise as is (not Spark's wrapping of it).
    damaged: list[Exception] = []

    def on_batch(df: Any, batch_id: int) -> None:
        started = time.monotonic()
        ranges = checkpointed_ranges(checkpoint, batch_id)
        if ranges is None:
            ranges = {topic: (first, end) for topic, first, end in df.collect()}
        ranges = {t: r for t, r in ranges.items() if table_topic(t) and r[1] > r[0]}
        planned = time.monotonic()
        try:
            apply(ranges, batch_id)
        except (TopicLogDamaged, SchemaEvolutionError) as exc:
            damaged.append(exc)
            raise
        log.info("batch %d: %d records; ranges %.2fs, read+decode+apply %.2fs", batch_id,
                 sum(e - f for f, e in ranges.values()), planned - started,
                 time.monotonic() - planned)

    writer = (
        source.writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(checkpoint))
        .queryName(name)
    )
    writer = (
        writer.trigger(**once_trigger()) if once
        else writer.trigger(processingTime=f"{trigger_interval_ms} milliseconds")
    )
    query = writer.start()
    query.headwater_damaged = damaged
    if once:
        finish_when_caught_up(query)
    return query


def run(cfg: PipelineConfig, once: bool = False) -> bool:
    """Run until done (`once`), failed (raises) or interrupted (SIGINT/SIGTERM: the query is
    stopped between batches; returns True).

    Why a signal handler rather than KeyboardInterrupt: an interrupt raised inside a Py4J
    call leaves the gateway mid-message, and every thread talking to it then prints its own
    traceback (~50 lines); the handler only asks, and the loop stops the query itself."""
    from headwater.pipeline.quiet import log_dir, trace_to_file

    open_checkpoint(cfg.checkpoint_dir)  # before the logs and the status file go in it
    logs = log_dir(cfg.checkpoint_dir)
    trace = trace_to_file(logs)
    interrupted = threading.Event()
    handlers = _on_signals(interrupted.set)
    monitor = _monitor(cfg).start()
    try:
        spark = spark_session(logs=logs, spark_props=dict(cfg.spark_conf))
    except BaseException as exc:
        monitor.close("FAILED", str(exc))
        _restore_signals(handlers)
        raise
    try:
        stopped = _run_query(spark, cfg, once, interrupted, trace, monitor)
    except BaseException as exc:
        from headwater.pipeline.quiet import one_line

        monitor.close("FAILED", one_line(exc))
        raise
    else:
        monitor.close("STOPPED")
        return stopped
    finally:
        _restore_signals(handlers)
        spark.stop()


def _monitor(cfg: PipelineConfig) -> PipelineMonitor:
    """The status file's writer; lag only for the topic log (not Kafka, not files)."""
    from headwater.pipeline.status import pipeline_status_path

    topics = cfg.kafka is None and cfg.source == "topics"
    return PipelineMonitor(pipeline_status_path(cfg.checkpoint_dir), cfg.pipeline_id,
                           cfg.topics_dir if topics else None, cfg.topics_glob,
                           cfg.topic_prefix)


def _run_query(spark: Any, cfg: PipelineConfig, once: bool, interrupted: threading.Event,
               trace: logging.Logger, monitor: PipelineMonitor) -> bool:
    query = start(spark, cfg, once=once, monitor=monitor)
    monitor.set_state("RUNNING")
    try:
        while not query.awaitTermination(1):
            if interrupted.is_set():
                log.info("stopping the query")
                query.stop()
                break
    except Exception as exc:
        trace.error("the query failed", exc_info=exc)
        if not getattr(query, "headwater_damaged", None):
            raise
    finally:
        close_query(query)
    if interrupted.is_set():
        return True
    if getattr(query, "headwater_damaged", None):
        # One clear message rather than Spark's wrapping of the Python traceback.
        raise query.headwater_damaged[0]
    if query.exception() is not None:
        text = str(query.exception())
        trace.error("the query failed:\n%s", text)
        raise RuntimeError(damage_message(text) or text)
    return False


def _on_signals(callback: Callable[[], None]) -> dict[int, Any]:
    """SIGINT/SIGTERM call `callback` (main thread only; elsewhere signals are left alone)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    old: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        old[sig] = signal.signal(sig, lambda _s, _f: callback())
    return old


def _restore_signals(old: dict[int, Any]) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)


_DAMAGE = re.compile(r"TopicLogDamaged: (topic log damaged: [^\n]*)")


def damage_message(text: str) -> str | None:
    """The `TopicLogDamaged` message inside a Spark error's text (a damage found while
    planning a batch is raised in the source's Python worker and comes back as text)."""
    found = _DAMAGE.search(text)
    return found.group(1) if found else None
