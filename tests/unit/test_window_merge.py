"""The snapshot window merge against a brute-force model of a table, over every interleaving.

A small table (keys 1-3) starts in every possible state; every sequence of up to three changes
(insert, update, delete, primary key change, truncate) runs against it, and the low watermark,
the chunk read and the high watermark are placed at every possible point among the changes.
For each case the consumer replays what the connector emits (stream events before the high
watermark, the surviving READ rows, stream events after it) and must end with the source
table on every key the chunk covers; no surviving READ may hold a value older than the table's
at the high watermark.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import pytest

from headwater.engine.window import (
    KeyChange,
    SnapshotWindow,
    TableTruncated,
    WindowEvent,
    merge_window,
)

KEYS = (1, 2, 3)
Op = tuple[Any, ...]
State = dict[int, int]


def _valid_ops(state: State) -> list[Op]:
    ops: list[Op] = [("trunc",)]
    for k in KEYS:
        if k in state:
            ops += [("upd", k), ("del", k)]
            ops += [("mov", k, b) for b in KEYS if b not in state]
        else:
            ops.append(("ins", k))
    return ops


def _apply(state: State, op: Op, version: int) -> tuple[State, WindowEvent, Op]:
    """New state, the window's view of the change, and the consumer's event."""
    s = dict(state)
    kind = op[0]
    if kind == "trunc":
        return {}, TableTruncated(), ("trunc",)
    if kind in {"ins", "upd"}:
        s[op[1]] = version
        return s, KeyChange((op[1],)), ("set", op[1], version)
    if kind == "del":
        del s[op[1]]
        return s, KeyChange((op[1],)), ("del", op[1])
    a, b = op[1], op[2]
    del s[a]
    s[b] = version
    return s, KeyChange((a, b)), ("mov", a, b, version)


def _histories(max_len: int) -> Iterator[tuple[State, list[Op]]]:
    for present in itertools.product((False, True), repeat=len(KEYS)):
        initial = {k: 0 for k, p in zip(KEYS, present, strict=True) if p}

        def walk(state: State, ops: list[Op]) -> Iterator[list[Op]]:
            yield ops
            if len(ops) < max_len:
                for op in _valid_ops(state):
                    yield from walk(_apply(state, op, len(ops) + 1)[0], [*ops, op])

        for ops in walk(initial, []):
            yield initial, ops


def _consume(table: State, event: Op) -> None:
    kind = event[0]
    if kind in {"set", "read"}:
        table[event[1]] = event[2]
    elif kind == "del":
        table.pop(event[1], None)
    elif kind == "mov":
        table.pop(event[1], None)
        table[event[2]] = event[3]
    else:
        table.clear()


Row = tuple[int, int]
Merge = Callable[[Sequence[tuple[int, Row]], list[WindowEvent]], list[Row]]


def _check_case(initial: State, ops: list[Op], low: int, read: int, high: int, limit: int,
                merge: Merge) -> str | None:
    """None if the merge is right for this case, else what went wrong.

    Marker positions are change counts: the low watermark after `low` changes, the chunk read
    after `read` changes, the high watermark after `high` changes (low <= read <= high)."""
    states = [initial]
    window_events: list[tuple[int, WindowEvent]] = []
    consumer_events: list[Op] = []
    for i, op in enumerate(ops, 1):
        state, wevent, cevent = _apply(states[-1], op, i)
        states.append(state)
        window_events.append((i, wevent))
        consumer_events.append(cevent)
    at_read = states[read]
    chunk_keys = sorted(at_read)[:limit]
    chunk = [(k, (k, at_read[k])) for k in chunk_keys]  # rows carry their key and version
    in_window = [e for i, e in window_events if low < i <= high]
    survivors = merge(chunk, in_window)
    # Reference: a row survives iff no change in the window touched its key (or truncated).
    truncated = any(isinstance(e, TableTruncated) for e in in_window)
    touched = {k for e in in_window if isinstance(e, KeyChange) for k in e.keys}
    expected = [row for k, row in chunk if not truncated and k not in touched]
    if survivors != expected:
        return f"survivors {survivors} != reference {expected}"
    at_high = states[high]
    for k, v in survivors:
        if at_high.get(k) != v:
            return f"stale READ of key {k}: {v}, table has {at_high.get(k)}"
    table: State = {}
    for e in consumer_events[:high]:
        _consume(table, e)
    for k, v in survivors:
        _consume(table, ("read", k, v))
    for e in consumer_events[high:]:
        _consume(table, e)
    covered = KEYS if len(chunk) < limit else tuple(k for k in KEYS if k <= chunk_keys[-1])
    final = states[-1]
    for k in covered:
        if table.get(k) != final.get(k):
            return f"key {k}: replayed {table.get(k)}, source {final.get(k)}"
    return None


def _all_cases(max_len: int) -> Iterator[tuple[State, list[Op], int, int, int, int]]:
    for initial, ops in _histories(max_len):
        n = len(ops)
        for low, read, high in itertools.combinations_with_replacement(range(n + 1), 3):
            for limit in (1, 2, 3):
                yield initial, ops, low, read, high, limit


def _merge_values(chunk: Sequence[tuple[int, Row]], events: list[WindowEvent]) -> list[Row]:
    return merge_window(chunk, events)


def test_every_interleaving_replays_to_the_source_table() -> None:
    cases = 0
    for initial, ops, low, read, high, limit in _all_cases(3):
        problem = _check_case(initial, ops, low, read, high, limit, _merge_values)
        assert problem is None, (initial, ops, low, read, high, limit, problem)
        cases += 1
    assert cases > 100_000


def test_a_merge_without_deduplication_is_caught() -> None:
    """The model has teeth: emitting every chunk row at the high watermark goes wrong."""

    def naive(chunk: Sequence[tuple[int, Row]], events: list[WindowEvent]) -> list[Row]:
        return [v for _, v in chunk]

    failures = [c for c in _all_cases(2) if _check_case(*c, naive) is not None]
    assert failures
    # e.g. key 1 read at version 0, updated to 1 before the high watermark: the READ is stale
    assert _check_case({1: 0}, [("upd", 1)], 0, 0, 1, 3, naive) is not None
    assert _check_case({1: 0}, [("upd", 1)], 0, 0, 1, 3, _merge_values) is None


def test_a_merge_that_ignores_truncate_is_caught() -> None:
    def no_truncate(chunk: Sequence[tuple[int, Row]], events: list[WindowEvent]) -> list[Row]:
        return merge_window(chunk, [e for e in events if isinstance(e, KeyChange)])

    # read 1 and 2, truncate, then the high watermark: the READs would resurrect both rows
    assert _check_case({1: 0, 2: 0}, [("trunc",)], 0, 0, 1, 3, no_truncate) is not None
    assert _check_case({1: 0, 2: 0}, [("trunc",)], 0, 0, 1, 3, _merge_values) is None


def test_a_primary_key_change_drops_both_keys() -> None:
    chunk = [(1, "r1"), (2, "r2"), (3, "r3")]
    assert merge_window(chunk, [KeyChange((1, 3))]) == ["r2"]


def test_events_outside_the_chunk_keep_every_row_in_key_order() -> None:
    chunk = [(1, "a"), (2, "b")]
    assert merge_window(chunk, [KeyChange((9,)), KeyChange((7,))]) == ["a", "b"]


@pytest.mark.parametrize("opened_first", [True, False])
def test_snapshot_window_records_only_while_open(opened_first: bool) -> None:
    window: SnapshotWindow[Hashable, str] = SnapshotWindow("c1")
    window.key_changed(1)  # before the low watermark: emitted directly, no effect
    if opened_first:
        window.open()
        window.fill([(1, "a"), (2, "b")])
    else:
        window.fill([(1, "a"), (2, "b")])
        window.open()
    window.key_changed(2)
    assert window.events_seen == 1
    assert window.close() == ["a"]
    assert not window.is_open


def test_snapshot_window_truncate_drops_everything() -> None:
    window: SnapshotWindow[Hashable, str] = SnapshotWindow("c2")
    window.open()
    window.fill([(1, "a")])
    window.truncated()
    window.key_changed(5)
    assert window.close() == []


def test_closing_a_window_before_its_chunk_is_read_is_an_error() -> None:
    window: SnapshotWindow[Hashable, str] = SnapshotWindow("c3")
    window.open()
    with pytest.raises(RuntimeError, match="before its chunk was read"):
        window.close()
