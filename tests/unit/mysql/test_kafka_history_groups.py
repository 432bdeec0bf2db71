"""Recovery from an appended (Kafka) history starts at the last snapshot's first record."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from headwater.connectors.mysql.kafka_history import KafkaSchemaHistory
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.relational.history_kafka import KafkaHistorySettings, last_snapshot_start


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


def test_kafka_history_replays_from_the_last_snapshot(caplog: pytest.LogCaptureFixture) -> None:
    """KafkaSchemaHistory.recover skips what precedes the last snapshot (a table dropped
    before it stays unknown), logs how many, and reports RUNNING after; no broker: the
    topic's records are the ones it has read already."""
    history = KafkaSchemaHistory(KafkaHistorySettings("hist", "localhost:9"), "srv")

    def ddl(pos: int, text: str, snapshot: bool = False) -> tuple[str, dict[str, Any]]:
        return f"offset {pos}", {**rec(pos, snapshot), "ddl": text, "databaseName": "shop"}

    history._records = [
        ddl(0, "CREATE TABLE old (id INT PRIMARY KEY)"),
        ddl(1, "CREATE TABLE t (id INT PRIMARY KEY)", snapshot=True),
        ddl(1, "CREATE TABLE u (id INT PRIMARY KEY)", snapshot=True),
        ddl(2, "ALTER TABLE t ADD v INT"),
    ]
    schema = MySqlSchema()
    with caplog.at_level(logging.INFO, "headwater.connectors.mysql.kafka_history"):
        assert history.recover(schema, lambda _: True) == 3
    assert sorted(table.name for table in schema.tables()) == ["t", "u"]
    t = schema.table("shop", "t")
    assert t is not None and [c.name for c in t.columns] == ["id", "v"]
    assert "1 records before the last snapshot are not replayed" in caplog.text
    assert history.metrics.status == "RUNNING"
