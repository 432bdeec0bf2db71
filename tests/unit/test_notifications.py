"""Snapshot notifications carry Debezium 3.x's fields on every enabled channel."""

from __future__ import annotations

import logging

import orjson
import pytest

from headwater.engine.metrics import CaptureMetrics
from headwater.engine.notifications import Notifier
from headwater.model.topic import TopicRecord


def test_channels_and_debezium_format(caplog: pytest.LogCaptureFixture) -> None:
    sunk: list[tuple[str, TopicRecord]] = []
    n = Notifier("srv", ("log", "sink", "rest"), "srv.notes", sink=lambda t, r: sunk.append((t, r)))
    m = CaptureMetrics(notifier=n)
    m.rows_scanned = {"s.a": 0, "s.b": 0}
    m.total_table_count = m.remaining_table_count = 2
    with caplog.at_level(logging.INFO, "headwater.notifications"):
        n.started()
        m.table_started("s.a")
        m.rows_scanned["s.a"] = 3
        m.table_done("s.a")
        n.completed()
    assert m.remaining_table_count == 1
    kept = list(n.recent)
    assert [k["type"] for k in kept] == ["STARTED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED",
                                         "COMPLETED"]
    assert set(kept[0]) == {"id", "aggregateType", "type", "additionalData", "timestamp"}
    assert kept[1]["additionalData"] == {"connector_name": "srv",
                                         "current_collection_in_progress": "s.a",
                                         "data_collections": "s.a,s.b"}
    assert kept[2]["additionalData"]["total_rows_scanned"] == "3"
    assert kept[2]["additionalData"]["status"] == "SUCCEEDED"
    assert [t for t, _ in sunk] == ["srv.notes"] * 4
    value = orjson.loads(sunk[2][1].value or b"")
    assert value["aggregate_type"] == "Initial Snapshot" and value["type"] == \
        "TABLE_SCAN_COMPLETED"
    assert orjson.loads(sunk[2][1].key or b"") == {"id": value["id"]}
    assert sum("Notification {" in r.getMessage() for r in caplog.records) == 4


def test_a_failing_sink_does_not_fail_the_capture() -> None:
    def boom(_t: str, _r: TopicRecord) -> None:
        raise OSError("disk full")

    Notifier("srv", ("sink",), "t", sink=boom).aborted()
