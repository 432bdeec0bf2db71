"""Capture metrics under Debezium's names, so dashboards built for Debezium read the same.

Debezium exposes these as JMX MBean attributes (context snapshot and streaming); here they are
plain attributes updated by the runtime and rendered by `as_dict` with the exact names.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from headwater.model.record import ChangeRecord, SourceEvent
from headwater.model.topic import TopicBatch


@dataclass(slots=True)
class CaptureMetrics:
    total_events_seen: int = 0
    events_filtered: int = 0
    # events (or column values) the failure handling modes let through as warn/skip
    erroneous_events: int = 0
    committed_transactions: int = 0
    last_event: str = ""
    last_event_monotonic: float | None = None
    last_source_ts_ms: int | None = None
    last_transaction_id: str | None = None
    snapshot_running: bool = False
    snapshot_aborted: bool = False
    snapshot_completed: bool = False
    snapshot_duration_s: float = 0.0
    snapshot_started_monotonic: float | None = None
    rows_scanned: dict[str, int] = field(default_factory=dict)
    total_table_count: int = 0
    remaining_table_count: int = 0
    # Not a Debezium metric: the planner's row estimate per table (pg_class.reltuples), which
    # progress bars use as their total (-1: unknown).
    rows_estimated: dict[str, int] = field(default_factory=dict)
    connected: bool = False
    queue_capacity: int = 0
    queue_remaining: int = 0

    def record_events(self, records: Sequence[SourceEvent]) -> None:
        changes = [r for r in records if type(r) is ChangeRecord]
        if not changes:
            return
        self.total_events_seen += len(changes)
        last = changes[-1]
        self.last_event = f"{last.table.id} op={last.op.value}"
        self.last_event_monotonic = time.monotonic()
        self.last_source_ts_ms = last.source_ts_ms

    def record_rendered(self, batch: TopicBatch) -> None:
        """Counts events a source rendered itself (a parallel snapshot's worker processes)."""
        n = sum(len(v) for v in batch.values())
        if n:
            self.total_events_seen += n
            self.last_event = next(reversed(batch))
            self.last_event_monotonic = time.monotonic()

    def snapshot_duration(self) -> float:
        """Seconds the snapshot took, or has taken so far while it runs (Debezium's meaning)."""
        if self.snapshot_running and self.snapshot_started_monotonic is not None:
            return time.monotonic() - self.snapshot_started_monotonic
        return self.snapshot_duration_s

    def as_dict(self) -> dict[str, object]:
        since = (
            int((time.monotonic() - self.last_event_monotonic) * 1000)
            if self.last_event_monotonic is not None
            else -1
        )
        behind = (
            int(time.time() * 1000) - self.last_source_ts_ms
            if self.last_source_ts_ms is not None
            else -1
        )
        return {
            "TotalNumberOfEventsSeen": self.total_events_seen,
            "NumberOfEventsFiltered": self.events_filtered,
            "NumberOfErroneousEvents": self.erroneous_events,
            "NumberOfCommittedTransactions": self.committed_transactions,
            "LastEvent": self.last_event,
            "MilliSecondsSinceLastEvent": since,
            "MilliSecondsBehindSource": behind,
            "LastTransactionId": self.last_transaction_id,
            "SnapshotRunning": self.snapshot_running,
            "SnapshotAborted": self.snapshot_aborted,
            "SnapshotCompleted": self.snapshot_completed,
            "SnapshotDurationInSeconds": int(self.snapshot_duration()),
            "RowsScanned": dict(self.rows_scanned),
            "TotalTableCount": self.total_table_count,
            "RemainingTableCount": self.remaining_table_count,
            "Connected": self.connected,
            "QueueTotalCapacity": self.queue_capacity,
            "QueueRemainingCapacity": self.queue_remaining,
        }
