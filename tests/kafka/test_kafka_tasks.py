"""The Kafka batch on Spark's engine (`pipeline.kafka_tasks`): the executors' tasks read the
batch's ranges in slices with confluent-kafka, the records reach the column-wise decoder as
Arrow arrays (`kafka_batch.arrow_lines`), and the Delta table equals the one the pipeline
makes from the local log holding the same records."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from headwater.model.topic import TopicRecord
from headwater.pipeline import columnar, kafka_source, kafka_tasks
from headwater.pipeline.source import read_range
from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic, unique
from tests.kafka.test_capture_postgres import current_lsn, run_pipeline_once

pytestmark = [pytest.mark.integration, pytest.mark.slow]

COLUMNS = ("id", "ver", "note")


def captured(env: Env, topic: str, changes: Callable[[], None]
             ) -> list[tuple[int, bytes | None, bytes | None]]:
    """The records of `changes`, made while capture streams into the local log."""
    cap = env.capture()
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        changes()
        target = current_lsn(env)

        def done() -> bool:
            try:
                return int(json.loads(env.offsets.read_text())["offset"]["lsn"]) >= target
            except (OSError, ValueError, KeyError):
                return False

        wait_for(done, timeout=120, what="capture caught up")
    finally:
        cap.stop()
    return list(read_range(env.topics, topic, 0, 1 << 62))


def into_kafka(kafka: KafkaCluster, records: list[tuple[int, bytes | None, bytes | None]],
               topic: str) -> None:
    """The same records into a Kafka topic of 3 partitions (by key, as capture writes)."""
    from headwater.config.kafka import kafka_settings
    from headwater.kafka.writer import KafkaTopicWriter

    writer = KafkaTopicWriter(kafka_settings({
        "headwater.topics.store": "kafka", "bootstrap.servers": kafka.bootstrap,
        "topic.creation.default.partitions": "3",
        "topic.creation.default.replication.factor": str(kafka.replication_factor)},
        "kafka-tasks-test"))
    writer.append({topic: [TopicRecord(k, v, 0) for _o, k, v in records]})
    writer.flush(120)
    writer.close()


def payload(document: bytes | None, head: bytes) -> bytes:
    """A document's payload as a line, one record at a time (the reference)."""
    assert document is not None and document.startswith(head)
    return document[len(head):document.rindex(b"}")].replace(b"\n", b" ") + b"\n"


def table(path: Path) -> list[tuple[Any, ...]]:
    from headwater.pipeline.delta_target import read_table

    rows = read_table(path).to_pylist()
    return sorted(tuple(r[c] for c in COLUMNS) for r in rows)


def test_kafka_batch_on_executors_equals_the_local_log(env: Env, kafka: KafkaCluster,
                                                       spark: Any, monkeypatch: Any) -> None:
    env.prefix = unique("ktask")
    topic = f"{env.prefix}.public.t"
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL, note text)")
    env.conn.commit()

    def changes() -> None:
        # inserts, a key updated twice in a transaction, deletes, keys deleted and inserted
        env.sql("INSERT INTO t SELECT g, 0, 'n' || g FROM generate_series(1, 3000) g")
        env.conn.commit()
        env.sql("UPDATE t SET ver = ver + 1, note = NULL WHERE id % 3 = 0")
        env.sql("UPDATE t SET ver = ver + 1 WHERE id % 6 = 0")
        env.sql("DELETE FROM t WHERE id % 7 = 0")
        env.conn.commit()
        env.sql("INSERT INTO t SELECT g, 9, 'again' FROM generate_series(7, 3000, 49) g")
        env.conn.commit()

    records = captured(env, topic, changes)
    source = sorted(env.sql("SELECT id, ver, note FROM t"))
    assert len(records) > 4000
    into_kafka(kafka, records, topic)

    # The local log's pipeline (the reference).
    run_pipeline_once(spark, env.config({
        "headwater.pipeline.delta.path": env.tmp / "delta-local",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint-local"}))
    local = table(env.tmp / "delta-local" / "public" / "t")
    assert local == source

    # The Kafka pipeline: every batch on the executors, never the driver's reader.
    stages: list[dict[str, list[Any]]] = []
    real_stage = kafka_tasks.run_stage

    def stage(*args: Any, **kwargs: Any) -> dict[str, list[Any]]:
        out = real_stage(*args, **kwargs)
        stages.append(out)
        return out

    def no_fetch(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the driver fetched a batch the executors should have read")

    monkeypatch.setattr(kafka_tasks, "run_stage", stage)
    monkeypatch.setattr(kafka_source.KafkaTopics, "fetch", no_fetch)
    props = kafka_props(kafka, **{
        "headwater.pipeline.delta.path": env.tmp / "delta-kafka",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint-kafka",
        "headwater.pipeline.executors.min.records": 1,
        "headwater.pipeline.max.records.per.trigger": 2500})
    run_pipeline_once(spark, env.config(props))
    assert table(env.tmp / "delta-kafka" / "public" / "t") == local
    assert len(stages) >= 2  # several batches
    parts = [p for s in stages for p in s[topic]]
    assert parts and all(p.refused is None for p in parts), parts
    assert len({p.part for s in stages for p in s[topic]}) >= 2  # partitions in parallel tasks
    assert sum(p.events for p in parts) == sum(1 for r in records if r[2] is not None)

    # With the Spark Delta writer the batch is also netted and merged on the executors
    # (`apply_staged` gets the target, as for the local log): the target takes a DataFrame
    # (`merge_net`), never the driver's rows.
    from headwater.pipeline.delta_spark import SparkDeltaTarget

    frames: list[int] = []
    real_merge = SparkDeltaTarget.merge_net

    def merge_net(self: SparkDeltaTarget, frame: Any, batch_id: int) -> None:
        frames.append(batch_id)
        real_merge(self, frame, batch_id)

    def no_rows(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("the batch's rows were handed to the driver's writer")

    monkeypatch.setattr(SparkDeltaTarget, "merge_net", merge_net)
    monkeypatch.setattr(SparkDeltaTarget, "apply_scd1_net", no_rows)
    run_pipeline_once(spark, env.config({
        **props, "headwater.pipeline.delta.path": env.tmp / "delta-frames",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint-frames",
        "headwater.pipeline.delta.writer": "spark",
        "headwater.pipeline.max.records.per.trigger": 100_000}))
    assert frames
    assert table(env.tmp / "delta-frames" / "public" / "t") == local


def test_slices_are_the_records_column_wise(env: Env, kafka: KafkaCluster) -> None:
    """A task's slice (`kafka_tasks.read_slice`), from a partition's start, its middle or to
    its end, holds exactly the records fetched one by one in that range, as the same `Lines`,
    and decodes column-wise (no NotColumnar: no event-by-event fallback)."""
    from headwater.kafka.consume import KafkaReadError

    env.prefix = unique("klines")
    topic = f"{env.prefix}.public.t"
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL, note text)")
    env.conn.commit()

    def changes() -> None:
        env.sql("INSERT INTO t SELECT g, 0, E'a\\nb' FROM generate_series(1, 500) g")
        env.sql("DELETE FROM t WHERE id % 5 = 0")
        env.conn.commit()

    into_kafka(kafka, captured(env, topic, changes), topic)
    settings = {"bootstrap.servers": kafka.bootstrap, "group.id": "slices",
                "enable.auto.commit": "false", "enable.partition.eof": "true"}
    every = read_topic(kafka.bootstrap, topic)
    for partition in range(3):
        mine = [r for r in every if r.partition == partition]
        end = mine[-1].offset + 1
        for start, stop in ((0, end), (end // 3, 2 * end // 3), (end // 2, end)):
            part = kafka_tasks.read_slice(settings, 7, topic, partition, start, stop)
            got = part.lines()
            want = [r for r in mine if start <= r.offset < stop and r.value is not None]
            assert got.count == len(want) > 0
            assert got.offsets.tolist() == [kafka_source.virtual_offset(r.offset, r.partition)
                                            for r in want]
            assert got.value_lines.tobytes() == b"".join(
                payload(r.value, got.value_head[len(b'},"value":'):]) for r in want)
            assert got.key_lines.tobytes() == b"".join(payload(r.key, got.key_head)
                                                       for r in want)
            decoded = columnar.decode_net(topic, got, carry=True)
            assert decoded is not None and decoded.events == got.count
        # a slice past the partition's end: records missing, never a short read
        with pytest.raises(KafkaReadError, match="before"):
            kafka_tasks.read_slice(settings, 7, topic, partition, end - 1, end + 5)
