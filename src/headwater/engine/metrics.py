"""Capture metrics under Debezium's names, so dashboards built for Debezium read the same.

Debezium exposes these as JMX MBean attributes (context snapshot and streaming); here they are
plain attributes updated by the runtime and rendered by `as_dict` with the exact names, and by
`contexts` split by Debezium's MBean contexts (snapshot, streaming, schema-history) for
Prometheus.

Two values follow Debezium's semantics exactly, because a dashboard alerts on them:

* `QueueRemainingCapacity` is read from the live queue (capacity minus queued events), so an
  idle connector shows its full capacity, not 0;
* `MilliSecondsBehindSource` is measured when an event is processed (processing time minus the
  event's source timestamp, Debezium's `StreamingMeter.onEvent`) and then kept: it does not
  grow while the database is idle (that is what `MilliSecondsSinceLastEvent` says).  Snapshot
  reads carry their read time, not a commit time, so they do not set it.

Debezium 3.6's statistics of that lag (min, max, average, P50, P95, P99) come from
engine/lag_stats.py, fed once per batch (no cost per event).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from headwater.engine.lag_stats import LagStatistics
from headwater.engine.notifications import Notifier
from headwater.model.record import ChangeRecord, Op, SourceEvent
from headwater.model.topic import RenderedBatch


class QueueProbe(Protocol):
    """What the metrics read of the change-event queue (engine/queue.py)."""

    @property
    def capacity(self) -> int: ...

    @property
    def remaining_capacity(self) -> int: ...


@dataclass(slots=True)
class SchemaHistoryMetrics:
    """Debezium's schema-history context (MySQL/MariaDB): recovery and applied DDL."""

    status: str = "STOPPED"  # STOPPED, RECOVERING, RUNNING
    recovery_start_ms: int = -1
    changes_recovered: int = 0
    changes_applied: int = 0
    last_recovered_monotonic: float | None = None
    last_applied_monotonic: float | None = None
    last_recovered_change: str = ""
    last_applied_change: str = ""

    def recovered(self, change: str) -> None:
        self.changes_recovered += 1
        self.changes_applied += 1
        self.last_recovered_change = change
        self.last_recovered_monotonic = time.monotonic()

    def applied(self, change: str) -> None:
        self.status = "RUNNING"
        self.changes_applied += 1
        self.last_applied_change = change
        self.last_applied_monotonic = time.monotonic()

    def as_dict(self) -> dict[str, object]:
        return {
            "Status": self.status,
            "RecoveryStartTime": self.recovery_start_ms,
            "ChangesRecovered": self.changes_recovered,
            "ChangesApplied": self.changes_applied,
            "MilliSecondsSinceLastRecoveredChange": _since_ms(self.last_recovered_monotonic),
            "MilliSecondsSinceLastAppliedChange": _since_ms(self.last_applied_monotonic),
            "LastRecoveredChange": self.last_recovered_change,
            "LastAppliedChange": self.last_applied_change,
        }


def _since_ms(mono: float | None) -> int:
    return int((time.monotonic() - mono) * 1000) if mono is not None else -1


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
    # The live queue, bound by the runtime; without one the queue is taken as empty.
    queue: QueueProbe | None = None
    # Lag of the last streamed change when it was processed (Debezium's semantics).
    behind_source_ms: int | None = None
    # Its statistics (Debezium 3.6's StreamingStatisticsMXBean)
    lag_statistics: LagStatistics = field(default_factory=LagStatistics)
    # Per Debezium context: snapshot reads vs. streamed changes.
    snapshot_events_seen: int = 0
    streaming_events_seen: int = 0
    snapshot_last_event: str = ""
    snapshot_last_monotonic: float | None = None
    streaming_last_event: str = ""
    streaming_last_monotonic: float | None = None
    monitored_tables: list[str] = field(default_factory=list)
    schema_history: SchemaHistoryMetrics | None = None
    # Snapshot progress notifications (engine/notifications.py), when a channel is enabled.
    notifier: Notifier | None = None
    # Not a Debezium metric: each incremental snapshot table's last state change, (state,
    # epoch ms, message) by table name, which a stream's backfill jobs follow
    # (streams/jobs.py); states ACTIVE, COMPLETED, STOPPED, FAILED.
    incremental_tables: dict[str, tuple[str, int, str]] = field(default_factory=dict)

    def incremental_state(self, table: str, state: str, message: str = "") -> None:
        self.incremental_tables[table] = (state, int(time.time() * 1000), message)

    def table_started(self, table: str) -> None:
        """A snapshot source starts reading `table` (Debezium: IN_PROGRESS)."""
        if self.notifier is not None:
            self.notifier.table_in_progress(table, self._snapshot_tables())

    def table_done(self, table: str) -> None:
        """A snapshot source has read all of `table` (Debezium: TABLE_SCAN_COMPLETED)."""
        self.remaining_table_count -= 1
        if self.notifier is not None:
            self.notifier.table_completed(table, self.rows_scanned.get(table, 0),
                                          self._snapshot_tables())

    def _snapshot_tables(self) -> list[str]:
        return list(self.monitored_tables) or list(self.rows_scanned)

    def bind_queue(self, queue: QueueProbe) -> None:
        self.queue = queue
        self.queue_capacity = queue.capacity

    def queue_remaining(self) -> int:
        return self.queue_capacity if self.queue is None else self.queue.remaining_capacity

    def record_events(self, records: Sequence[SourceEvent]) -> None:
        changes = [r for r in records if type(r) is ChangeRecord]
        if not changes:
            return
        now = time.monotonic()
        self.total_events_seen += len(changes)
        last = changes[-1]
        self.last_event = f"{last.table.id} op={last.op.value}"
        self.last_event_monotonic = now
        self.last_source_ts_ms = last.source_ts_ms
        reads = sum(1 for r in changes if r.op is Op.READ)
        if reads:
            self.snapshot_events_seen += reads
            self.snapshot_last_event = self.last_event
            self.snapshot_last_monotonic = now
        if reads < len(changes):
            self.streaming_events_seen += len(changes) - reads
            streamed = next(r for r in reversed(changes) if r.op is not Op.READ)
            self.streaming_last_event = f"{streamed.table.id} op={streamed.op.value}"
            self.streaming_last_monotonic = now
            self.behind_source_ms = max(0, int(time.time() * 1000) - streamed.source_ts_ms)
            self.lag_statistics.add(self.behind_source_ms, len(changes) - reads)

    def record_rendered(self, batch: RenderedBatch) -> None:
        """Counts events a source rendered itself (a parallel snapshot's worker processes)."""
        n = sum(len(v) for v in batch.values())
        if n:
            self.total_events_seen += n
            self.snapshot_events_seen += n
            self.last_event = self.snapshot_last_event = list(batch)[-1]
            self.last_event_monotonic = self.snapshot_last_monotonic = time.monotonic()

    def snapshot_duration(self) -> float:
        """Seconds the snapshot took, or has taken so far while it runs (Debezium's meaning)."""
        if self.snapshot_running and self.snapshot_started_monotonic is not None:
            return time.monotonic() - self.snapshot_started_monotonic
        return self.snapshot_duration_s

    def as_dict(self) -> dict[str, object]:
        since = _since_ms(self.last_event_monotonic)
        behind = -1 if self.behind_source_ms is None else self.behind_source_ms
        return {
            "TotalNumberOfEventsSeen": self.total_events_seen,
            "NumberOfEventsFiltered": self.events_filtered,
            "NumberOfErroneousEvents": self.erroneous_events,
            "NumberOfCommittedTransactions": self.committed_transactions,
            "LastEvent": self.last_event,
            "MilliSecondsSinceLastEvent": since,
            "MilliSecondsBehindSource": behind,
            **self.lag_statistics.as_dict(),
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
            "QueueRemainingCapacity": self.queue_remaining(),
        }

    def contexts(self) -> dict[str, dict[str, object]]:
        """The attributes of each Debezium MBean context (`context=` of
        `debezium.<plugin>:type=connector-metrics`), with Debezium's names."""
        common = {
            "MonitoredTables": list(self.monitored_tables),
            "QueueTotalCapacity": self.queue_capacity,
            "QueueRemainingCapacity": self.queue_remaining(),
            "NumberOfEventsFiltered": self.events_filtered,
            "NumberOfErroneousEvents": self.erroneous_events,
        }
        out: dict[str, dict[str, object]] = {
            "snapshot": {
                **common,
                "LastEvent": self.snapshot_last_event,
                "MilliSecondsSinceLastEvent": _since_ms(self.snapshot_last_monotonic),
                "TotalNumberOfEventsSeen": self.snapshot_events_seen,
                "TotalTableCount": self.total_table_count,
                "RemainingTableCount": self.remaining_table_count,
                "SnapshotRunning": self.snapshot_running,
                "SnapshotPaused": False,
                "SnapshotAborted": self.snapshot_aborted,
                "SnapshotCompleted": self.snapshot_completed,
                "SnapshotDurationInSeconds": int(self.snapshot_duration()),
                "RowsScanned": dict(self.rows_scanned),
            },
            "streaming": {
                **common,
                "LastEvent": self.streaming_last_event,
                "MilliSecondsSinceLastEvent": _since_ms(self.streaming_last_monotonic),
                "TotalNumberOfEventsSeen": self.streaming_events_seen,
                "Connected": self.connected,
                "MilliSecondsBehindSource": (-1 if self.behind_source_ms is None
                                             else self.behind_source_ms),
                **self.lag_statistics.as_dict(),
                "NumberOfCommittedTransactions": self.committed_transactions,
                "LastTransactionId": self.last_transaction_id,
            },
        }
        if self.schema_history is not None:
            out["schema-history"] = self.schema_history.as_dict()
        return out
