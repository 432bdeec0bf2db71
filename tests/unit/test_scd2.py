"""SCD type 2 history rebuild: hand-computed expectations, late events, tracked columns."""

from __future__ import annotations

import itertools

import pytest

from headwater.pipeline.scd2 import Point, rebuild, tracked_columns

ALL = frozenset({"id", "name", "city"})


def up(seq: str, name: str, city: str = "x") -> Point:
    return Point(seq, False, {"id": 1, "name": name, "city": city})


def dele(seq: str) -> Point:
    return Point(seq, True, None)


def test_hand_computed_history() -> None:
    got = rebuild([], [up("01", "a"), up("02", "b"), dele("03"), up("05", "c")], ALL)
    assert [(v.start, v.end, v.row["name"]) for v in got] == [
        ("01", "02", "a"), ("02", "03", "b"), ("05", None, "c")]


def test_late_event_lands_at_its_place_across_batches() -> None:
    first = rebuild([], [up("01", "a"), up("05", "c")], ALL)
    second = rebuild(first, [up("03", "b")], ALL)  # arrives later, happened in between
    assert [(v.start, v.end, v.row["name"]) for v in second] == [
        ("01", "03", "a"), ("03", "05", "b"), ("05", None, "c")]


def test_every_arrival_order_and_batching_gives_the_same_history() -> None:
    # Deletes are remembered across batches (the target's state table), so a delete that
    # arrives before the version it closes still closes it.
    events = [up("01", "a"), up("02", "b"), dele("04"), up("06", "c"), up("07", "d")]
    want = rebuild([], events, ALL)
    for perm in itertools.permutations(events):
        for cut in range(len(perm) + 1):
            first, second = perm[:cut], perm[cut:]
            remembered = [p for p in first if p.delete]
            got = rebuild(rebuild([], first, ALL), [*remembered, *second], ALL)
            assert got == want, (first, second)


def test_redelivered_events_change_nothing() -> None:
    events = [up("01", "a"), up("02", "b")]
    once = rebuild([], events, ALL)
    assert rebuild(once, events, ALL) == once


def test_untracked_change_updates_the_current_version_in_place() -> None:
    tracked = tracked_columns(["id", "name", "city"], None, ["city"])
    got = rebuild([], [up("01", "a", "x"), up("02", "a", "y"), up("03", "b", "y")], tracked)
    assert [(v.start, v.end, v.row["name"], v.row["city"]) for v in got] == [
        ("01", "03", "a", "y"), ("03", None, "b", "y")]


def test_truncate_closes_open_versions_and_keeps_earlier_history() -> None:
    got = rebuild([], [up("01", "a"), up("02", "b"), up("05", "c")], ALL, floor="04")
    assert [(v.start, v.end) for v in got] == [("01", "02"), ("02", "04"), ("05", None)]


def test_tracked_lists_are_exclusive() -> None:
    with pytest.raises(ValueError, match="either"):
        tracked_columns(["a"], ["a"], ["a"])
