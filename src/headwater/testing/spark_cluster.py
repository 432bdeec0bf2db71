"""A throwaway Spark standalone cluster on loopback: one master and N single-core workers,
started from the pyspark wheel's own launcher (`bin/spark-class`), for the tests and benchmarks
that must show work running on executors rather than in the driver.

Every process gets SPARK_LOCAL_IP=127.0.0.1 and PYSPARK_PYTHON = this interpreter (executors'
Python workers must import pyarrow and Headwater: PYTHONPATH is passed on too).  Readiness is
the master's JSON (`/json`) listing the workers ALIVE; `executor_pids` finds the executor JVMs
the workers started for an application (children of a worker JVM running
CoarseGrainedExecutorBackend), which `kill_executor` ends with SIGKILL, and `cpu_seconds`
reads a process tree's CPU time from /proc (the Python workers' CPU is not in Spark's own
"Executor CPU Time", which counts only the JVM task thread).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from headwater.testing.localpg import free_port
from headwater.testing.timeouts import scaled


class SparkClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class SparkCluster:
    """`SparkCluster(workers=2).start()`; `master_url` is `spark://127.0.0.1:P`."""

    def __init__(self, workers: int = 2, base_dir: Path | None = None,
                 worker_memory: str = "1g") -> None:
        self.workers = workers
        self.worker_memory = worker_memory
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="headwater-spark-"))
        self.port = free_port()
        self.webui_port = free_port()
        self.master: subprocess.Popen[bytes] | None = None
        self.worker_procs: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "SPARK_LOG_DIR": str(self.base / "logs"),
            "SPARK_WORKER_DIR": str(self.base / "work"),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        })
        return env

    def _launch(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        self.base.mkdir(parents=True, exist_ok=True)
        with (self.base / f"{name}.log").open("ab") as log:
            return subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args], env=self._env(),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)

    def start(self, timeout: float = 180.0) -> SparkCluster:
        self.master = self._launch(
            "master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(self.port), "--webui-port", str(self.webui_port))
        for i in range(self.workers):
            self.worker_procs.append(self._launch(
                f"worker-{i}", "org.apache.spark.deploy.worker.Worker", self.master_url,
                "--host", "127.0.0.1", "--cores", "1", "--memory", self.worker_memory,
                "--webui-port", str(free_port()), "--work-dir", str(self.base / f"work-{i}")))
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            self._check_alive()
            state = self.state()
            alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
            if len(alive) >= self.workers:
                return self
            time.sleep(0.5)
        self.stop()
        raise SparkClusterError(f"{self.workers} workers not ALIVE after {timeout}s; logs in "
                                f"{self.base}")

    def _check_alive(self) -> None:
        for name, proc in [("master", self.master), *(
                (f"worker-{i}", p) for i, p in enumerate(self.worker_procs))]:
            if proc is not None and proc.poll() is not None:
                text = (self.base / f"{name}.log").read_text(errors="replace")[-3000:]
                raise SparkClusterError(f"{name} exited ({proc.returncode}):\n{text}")

    def state(self) -> dict[str, Any]:
        """The master's JSON (workers, applications), {} while it is not answering."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json",
                                        timeout=2) as r:
                data: dict[str, Any] = json.loads(r.read())
                return data
        except OSError:
            return {}

    def executor_pids(self, table: dict[int, list[str]] | None = None) -> list[int]:
        """The executor JVMs the workers run now (one per worker and application)."""
        workers = {p.pid for p in self.worker_procs if p.poll() is None}
        stats = processes() if table is None else table
        found = []
        for pid, fields in stats.items():
            if int(fields[1]) not in workers:
                continue
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"CoarseGrainedExecutorBackend" in cmd:
                found.append(pid)
        return sorted(found)

    def kill_executor(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        for pid in self.executor_pids():
            _kill(pid)
        for proc in [*self.worker_procs, self.master]:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in [*self.worker_procs, self.master]:
            if proc is None:
                continue
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.worker_procs.clear()
        self.master = None

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> SparkCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _ppid(stat: str) -> int:
    # pid (comm) state ppid ...: comm may hold spaces and parentheses
    return int(stat[stat.rindex(")") + 2:].split()[1])


def processes() -> dict[int, list[str]]:
    """/proc/<pid>/stat of every process, the fields after the command name."""
    out: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        out[int(entry.name)] = text[text.rindex(")") + 2:].split()
    return out


def cpu_seconds(pid: int, tree: bool = True,
                table: dict[int, list[str]] | None = None) -> float:
    """User + system CPU of a process (with `tree`, of its live descendants too, and of the
    children it reaped), from /proc (`table`: a `processes()` read already); 0 for a process
    that is gone."""
    stats = processes() if table is None else table
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for child, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(child)
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        found = stats.get(p)
        if found is None:
            continue
        # [11..14]: utime stime cutime cstime (stat fields 14-17)
        total += sum(int(x) for x in found[11:15]) / ticks
        if tree:
            todo += children.get(p, [])
    return total
