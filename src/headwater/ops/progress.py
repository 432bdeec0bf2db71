"""Where an operator sees a running capture: progress bars, progress log lines, a status file.

A snapshot of a big database runs for hours; the operator needs to see that it moves and how
far it is.  `CaptureMonitor` is a thread of `headwater run` that looks at the capture metrics
once a second (the metrics are plain attributes the runtime and sources update; reading them
costs the capture nothing) and

* draws one progress bar per table while the snapshot runs, when stderr is a terminal;
* otherwise logs one progress line every `log_interval_s` while the snapshot runs;
* writes the metrics (Debezium's names) to a small JSON *status file* next to the offsets,
  replaced atomically, which `headwater status CONFIG` prints from another process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from headwater.engine.metrics import CaptureMetrics

log = logging.getLogger("headwater.ops.progress")


def status_path(offsets_file: Path) -> Path:
    """The status file of a connector: `<offsets file stem>.status.json` beside the offsets."""
    return offsets_file.with_name(f"{offsets_file.stem}.status.json")


def status_document(metrics: CaptureMetrics, state: str, name: str,
                    interval_s: float = 1.0) -> dict[str, Any]:
    """The status file's content.  `pid`, `host`, `updated_ms` (the heartbeat) and
    `heartbeat_interval_ms` let `headwater status` tell a live capture from a dead one
    (`ops/status.py`)."""
    return {
        "connector": name,
        "state": state,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "updated_ms": int(time.time() * 1000),
        "heartbeat_interval_ms": int(interval_s * 1000),
        "metrics": metrics.as_dict(),
        "rows_estimated": dict(metrics.rows_estimated),
    }


def write_status(path: Path, document: dict[str, Any]) -> None:
    """Replaces the status file atomically (a reader never sees half a document)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    os.replace(tmp, path)


def read_status(path: Path) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    return doc


def progress_line(metrics: CaptureMetrics) -> str:
    """One log line: tables remaining and rows scanned per table (of the estimate)."""
    parts = []
    for table, rows in metrics.rows_scanned.items():
        estimate = metrics.rows_estimated.get(table, -1)
        if estimate > 0:
            parts.append(f"{table} {rows}/~{estimate} ({min(100, 100 * rows // estimate)}%)")
        else:
            parts.append(f"{table} {rows}")
    return (
        f"snapshot progress: {metrics.remaining_table_count} of {metrics.total_table_count} "
        f"tables remaining, {int(metrics.snapshot_duration())}s; rows scanned: "
        + (", ".join(parts) or "none yet")
    )


class SnapshotBars:
    """One rich progress bar per table, fed from the metrics."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("rows"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
        )
        self._tasks: dict[str, TaskID] = {}
        self.started = False

    def update(self, metrics: CaptureMetrics, done: bool = False) -> None:
        if not self.started:
            self.progress.start()
            self.started = True
        for table, rows in list(metrics.rows_scanned.items()):
            task = self._tasks.get(table)
            estimate = metrics.rows_estimated.get(table, -1)
            # The estimate is the planner's (reltuples): never let the bar end before the rows.
            total = max(estimate, rows) if estimate >= 0 else None
            if done:
                total = rows
            if task is None:
                self._tasks[table] = self.progress.add_task(table, total=total, completed=rows)
            else:
                self.progress.update(task, total=total, completed=rows)

    def stop(self) -> None:
        if self.started:
            self.progress.stop()
            self.started = False


@contextlib.contextmanager
def _logging_through(console: Console) -> Iterator[None]:
    """While bars are drawn, log handlers writing to stderr go through the live display's
    proxy (rich redirects sys.stderr) so log lines print above the bars, not through them."""
    moved = []
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.__stderr__:
            moved.append(handler)
            handler.setStream(sys.stderr)
    try:
        yield
    finally:
        for handler in moved:
            handler.setStream(sys.__stderr__)


class CaptureMonitor:
    """Draws or logs snapshot progress and writes the status file, once per `interval_s`."""

    def __init__(
        self,
        metrics: CaptureMetrics,
        state: Callable[[], str],
        name: str,
        status_file: Path | None,
        *,
        console: Console | None = None,
        interval_s: float = 1.0,
        log_interval_s: float = 10.0,
    ) -> None:
        self.metrics = metrics
        self.state = state
        self.name = name
        self.status_file = status_file
        self.console = console or Console(stderr=True)
        self.bars = SnapshotBars(self.console) if self.console.is_terminal else None
        self.interval_s = interval_s
        self.log_interval_s = log_interval_s
        self._next_log = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="headwater-monitor", daemon=True)
        self._redirect: contextlib.ExitStack | None = None

    def start(self) -> CaptureMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.tick()  # the final state
        self._end_bars()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.tick()
            except Exception as exc:  # the monitor must never stop the capture
                log.warning("progress/status update failed: %s", exc)

    def tick(self) -> None:
        m = self.metrics
        if m.snapshot_running:
            if self.bars is not None:
                if not self.bars.started:
                    self.bars.update(m)
                    self._redirect = contextlib.ExitStack()
                    self._redirect.enter_context(_logging_through(self.console))
                else:
                    self.bars.update(m)
            elif time.monotonic() >= self._next_log:
                self._next_log = time.monotonic() + self.log_interval_s
                log.info("%s", progress_line(m))
        elif self.bars is not None and self.bars.started:
            self.bars.update(m, done=m.snapshot_completed)
            self._end_bars()
        if self.status_file is not None:
            write_status(self.status_file,
                         status_document(m, self.state(), self.name, self.interval_s))

    def _end_bars(self) -> None:
        if self.bars is not None:
            self.bars.stop()
        if self._redirect is not None:
            self._redirect.close()
            self._redirect = None
