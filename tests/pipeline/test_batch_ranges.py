"""Micro-batch offset ranges read from the query's offset log, as Spark writes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from headwater.pipeline.runner import checkpointed_ranges, clear_unstarted_checkpoint

META = '{"batchWatermarkMs":0,"batchTimestampMs":1795269363963,"conf":{}}'


def offsets(checkpoint: Path, batch: int, text: str) -> None:
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "offsets" / str(batch)).write_text(f"v1\n{META}\n{text}")


def test_first_batch_starts_at_zero(tmp_path: Path) -> None:
    offsets(tmp_path, 0, '{"a.public.t": 120, "a.public.u": 0}')
    assert checkpointed_ranges(tmp_path, 0) == {"a.public.t": (0, 120), "a.public.u": (0, 0)}


def test_a_batch_starts_where_the_previous_one_ended(tmp_path: Path) -> None:
    offsets(tmp_path, 6, '{"a.public.t": 120}')
    offsets(tmp_path, 7, '{"a.public.t": 180, "a.public.new": 5}')
    assert checkpointed_ranges(tmp_path, 7) == {"a.public.t": (120, 180),
                                                "a.public.new": (0, 5)}


def test_anything_unexpected_defers_to_spark(tmp_path: Path) -> None:
    assert checkpointed_ranges(tmp_path, 0) is None  # no log
    offsets(tmp_path, 3, '{"a.public.t": 10}')
    assert checkpointed_ranges(tmp_path, 3) is None  # previous batch's offsets missing
    offsets(tmp_path, 4, '{"a.public.t": 10}\n{"other source": 1}')
    assert checkpointed_ranges(tmp_path, 4) is None  # two sources
    offsets(tmp_path, 5, '{"a.public.t": "10"}')
    assert checkpointed_ranges(tmp_path, 5) is None  # not our offsets
    (tmp_path / "offsets" / "6").write_text(f"v2\n{META}\n{{}}")
    assert checkpointed_ranges(tmp_path, 6) is None  # another log version


def test_an_interrupted_first_offset_write_is_cleared(tmp_path: Path) -> None:
    """kill -9 before Spark renamed `offsets/0` into place leaves only its temporary file,
    which would make Spark refuse the checkpoint on restart."""
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / ".0.3f2a.tmp").write_text("v1\n")
    (tmp_path / "offsets" / "..0.3f2a.tmp.crc").write_text("x")
    (tmp_path / "metadata").write_text('{"id":"q"}')
    clear_unstarted_checkpoint(tmp_path)
    assert list((tmp_path / "offsets").iterdir()) == []
    assert (tmp_path / "metadata").exists()


def test_a_started_offset_log_is_left_alone(tmp_path: Path) -> None:
    offsets(tmp_path, 0, '{"a.public.t": 120}')
    (tmp_path / "offsets" / ".1.77aa.tmp").write_text("v1\n")
    clear_unstarted_checkpoint(tmp_path)
    assert sorted(p.name for p in (tmp_path / "offsets").iterdir()) == [".1.77aa.tmp", "0"]
    clear_unstarted_checkpoint(tmp_path / "absent")  # no checkpoint yet: nothing to do


def test_spark_restarts_after_an_interrupted_first_offset_write(tmp_path: Path,
                                                                spark: Any) -> None:
    import random

    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.delta_target import read_table
    from headwater.pipeline.runner import start
    from tests.pipeline.test_columnar import TOPIC, workload, write

    write(tmp_path / "topics", workload(random.Random(3), mysql=False, n=50))
    config = tmp_path / "p.properties"
    config.write_text(f"topic.prefix={TOPIC.split('.')[0]}\nheadwater.topics.dir=topics\n"
                      "headwater.pipeline.delta.path=delta\n"
                      "headwater.pipeline.checkpoint.dir=checkpoint\n")
    (tmp_path / "checkpoint" / "offsets").mkdir(parents=True)
    (tmp_path / "checkpoint" / "offsets" / ".0.3f2a.tmp").write_text("v1\n")
    query = start(spark, load_pipeline_config(config), once=True)
    query.awaitTermination()
    assert query.exception() is None
    assert read_table(tmp_path / "delta" / "public" / "t").num_rows > 0
