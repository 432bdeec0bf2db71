"""Runs one stream's capture and keeps its catalog state true to what the capture does.

Why a class that does not care where it runs: `headwater streams start` runs it as a
detached child process (`python -m headwater.streams.worker`), the later REST service may
run it in a thread of its own process; both use the same catalog transitions.  The worker
owns the transitions the capture causes (STARTING -> RUNNING when connected, DRAINING ->
PAUSED when everything read is durable, -> FAILED / FAILED_PERMANENTLY / back to
NOT_STARTED on errors); users' requests (start, pause, resume) are made by the supervisor.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from headwater.streams.catalog import Catalog, CatalogError, data_dir
from headwater.streams.positions import load_override, save_override
from headwater.streams.sources import PERMANENT_REASONS, classify, probe
from headwater.streams.states import Action, State, TransitionError
from headwater.streams.translate import (
    CONFIG_FILE,
    connector_properties,
    stream_dir,
    write_config,
)

log = logging.getLogger("headwater.streams.worker")
HEARTBEAT_S = 1.0


class StreamWorker:
    def __init__(self, catalog: Catalog, name: str) -> None:
        self.catalog = catalog
        self.name = name
        self.runtime: Any = None
        self._stop = threading.Event()
        self._done = threading.Event()
        from headwater.streams.jobs import BackfillJobs

        self._jobs = BackfillJobs(catalog)
        self._first_start = False
        self._data_snapshot = False  # this run's snapshot reads data (snapshot.mode=initial)
        self._automatic: set[str] = set()
        self._queued = False

    # -- requests ------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Graceful stop (pause/drain): stop reading, write what was read, keep the offsets."""
        self._stop.set()
        if self.runtime is not None:
            self.runtime.stop()

    # -- helpers -------------------------------------------------------------------------
    def _state(self) -> State:
        return self.catalog.stream(self.name).state

    def _move(self, action: Action, detail: str = "") -> None:
        try:
            self.catalog.transition(self.name, action, detail)
        except TransitionError as exc:  # someone else moved it first (e.g. a pause request)
            log.info("stream %s: %s", self.name, exc)

    def _fail(self, exc: BaseException, *, first_start: bool) -> None:
        reason = classify(exc)
        details = {"exception": type(exc).__name__, "pid": str(os.getpid())}
        self.catalog.add_error(self.name, reason, str(exc) or type(exc).__name__, details)
        state = self._state()
        if state is State.STARTING and first_start:
            # Datastream: a stream that is not valid goes from STARTING back to NOT_STARTED.
            self._move(Action.VALIDATION_FAILED, reason)
        elif reason in PERMANENT_REASONS:
            self._move(Action.FAIL_PERMANENTLY, reason)
        else:
            self._move(Action.FAIL, reason)

    def _watch(self) -> None:
        """Heartbeat and STARTING -> RUNNING once the capture reports it is reading."""
        from headwater.engine.source import StreamState

        while not self._done.wait(HEARTBEAT_S / 4 if self._state() is State.STARTING
                                  else HEARTBEAT_S):
            rt = self.runtime
            if self._state() is State.DRAINING and not self._stop.is_set():
                # A pause made before this process recorded its pid (so no SIGTERM reached
                # it), or a pause by a service that does not signal: the catalog decides.
                log.info("stream %s: DRAINING in the catalog: stopping", self.name)
                self.request_stop()
            status: dict[str, Any] | None = None
            if rt is not None:
                self._backfills(rt.metrics)
                status = {"capture_state": rt.state.value, "metrics": rt.metrics.as_dict()}
                if rt.state is StreamState.RUNNING and self._state() is State.STARTING:
                    save_override(self.catalog.root, self.name, {})
                    self._move(Action.STARTED, "the capture is snapshotting or streaming")
            try:
                self.catalog.heartbeat(self.name, status)
            except CatalogError:
                return

    def _backfills(self, metrics: Any) -> None:
        """Keeps the backfill jobs true to the capture: the initial snapshot's tables
        (AUTOMATIC), the incremental snapshots' tables (streams/jobs.py follows them), and,
        on a first start with excluded objects, the AUTOMATIC jobs of the others."""
        from headwater.streams.jobs import AUTOMATIC, BackfillError, JobState
        from headwater.streams.model import ObjectRef

        jobs = self._jobs
        try:
            if self._data_snapshot and metrics.snapshot_running:
                for table in metrics.monitored_tables:
                    if table not in self._automatic:
                        self._automatic.add(table)
                        jobs.record(self.name, table, JobState.ACTIVE, AUTOMATIC)
            if metrics.snapshot_completed and self._automatic:
                for table in sorted(self._automatic):
                    jobs.record(self.name, table, JobState.COMPLETED, AUTOMATIC)
                self._automatic.clear()
            spec = self.catalog.stream(self.name).spec
            if (self._first_start and spec.backfill_exclude and not self._queued
                    and metrics.connected and metrics.monitored_tables):
                self._queued = True
                skip = {r.table_name() for r in spec.backfill_exclude}
                for table in metrics.monitored_tables:
                    if table not in skip:
                        try:
                            jobs.start(self.name, ObjectRef.parse(table), trigger=AUTOMATIC)
                        except BackfillError as exc:  # recorded (UNSUPPORTED) by start
                            log.warning("stream %s: %s", self.name, exc)
            jobs.follow(self.name, dict(metrics.incremental_tables))
        except CatalogError:
            return

    # -- run -----------------------------------------------------------------------------
    def run(self) -> State:
        from rich.console import Console

        from headwater.capture import build_runtime, load_connector_config
        from headwater.ops.progress import CaptureMonitor, status_path

        rec = self.catalog.stream(self.name)
        home = stream_dir(self.catalog.root, self.name)
        first_start = self._first_start = not (home / "offsets.json").exists()
        self.catalog.set_worker(self.name, os.getpid())
        watcher = threading.Thread(target=self._watch, name="stream-watch", daemon=True)
        watcher.start()
        try:
            source = self.catalog.profile(rec.spec.source_profile, "source")
            destination = self.catalog.profile(rec.spec.destination_profile, "destination")
            props = connector_properties(rec.spec, source, destination, self.catalog.root)
            # A start position's one-run snapshot.mode (positions.py), until it runs.
            props.update(load_override(self.catalog.root, self.name))
            self._data_snapshot = first_start and props.get("snapshot.mode") == "initial"
            path = write_config(home / CONFIG_FILE, props)
            probe(source)  # an unreachable, refusing or missing database says so here
            cfg = load_connector_config(path)
            self.runtime = build_runtime(cfg)
            if self._stop.is_set():
                self.runtime.stop()
            runtime = self.runtime
            # The status file `headwater status <stream dir>/connector.json` reads.
            monitor = CaptureMonitor(
                runtime.metrics, lambda: runtime.state.value, cfg.topic_prefix,
                status_path(Path(cfg.offset_storage_file_filename)),
                console=Console(stderr=True)).start()
            try:
                runtime.run()
            finally:
                monitor.stop()
        except BaseException as exc:
            log.error("stream %s failed: %s", self.name, exc)
            self._fail(exc, first_start=first_start)
            return self._finish()
        if not self._stop.is_set():
            # The capture ended by itself: nothing a stream configures does that.
            self._fail(RuntimeError("the capture ended without being asked to stop"),
                       first_start=False)
            return self._finish()
        state = self._state()
        if state in (State.STARTING, State.RUNNING):  # stopped by a signal, not `pause`
            self._move(Action.PAUSE, "the worker was asked to stop")
        self._move(Action.DRAINED, "everything read is durable and acknowledged")
        return self._finish()

    def _finish(self) -> State:
        self._done.set()
        self.catalog.set_worker(self.name, None)
        return self._state()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one Headwater stream (internal).")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("stream")
    args = parser.parse_args(argv)
    from headwater.ops.logging import setup_logging

    setup_logging("INFO")
    from headwater.log_context import stream_name

    stream_name.set(args.stream)
    catalog = Catalog(data_dir(args.data_dir))
    worker = StreamWorker(catalog, args.stream)

    def _stop(signum: int, _frame: Any) -> None:
        log.info("received %s: draining", signal.Signals(signum).name)
        worker.request_stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    sys.setswitchinterval(0.02)
    state = worker.run()
    log.info("stream %s: %s", args.stream, state.value)
    return 0 if state is State.PAUSED else 1


if __name__ == "__main__":
    sys.exit(main())
