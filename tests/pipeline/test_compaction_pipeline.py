"""A real capture with `headwater.topics.cleanup.policy=compact`: the writer compacts the topic
while changes stream in, never past what the pipeline has not read, and merges the short
segments it rolls (a file count that stays bounded); the pipeline (Spark, SCD1 into Delta) then
equals the source table, and so does a new pipeline reading the compacted topic from its
start."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.runner import start
from headwater.topics import reader
from headwater.topics.segment import list_segments
from tests.integration.postgres.conftest import Env, wait_for

pytestmark = pytest.mark.integration

COMPACT = {
    "headwater.topics.cleanup.policy": "compact",
    "headwater.topics.delete.retention.ms": "0",  # tombstones go at the second pass
    "headwater.topics.min.cleanable.dirty.ratio": "0.1",
    "headwater.topics.retention.check.interval.ms": "200",
    "headwater.topics.segment.ms": "100",
}


def run_once(spark: Any, config: Path) -> None:
    query = start(spark, load_pipeline_config(config), once=True)
    query.awaitTermination()
    assert query.exception() is None


def delta_rows(path: Path) -> dict[int, tuple[Any, ...]]:
    return {r["id"]: (r["v"], r["note"]) for r in read_table(path / "public" / "t").to_pylist()}


def source_rows(env: Env) -> dict[int, tuple[Any, ...]]:
    return {r[0]: (r[1], r[2]) for r in env.sql("SELECT id, v, note FROM t")}


def removed(env: Env, topic: str) -> int:
    """Records compaction took out of the topic so far."""
    (info,) = [t for t in reader.list_topics(env.topics) if t.name == topic]
    return info.end_offset - info.start_offset - info.record_count


def segment_bases(env: Env, topic: str) -> list[int]:
    """The base offsets of the topic's segment files (one per file)."""
    return [s.base for s in list_segments(env.topics / topic)]


def test_a_compacted_topic_materializes_equal_to_the_source(env: Env, spark: Any) -> None:
    topic = f"{env.prefix}.public.t"
    env.sql("CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL, note text)")
    env.sql("INSERT INTO t SELECT g, 0, 'n' || g FROM generate_series(1, 40) g")
    props = {"headwater.pipeline.delta.path": env.tmp / "delta",
             "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint", **COMPACT}
    config = env.config(props)
    cap = env.capture(props)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        for round_ in range(1, 6):  # each key changes in several segments
            env.sql("UPDATE t SET v = %s WHERE id %% 2 = %s", (round_, round_ % 2))
        env.sql("DELETE FROM t WHERE id > 35")
        env.sql("INSERT INTO t VALUES (100, 1, 'late')")
        wait_for(lambda: removed(env, topic) > 60, what="compaction", timeout=30)
        # changes spread over time: a segment rolled every 100 ms, merged by the passes
        rolled: set[int] = set()
        for id_ in range(1, 21):
            env.sql("UPDATE t SET v = v + 10 WHERE id = %s", (id_,))
            for _ in range(5):
                time.sleep(0.03)
                rolled.update(segment_bases(env, topic))
        assert len(rolled) >= 10  # (seen: some roll and merge between two looks)
        # one merged file, and the few small dirty segments that min.cleanable.dirty.ratio
        # lets wait (0.1 of ~40 records: about 4)
        wait_for(lambda: len(segment_bases(env, topic)) <= 6, what="merged segments")
        run_once(spark, config)  # reads the compacted topic
        end = next(t for t in reader.list_topics(env.topics) if t.name == topic).end_offset
        run_once(spark, config)  # nothing new: it registers what the first run read
        marker = orjson.loads(next((env.topics / ".consumers").glob("*.json")).read_bytes())
        read_to = marker[topic]
        assert read_to == end
        env.sql("UPDATE t SET v = v + 100, note = NULL WHERE id <= 10")
        env.sql("UPDATE t SET v = v + 100 WHERE id <= 10")
        env.sql("DELETE FROM t WHERE id = 1")  # compacted away unread, the row would stay
        wait_for(lambda: cap.runtime.metrics.total_events_seen >= 40 + 5 * 20 + 5 + 1 + 20 + 21,
                 what="the stream")
        time.sleep(1.0)  # (passes every 0.2 s: time to do wrong, if they did)
        end = next(t for t in reader.list_topics(env.topics) if t.name == topic).end_offset
        assert [r.offset for r in reader.read(env.topics, topic, read_to)] == list(
            range(read_to, end))
        assert cap.error is None
    finally:
        cap.stop()
    run_once(spark, config)
    want = source_rows(env)
    assert delta_rows(env.tmp / "delta") == want
    # a new pipeline reads the compacted topic from its start (gaps, no delete events left)
    fresh = env.config({**props, "headwater.pipeline.delta.path": env.tmp / "delta2",
                        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint2"})
    run_once(spark, fresh)
    assert delta_rows(env.tmp / "delta2") == want
