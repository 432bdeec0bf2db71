"""Starts, stops and watches the service's connector worker processes.

Why one owner of the processes: the REST handlers only change the stored target state and
ask the manager to make the processes match it; a watcher thread notices a worker that died
without saying so (killed, crashed) and records it FAILED, as Kafka Connect marks a task
that threw.  A failed connector is not restarted by itself (Kafka Connect's behaviour; the
capture already retries retriable errors inside, `errors.max.retries`): a restart request
or a restart of the service starts it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Final

from headwater.ops.status import pid_alive
from headwater.server.connectors import connector_dir
from headwater.server.store import ConnectorStore, Reported, StoreError, Target

log = logging.getLogger("headwater.server.manager")
STOP_WAIT_S: Final = 60.0
WATCH_S: Final = 0.5


class ConnectorManager:
    def __init__(self, store: ConnectorStore) -> None:
        self.store = store
        self.root: Path = store.root
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.RLock()
        self._name_locks: dict[str, threading.Lock] = {}
        self._closing = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="connector-watch",
                                         daemon=True)

    # -- service lifecycle ---------------------------------------------------------------------
    def start_all(self) -> None:
        """After a (re)start of the service: every connector whose target is RUNNING runs
        again from its stored offsets; a worker left over by a killed service is killed
        first (it cannot be adopted: its parent is gone)."""
        for row in self.store.all():
            if row.pid is not None and pid_alive(row.pid) and _is_worker(row.pid, row.name):
                log.warning("connector %s: killing worker %d left by a previous service",
                            row.name, row.pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(row.pid, signal.SIGKILL)
            self.store.clear_pid(row.name)
            if row.target is Target.RUNNING:
                self.start(row.name)
            else:
                self.store.report(row.name, Reported.STOPPED)
        self._watcher.start()

    def close(self) -> None:
        """Stop every worker gracefully (their targets stay: the next start resumes them)."""
        self._closing.set()
        with self._lock:
            names = list(self._procs)
        for name in names:
            self.stop(name)

    # -- one connector -------------------------------------------------------------------------
    def running(self, name: str) -> bool:
        with self._lock:
            proc = self._procs.get(name)
            return proc is not None and proc.poll() is None

    def start(self, name: str) -> None:
        """Spawn the worker unless one runs."""
        with self._lock:
            if self.running(name) or self._closing.is_set():
                return
            self.store.report(name, Reported.UNASSIGNED)
            home = connector_dir(self.root, name)
            home.mkdir(parents=True, exist_ok=True)
            env = dict(os.environ)
            src = str(Path(__file__).resolve().parents[2])
            env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", ""))
                                                if p)
            with (home / "worker.log").open("ab") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "headwater.server.worker", "--data-dir",
                     str(self.root.resolve()), "--parent", str(os.getpid()), name],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                    start_new_session=True, close_fds=True)
            self._procs[name] = proc
            self.store.report(name, Reported.UNASSIGNED, pid=proc.pid)
            log.info("connector %s: worker %d started", name, proc.pid)

    def stop(self, name: str, timeout_s: float = STOP_WAIT_S) -> bool:
        """Graceful stop (SIGTERM: drain, store offsets), SIGKILL after `timeout_s`; True when
        no worker runs any more."""
        with self._lock:
            proc = self._procs.get(name)
        if proc is None:
            return True
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("connector %s: worker %d did not stop in %.0fs: killing it", name,
                            proc.pid, timeout_s)
                proc.kill()
                proc.wait()
        self._reap(name, proc)
        return True

    def restart(self, name: str) -> None:
        """Stop the worker, then start it again if the target is RUNNING."""
        with self._name_lock(name):
            self.stop(name)
            self._reconcile(name)

    def reconcile(self, name: str) -> None:
        """Make the worker match the stored target (no row: no worker); one request at a
        time per connector, each re-reading the target, so the last request wins."""
        with self._name_lock(name):
            self._reconcile(name)

    def reconcile_later(self, name: str) -> None:
        """`reconcile` in the background (pause and resume answer 202 at once)."""
        threading.Thread(target=self.reconcile, args=(name,), name=f"reconcile-{name}",
                         daemon=True).start()

    def _reconcile(self, name: str) -> None:
        try:
            row = self.store.get(name)
        except StoreError:
            self.stop(name)
            return
        if row.target is Target.RUNNING:
            self.start(name)
        else:
            self.stop(name)

    def _name_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._name_locks.setdefault(name, threading.Lock())

    # -- watching ------------------------------------------------------------------------------
    def _reap(self, name: str, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if self._procs.get(name) is proc:
                del self._procs[name]
        try:
            row = self.store.get(name)
        except StoreError:
            return
        code = proc.returncode
        if row.reported in (Reported.RUNNING, Reported.UNASSIGNED) and code != 0:
            # Died without reporting (SIGKILL, a crash of the interpreter).
            how = (f"killed by signal {signal.Signals(-code).name}" if code is not None
                   and code < 0 else f"exit status {code}")
            self.store.report(name, Reported.FAILED,
                              trace=f"the worker process {proc.pid} of connector {name} "
                                    f"ended without reporting ({how}); see "
                                    f"{connector_dir(self.root, name) / 'worker.log'}")
        self.store.clear_pid(name)

    def _watch(self) -> None:
        while not self._closing.wait(WATCH_S):
            with self._lock:
                ended = [(n, p) for n, p in self._procs.items() if p.poll() is not None]
            for name, proc in ended:
                log.info("connector %s: worker %d ended (%s)", name, proc.pid, proc.returncode)
                self._reap(name, proc)


def _is_worker(pid: int, name: str) -> bool:
    """Whether `pid` is a connector worker of this name (not a reused pid)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"headwater.server.worker" in cmd and name.encode() in cmd
