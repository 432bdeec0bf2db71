"""Fixtures: `headwater serve` as a real process on a free port, and an HTTP client for it."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater.testing.localpg import free_port
from headwater.testing.timeouts import scaled

SRC = str(Path(__file__).resolve().parents[2] / "src")


class Served:
    """One `headwater serve` process; `start` again after `kill9` or `stop` (same port and
    data directory) is a restart of the service."""

    def __init__(self, data_dir: Path, *, token: str | None = None,
                 tls: tuple[Path, Path] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.token = token
        self.tls = tls
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / f"serve-{self.port}.log"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def client(self, token: str | None = None, **kw: Any) -> httpx.Client:
        token = self.token if token is None else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if self.tls:
            kw.setdefault("verify", ssl.create_default_context(cafile=str(self.tls[0])))
        return httpx.Client(base_url=self.url, headers=headers, timeout=120, **kw)

    def start(self) -> Served:
        cmd = [sys.executable, "-m", "headwater.cli", "serve", "--port", str(self.port),
               "--data-dir", str(self.data_dir)]
        if self.token:
            cmd += ["--token", self.token]
        if self.tls:
            cmd += ["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
        env = {**os.environ, "PYTHONPATH": SRC}
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + scaled(60)
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                with self.client() as c:
                    c.get("/")
                return self
            except httpx.TransportError:
                time.sleep(0.2)
        raise AssertionError(f"serve did not answer: {self.log.read_text()}")

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(120)
        self.proc = None
        return code

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)
        self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            self.stop()


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[Served]:
    s = Served(tmp_path / "data").start()
    try:
        yield s
    finally:
        s.close()


def wait_state(client: httpx.Client, name: str, state: str, timeout: float = 120) -> Any:
    """The connector's status once its connector state is `state` (AssertionError after
    `timeout`, with the last status)."""
    deadline = time.monotonic() + scaled(timeout)
    doc: Any = None
    while time.monotonic() < deadline:
        doc = client.get(f"/connectors/{name}/status").json()
        if doc.get("connector", {}).get("state") == state:
            return doc
        time.sleep(0.3)
    raise AssertionError(f"{name} not {state}: {doc}")
