"""One pipeline of `headwater serve`, in a child process of the service.

Why a process of its own, as each connector has: a pipeline runs a Spark driver (a JVM and
its Python workers) that may run out of memory or hang; it must take only itself down, and
the service must always be able to end it.  It dies with the service (PR_SET_PDEATHSIG, see
`worker.die_with_parent`; Spark's JVM exits when its Python driver goes), and the restarted
service starts it again from its Spark checkpoint, where the pipeline's own exactly-once
guarantee (Delta commits marked with the batch id) takes over.

It runs exactly what `headwater pipeline CONFIG` runs, on the effective configuration, and
reports in the catalog: RUNNING once the query runs, with the pipeline's status file
(`pipeline/status.py`) as its status document once a second; FAILED with the trace; STOPPED
after a graceful stop (SIGTERM: the query stops between batches).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Final

from headwater.server.pipelines import CONFIG_FILE, effective, pipeline_dir
from headwater.server.store import ConnectorStore, Reported, pipeline_store
from headwater.server.worker import worker_arguments
from headwater.streams.translate import write_config

log = logging.getLogger("headwater.server.pipeline_worker")
HEARTBEAT_S: Final = 1.0


class PipelineWorker:
    def __init__(self, store: ConnectorStore, name: str) -> None:
        self.store = store
        self.name = name
        self.status_path: Path | None = None
        self.stopping = threading.Event()  # SIGTERM before the runner took the signal over
        self._done = threading.Event()

    def _heartbeat(self) -> None:
        from headwater.ops.progress import read_status

        while not self._done.wait(HEARTBEAT_S):
            if self.status_path is None:
                continue
            try:
                doc = read_status(self.status_path)
            except (OSError, ValueError):
                continue
            if doc is None or doc.get("pid") != os.getpid():
                continue  # the previous run's file: not ours yet
            state = Reported.RUNNING if doc.get("state") == "RUNNING" else Reported.UNASSIGNED
            if not self._done.is_set():
                self.store.report(self.name, state, status=doc)

    def run(self) -> int:
        from headwater.pipeline.config import load_pipeline_config
        from headwater.pipeline.runner import run as run_pipeline
        from headwater.pipeline.status import pipeline_status_path

        row = self.store.get(self.name)
        self.store.report(self.name, Reported.UNASSIGNED, pid=os.getpid())
        beat = threading.Thread(target=self._heartbeat, name="heartbeat", daemon=True)
        beat.start()
        try:
            home = pipeline_dir(self.store.root, self.name)
            path = write_config(home / CONFIG_FILE,
                                effective(self.store.root, self.name, row.config))
            cfg = load_pipeline_config(path)
            self.status_path = pipeline_status_path(cfg.checkpoint_dir)
            if not self.stopping.is_set():
                run_pipeline(cfg)
        except BaseException as exc:
            self._done.set()
            log.error("pipeline %s failed: %s", self.name, exc)
            self.store.report(self.name, Reported.FAILED, trace=traceback.format_exc())
            return 1
        self._done.set()
        self.store.report(self.name, Reported.STOPPED, status=self._last_status())
        return 0

    def _last_status(self) -> dict[str, object] | None:
        from headwater.ops.progress import read_status

        return None if self.status_path is None else read_status(self.status_path)


def main(argv: list[str] | None = None) -> int:
    args = worker_arguments("pipeline", argv)
    # SIGTERM (stop, pause, the service's shutdown) is then handled by the pipeline's runner:
    # the query stops between batches.  Until the runner starts, it only says not to start.
    import signal

    worker = PipelineWorker(pipeline_store(args.data_dir), args.name)
    signal.signal(signal.SIGTERM, lambda _s, _f: worker.stopping.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return worker.run()


if __name__ == "__main__":
    sys.exit(main())
