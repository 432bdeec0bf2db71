"""errors.max.retries counts consecutive failures; a healthy session resets count and back-off."""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from headwater.engine.offsets import FileOffsetStore
from headwater.engine.queue import Batch
from headwater.engine.retry import MAX_BACKOFF_FACTOR, RetryBudget
from headwater.engine.runtime import CaptureRuntime
from headwater.engine.source import RetriableError, SourceRunContext, StartPlan
from headwater.model.record import SourceContext
from tests.unit.test_runtime import CTX, FakeRenderer, FakeWriter, Journal, rec


class OutageStreaming:
    """Each session emits `progress` batches (advancing the offset), then loses the connection;
    after `outages` sessions it runs until stopped."""

    def __init__(self, outages: int, progress: int) -> None:
        self.outages = outages
        self.progress = progress
        self.sessions = 0
        self.settled = threading.Event()

    def execute(self, ctx: SourceRunContext, offset: dict[str, Any] | None) -> None:
        self.sessions += 1
        start = (offset or {}).get("n", 0)
        for i in range(start + 1, start + 1 + self.progress):
            ctx.emit(Batch([rec(i)], offset={"n": i}, ack=i))
        if self.sessions <= self.outages:
            raise RetriableError(f"connection lost (outage {self.sessions})")
        self.settled.set()
        ctx.stopping.wait(10)

    def acknowledge(self, token: Any) -> None:
        pass


class OutageConnector:
    def __init__(self, streaming: OutageStreaming) -> None:
        self.streaming = streaming

    @property
    def context(self) -> SourceContext:
        return CTX

    @property
    def partition(self) -> dict[str, Any]:
        return {"server": "srv"}

    def start(self, offset: dict[str, Any] | None) -> StartPlan:
        return StartPlan(None, self.streaming)

    def close(self) -> None:
        pass


def run_with_outages(tmp_path: Path, outages: int, progress: int, max_retries: int
                     ) -> tuple[OutageStreaming, BaseException | None]:
    streaming = OutageStreaming(outages, progress)
    rt = CaptureRuntime(
        OutageConnector(streaming), FakeRenderer(), FakeWriter(Journal()),
        FileOffsetStore(tmp_path / "o.json", {"server": "srv"}),
        max_queue_size=100, max_batch_size=10, poll_interval_ms=10,
        max_retries=max_retries, retry_wait_ms=10,
    )
    failure: list[BaseException] = []

    def target() -> None:
        try:
            rt.run()
        except BaseException as exc:
            failure.append(exc)

    t = threading.Thread(target=target)
    t.start()
    while t.is_alive() and not streaming.settled.wait(0.05):
        pass
    rt.stop()
    t.join(10)
    assert not t.is_alive()
    return streaming, failure[0] if failure else None


def test_recovered_outages_do_not_use_up_the_budget(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    # Failed on the old code: the third outage ended the connector ("giving up after 2
    # retries") although each earlier one had recovered and made progress.
    caplog.set_level(logging.WARNING, "headwater.engine.runtime")
    streaming, failure = run_with_outages(tmp_path, outages=5, progress=1, max_retries=2)
    assert failure is None
    assert streaming.sessions == 6
    # Each outage follows a healthy session: the back-off starts over every time.
    waits = re.findall(r"reconnecting in ([\d.]+)s \(attempt (\d+)\)", caplog.text)
    assert waits == [("0.0", "1")] * 5


def test_consecutive_failures_without_progress_give_up(tmp_path: Path) -> None:
    streaming, failure = run_with_outages(tmp_path, outages=10, progress=0, max_retries=2)
    assert isinstance(failure, RuntimeError)
    assert "giving up after 2 consecutive retries (errors.max.retries)" in str(failure)
    assert streaming.sessions == 3  # the first try and two retries


def test_backoff_doubles_and_is_capped() -> None:
    budget = RetryBudget(-1, 10.0)
    waits = [budget.failure(progressed=False, connected_s=1.0) for _ in range(6)]
    assert waits == [10.0, 20.0, 40.0, 60.0, 60.0, 60.0]
    assert budget.max_wait_s == 10.0 * MAX_BACKOFF_FACTOR
    # Connected for the longest back-off counts as healthy: the next failure starts over.
    assert budget.failure(progressed=False, connected_s=60.0) == 10.0
    # A failure while connecting (no session) is never healthy.
    assert budget.failure(progressed=False, connected_s=None) == 20.0


def test_limited_budget_counts_only_consecutive_failures() -> None:
    budget = RetryBudget(2, 1.0)
    assert budget.failure(progressed=False, connected_s=None) == 1.0
    assert budget.failure(progressed=False, connected_s=None) == 2.0
    assert budget.failure(progressed=True, connected_s=None) == 1.0  # healthy: count restarts
    assert budget.failure(progressed=False, connected_s=None) == 2.0
    assert budget.failure(progressed=False, connected_s=None) is None
