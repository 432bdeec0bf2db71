"""A throwaway Apache Kafka Connect worker for the tests: real Connect consumers of our topics.

Why a real worker: the promise that a Debezium user's consumers work unchanged on Headwater's
topics is only proven by running them as they run, inside Kafka Connect with its converters,
header converter and plugin isolation.  Debezium's JDBC sink (a consumer of our topics) and
Debezium's MariaDB connector (the oracle the MariaDB events are compared with) both run here.

Shape: one standalone worker (`ConnectStandalone worker.properties`, no connector files), its
REST API on a free loopback port.  Standalone because it needs no internal config and status
topics and starts in seconds; its REST API still adds, lists and reports on connectors, so a
test adds the connectors it needs and waits on their status, as an operator would.  The jars
are the `connect` artifact set (Kafka Connect 4.1.1, the Kafka line Debezium 3.5 is built
on); `plugin.path` is a folder of links, one per Connect plugin set (each set's folder is one
plugin, with its own class loader).

The worker is told only what a worker must be told: `bootstrap.servers`, `plugin.path`,
`offset.storage.file.filename`, `listeners`, and `key.converter`/`value.converter`, which
Connect 4.1 requires (no default) and which Kafka's own `config/connect-standalone.properties`
sets to the JsonConverter.  Everything that shapes records keeps Connect's defaults
(`schemas.enable=true`, the SimpleHeaderConverter for headers), so a test sees what a default
deployment sees; `settings` overrides them when a test means to.  One start-up setting differs:
`plugin.discovery=service_load`.  Connect's default (`hybrid_warn`) also scans every jar of
every plugin by reflection, which took 1-2 minutes of the shared test machines; both Debezium
plugins and Connect's own jars declare their plugins in service manifests (KIP-898), so the
worker finds the same plugins in a fraction of the time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from headwater.jvm import artifacts
from headwater.testing.localpg import free_port
from headwater.testing.timeouts import scaled

MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectStandalone"
DEFAULT_PLUGINS = ("debezium-jdbc-sink", "debezium-mariadb")
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


class ConnectWorkerError(RuntimeError):
    """The worker did not start, a REST call failed, or a connector did not reach a state."""


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").exists():
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if found is None:
        raise ConnectWorkerError("no `java` on PATH (a Kafka Connect worker needs Java 17+)")
    return found


class ConnectWorker:
    """One standalone Kafka Connect worker on loopback; `url` is its REST API."""

    def __init__(
        self,
        bootstrap: str,
        plugins: Iterable[str] = DEFAULT_PLUGINS,
        settings: Mapping[str, str] | None = None,
        base_dir: Path | None = None,
        heap: str = "512m",
    ) -> None:
        self.bootstrap = bootstrap
        self.plugins = tuple(plugins)
        self.settings = dict(settings or {})
        self._owns_base = base_dir is None  # a caller's folder (and the log) outlives cleanup
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="headwater-connect-"))
        self.heap = heap
        self.port = free_port()
        self.log_file = self.base / "worker.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_in: float | None = None  # seconds from launch to a ready REST API

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ----------------------------------------------------------------------------- lifecycle

    def _plugin_path(self) -> Path:
        """A folder holding one link per plugin set: Connect treats each subfolder of a
        `plugin.path` entry as one plugin (jars sharing one class loader)."""
        root = self.base / "plugins"
        root.mkdir(parents=True, exist_ok=True)
        for name in self.plugins:
            artifacts.fetch(name)
            link = root / name
            if not link.exists():
                link.symlink_to(artifacts.folder(name), target_is_directory=True)
        return root

    def worker_properties(self) -> dict[str, str]:
        return {
            "bootstrap.servers": self.bootstrap,
            "plugin.path": str(self._plugin_path()),
            "offset.storage.file.filename": str(self.base / "connect.offsets"),
            "listeners": f"http://127.0.0.1:{self.port}",
            "key.converter": JSON_CONVERTER,
            "value.converter": JSON_CONVERTER,
            "plugin.discovery": "service_load",
            **self.settings,
        }

    def start(self, timeout: float = 120.0) -> ConnectWorker:
        """Launches the worker and returns once its REST API answers (the herder is up)."""
        self.base.mkdir(parents=True, exist_ok=True)
        props = self.base / "worker.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in self.worker_properties().items()))
        classpath = artifacts.classpath("connect")
        cmd = [_java(), f"-Xmx{self.heap}", "-XX:+UseSerialGC",
               # C1 only: a test worker lives briefly, and start-up is most of its CPU
               "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
               "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
               "-cp", classpath, MAIN_CLASS, str(props)]
        began = time.monotonic()
        with open(self.log_file, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         cwd=self.base, start_new_session=True)
        deadline = began + timeout
        while True:
            if self.proc.poll() is not None:
                raise ConnectWorkerError(
                    f"the Connect worker exited ({self.proc.returncode}): {self.log_tail()}")
            # GET /connectors answers only once the herder has started (GET / is up earlier)
            with contextlib.suppress(ConnectWorkerError):
                self.request("GET", "/connectors")
                break
            if time.monotonic() > deadline:
                self.stop()
                raise ConnectWorkerError(
                    f"the Connect worker's REST API did not answer within {timeout}s: "
                    f"{self.log_tail()}")
            time.sleep(0.25)
        self.started_in = time.monotonic() - began
        return self

    def stop(self) -> None:
        """SIGTERM (Connect stops its connectors and commits), SIGKILL after 20 s."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        if self._owns_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return "(no log)"

    # ------------------------------------------------------------------------------ REST API

    def request(self, method: str, path: str, body: Any = None, timeout: float = 30.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                text = resp.read()
        except urllib.error.HTTPError as exc:
            raise ConnectWorkerError(f"{method} {path}: HTTP {exc.code}: "
                                     f"{exc.read().decode(errors='replace')[:2000]}") from exc
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            raise ConnectWorkerError(f"{method} {path}: {exc}") from exc
        return json.loads(text) if text else None

    def put_connector(self, name: str, config: Mapping[str, str]) -> None:
        """Creates (or reconfigures) connector `name`."""
        self.request("PUT", f"/connectors/{urllib.parse.quote(name)}/config",
                     {"name": name, **config})

    def delete_connector(self, name: str) -> None:
        self.request("DELETE", f"/connectors/{urllib.parse.quote(name)}")

    def status(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.request("GET",
                                             f"/connectors/{urllib.parse.quote(name)}/status")
        return found

    def wait_running(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        """Waits until the connector and all its tasks are RUNNING; a FAILED one raises at once
        with its trace (a connector that fails does not recover by waiting)."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            status: dict[str, Any] | None = None
            with contextlib.suppress(ConnectWorkerError):
                status = self.status(name)
            if status is not None:
                self.raise_if_failed(name, status)
                tasks = status.get("tasks") or []
                if (status["connector"]["state"] == "RUNNING" and tasks
                        and all(t["state"] == "RUNNING" for t in tasks)):
                    return status
            if time.monotonic() > deadline:
                raise ConnectWorkerError(f"connector {name} not RUNNING after {timeout}s: "
                                         f"{status}\n{self.log_tail()}")
            time.sleep(0.25)

    def raise_if_failed(self, name: str, status: dict[str, Any] | None = None) -> None:
        """Raises with the worker's trace if the connector or one of its tasks FAILED."""
        status = status if status is not None else self.status(name)
        failed = [status["connector"], *(status.get("tasks") or [])]
        for part in failed:
            if part.get("state") == "FAILED":
                raise ConnectWorkerError(f"connector {name} FAILED: "
                                         f"{part.get('trace', '(no trace)')[:6000]}")

    def __enter__(self) -> ConnectWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
