"""Where a log reader restarts inside the transaction it was reading: the transaction's start
and how much of it was handed over.

Why: an offset must restart right after the last row handed over, but a log can be re-read
only from a transaction's start (the binlog's GTID or BEGIN event).  So the offset names that
start and counts what of the transaction went out - whole events, and rows of the next event
- and a restarted session re-reads the transaction and replays (does not emit) what was
counted.  Debezium's MySQL offsets (`event`, `row`) are this; PostgreSQL's `lsn_commit` /
`tx_index` is its one-level case (a pgoutput message is one row, and the stream resumes at a
commit, not at a transaction's start), SQL Server's and Db2's `event_serial_no` counts rows at
one change position (relational/changetables/poller.py `Resume`).

The hot path asks `event()` once per event of rows: two attribute tests when not resuming.
"""

from __future__ import annotations

from typing import Generic, TypeVar

S = TypeVar("S")  # the connector's description of where a transaction starts


class TransactionResume(Generic[S]):
    """The transaction being read: `start` (the connector's), `events` of it handed over,
    and - in a restarted session's first transaction only - what an earlier run handed over."""

    __slots__ = ("_skip_events", "_skip_rows", "events", "start")

    def __init__(self, start: S, skip_events: int = 0, skip_rows: int = 0) -> None:
        self.start = start
        self.events = 0
        self._skip_events = skip_events
        self._skip_rows = skip_rows

    def begin(self, start: S) -> None:
        """A transaction begins at `start` (its events are counted from 0)."""
        self.start = start
        self.events = 0

    def end(self, next_start: S) -> None:
        """The transaction ended; the next one starts at `next_start`.  Only the first
        transaction re-read was handed over in part, so the skipping ends here too."""
        self.start = next_start
        self.events = 0
        self._skip_events = self._skip_rows = 0

    def event(self) -> int | None:
        """An event of rows was read: None if an earlier run handed all of it over (a replay),
        else how many of its first rows it did (0 but when resuming).  `event_done` follows
        either way."""
        if self._skip_events or self._skip_rows:
            if self.events < self._skip_events:
                return None
            rows, self._skip_rows = self._skip_rows, 0
            return rows
        return 0

    def event_done(self) -> None:
        self.events += 1
