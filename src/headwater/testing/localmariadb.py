"""A throwaway local MariaDB server for the tests, the demo and the benchmarks.

Like `localpg`: Debian's binaries (`apt-get install mariadb-server`), a temporary directory for
the data, socket and logs, a free loopback port.  `mariadbd` refuses to run as root, so as root
the server runs as the `mysql` system user (which the Debian package creates).

The server writes a row-based binary log with full images and full metadata, which is what a
binlog CDC reader needs (`binlog_format=ROW`, `binlog_row_image=FULL`,
`binlog_row_metadata=FULL`, a `server_id`).  Access: `root` over the Unix socket (bootstrap),
and `user`/`password` (default `headwater`/`headwater`, every privilege including
`REPLICATION SLAVE` and `BINLOG MONITOR`) over TCP on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from headwater.testing.localpg import free_port
from headwater.testing.server_process import ServerProcess
from headwater.testing.timeouts import scaled


class LocalMariaDBError(RuntimeError):
    pass


def _pymysql() -> Any:
    try:
        import pymysql  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - an install problem
        raise LocalMariaDBError("PyMySQL is missing: pip install 'headwater[spark]'") from exc
    return pymysql


def find_binaries() -> tuple[Path, Path]:
    """(mariadbd, mariadb-install-db), or an error naming the Debian package."""
    server = shutil.which("mariadbd") or (
        "/usr/sbin/mariadbd" if Path("/usr/sbin/mariadbd").exists() else None)
    install = shutil.which("mariadb-install-db")
    if not server or not install:
        raise LocalMariaDBError(
            "no MariaDB server binaries found: apt-get install mariadb-server (scripts/setup.sh)")
    return Path(server), Path(install)


class LocalMariaDB(ServerProcess):
    def __init__(
        self,
        base_dir: Path | None = None,
        port: int | None = None,
        settings: dict[str, str] | None = None,
        user: str = "headwater",
        password: str = "headwater",
        server_id: int = 1,
    ) -> None:
        self.server_bin, self.install_bin = find_binaries()
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="headwater-mariadb-"))
        self.datadir = self.base / "data"
        self.socket = self.base / "mysqld.sock"
        self.config_file = self.base / "my.cnf"
        self.log_file = self.base / "server.log"
        self.port = port or free_port()
        self.user = user
        self.password = password
        self.settings = {
            "bind-address": "127.0.0.1",
            "skip-name-resolve": "ON",
            "server_id": str(server_id),
            "log_bin": "mariadb-bin",
            "binlog_format": "ROW",
            "binlog_row_image": "FULL",
            "binlog_row_metadata": "FULL",
            "character-set-server": "utf8mb4",
            "collation-server": "utf8mb4_unicode_ci",
            # A test server: durability traded for speed (the data is thrown away).
            "innodb_flush_log_at_trx_commit": "2",
            "sync_binlog": "0",
            "innodb_buffer_pool_size": "128M",
            "innodb_log_file_size": "64M",
            "max_connections": "200",
        }
        self.settings.update(settings or {})
        self._as_root = os.geteuid() == 0
        self._proc: subprocess.Popen[bytes] | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def _write_config(self) -> None:
        lines = [
            "[mysqld]",
            f"datadir={self.datadir}",
            f"socket={self.socket}",
            f"port={self.port}",
            f"pid-file={self.base / 'mariadbd.pid'}",
            f"log-error={self.log_file}",
            f"tmpdir={self.base}",
            *(f"{k}={v}" for k, v in self.settings.items()),
        ]
        self.config_file.write_text("\n".join(lines) + "\n")

    def _chown(self) -> None:
        if not self._as_root:
            return
        for root, dirs, files in os.walk(self.base):
            for name in [*dirs, *files]:
                shutil.chown(os.path.join(root, name), "mysql", "mysql")
        shutil.chown(self.base, "mysql", "mysql")

    def start(self, timeout: float = 60.0) -> LocalMariaDB:
        self.base.mkdir(parents=True, exist_ok=True)
        self._write_config()
        self._chown()
        user_args = ["--user=mysql"] if self._as_root else []
        if not (self.datadir / "mysql").exists():
            try:
                subprocess.run(
                    [str(self.install_bin), f"--defaults-file={self.config_file}",
                     *user_args, "--auth-root-authentication-method=socket",
                     "--skip-test-db"],
                    check=True, capture_output=True, text=True, timeout=180)
            except subprocess.CalledProcessError as exc:
                raise LocalMariaDBError(
                    f"mariadb-install-db failed: {exc.stdout[-2000:]}{exc.stderr[-2000:]}"
                ) from exc
            fresh = True
        else:
            fresh = False
        self._proc = subprocess.Popen(
            [str(self.server_bin), f"--defaults-file={self.config_file}", *user_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + scaled(timeout)
        while True:
            if self._proc.poll() is not None:
                raise LocalMariaDBError(f"mariadbd exited ({self._proc.returncode}):\n"
                                        + self._log_tail())
            try:
                conn = self._root_connect()
                break
            except Exception:
                if time.monotonic() > deadline:
                    self.stop()
                    raise LocalMariaDBError("mariadbd did not accept connections in time:\n"
                                            + self._log_tail()) from None
                time.sleep(0.2)
        try:
            if fresh:
                with conn.cursor() as cur:
                    for host in ("127.0.0.1", "localhost"):
                        cur.execute(f"CREATE USER IF NOT EXISTS '{self.user}'@'{host}' "
                                    "IDENTIFIED BY %s", (self.password,))
                        cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{self.user}'@'{host}' "
                                    "WITH GRANT OPTION")
        finally:
            conn.close()
        return self

    # -- clients --------------------------------------------------------------------------------
    def _root_connect(self) -> Any:
        return _pymysql().connect(unix_socket=str(self.socket), user="root", autocommit=True,
                               connect_timeout=5)

    def connect(self, database: str | None = None, autocommit: bool = True) -> Any:
        """A PyMySQL connection over TCP as the test user."""
        return _pymysql().connect(host="127.0.0.1", port=self.port, user=self.user,
                               password=self.password, database=database,
                               autocommit=autocommit, charset="utf8mb4", connect_timeout=10)

    def create_database(self, name: str) -> None:
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        finally:
            conn.close()

    def jdbc_url(self, database: str) -> str:
        """The URL Spark needs: `jdbc:mysql:` (a `jdbc:mariadb:` URL gets a wrong dialect)."""
        return f"jdbc:mysql://127.0.0.1:{self.port}/{database}?permitMysqlScheme"


@contextlib.contextmanager
def local_mariadb(**kw: Any) -> Iterator[LocalMariaDB]:
    server = LocalMariaDB(**kw).start()
    try:
        yield server
    finally:
        server.cleanup()
