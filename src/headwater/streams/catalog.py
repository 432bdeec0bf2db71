"""The catalog: profiles, streams, their states, state history and errors, in SQLite.

Why SQLite in a data directory: the CLI runs as separate short processes, each stream's
capture runs in a worker process, and the later REST service will run many streams; all of
them must see one truth and change it atomically.  SQLite gives that with one file, no
server, and transactions across processes (`BEGIN IMMEDIATE` serialises the state
read-check-write of `transition`, so two processes cannot both move a stream out of RUNNING).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from headwater.state_format import open_catalog
from headwater.streams.model import StreamSpec, StreamSpecError
from headwater.streams.profiles import Profile, ProfileError, source_kind
from headwater.streams.states import Action, State, next_state

ENV_DATA_DIR: Final = "HEADWATER_DATA_DIR"
DEFAULT_DATA_DIR: Final = "headwater-data"
CATALOG_FILE: Final = "catalog.sqlite"

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS profiles (
  name TEXT PRIMARY KEY, role TEXT NOT NULL, kind TEXT NOT NULL, properties TEXT NOT NULL,
  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS streams (
  name TEXT PRIMARY KEY, source_profile TEXT NOT NULL REFERENCES profiles(name),
  destination_profile TEXT NOT NULL REFERENCES profiles(name), spec TEXT NOT NULL,
  state TEXT NOT NULL, state_ms INTEGER NOT NULL, created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL, pid INTEGER, host TEXT, heartbeat_ms INTEGER,
  status TEXT);
CREATE TABLE IF NOT EXISTS state_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, time_ms INTEGER NOT NULL,
  from_state TEXT, to_state TEXT NOT NULL, action TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS stream_errors (
  id INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, error_uuid TEXT NOT NULL,
  time_ms INTEGER NOT NULL, reason TEXT NOT NULL, message TEXT NOT NULL,
  details TEXT NOT NULL);
"""


def connect(path: Path) -> sqlite3.Connection:
    """The catalog file's connection for every opener (the streams catalog, the service's
    connectors and pipelines), its format checked and stamped (`state_format.open_catalog`)
    before any table is created or read: a catalog a newer Headwater wrote is refused."""
    db = sqlite3.connect(path, timeout=60, isolation_level=None, check_same_thread=False)
    try:
        open_catalog(db, path)
    except BaseException:
        db.close()
        raise
    return db


def _check_filters(spec: StreamSpec, source: Profile) -> None:
    """The stream's include/exclude lists as its connector will get them, translated now: a
    list the source kind cannot take (a MongoDB stream including a field) is refused at
    creation, not when the stream starts or its objects are listed."""
    from headwater.streams.translate import collection_filters, object_filters

    try:
        if source_kind(source.kind).name == "mongodb":
            collection_filters(spec)
        else:
            object_filters(spec)
    except ValueError as exc:
        raise StreamSpecError(f"stream {spec.name!r}: {exc}") from None


class CatalogError(ValueError):
    """A missing or duplicate name, or a reference that does not hold."""


def now_ms() -> int:
    return int(time.time() * 1000)


def data_dir(explicit: Path | None = None) -> Path:
    """`--data-dir`, else $HEADWATER_DATA_DIR, else ./headwater-data."""
    if explicit is not None:
        return explicit
    env = os.environ.get(ENV_DATA_DIR)
    return Path(env) if env else Path(DEFAULT_DATA_DIR)


@dataclass(frozen=True, slots=True)
class StreamRecord:
    spec: StreamSpec
    state: State
    state_ms: int
    created_ms: int
    updated_ms: int
    pid: int | None
    host: str | None
    heartbeat_ms: int | None
    status: dict[str, Any] | None  # the worker's last status document (metrics)


@dataclass(frozen=True, slots=True)
class StreamError:
    """Datastream's Error: reason (a code), errorUuid, message, errorTime, details."""

    reason: str
    error_uuid: str
    message: str
    time_ms: int
    details: dict[str, str]

    def as_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "errorUuid": self.error_uuid, "message": self.message,
                "errorTime": _iso(self.time_ms), "details": self.details}


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


class CatalogConnection:
    """One process's connection to the catalog file, shared by its threads, for every opener
    (the streams catalog, the service's connectors and pipelines): `_tx` is the one write
    discipline, so that writers in any process serialise the same way."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self._db = connect(path)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")


class Catalog(CatalogConnection):
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        path = root / CATALOG_FILE
        fresh = not path.exists()
        super().__init__(path)
        if fresh:
            os.chmod(self.path, 0o600)  # connection passwords may be in it
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)

    def transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """One write transaction on the catalog (for tables kept beside it: streams/jobs.py)."""
        return self._tx()

    # -- profiles ------------------------------------------------------------------------
    def add_profile(self, profile: Profile, *, replace: bool = False) -> Profile:
        t = now_ms()
        with self._tx() as db:
            row = db.execute("SELECT role, created_ms FROM profiles WHERE name=?",
                             (profile.name,)).fetchone()
            if row is not None and not replace:
                raise CatalogError(f"profile {profile.name!r} already exists")
            if row is not None and row[0] != profile.role:
                raise CatalogError(f"profile {profile.name!r} is a {row[0]} profile")
            created = row[1] if row is not None else t
            db.execute("INSERT OR REPLACE INTO profiles VALUES (?,?,?,?,?,?)",
                       (profile.name, profile.role, profile.kind,
                        orjson.dumps(dict(profile.properties)).decode(), created, t))
        return Profile(profile.name, profile.role, profile.kind, profile.properties, created, t)

    def profile(self, name: str, role: str | None = None) -> Profile:
        with self._lock:
            row = self._db.execute("SELECT * FROM profiles WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CatalogError(f"no profile {name!r}")
        p = _profile(row)
        if role is not None and p.role != role:
            raise CatalogError(f"profile {name!r} is a {p.role} profile, not a {role} profile")
        return p

    def profiles(self, role: str | None = None) -> list[Profile]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM profiles ORDER BY name").fetchall()
        return [p for p in map(_profile, rows) if role is None or p.role == role]

    def delete_profile(self, name: str) -> None:
        with self._tx() as db:
            used = db.execute("SELECT name FROM streams WHERE source_profile=? OR "
                              "destination_profile=?", (name, name)).fetchall()
            if used:
                raise CatalogError(f"profile {name!r} is used by stream(s) "
                                   + ", ".join(r[0] for r in used))
            if db.execute("DELETE FROM profiles WHERE name=?", (name,)).rowcount == 0:
                raise CatalogError(f"no profile {name!r}")

    # -- streams -------------------------------------------------------------------------
    def create_stream(self, spec: StreamSpec) -> StreamRecord:
        source = self.profile(spec.source_profile, "source")
        self.profile(spec.destination_profile, "destination")
        _check_filters(spec, source)
        t = now_ms()
        with self._tx() as db:
            if db.execute("SELECT 1 FROM streams WHERE name=?", (spec.name,)).fetchone():
                raise CatalogError(f"stream {spec.name!r} already exists")
            db.execute(
                "INSERT INTO streams (name, source_profile, destination_profile, spec, state, "
                "state_ms, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?)",
                (spec.name, spec.source_profile, spec.destination_profile,
                 orjson.dumps(spec.as_json()).decode(), State.NOT_STARTED.value, t, t, t))
            db.execute("INSERT INTO state_history (stream, time_ms, from_state, to_state, "
                       "action, detail) VALUES (?,?,?,?,?,?)",
                       (spec.name, t, None, State.NOT_STARTED.value, "create", ""))
        return self.stream(spec.name)

    def stream(self, name: str) -> StreamRecord:
        with self._lock:
            row = self._db.execute("SELECT * FROM streams WHERE name=?", (name,)).fetchone()
        if row is None:
            raise CatalogError(f"no stream {name!r}")
        return _stream(row)

    def streams(self) -> list[StreamRecord]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM streams ORDER BY name").fetchall()
        return [_stream(r) for r in rows]

    def delete_stream(self, name: str) -> None:
        with self._tx() as db:
            if db.execute("DELETE FROM streams WHERE name=?", (name,)).rowcount == 0:
                raise CatalogError(f"no stream {name!r}")
            db.execute("DELETE FROM state_history WHERE stream=?", (name,))
            db.execute("DELETE FROM stream_errors WHERE stream=?", (name,))

    def transition(self, name: str, action: Action, detail: str = "", *,
                   pid: int | None = None) -> State:
        """Applies `action` atomically (TransitionError if the current state forbids it) and
        records it in the history; `pid` records the worker process (STARTING)."""
        t = now_ms()
        with self._tx() as db:
            row = db.execute("SELECT state FROM streams WHERE name=?", (name,)).fetchone()
            if row is None:
                raise CatalogError(f"no stream {name!r}")
            current = State(row[0])
            target = next_state(current, action)
            if pid is not None:
                db.execute("UPDATE streams SET pid=?, host=?, heartbeat_ms=? WHERE name=?",
                           (pid, socket.gethostname(), t, name))
            db.execute("UPDATE streams SET state=?, state_ms=?, updated_ms=? WHERE name=?",
                       (target.value, t, t, name))
            db.execute("INSERT INTO state_history (stream, time_ms, from_state, to_state, "
                       "action, detail) VALUES (?,?,?,?,?,?)",
                       (name, t, current.value, target.value, action.value, detail))
        return target

    def set_worker(self, name: str, pid: int | None) -> None:
        with self._tx() as db:
            db.execute("UPDATE streams SET pid=?, host=?, heartbeat_ms=? WHERE name=?",
                       (pid, socket.gethostname() if pid else None, now_ms() if pid else None,
                        name))

    def heartbeat(self, name: str, status: Mapping[str, Any] | None = None) -> None:
        with self._tx() as db:
            db.execute("UPDATE streams SET heartbeat_ms=?, status=COALESCE(?, status) "
                       "WHERE name=?",
                       (now_ms(), None if status is None else orjson.dumps(status).decode(),
                        name))

    def history(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT time_ms, from_state, to_state, action, detail FROM state_history "
                "WHERE stream=? ORDER BY id", (name,)).fetchall()
        return [{"time": _iso(r[0]), "time_ms": r[0], "from": r[1], "to": r[2],
                 "action": r[3], "detail": r[4]} for r in rows]

    # -- errors --------------------------------------------------------------------------
    def add_error(self, name: str, reason: str, message: str,
                  details: Mapping[str, str] | None = None) -> StreamError:
        err = StreamError(reason, str(uuid.uuid4()), message, now_ms(), dict(details or {}))
        with self._tx() as db:
            db.execute("INSERT INTO stream_errors (stream, error_uuid, time_ms, reason, "
                       "message, details) VALUES (?,?,?,?,?,?)",
                       (name, err.error_uuid, err.time_ms, reason, message,
                        orjson.dumps(err.details).decode()))
        return err

    def errors(self, name: str) -> list[StreamError]:
        self.stream(name)
        with self._lock:
            rows = self._db.execute(
                "SELECT reason, error_uuid, message, time_ms, details FROM stream_errors "
                "WHERE stream=? ORDER BY id", (name,)).fetchall()
        return [StreamError(r[0], r[1], r[2], r[3], orjson.loads(r[4])) for r in rows]


def _profile(row: tuple[Any, ...]) -> Profile:
    try:
        props = {str(k): str(v) for k, v in orjson.loads(row[3]).items()}
    except orjson.JSONDecodeError as exc:
        raise ProfileError(f"profile {row[0]!r}: damaged properties ({exc})") from None
    return Profile(row[0], row[1], row[2], props, row[4], row[5])


def _stream(row: tuple[Any, ...]) -> StreamRecord:
    spec = StreamSpec.from_json(row[0], row[1], row[2], orjson.loads(row[3]))
    return StreamRecord(spec, State(row[4]), row[5], row[6], row[7], row[8], row[9], row[10],
                        orjson.loads(row[11]) if row[11] else None)
