"""Incremental snapshot notifications (Debezium's IncrementalSnapshotNotificationService) from a
real server, on the log and sink channels: start, one IN_PROGRESS per chunk, the table's
completion and the snapshot's; pause, resume and stop signals."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest

from headwater.testing.replay import events
from headwater.topics import reader

from .harness import Harness, wait
from .signals import create_signal_table, send
from .workload import create_t

pytestmark = pytest.mark.integration

TOPIC = "hw_notifications"
CHANNELS = {"notification.enabled.channels": "log,sink", "notification.sink.topic.name": TOPIC}


def sunk(cdc: Harness) -> list[dict[str, Any]]:
    """The sink channel's notifications, in topic order (key `{id}`, snake_case value)."""
    out = []
    for _, key, value in events(cdc.topics, TOPIC):
        assert key == {"id": value["id"]}
        out.append(value)
    return out


def incremental(notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for n in notes if n["aggregate_type"] == "Incremental Snapshot"]


def test_progress_per_chunk_to_completion(cdc: Harness,
                                          caplog: pytest.LogCaptureFixture) -> None:
    d = cdc.driver
    props = create_signal_table(d)
    create_t(d, 35)
    create_t(d, 0, "e")
    cap = cdc.capture({"snapshot.mode": "no_data", "incremental.snapshot.chunk.size": 10,
                       **props, **CHANNELS})
    t, e = d.collection("t"), d.collection("e")
    try:
        with caplog.at_level(logging.INFO, "headwater.notifications"):
            wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
            send(d, "go-1", "execute-snapshot", {"data-collections": [t, e]})
            wait(lambda: any(n["type"] == "COMPLETED" for n in incremental(sunk(cdc))),
                 "COMPLETED", 120, cap, interval=0.2)
    finally:
        cap.stop()
    notes = incremental(sunk(cdc))
    assert [n["type"] for n in notes] == ["STARTED"] + ["IN_PROGRESS"] * 4 + [
        "TABLE_SCAN_COMPLETED", "TABLE_SCAN_COMPLETED", "COMPLETED"]
    assert {n["id"] for n in notes} == {"go-1"}
    name = cap.config.topic_prefix
    assert notes[0]["additional_data"] == {"connector_name": name,
                                           "data_collections": f"{t},{e}"}
    progress = [n["additional_data"] for n in notes[1:5]]
    assert [(p["current_collection_in_progress"], p["maximum_key"], p["last_processed_key"])
            for p in progress] == [(t, "35", k) for k in ("10", "20", "30", "35")]
    assert notes[5]["additional_data"] == {
        "connector_name": name, "data_collections": f"{t},{e}", "scanned_collection": t,
        "total_rows_scanned": "35", "status": "SUCCEEDED"}
    assert notes[6]["additional_data"]["status"] == "EMPTY"
    assert notes[6]["additional_data"]["scanned_collection"] == e
    # through the value converter, with Debezium's schema (JsonConverter, schemas enabled)
    raw = orjson.loads(next(iter(reader.read(cdc.topics, TOPIC, from_offset=0))).value or b"")
    assert raw["schema"]["name"] == "io.debezium.connector.common.Notification"
    assert [f["field"] for f in raw["schema"]["fields"]] == [
        "id", "type", "aggregate_type", "additional_data", "timestamp"]
    # the log channel: one line per notification, the same ids and types
    logged = [orjson.loads(r.getMessage().removeprefix("Notification "))
              for r in caplog.records if r.name == "headwater.notifications"]
    assert [(n["id"], n["type"]) for n in logged
            if n["aggregateType"] == "Incremental Snapshot"] == [
        (n["id"], n["type"]) for n in notes]


def test_pause_resume_and_stop(cdc: Harness) -> None:
    d = cdc.driver
    props = create_signal_table(d)
    create_t(d, 20000)
    cap = cdc.capture({"snapshot.mode": "no_data", "incremental.snapshot.chunk.size": 50,
                       **props, **CHANNELS})
    t = d.collection("t")

    def types() -> list[str]:
        return [n["type"] for n in incremental(sunk(cdc))]

    try:
        wait(lambda: cap.runtime.metrics.connected, "streaming", capture=cap)
        send(d, "go", "execute-snapshot", {"data-collections": [t]})
        wait(lambda: types().count("IN_PROGRESS") >= 3, "chunks", capture=cap, interval=0.05)
        send(d, "p", "pause-snapshot")
        wait(lambda: "PAUSED" in types(), "PAUSED", capture=cap, interval=0.05)
        send(d, "r", "resume-snapshot")
        wait(lambda: "RESUMED" in types(), "RESUMED", capture=cap, interval=0.05)
        wait(lambda: types()[-1] == "IN_PROGRESS", "a chunk after RESUMED", capture=cap,
             interval=0.05)
        send(d, "s", "stop-snapshot", {"data-collections": [t], "type": "incremental"})
        wait(lambda: "ABORTED" in types(), "ABORTED", capture=cap, interval=0.05)
    finally:
        cap.stop()
    notes = incremental(sunk(cdc))
    kinds = [n["type"] for n in notes]
    assert kinds[0] == "STARTED" and kinds[-1] == "ABORTED"
    paused, resumed = kinds.index("PAUSED"), kinds.index("RESUMED")
    # no chunk is read while paused (IN_PROGRESS is sent when a chunk is read)
    assert "IN_PROGRESS" not in kinds[paused + 1:resumed]
    assert "IN_PROGRESS" in kinds[resumed:]
    assert "COMPLETED" not in kinds and "TABLE_SCAN_COMPLETED" not in kinds
    assert {n["id"] for n in notes} == {"go"}
    assert notes[paused]["additional_data"]["data_collections"] == t
    assert notes[-1]["additional_data"]["data_collections"] == t
    keys = [int(n["additional_data"]["last_processed_key"]) for n in notes
            if n["type"] == "IN_PROGRESS"]
    assert keys == sorted(keys) and keys[-1] < 20000
