"""Users' requests on streams (start, pause, drain, resume, recover, delete) and the check
that a stream said to be active still has a live capture.

Why separate from the worker: requests come from short CLI processes (later from the REST
service), the capture runs elsewhere.  The supervisor makes the user's transition in the
catalog, then starts or signals the capture through a `Launcher`: `ProcessLauncher` runs
each stream as a detached child process (what the CLI uses, so a stream outlives the
command that started it), `ThreadLauncher` runs it inside the calling process (what a
service running many streams may prefer).  Both drive the same `StreamWorker`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from headwater.ops.status import pid_alive
from headwater.streams.catalog import Catalog, StreamRecord, now_ms
from headwater.streams.sources import REASON_DIED, REASON_POSITION
from headwater.streams.states import ACTIVE, Action, State, TransitionError, next_state
from headwater.streams.translate import stream_dir
from headwater.streams.worker import StreamWorker

if TYPE_CHECKING:
    from headwater.streams.positions import CdcStrategy

# A worker writes its heartbeat every second; this much silence means it is gone (or hung).
STALE_HEARTBEAT_MS: Final = 30_000
# A freshly spawned worker may not have written its pid yet.
SPAWN_GRACE_MS: Final = 15_000


class Launcher(Protocol):
    def launch(self, catalog: Catalog, name: str) -> int | None:
        """Start the stream's worker; returns its pid when it is a process."""
        ...

    def stop(self, record: StreamRecord) -> None:
        """Ask the running worker to stop gracefully (drain)."""
        ...


class ProcessLauncher:
    """Each stream in a detached child process (own session: a Ctrl-C in the shell that
    started it does not stop it); output appended to the stream's `worker.log`.  A subclass
    names another worker module in `command` (the service's, which dies with the service)."""

    def command(self, catalog: Catalog, name: str) -> list[str]:
        """The worker's command line (after the Python executable)."""
        return ["-m", "headwater.streams.worker", "--data-dir", str(catalog.root.resolve()), name]

    def launch(self, catalog: Catalog, name: str) -> int | None:
        home = stream_dir(catalog.root, name)
        home.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (src, env.get("PYTHONPATH", "")) if p)
        with (home / "worker.log").open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, *self.command(catalog, name)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, env=env, close_fds=True)
        return proc.pid

    def stop(self, record: StreamRecord) -> None:
        if record.pid is not None and record.host == socket.gethostname():
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGTERM)


class ThreadLauncher:
    """Streams as threads of this process (a service running many streams)."""

    def __init__(self) -> None:
        self.workers: dict[str, tuple[StreamWorker, threading.Thread]] = {}

    def launch(self, catalog: Catalog, name: str) -> int | None:
        worker = StreamWorker(Catalog(catalog.root), name)
        thread = threading.Thread(target=worker.run, name=f"stream-{name}", daemon=True)
        self.workers[name] = (worker, thread)
        thread.start()
        return os.getpid()

    def stop(self, record: StreamRecord) -> None:
        entry = self.workers.get(record.spec.name)
        if entry is not None:
            entry[0].request_stop()


class Supervisor:
    def __init__(self, catalog: Catalog, launcher: Launcher | None = None) -> None:
        self.catalog = catalog
        self.launcher: Launcher = launcher or ProcessLauncher()

    # -- liveness ------------------------------------------------------------------------
    def reconcile(self, name: str) -> StreamRecord:
        """The stream, after taking an active stream whose capture is gone to FAILED (its
        error recorded), as Datastream does for a stream that stops by itself."""
        rec = self.catalog.stream(name)
        if rec.state not in ACTIVE:
            return rec
        now = now_ms()
        why = None
        if rec.pid is None:
            if now - rec.state_ms > SPAWN_GRACE_MS:
                why = "no capture process was recorded for the stream"
        elif rec.host == socket.gethostname() and not pid_alive(rec.pid):
            why = f"capture process {rec.pid} is gone (killed or crashed)"
        elif rec.heartbeat_ms is not None and now - rec.heartbeat_ms > STALE_HEARTBEAT_MS:
            why = (f"no heartbeat from capture process {rec.pid} on {rec.host} for "
                   f"{(now - rec.heartbeat_ms) // 1000}s")
        if why is None:
            return rec
        try:
            self.catalog.transition(name, Action.FAIL, why)
        except TransitionError:
            return self.catalog.stream(name)  # moved meanwhile
        self.catalog.add_error(name, REASON_DIED, why,
                               {"pid": str(rec.pid), "lastState": rec.state.value})
        self.catalog.set_worker(name, None)
        return self.catalog.stream(name)

    def reconcile_all(self) -> list[StreamRecord]:
        return [self.reconcile(r.spec.name) for r in self.catalog.streams()]

    # -- requests ------------------------------------------------------------------------
    def _position(self, name: str, action: Action, strategy: CdcStrategy) -> str:
        """Checks and writes the start position before anything runs (the stream is not
        active, so no worker writes its offsets meanwhile); an unavailable position is
        refused here and recorded as the stream's error."""
        from headwater.streams.positions import StartPositionUnavailable, apply, save_override
        from headwater.streams.sources import connect
        from headwater.streams.translate import connector_properties

        rec = self.catalog.stream(name)
        next_state(rec.state, action)  # a forbidden request fails before the offsets change
        source = self.catalog.profile(rec.spec.source_profile, "source")
        props = connector_properties(rec.spec, source, self.catalog.profile(
            rec.spec.destination_profile, "destination"), self.catalog.root)
        conn = connect(source)
        try:
            override = apply(strategy, rec.spec, source, props, self.catalog.root, conn)
        except StartPositionUnavailable as exc:
            self.catalog.add_error(name, REASON_POSITION, str(exc),
                                   {"cdcStrategy": strategy.describe(),
                                    "position": exc.position})
            raise
        finally:
            conn.close()
        save_override(self.catalog.root, name, override)
        return f"requested, cdcStrategy {strategy.describe()}"

    def _launch(self, name: str, action: Action, strategy: CdcStrategy | None = None
                ) -> State:
        detail = "requested"
        if strategy is not None:
            detail = self._position(name, action, strategy)
        state = self.catalog.transition(name, action, detail)
        pid = self.launcher.launch(self.catalog, name)
        if pid is not None and self.catalog.stream(name).pid is None:
            self.catalog.set_worker(name, pid)
        return state

    def start(self, name: str, strategy: CdcStrategy | None = None) -> State:
        """NOT_STARTED -> STARTING, capture launched (from `strategy`'s position if given)."""
        self.reconcile(name)
        return self._launch(name, Action.START, strategy)

    def resume(self, name: str, strategy: CdcStrategy | None = None) -> State:
        """PAUSED or FAILED -> STARTING: continues from the kept offsets, or from
        `strategy`'s position."""
        self.reconcile(name)
        return self._launch(name, Action.RESUME, strategy)

    def recover(self, name: str) -> State:
        """FAILED_PERMANENTLY -> STARTING, after the user fixed the cause."""
        self.reconcile(name)
        return self._launch(name, Action.RECOVER)

    def pause(self, name: str) -> State:
        """RUNNING/STARTING -> DRAINING (the capture writes what it read, then PAUSED);
        FAILED -> PAUSED (nothing runs, nothing to drain)."""
        rec = self.reconcile(name)
        state = self.catalog.transition(name, Action.PAUSE, "requested")
        if rec.state in ACTIVE:
            self.launcher.stop(rec)
        return state

    def wait(self, name: str, until: frozenset[State], timeout_s: float) -> StreamRecord:
        """Polls until the stream is in one of `until` (or the timeout); returns it."""
        deadline = time.monotonic() + timeout_s
        while True:
            rec = self.reconcile(name)
            if rec.state in until or time.monotonic() >= deadline:
                return rec
            time.sleep(0.2)

    def delete(self, name: str, *, force: bool = False, timeout_s: float = 120) -> None:
        """Removes the stream and its directory (offsets, schema history, signals).  An
        active stream is refused unless `force`, which drains it first."""
        rec = self.reconcile(name)
        if rec.state in ACTIVE:
            if not force:
                raise StreamBusy(name, rec.state)
            self.pause(name)
            rec = self.wait(name, frozenset(set(State) - ACTIVE), timeout_s)
            if rec.state in ACTIVE:
                raise StreamBusy(name, rec.state)
        from headwater.streams.jobs import BackfillJobs

        self.catalog.delete_stream(name)
        BackfillJobs(self.catalog).forget(name)
        shutil.rmtree(stream_dir(self.catalog.root, name), ignore_errors=True)


class StreamBusy(RuntimeError):
    def __init__(self, name: str, state: State) -> None:
        super().__init__(f"stream {name!r} is {state.value}: pause it first (or --force, "
                         "which drains it)")
