"""A changelog appends each source event once: re-deliveries of at-least-once capture (the same
position, op and key at a new topic offset) are dropped against the batch and against the
changelog's rows, and nothing else is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from headwater.pipeline import changelog_once
from headwater.pipeline.changelog_once import CHANGELOG_OP, first_mask
from headwater.pipeline.columnar import SEQ
from headwater.pipeline.decode import TableChanges


def seq(position: str, offset: int) -> str:
    return f"{position}{offset:016x}"


class Seen:
    """A target whose changelog holds `rows` (sequence, op, key)."""

    def __init__(self, rows: list[tuple[str, str, Any]] | None = None) -> None:
        self.rows = rows
        self.asked: list[str] = []

    def changelog_since(self, changes: Any, since: str, keys: Sequence[str]
                        ) -> pa.Table | None:
        self.asked.append(since)
        if self.rows is None:
            return None
        rows = [r for r in self.rows if r[0] >= since]
        return pa.table({SEQ: [r[0] for r in rows], CHANGELOG_OP: [r[1] for r in rows],
                         **({k: [r[2] for r in rows] for k in keys})})


def batch(rows: list[tuple[str, str, Any]], keys: Sequence[str] = ("id",)) -> pa.Table:
    return pa.table({SEQ: pa.array([r[0] for r in rows], pa.string()),
                     CHANGELOG_OP: pa.array([r[1] for r in rows], pa.string()),
                     **{k: pa.array([r[2] for r in rows], pa.int64()) for k in keys}})


def kept(rows: list[tuple[str, str, Any]], target: Seen, keys: Sequence[str] = ("id",)
         ) -> list[int]:
    mask = first_mask(batch(rows, keys), keys, TableChanges("t"), target)
    return list(range(len(rows))) if mask is None else [
        i for i, k in enumerate(mask.to_pylist()) if k]


def test_a_redelivery_inside_the_batch_is_dropped() -> None:
    rows = [(seq("a1", 1), "c", 1), (seq("a2", 2), "u", 1), (seq("a1", 3), "c", 1)]
    assert kept(rows, Seen()) == [0, 1]


def test_a_redelivery_of_an_appended_event_is_dropped_and_the_read_is_bounded() -> None:
    target = Seen([(seq("a0", 0), "c", 9), (seq("a1", 1), "c", 1)])
    rows = [(seq("a2", 5), "u", 1), (seq("a1", 6), "c", 1), (seq("a3", 7), "d", 1)]
    assert kept(rows, target) == [0, 2]
    assert target.asked == ["a1"]  # from the batch's lowest position on


def test_snapshot_reads_of_one_position_are_distinct_rows_by_key() -> None:
    rows = [(seq("s0", 0), "r", 1), (seq("s0", 1), "r", 2), (seq("s0", 2), "r", 1)]
    assert kept(rows, Seen([(seq("s0", 9), "r", 3)])) == [0, 1]


def test_the_same_position_with_another_op_or_key_is_another_event() -> None:
    # a primary-key change: the delete of the old key and the create of the new, one position
    rows = [(seq("k7", 0), "d", 7), (seq("k7", 1), "c", 70)]
    assert kept(rows, Seen([(seq("k7", 0), "c", 7)])) == [0, 1]


def test_a_late_event_not_in_the_changelog_is_kept() -> None:
    target = Seen([(seq("b5", 10), "u", 5)])
    assert kept([(seq("b4", 11), "u", 5)], target) == [0]


def test_a_repeated_truncate_is_dropped() -> None:
    rows = [(seq("t1", 0), "t", None), (seq("t1", 4), "t", None)]
    assert kept(rows, Seen()) == [0]
    assert kept(rows[1:], Seen([(seq("t1", 0), "t", None)])) == []


def test_a_keyless_table_keeps_its_snapshot_reads_and_drops_streamed_redeliveries() -> None:
    rows = [(seq("s0", 0), "r", None), (seq("s0", 1), "r", None),
            (seq("w1", 2), "c", None), (seq("w1", 3), "c", None)]
    assert kept(rows, Seen(), keys=()) == [0, 1, 2]


def test_keys_stored_in_another_type_are_compared() -> None:
    class Text(Seen):
        def changelog_since(self, changes: Any, since: str, keys: Sequence[str]
                            ) -> pa.Table | None:
            table = super().changelog_since(changes, since, keys)
            assert table is not None
            return table.set_column(2, "id", table.column("id").cast(pa.string()))

    assert kept([(seq("a1", 3), "c", 1), (seq("a2", 4), "c", 2)],
                Text([(seq("a1", 1), "c", 1)])) == [1]


def test_position_strips_the_offset() -> None:
    assert changelog_once.position(pa.array([seq("abc", 5)])).to_pylist() == ["abc"]
