"""The compaction pass on files: retention's clock kept, tombstones timed from their segment's
first compaction, the consumer marker and the lag honoured unless told otherwise, passes only
when worth it, damage never compacted over; the writer's schedule; the configuration keys."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from headwater.config import ConfigError
from headwater.connectors.postgres.config import CONNECTOR_CLASS, validate_postgres_config
from headwater.model.topic import TopicRecord
from headwater.topics import reader
from headwater.topics.checksum import body_end
from headwater.topics.compaction import CompactionPolicy
from headwater.topics.compaction_files import STATE_FILE
from headwater.topics.compactor import compact_topic
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.retention import RetentionPolicy, apply_retention, write_consumer
from headwater.topics.retention_config import refuse_elsewhere, retention_rules
from headwater.topics.segment import list_segments
from headwater.topics.sink import TopicLogSink

from .helpers import HOUR_MS, UNMERGED, Spec, T, age, compact, key, now_ms, value, write_segments

SEGMENTS: list[list[Spec]] = [[(1, "a"), (2, "a"), (2, None)], [(1, "b"), (3, "a")], [(3, "b")]]


def offsets(root: Path) -> list[int]:
    return [r.offset for r in reader.read(root, T)]


def test_a_rewrite_keeps_the_segments_time_for_retention(tmp_path: Path) -> None:
    write_segments(tmp_path, SEGMENTS)
    age(tmp_path, hours=5)
    times = [s.path.stat().st_mtime_ns for s in list_segments(tmp_path / T)]
    compact_topic(tmp_path, T, compact(), now_ms(), segment_bytes=UNMERGED)
    assert [s.path.stat().st_mtime_ns for s in list_segments(tmp_path / T)] == times
    assert offsets(tmp_path) == [2, 3, 5]
    # compact,delete: retention by time still sees five-hour-old segments
    both = RetentionPolicy(retention_ms=4 * HOUR_MS, compaction=CompactionPolicy())
    assert apply_retention(tmp_path, T, both, now_ms()) == 2  # (the last segment stays)
    assert offsets(tmp_path) == [5]
    compact_topic(tmp_path, T, compact(ratio=0.0), now_ms(), segment_bytes=UNMERGED)
    assert list(orjson.loads((tmp_path / T / STATE_FILE).read_bytes())) == ["5"]  # pruned


def test_tombstones_stay_delete_retention_ms_after_the_first_compaction(tmp_path: Path) -> None:
    write_segments(tmp_path, SEGMENTS)
    age(tmp_path, hours=5)  # (their age does not count: only the time since compaction)
    now = now_ms()
    policy = compact(HOUR_MS)
    compact_topic(tmp_path, T, policy, now, segment_bytes=UNMERGED)
    assert offsets(tmp_path) == [2, 3, 5]  # 2: the tombstone of key 2
    assert orjson.loads((tmp_path / T / STATE_FILE).read_bytes())["0"] == [now, 1]
    assert compact_topic(tmp_path, T, policy, now + HOUR_MS - 1, segment_bytes=UNMERGED) is None
    done = compact_topic(tmp_path, T, policy, now + HOUR_MS, segment_bytes=UNMERGED)
    assert done is not None and done.tombstones_removed == 1 and offsets(tmp_path) == [3, 5]
    # nothing left to do
    assert compact_topic(tmp_path, T, policy, now + 2 * HOUR_MS, segment_bytes=UNMERGED) is None


def test_a_lost_state_file_keeps_tombstones_longer_never_shorter(tmp_path: Path) -> None:
    write_segments(tmp_path, SEGMENTS)
    age(tmp_path, hours=5)
    now = now_ms()
    policy = compact(HOUR_MS)
    compact_topic(tmp_path, T, policy, now, segment_bytes=UNMERGED)
    (tmp_path / T / STATE_FILE).write_bytes(b"{not json")
    later = now + HOUR_MS // 2
    # found compacted "now"
    assert compact_topic(tmp_path, T, policy, later, segment_bytes=UNMERGED) is None
    assert compact_topic(tmp_path, T, policy, now + HOUR_MS, segment_bytes=UNMERGED) is None
    assert offsets(tmp_path) == [2, 3, 5]
    assert compact_topic(tmp_path, T, policy, later + HOUR_MS, segment_bytes=UNMERGED) is not None
    assert offsets(tmp_path) == [3, 5]


def test_the_consumer_marker_holds_compaction_back_unless_ignored(tmp_path: Path) -> None:
    write_segments(tmp_path, SEGMENTS)
    age(tmp_path, hours=1)
    write_consumer(tmp_path, "pipe", {T: 4})  # read 0..3: only the first segment is behind it
    compact_topic(tmp_path, T, compact(), now_ms(), segment_bytes=UNMERGED)
    # key 1's later record (3) is past the marker: the first segment is cleaned on its own
    assert offsets(tmp_path) == [0, 2, 3, 4, 5]
    write_consumer(tmp_path, "pipe", {T: 0})
    compact_topic(tmp_path, T, compact(ignore_consumers=True, ratio=0.0), now_ms(),
                  segment_bytes=UNMERGED)
    assert offsets(tmp_path) == [2, 3, 5]


def test_a_pass_only_when_worth_it(tmp_path: Path) -> None:
    write_segments(tmp_path, [[(k, "a") for k in range(20)], [(1, "b")]])
    age(tmp_path, hours=1)
    now = now_ms()
    assert compact_topic(tmp_path, T, compact(), now, segment_bytes=UNMERGED) is not None
    with_new = [[(1, "c")]]
    write_segments(tmp_path, with_new)
    age(tmp_path, hours=1)
    # dirty ratio < 0.5
    assert compact_topic(tmp_path, T, compact(), now, segment_bytes=UNMERGED) is None
    assert compact_topic(tmp_path, T, compact(max_lag_ms=HOUR_MS // 2), now,
                         segment_bytes=UNMERGED) is not None
    assert offsets(tmp_path)[-1] == 21 and 20 not in offsets(tmp_path)


def test_null_keys_are_kept(tmp_path: Path) -> None:
    write_segments(tmp_path, [[(None, "a"), (None, None), (1, "a")], [(1, "b"), (None, "c")]])
    age(tmp_path, hours=1)
    compact_topic(tmp_path, T, compact(0), now_ms(), segment_bytes=UNMERGED)
    compact_topic(tmp_path, T, compact(0, ratio=0.0), now_ms() + 1, segment_bytes=UNMERGED)
    assert offsets(tmp_path) == [0, 1, 3, 4]


def test_a_damaged_segment_is_never_compacted(tmp_path: Path) -> None:
    write_segments(tmp_path, SEGMENTS)
    age(tmp_path, hours=1)
    first = list_segments(tmp_path / T)[0].path
    lines = first.read_bytes().splitlines(keepends=True)
    first.write_bytes(lines[0] + lines[2])  # record 1 is missing
    os.utime(first, (0, 0))
    before = {p.name: p.read_bytes() for p in (tmp_path / T).iterdir()}
    with pytest.raises(TopicLogDamaged, match="record 1 is missing") as info:
        compact_topic(tmp_path, T, compact(), now_ms(), segment_bytes=UNMERGED)
    assert (info.value.segment, info.value.offset) == (first, 1)
    assert {p.name: p.read_bytes() for p in (tmp_path / T).iterdir()} == before


def test_a_changed_byte_stops_a_pass_and_compacted_lines_keep_their_checksums(
        tmp_path: Path) -> None:
    write_segments(tmp_path, SEGMENTS)
    age(tmp_path, hours=1)
    first = list_segments(tmp_path / T)[0].path
    good = first.read_bytes()
    lines = good.splitlines(keepends=True)
    changed = lines[1].replace(b'"v":"a"', b'"v":"b"')  # still parses, same offset
    assert changed != lines[1]
    first.write_bytes(b"".join([lines[0], changed, *lines[2:]]))
    os.utime(first, (0, 0))
    with pytest.raises(TopicLogDamaged, match="CRC-32C checksum does not match") as info:
        compact_topic(tmp_path, T, compact(), now_ms(), segment_bytes=UNMERGED)
    assert (info.value.segment, info.value.offset, info.value.position) == (
        first, 1, len(lines[0]))
    first.write_bytes(good)
    os.utime(first, (0, 0))
    assert compact_topic(tmp_path, T, compact(), now_ms(), segment_bytes=UNMERGED) is not None
    kept = b"".join(s.path.read_bytes() for s in list_segments(tmp_path / T))
    assert kept and all(body_end(line) > 0 for line in kept.splitlines(keepends=True))


def test_the_writer_compacts_on_its_schedule(tmp_path: Path) -> None:
    rules = retention_rules({"headwater.topics.cleanup.policy": "compact",
                             "headwater.topics.retention.check.interval.ms": "3600000"})
    sink = TopicLogSink(tmp_path, segment_bytes=200, segment_ms=1000, retention=rules)
    try:
        for i in range(12):
            sink.append({T: [TopicRecord(key(i % 2), value(str(i)), 1)]})
        sink.maintain()  # the first check is due at once
        assert offsets(tmp_path)[:2] == [10, 11]
        for i in range(12):
            sink.append({T: [TopicRecord(key(i % 2), value(str(i)), 1)]})
        sink.maintain()  # the next one only an hour later
        assert len(offsets(tmp_path)) > 12
    finally:
        sink.close()
    assert not any(s.compacted for s in list_segments(tmp_path / T) if s.base >= 12)


def test_configuration() -> None:
    rules = retention_rules({
        "headwater.topics.cleanup.policy": "compact,delete",
        "headwater.topics.min.compaction.lag.ms": "1000",
        "headwater.topics.delete.retention.ms": "5",
        "headwater.topics.retention.ms": "600000",
        "headwater.topics.retention.groups": "log",
        "headwater.topics.retention.log.include": r"p\.public\.log",
        "headwater.topics.retention.log.cleanup.policy": "delete",
        "headwater.topics.retention.log.retention.bytes": "100",
    })
    assert rules.for_topic(T) == RetentionPolicy(
        600_000, -1, False, True, CompactionPolicy(1000, (1 << 63) - 1, 5, 0.5))
    assert rules.for_topic("p.public.log") == RetentionPolicy(600_000, 100, False, True, None)
    problems = {
        "headwater.topics.cleanup.policy=compacted": "expected delete, compact or compact,delete",
        "headwater.topics.delete.retention.ms=5": "no effect with cleanup.policy=delete",
        "headwater.topics.min.cleanable.dirty.ratio=1.5": "a number from 0 to 1",
        "headwater.topics.max.compaction.lag.ms=0": "expected a number >= 1",
        "headwater.topics.cleanup.policy.x=1": "unknown",
        "headwater.topics.segment.jitter.ms=1": None,  # not ours: the loader refuses it
    }
    for text, problem in problems.items():
        k, v = text.split("=")
        if problem is None:
            assert retention_rules({k: v}) == retention_rules({})
            continue
        with pytest.raises(ConfigError, match=problem.replace(".", r"\.")):
            retention_rules({k: v})
    with pytest.raises(ConfigError, match=r"no effect with cleanup\.policy=compact"):
        retention_rules({"headwater.topics.cleanup.policy": "compact",
                         "headwater.topics.retention.bytes": "1"})
    with pytest.raises(ConfigError, match=r"larger than max\.compaction\.lag\.ms"):
        retention_rules({"headwater.topics.cleanup.policy": "compact",
                         "headwater.topics.min.compaction.lag.ms": "10",
                         "headwater.topics.max.compaction.lag.ms": "5"})
    with pytest.raises(ConfigError, match="the events go to Kafka"):
        refuse_elsewhere({"headwater.topics.cleanup.policy": "compact"}, "Kafka")
    config, _ = validate_postgres_config({
        "name": "c", "connector.class": CONNECTOR_CLASS, "topic.prefix": "p",
        "database.hostname": "h", "database.user": "u", "database.dbname": "d",
        "headwater.topics.cleanup.policy": "compact",
        "headwater.topics.delete.retention.ms": "5"}, env={})
    assert retention_rules(config.passthrough).default.compaction == CompactionPolicy(
        delete_retention_ms=5)


def test_the_capture_compacts_the_local_log_and_refuses_the_keys_elsewhere(
        tmp_path: Path) -> None:
    from headwater.capture import build_runtime

    common = {"connector.class": CONNECTOR_CLASS, "topic.prefix": "shop",
              "database.hostname": "localhost", "database.user": "u", "database.dbname": "d",
              "offset.storage.file.filename": str(tmp_path / "o.json"),
              "headwater.topics.dir": str(tmp_path / "topics"),
              "headwater.topics.cleanup.policy": "compact"}
    cfg, _ = validate_postgres_config(common, env={})
    runtime = build_runtime(cfg)
    try:
        assert isinstance(runtime.writer, TopicLogSink) and runtime.writer.retention is not None
        assert runtime.writer.retention.for_topic("shop.public.t").compaction is not None
    finally:
        runtime.writer.close()
    cfg, _ = validate_postgres_config({
        **common, "headwater.event.format": "datastream", "headwater.destination": "files",
        "headwater.destination.files.dir": str(tmp_path / "files")}, env={})
    with pytest.raises(ConfigError, match="the events go to files"):
        build_runtime(cfg)
