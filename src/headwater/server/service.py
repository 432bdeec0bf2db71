"""The service's state: the data directory, the connector store and manager, the streams
catalog and its supervisor; started once, closed once.

Why one object: the REST routers receive it and nothing else, so a later router (metrics,
a console) needs no new wiring; and start-up / shut-down order lives in one place.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

from headwater.server.manager import ConnectorManager
from headwater.server.pipelines import pipeline_dir
from headwater.server.store import ConnectorStore, pipeline_store
from headwater.streams.catalog import Catalog
from headwater.streams.states import ACTIVE, State, TransitionError
from headwater.streams.supervisor import ProcessLauncher, Supervisor

log = logging.getLogger("headwater.server")
RESUME_KEY: Final = "streams_to_resume"
LOCK_FILE: Final = ".serve.lock"


class DataDirInUse(RuntimeError):
    """Another `headwater serve` runs on this data directory."""


class ServiceStreamLauncher(ProcessLauncher):
    """Streams as child processes that die with the service (as its connectors do), so a
    kill -9 of the service stops them and its restart resumes them."""

    def command(self, catalog: Catalog, name: str) -> list[str]:
        return ["-m", "headwater.server.stream_child", "--parent", str(os.getpid()),
                "--data-dir", str(catalog.root.resolve()), name]


@dataclass
class Service:
    data_dir: Path
    store: ConnectorStore
    manager: ConnectorManager
    catalog: Catalog
    supervisor: Supervisor
    worker_id: str  # host:port, Kafka Connect's `worker_id`
    # Pipelines: rows and worker processes exactly like connectors', their own table and
    # worker module (server/pipeline_worker.py).
    pipelines: ConnectorStore
    pipeline_manager: ConnectorManager
    lock_fd: int = -1  # `<data dir>/.serve.lock`, held while the service is open

    @classmethod
    def open(cls, data_dir: Path, worker_id: str) -> Service:
        """The service on `data_dir`; DataDirInUse when another service has it (two would
        each start every connector: two writers of every topic log and offsets file)."""
        from headwater.dirlock import LockHeld, hold

        data_dir.mkdir(parents=True, exist_ok=True)
        try:
            lock_fd = hold(data_dir / LOCK_FILE)
        except LockHeld as exc:
            who = f" (pid {exc.holder})" if exc.holder else ""
            raise DataDirInUse(f"--data-dir {data_dir} is in use by another headwater "
                               f"serve{who}: stop it, or give another directory") from None
        try:
            return cls._open(data_dir, worker_id, lock_fd)
        except BaseException:
            os.close(lock_fd)
            raise

    @classmethod
    def _open(cls, data_dir: Path, worker_id: str, lock_fd: int) -> Service:
        store = ConnectorStore(data_dir)
        catalog = Catalog(data_dir)
        pipelines = pipeline_store(data_dir)
        return cls(data_dir, store, ConnectorManager(store), catalog,
                   Supervisor(catalog, ServiceStreamLauncher()), worker_id, pipelines,
                   ConnectorManager(pipelines, "headwater.server.pipeline_worker",
                                    pipeline_dir, "pipeline"), lock_fd)

    def start(self) -> None:
        """Every connector and pipeline whose target is RUNNING, and every stream this
        service was running when it stopped or died, runs again from its offsets (a
        pipeline: from its Spark checkpoint)."""
        self.manager.start_all()
        self.pipeline_manager.start_all()
        wanted = set(orjson.loads(self.store.meta(RESUME_KEY) or "[]"))
        for rec in self.catalog.streams():
            name = rec.spec.name
            was_active = rec.state in ACTIVE
            try:
                now = self.supervisor.reconcile(name)  # a dead worker: FAILED
                if now.state in ACTIVE:
                    continue  # alive (started by the CLI): not ours
                if (was_active or name in wanted) and now.state in (State.FAILED,
                                                                   State.PAUSED):
                    log.info("stream %s: resuming", name)
                    self.supervisor.resume(name)
            except TransitionError as exc:
                log.warning("stream %s not resumed: %s", name, exc)
        self.store.set_meta(RESUME_KEY, "[]")

    def close(self, timeout_s: float = 60) -> None:
        """Stop every worker gracefully; remember the running streams for the next start."""
        active = [r.spec.name for r in self.catalog.streams() if r.state in ACTIVE]
        self.store.set_meta(RESUME_KEY, orjson.dumps(active).decode())
        for name in active:
            rec = self.catalog.stream(name)
            self.supervisor.launcher.stop(rec)
        self.pipeline_manager.close()
        self.manager.close()
        for name in active:
            self.supervisor.wait(name, frozenset(set(State) - ACTIVE), timeout_s)
        if self.lock_fd >= 0:
            os.close(self.lock_fd)  # releases the data directory
            self.lock_fd = -1
