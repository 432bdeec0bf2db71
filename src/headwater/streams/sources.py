"""Connecting to a source profile's database, and telling errors that heal from ones that
do not.

Why through the connector's configuration: a profile's properties are Debezium's, with
`${env:...}`/`${file:...}` secrets and SSL settings; loading them as a connector
configuration resolves all of that exactly as the capture will, so `discover` and the start
check connect the way the stream will.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Final

from headwater.streams.profiles import Profile, source_kind
from headwater.streams.translate import server_id, write_config

# Error reasons (Datastream's Error.reason is a free string; these are Headwater's codes).
REASON_AUTH: Final = "AUTHENTICATION_FAILED"
REASON_PERMISSION: Final = "PERMISSION_DENIED"
REASON_NOT_FOUND: Final = "NOT_FOUND"
REASON_CONFIG: Final = "INVALID_CONFIGURATION"
REASON_CONNECTION: Final = "CONNECTION_FAILED"
REASON_CAPTURE: Final = "CAPTURE_FAILED"
REASON_DIED: Final = "PROCESS_DIED"
REASON_POSITION: Final = "START_POSITION_UNAVAILABLE"
PERMANENT_REASONS: Final = frozenset({REASON_AUTH, REASON_PERMISSION, REASON_NOT_FOUND,
                                      REASON_CONFIG})

# pymysql error numbers that retrying cannot fix.
_MYSQL_PERMANENT: Final = {1044: REASON_PERMISSION, 1045: REASON_AUTH, 1049: REASON_NOT_FOUND,
                           1142: REASON_PERMISSION, 1227: REASON_PERMISSION,
                           1698: REASON_AUTH}
# MongoDB server error codes that retrying cannot fix.
_MONGO_PERMANENT: Final = {18: REASON_AUTH, 13: REASON_PERMISSION}
_PG_PERMANENT: Final = (("password authentication failed", REASON_AUTH),
                        ("authentication failed", REASON_AUTH),
                        ("no password supplied", REASON_AUTH),
                        ("does not exist", REASON_NOT_FOUND),
                        ("permission denied", REASON_PERMISSION),
                        ("must be superuser or replication role", REASON_PERMISSION),
                        ("pg_hba.conf rejects", REASON_PERMISSION))


def classify(exc: BaseException) -> str:
    """The error reason of an exception; permanent when in PERMANENT_REASONS."""
    from headwater.config import ConfigError

    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ConfigError):
            return REASON_CONFIG
        args = getattr(e, "args", ())
        if type(e).__module__.startswith("pymysql") and args and isinstance(args[0], int):
            code = _MYSQL_PERMANENT.get(args[0])
            if code is not None:
                return code
            return REASON_CONNECTION
        if type(e).__module__.startswith("pymongo"):
            code = getattr(e, "code", None)
            if code in _MONGO_PERMANENT:
                return _MONGO_PERMANENT[code]
            return REASON_CONNECTION
        if type(e).__module__.startswith("psycopg2"):
            text = str(e).lower()
            for needle, reason in _PG_PERMANENT:
                if needle in text:
                    return reason
            return REASON_CONNECTION
        e = e.__cause__ or e.__context__
    text = str(exc).lower()
    if "connection refused" in text or "could not connect" in text:
        return REASON_CONNECTION
    return REASON_CAPTURE


def profile_config(profile: Profile) -> Any:
    """The profile's properties loaded as its connector's typed configuration (secrets
    resolved; ConfigError when a property is invalid)."""
    from headwater.capture import load_connector_config

    kind = source_kind(profile.kind)
    with tempfile.TemporaryDirectory(prefix="headwater-profile-") as tmp:
        props = {**profile.properties, "connector.class": kind.connector_class,
                 "topic.prefix": "discover",
                 "offset.storage.file.filename": str(Path(tmp) / "offsets.json"),
                 "headwater.topics.dir": str(Path(tmp) / "topics")}
        if kind.name == "mysql":
            props.setdefault("database.server.id", str(server_id(profile.name)))
        if kind.name in ("mysql", "sqlserver"):
            props["schema.history.internal.file.filename"] = str(Path(tmp) / "h.jsonl")
        path = write_config(Path(tmp) / "profile.json", props)
        return load_connector_config(path)


def connect(profile: Profile) -> Any:
    """A DB-API connection to the profile's database (autocommit)."""
    kind = source_kind(profile.kind)
    cfg = profile_config(profile)
    if kind.name == "postgresql":
        from headwater.connectors.postgres.connection import connect as pg_connect

        conn = pg_connect(cfg.dsn_kwargs(), application_name="headwater-discover")
        conn.autocommit = True
        return conn
    if kind.name == "mysql":
        from headwater.connectors.mysql.connection import connect as my_connect

        return my_connect(cfg)
    if kind.name == "mongodb":
        from headwater.connectors.mongodb.connection import client as mongo_client

        mongo = mongo_client(cfg)
        mongo.admin.command("ping")  # a client connects lazily: fail here, as the others do
        return mongo
    if kind.name == "sqlserver":
        # Through the connector's driver setting (`headwater.sqlserver.driver`: pymssql, or
        # the tests' emulation) and its `?` adapter, as the capture connects; autocommit, so
        # discover and the checks hold no transaction open on the change tables.
        from importlib import import_module

        from headwater.relational.changetables.paramstyle import connect_qmark

        driver = import_module(cfg.headwater_sqlserver_driver)
        kwargs = {**cfg.connect_kwargs(cfg.database_names[0]), "autocommit": True}
        return connect_qmark(driver, **kwargs)
    raise NotImplementedError(f"connecting to a {kind.name} source")


def probe(profile: Profile) -> None:
    """Connects and disconnects: raises what the source says when it refuses."""
    connect(profile).close()
