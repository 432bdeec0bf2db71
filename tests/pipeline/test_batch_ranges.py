"""Micro-batch offset ranges read from the query's offset log, as Spark writes it."""

from __future__ import annotations

from pathlib import Path

from headwater.pipeline.runner import checkpointed_ranges

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
