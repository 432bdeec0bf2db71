"""pyspark 4.1 hands a Python streaming source no start and no read limit: `Starts` keeps
them, from the batch it planned last or, after a restart, from the query's offset log."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.pipeline import read_limits
from headwater.pipeline.read_limits import Starts, last_planned_end


def _offsets(checkpoint: Path, batch: int, line: str) -> None:
    folder = checkpoint / "offsets"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{line}\n')


@pytest.fixture
def on_41(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_limits, "ADMISSION_CONTROL", False)


def test_the_newest_offset_log_entry_is_where_the_next_batch_starts(tmp_path: Path) -> None:
    assert last_planned_end(tmp_path) is None
    _offsets(tmp_path, 1, '{"a":10}')
    _offsets(tmp_path, 12, '{"a":120,"b":7}')
    (tmp_path / "offsets" / ".12.tmp").write_text("partial")
    assert last_planned_end(tmp_path) == {"a": 120, "b": 7}


def test_an_offset_log_of_another_shape_is_an_error_naming_the_file(tmp_path: Path) -> None:
    _offsets(tmp_path, 3, '{"a":1}\n{"b":2}')  # two sources
    with pytest.raises(ValueError, match=r"offsets/3"):
        last_planned_end(tmp_path)


@pytest.mark.usefixtures("on_41")
def test_a_new_query_starts_at_the_initial_offsets_then_follows_its_own_plans() -> None:
    starts = Starts(None, 100, once=False)
    assert starts.start(None, lambda: {"a": 5}) == {"a": 5}
    assert starts.rows(None) == 100
    starts.planned({"a": 105})
    assert starts.start(None, lambda: {"a": 5}) == {"a": 105}


@pytest.mark.usefixtures("on_41")
def test_a_restarted_query_starts_where_its_offset_log_ends(tmp_path: Path) -> None:
    _offsets(tmp_path, 4, '{"a":400}')
    starts = Starts(str(tmp_path), 100, once=False)
    assert starts.start(None, lambda: {"a": 0}) == {"a": 400}


@pytest.mark.usefixtures("on_41")
def test_a_once_run_on_41_keeps_its_limit_and_fixes_its_end_first_and_once() -> None:
    starts = Starts(None, 100, once=True)
    assert starts.rows(None) == 100
    frozen: list[int] = []
    assert starts.start(None, lambda: {"a": 0}, lambda: frozen.append(1)) == {"a": 0}
    starts.planned({"a": 100})
    assert starts.start(None, lambda: {"a": 0}, lambda: frozen.append(1)) == {"a": 100}
    assert frozen == [1]
    assert read_limits.once_trigger() == {"processingTime": "0 seconds"}


def test_a_continuous_run_never_fixes_its_end(on_41: None) -> None:
    frozen: list[int] = []
    Starts(None, 100, once=False).start(None, dict, lambda: frozen.append(1))
    assert frozen == []


def test_with_admission_control_spark_s_start_and_limit_are_used(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_limits, "ADMISSION_CONTROL", True)
    starts = Starts(None, 100, once=False)
    assert starts.start({"a": 3}, lambda: {"a": 0}) == {"a": 3}
    assert starts.rows(read_limits.ReadMaxRows(7)) == 7
    assert starts.rows(None) is None
