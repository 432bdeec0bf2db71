"""The pipeline's one Spark source (`pipeline.positions`): the store named by the options, each
store's positions, and a batch's ranges; no Spark needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.model.topic import TopicRecord
from headwater.pipeline import positions
from headwater.pipeline.datastream.file_source import FilePositions
from headwater.pipeline.kafka_source import KafkaPositions
from headwater.pipeline.source import TopicLogPositions
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.log import TopicLog
from headwater.topics.retention import consumer_floor


def test_each_store_is_named_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    assert isinstance(positions.store_for({"store": "topics", "path": str(tmp_path)}),
                      TopicLogPositions)
    assert isinstance(positions.store_for({"store": "kafka", "consumer": "{}"}),
                      KafkaPositions)
    assert isinstance(positions.store_for({"store": "files", "path": str(tmp_path),
                                           "log": str(tmp_path / "log")}), FilePositions)
    with pytest.raises(ValueError, match="unknown store 'tansu'; one of topics, kafka, files"):
        positions.store_for({"store": "tansu"})


def test_a_batch_has_a_range_for_every_name_that_moved() -> None:
    assert positions.ranges({"a": 3, "b": 5}, {"a": 3, "b": 9, "c": 2}) == [
        ("b", 5, 9), ("c", 0, 2)]


def _log(root: Path, topic: str, n: int) -> None:
    with TopicLog(root) as log:
        log.append({topic: [TopicRecord(b'{"id":%d}' % i, b'{"v":%d}' % i, 0)
                            for i in range(n)]})


def test_the_topic_log_store_plans_registers_and_refuses_a_rewound_log(tmp_path: Path) -> None:
    _log(tmp_path, "inv.public.t", 10)
    _log(tmp_path, "inv.public.u", 4)
    store = TopicLogPositions({"path": str(tmp_path), "topics": "inv.public.t",
                               "consumer_id": "p1"})
    assert store.latest() == {"inv.public.t": 10}
    assert store.plan({}, store.latest(), 6) == {"inv.public.t": 6}
    # where the pipeline starts is registered, so retention holds back from it
    assert consumer_floor(tmp_path, "inv.public.t") == 0
    store.committed({"inv.public.t": 6})
    assert consumer_floor(tmp_path, "inv.public.t") == 6
    with pytest.raises(TopicLogDamaged, match="checkpoint has read up to offset 12"):
        store.plan({"inv.public.t": 12}, store.latest(), None)


def test_the_kafka_store_refuses_a_partition_behind_the_checkpoint() -> None:
    store = KafkaPositions({"consumer": "{}", "topics": "*"})
    assert store.plan({"t#0": 5}, {"t#0": 9, "t#1": 3}, None) == {"t#0": 9, "t#1": 3}
    with pytest.raises(RuntimeError, match=r"Kafka partition t#0 ends at offset 2 but this "
                                           r"pipeline's checkpoint has read up to 5"):
        store.plan({"t#0": 5}, {"t#0": 2}, None)


def test_the_files_store_counts_file_log_lines(tmp_path: Path) -> None:
    store = FilePositions({"path": str(tmp_path), "log": str(tmp_path / "ck" / "files.log")})
    assert store.initial() == {"files": 0}
    assert store.plan({"files": 1}, {"files": 5}, 2) == {"files": 3}
    assert store.plan({"files": 1}, {"files": 5}, None) == {"files": 5}
