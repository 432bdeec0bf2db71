"""The signal table (Debezium's source channel) and incremental-snapshot offsets, per driver."""

from __future__ import annotations

import json
from typing import Any

from .driver import Column, SourceDriver
from .harness import Harness

SIGNAL_TABLE = "debezium_signal"
SIGNAL_COLUMNS = [Column("id", "varchar(64)", nullable=False),
                  Column("type", "varchar(32)", nullable=False), Column("data", "varchar(2000)")]


def create_signal_table(driver: SourceDriver) -> dict[str, str]:
    """Creates the signal table; returns the properties that make it the signal channel."""
    driver.create_table(SIGNAL_TABLE, SIGNAL_COLUMNS, ["id"])
    return {"signal.data.collection": driver.collection(SIGNAL_TABLE)}


def send(driver: SourceDriver, signal_id: str, kind: str,
         data: dict[str, Any] | None = None) -> None:
    driver.execute((f"INSERT INTO {driver.quote(SIGNAL_TABLE)} VALUES (%s, %s, %s)",
                    (signal_id, kind, json.dumps(data) if data is not None else None)))


def chunk_key(harness: Harness) -> int:
    """The key the incremental snapshot's last durable chunk ended at (0 before the first)."""
    return int((harness.offset().get("incremental_snapshot_primary_key") or [0])[0])


def incremental_reads(harness: Harness, table: str = "t") -> list[int]:
    return [key["id"] for _, key, value in harness.records(table)
            if value is not None and value["op"] == "r"
            and value["source"]["snapshot"] == "incremental"]


def snapshot_done(harness: Harness) -> bool:
    off = harness.offset()
    return bool(off) and not off.get("incremental_snapshot_collections") and bool(
        incremental_reads(harness))
