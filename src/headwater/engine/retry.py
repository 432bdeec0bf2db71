"""The retry budget of the capture runtime: how many reconnects, how long to wait before each.

Why a budget of *consecutive* failures: `errors.max.retries` is meant to stop a connector that
cannot recover, not one that recovered from a few unrelated outages over weeks.  Debezium 3.x
(``ErrorHandler.hasMoreRetries`` / ``BaseSourceTask.resetErrorHandlerRetriesIfNeeded``) resets
its retry count as soon as a poll after a restart returns change events.  Headwater resets the
count (and the back-off) when the failed session was healthy, which is either of

* *progress*: the session moved the stored offset past where it started (events or heartbeats
  were written durably), so a connector that fails again and again at the same position still
  runs out of retries; or
* *time*: the session was connected (its sources started) for at least the largest back-off,
  so an idle database whose connection drops once a day never exhausts the budget.

The wait before a reconnect doubles from `retriable.restart.connector.wait.ms` with each
consecutive failure and is capped at ``MAX_BACKOFF_FACTOR`` times that value (60 s with the
default 10 s).  Debezium waits the configured time, constant; doubling backs off a server that
restarts slowly while the cap keeps recovery within a minute of the source returning.
"""

from __future__ import annotations

from typing import Final

MAX_BACKOFF_FACTOR: Final = 6


class RetryBudget:
    """Counts consecutive retriable failures against `errors.max.retries` (-1: unlimited)."""

    def __init__(self, max_retries: int, wait_s: float) -> None:
        self.max_retries = max_retries
        self.wait_s = wait_s
        self.max_wait_s = wait_s * MAX_BACKOFF_FACTOR
        self.consecutive = 0

    def healthy(self, *, progressed: bool, connected_s: float | None) -> bool:
        """Was the session that just failed healthy (see the module doc)?"""
        return progressed or (connected_s is not None and connected_s >= self.max_wait_s)

    def failure(self, *, progressed: bool, connected_s: float | None) -> float | None:
        """Counts one failure; returns the seconds to wait, or None when the budget is spent.

        `connected_s`: how long the failed session's sources ran after connecting (None when
        the failure happened while connecting).
        """
        if self.healthy(progressed=progressed, connected_s=connected_s):
            self.consecutive = 0
        self.consecutive += 1
        if 0 <= self.max_retries < self.consecutive:
            return None
        return float(min(self.wait_s * 2 ** (self.consecutive - 1), self.max_wait_s))
