"""Retention of the local topic log: whole sealed segments behind every consumer go, the log
start is recorded, readers and `topics verify` accept the retained log, a pipeline behind the
log start is stopped with an error."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from headwater.config import ConfigError
from headwater.model.topic import TopicRecord
from headwater.pipeline.source import read_range
from headwater.topics import reader
from headwater.topics.check import check_topic
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.log import TopicLog
from headwater.topics.retention import (
    RetentionPolicy,
    apply_retention,
    log_start,
    write_consumer,
)
from headwater.topics.retention_config import retention_rules
from headwater.topics.segment import list_segments

T = "p.public.t"


def fill(root: Path, segments: int, per: int = 10) -> None:
    with TopicLog(root) as log:
        n = 0
        for _ in range(segments):
            log.append({T: [TopicRecord(b'{"id":%d}' % i, b'{"v":%d}' % i, 1)
                            for i in range(n, n + per)]})
            n += per
            log.maintain(now_ms=int(time.time() * 1000) + 10_000_000)  # seal by age


def test_size_retention_stops_at_the_consumer_and_readers_cope(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    fill(root, 5)
    assert [s.base for s in list_segments(root / T)] == [0, 10, 20, 30, 40]
    write_consumer(root, "pipe", {T: 25})  # read up to 24: segments 0 and 10 are behind it
    removed = apply_retention(root, T, RetentionPolicy(retention_bytes=0), int(time.time() * 1000))
    assert removed == 2 and log_start(root / T) == 20
    assert [s.base for s in list_segments(root / T)] == [20, 30, 40]
    assert [r.offset for r in reader.read(root, T)] == list(range(20, 50))
    info = reader.list_topics(root)[0]
    assert (info.start_offset, info.end_offset, info.record_count) == (20, 50, 30)
    assert not check_topic(root, T).damages  # topics verify accepts it
    assert [o for o, _, _ in read_range(root, T, 25, 35)] == list(range(25, 35))
    with pytest.raises(TopicLogDamaged, match="retention removed"):
        list(read_range(root, T, 5, 35))
    # the last (here sealed) segment always stays; ignore.consumers passes the consumer
    removed = apply_retention(root, T, RetentionPolicy(retention_bytes=0, ignore_consumers=True),
                              int(time.time() * 1000))
    assert removed == 2 and log_start(root / T) == 40
    with TopicLog(root) as log:  # the writer reopens a retained log and continues its offsets
        assert log.append({T: [TopicRecord(b"1", b"1", 1)]}) == {T: (50, 50)}


def test_time_retention_only_old_segments(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    fill(root, 3)
    old = time.time() - 3600
    for seg in list_segments(root / T)[:1]:
        os.utime(seg.path, (old, old))
    removed = apply_retention(root, T, RetentionPolicy(retention_ms=60_000),
                              int(time.time() * 1000))
    assert removed == 1 and log_start(root / T) == 10
    assert not check_topic(root, T).damages


def test_a_missing_first_segment_without_retention_is_still_damage(tmp_path: Path) -> None:
    root = tmp_path / "topics"
    fill(root, 3)
    list_segments(root / T)[0].path.unlink()
    assert check_topic(root, T).damages


def test_rules_per_topic_group() -> None:
    rules = retention_rules({"headwater.topics.retention.ms": "1000",
                             "headwater.topics.retention.groups": "big",
                             "headwater.topics.retention.big.include": r"p\.public\..*",
                             "headwater.topics.retention.big.retention.bytes": "5"})
    assert rules.for_topic(T) == RetentionPolicy(1000, 5)
    assert rules.for_topic("other") == RetentionPolicy(1000, -1)
    with pytest.raises(ConfigError):
        retention_rules({"headwater.topics.retention.mss": "1"})
