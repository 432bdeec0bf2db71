"""One connector of `headwater serve`, in a child process of the service.

Why a process per connector (not a thread): a connector that crashes the interpreter, leaks
memory or hangs in a driver takes only itself down; the service can always kill it
(SIGKILL) and start it again; and each capture has its own GIL, so two busy connectors do not
slow each other.  The price, a Python interpreter per connector, is small next to the
capture's own buffers.

The worker dies with the service: it asks the kernel for SIGKILL when its parent dies
(PR_SET_PDEATHSIG), so a kill -9 of the service is a kill -9 of every capture, and the
restarted service resumes each from its offsets (the topic log and offsets are crash-safe).

It reports its own state in the store: RUNNING once the capture reads, FAILED with the
traceback as `trace`, STOPPED after a graceful stop (SIGTERM: drain, store the offsets).
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Final

import orjson

from headwater.server.connectors import CONFIG_FILE, connector_dir, effective
from headwater.server.store import ConnectorStore, Reported
from headwater.streams.translate import write_config

log = logging.getLogger("headwater.server.worker")
HEARTBEAT_S: Final = 1.0
LOCK_WAIT_S: Final = 60.0  # a previous incarnation may still hold the topic log's lock
_PR_SET_PDEATHSIG: Final = 1


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when the service dies (Linux); exit at once if it already did."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(3)


class ConnectorWorker:
    def __init__(self, store: ConnectorStore, name: str) -> None:
        self.store = store
        self.name = name
        self.runtime: Any = None
        # Labels of the connector's metrics (Debezium's JMX `debezium.<plugin>:...,server=`),
        # read after the build (the connector type lives in the main thread's log context).
        self.plugin = ""
        self.server_name = ""
        self._levels_seen: str | None = None
        self.stopping = threading.Event()
        self._done = threading.Event()

    def request_stop(self) -> None:
        self.stopping.set()
        if self.runtime is not None:
            self.runtime.stop()

    def _apply_log_levels(self) -> None:
        """The levels set through the service's /admin/loggers, newest requests applied."""
        from headwater.ops.loglevels import apply_all

        raw = self.store.meta("log_levels")
        if raw is not None and raw != self._levels_seen:
            self._levels_seen = raw
            wanted = [(str(n), str(v)) for n, v in orjson.loads(raw)]
            apply_all(wanted)
            if wanted:
                log.warning("log levels set through /admin/loggers: %s",
                            ", ".join(f"{n}={v}" for n, v in wanted))

    def _heartbeat(self) -> None:
        from headwater.engine.source import StreamState

        while not self._done.wait(HEARTBEAT_S):
            self._apply_log_levels()
            rt = self.runtime
            if rt is None:
                continue
            state = Reported.RUNNING if rt.state in (
                StreamState.RUNNING, StreamState.DRAINING) else Reported.UNASSIGNED
            log.debug("heartbeat: %s, %d events seen", rt.state.value,
                      rt.metrics.total_events_seen)
            self.store.report(self.name, state, status={
                "capture_state": rt.state.value, "metrics": rt.metrics.as_dict(),
                "contexts": rt.metrics.contexts(), "plugin": self.plugin,
                "rows_estimated": dict(rt.metrics.rows_estimated),
                "server_name": self.server_name, "updated_ms": int(time.time() * 1000),
                "notifications": ([] if rt.metrics.notifier is None
                                  else list(rt.metrics.notifier.recent))})

    def _build(self, path: Path) -> Any:
        from headwater.capture import build_runtime, load_connector_config
        from headwater.log_context import connector_type
        from headwater.ops.config_log import log_configuration
        from headwater.topics.log import TopicLogLockedError

        cfg = load_connector_config(path)
        self.server_name = cfg.topic_prefix
        from headwater.log_context import connector_name

        connector_name.set(cfg.topic_prefix)
        log_configuration(cfg, log)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                runtime = build_runtime(cfg)
                self.plugin = connector_type.get()
                return runtime
            except TopicLogLockedError:
                if time.monotonic() > deadline or self.stopping.wait(0.5):
                    raise

    def run(self) -> int:
        row = self.store.get(self.name)
        self._apply_log_levels()
        self.store.report(self.name, Reported.UNASSIGNED, pid=os.getpid())
        beat = threading.Thread(target=self._heartbeat, name="heartbeat", daemon=True)
        beat.start()
        try:
            home = connector_dir(self.store.root, self.name)
            path = write_config(home / CONFIG_FILE, effective(self.store.root, self.name,
                                                              row.config))
            self.runtime = self._build(path)
            if self.stopping.is_set():
                self.runtime.stop()
            self.runtime.run()
        except BaseException as exc:
            self._done.set()
            log.error("connector %s failed: %s", self.name, exc)
            self.store.report(self.name, Reported.FAILED, trace=traceback.format_exc())
            return 1
        self._done.set()
        if not self.stopping.is_set():
            # The capture ended by itself (e.g. snapshot.mode=initial_only): it is done.
            log.info("connector %s: the capture finished", self.name)
        self.store.report(self.name, Reported.STOPPED)
        return 0


def worker_arguments(what: str, argv: list[str] | None) -> argparse.Namespace:
    """A worker process's start: its arguments (`--data-dir`, `--parent`, the name of the
    `what` it runs), tied to its parent's life (`die_with_parent`), logging at INFO."""
    parser = argparse.ArgumentParser(description=f"Run one {what} of headwater serve "
                                     "(internal).")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("name")
    args = parser.parse_args(argv)
    die_with_parent(args.parent)
    from headwater.ops.logging import setup_logging

    setup_logging("INFO")
    return args


def main(argv: list[str] | None = None) -> int:
    args = worker_arguments("connector", argv)
    worker = ConnectorWorker(ConnectorStore(args.data_dir), args.name)

    def _stop(signum: int, _frame: Any) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        worker.request_stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service's Ctrl-C reaches us via it
    sys.setswitchinterval(0.02)
    return worker.run()


if __name__ == "__main__":
    sys.exit(main())
