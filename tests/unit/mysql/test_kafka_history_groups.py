"""Recovery from an appended (Kafka) history starts at the last snapshot's first record."""

from __future__ import annotations

from typing import Any

from headwater.relational.history_kafka import last_snapshot_start


def rec(pos: int, snapshot: bool = False, file: str = "b.1") -> dict[str, Any]:
    position: dict[str, Any] = {"file": file, "pos": pos}
    if snapshot:
        position["snapshot"] = True
    return {"position": position, "ddl": "x"}


def test_no_snapshot_starts_at_zero() -> None:
    assert last_snapshot_start([]) == 0
    assert last_snapshot_start([rec(1), rec(2)]) == 0


def test_the_last_snapshot_group_wins() -> None:
    history = [rec(4, True), rec(4, True), rec(9), rec(20, True), rec(20, True), rec(30)]
    assert last_snapshot_start(history) == 3
    # two snapshots back to back at different positions (the first was interrupted)
    assert last_snapshot_start([rec(4, True), rec(5, True), rec(5, True)]) == 1
