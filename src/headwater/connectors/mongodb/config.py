"""MongoDB connector properties (Debezium 3.x names and defaults) and the typed configuration.

Why a configuration of its own rather than a `RelationalConnectorConfig`: a MongoDB connector
has no host/user/password triple, no tables, columns or type modes; it shares with the
relational connectors only the event, heartbeat, retry, runtime and signal properties, which are
taken from the shared groups by name so they stay declared once.

Choices (docs/mongodb.md):

* ``mongodb.connection.string`` is a secret: it holds the credentials.  Logs and `status` show
  it with the password masked (`masked_connection_string`), never the text itself.
* ``mongodb.user`` / ``mongodb.password`` / ``mongodb.authsource`` are still Debezium 3.x
  properties: they override the connection string's credentials, as Debezium does.
* ``snapshot.mode``: Debezium 3.x's ``initial``, ``initial_only``, ``when_needed``, ``no_data``,
  ``always``; ``never`` (2.x) is the deprecated alias of ``no_data`` (both stream from the
  current end of the oplog on the first start).  ``custom`` / ``configuration_based`` are
  refused.
* Properties Debezium has and Headwater does not implement are warned as such (the core's
  rule); options of them that would change the events (oversize skip/split, json modes other
  than Debezium's default) are refused rather than ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlsplit, urlunsplit

from headwater.config.connector_common import (
    CommonConnectorConfig,
    NameFilter,
    check_queue,
    redacted_fields,
)
from headwater.config.definition import (
    ConfigDef,
    ConfigValue,
    PatternProperty,
    Property,
    ValidatedConfig,
    ValidationContext,
    regex_list_validator,
)
from headwater.config.loader import load_properties
from headwater.config.output import DATASTREAM, check_output
from headwater.config.secrets import REDACTED, Secret, without_secrets
from headwater.relational import config as relational

CONNECTOR_CLASS: Final = "io.debezium.connector.mongodb.MongoDbConnector"
CLASS_ALIASES: Final = ("mongodb", "mongo")

_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES

CAPTURE_MODES: Final = ("change_streams", "change_streams_update_full",
                        "change_streams_with_pre_image",
                        "change_streams_update_full_with_pre_image")
SNAPSHOT_MODES: Final = ("initial", "initial_only", "when_needed", "no_data", "always")
# A secret-free stand-in for the read-only commands, which never connect.
NO_CONNECTION: Final = "mongodb://secrets-not-loaded"
_FILTER_OVERRIDE: Final = "snapshot.collection.filter.overrides"
_JSON_MODE: Final = "headwater.datastream.mongodb.json.mode"


def _connector_class(text: str) -> str:
    if text == CONNECTOR_CLASS or text.lower() in CLASS_ALIASES:
        return CONNECTOR_CLASS
    raise ValueError(f"the MongoDB connector ({CONNECTOR_CLASS}, 'mongodb' or 'mongo')")


def _check_connection_string(context: ValidationContext) -> None:
    # A check, not a validator: secrets skip validators; the message never shows the value.
    value = context.values.get("mongodb.connection.string")
    text = value.reveal() if isinstance(value, Secret) else value
    if isinstance(text, str) and not text.startswith(("mongodb://", "mongodb+srv://")):
        context.error("mongodb.connection.string: expected a mongodb:// or mongodb+srv:// "
                      "connection string")


def _field_list(what: str, renames: bool) -> Any:
    def check(value: ConfigValue) -> str | None:
        if not isinstance(value, str):
            return None
        for entry in (e.strip() for e in value.split(",")):
            path, sep, new = entry.partition(":")
            parts = path.split(".")
            if len(parts) < 3 or any(not p for p in parts) or (renames and (not sep or not new)):
                form = "<db>.<collection>.<field>" + (":<new name>" if renames else "")
                return f"invalid {what} entry '{entry}': expected {form}"
        return None

    return check


def _filter_collections(value: ConfigValue) -> str | None:
    if isinstance(value, str):
        for name in (n.strip() for n in value.split(",")):
            if name and "." not in name:
                return f"'{name}' is not <database>.<collection>"
    return None


_SHARED_NAMES: Final = frozenset({
    "tombstones.on.delete", "extended.headers.enabled", "provide.transaction.metadata",
    "topic.transaction", "event.processing.failure.handling.mode", "heartbeat.interval.ms",
    "topic.heartbeat.prefix", "errors.max.retries", "retriable.restart.connector.wait.ms",
})


def _shared(properties: tuple[Property, ...]) -> tuple[Property, ...]:
    """The relational groups' properties a MongoDB connector also has (by name)."""
    return tuple(p for p in properties if p.name in _SHARED_NAMES)


_SKIPPED = next(p for p in relational.filter_properties("database")
                if p.name == "skipped.operations")
_RUNTIME_AND_SIGNALS: Final = tuple(
    p for p in relational.OPERATION_PROPERTIES
    if p.name not in _SHARED_NAMES and p.name != "heartbeat.action.query")

PROPERTIES: Final[tuple[Property, ...]] = (
    *relational.identity_properties(Property("connector.class", _S, CONNECTOR_CLASS,
                                             parser=_connector_class), "MongoDB"),
    # -- connection -----------------------------------------------------------------------------
    Property("mongodb.connection.string", _PW, required=True,
             doc="mongodb:// or mongodb+srv:// URI of the replica set or sharded cluster"),
    Property("mongodb.user", _S, doc="overrides the connection string's user"),
    Property("mongodb.password", _PW, doc="overrides the connection string's password"),
    Property("mongodb.authsource", _S, "admin", doc="database the credentials are defined in"),
    Property("mongodb.ssl.enabled", _B, False),
    Property("mongodb.ssl.invalid.hostname.allowed", _B, False),
    Property("mongodb.connect.timeout.ms", _I, 10_000, min_value=1),
    Property("mongodb.server.selection.timeout.ms", _I, 30_000, min_value=1),
    Property("mongodb.socket.timeout.ms", _I, 0, min_value=0),
    Property("mongodb.heartbeat.frequency.ms", _I, 10_000, min_value=500),
    Property("cursor.max.await.time.ms", _I, min_value=1,
             doc="longest wait of one change stream poll (server default when unset)"),
    Property("capture.start.op.time", _L, -1, min_value=-1, max_value=2**63 - 1,
             doc="a BSON timestamp as a long ((seconds << 32) + increment): with no stored "
                 "position and snapshot.mode=no_data, streaming starts at this operation "
                 "time (-1: at the current end)"),
    # -- filters --------------------------------------------------------------------------------
    *(Property(f"{kind}.{way}.list", _LIST, validator=regex_list_validator,
               doc=relational.DOC_REGEX + ("database name" if kind == "database"
                                           else "<database>.<collection>"))
      for kind in ("database", "collection") for way in ("include", "exclude")),
    Property("filters.match.mode", _E, "regex", allowed=("regex", "literal"),
             doc="include/exclude lists as regular expressions or literal names"),
    Property("field.exclude.list", _S, validator=_field_list("field.exclude.list", False),
             doc="<db>.<collection>.<field>[.<nested>...], '*' wildcards in db and collection"),
    Property("field.renames", _S, validator=_field_list("field.renames", True),
             doc="<db>.<collection>.<field>[.<nested>...]:<new name>, ..."),
    _SKIPPED,
    # -- capture --------------------------------------------------------------------------------
    Property("capture.mode", _E, "change_streams_update_full", allowed=CAPTURE_MODES),
    Property("capture.mode.full.update.type", _E, "lookup", allowed=("lookup", "post_image"),
             doc="full documents of updates: updateLookup, or the post image (MongoDB 6+)"),
    Property("capture.scope", _E, "deployment", allowed=("deployment", "database"),
             rejected_values={"collection": "not implemented by Headwater: use database "
                                            "scope with collection.include.list"}),
    Property("capture.target", _S, doc="the database watched with capture.scope=database"),
    Property("json.serialization.mode", _E, "legacy", allowed=("legacy",),
             rejected_values=dict.fromkeys(
                 ("strict", "extended", "relaxed"),
                 "Headwater writes Debezium's default (legacy) encoding only")),
    Property(_JSON_MODE, _E, "canonical", allowed=("canonical", "strict", "relaxed"),
             doc="Extended JSON of the documents in Datastream events: canonical (every "
                 "value typed; Datastream's default), strict (Datastream's STRICT, Extended "
                 "JSON v1) or relaxed (v2 relaxed, not a Datastream mode); only with "
                 "headwater.event.format=datastream"),
    Property("cursor.oversize.handling.mode", _E, "fail", allowed=("fail",),
             rejected_values=dict.fromkeys(("skip", "split"), "not implemented by Headwater")),
    # -- snapshot -------------------------------------------------------------------------------
    Property("snapshot.mode", _E, "initial", allowed=SNAPSHOT_MODES,
             value_aliases={"never": "no_data"},
             rejected_values=dict.fromkeys(
                 ("custom", "configuration_based"), "custom snapshotters are not supported")),
    Property("snapshot.max.threads", _I, 1, min_value=1,
             doc="collections read in parallel by the initial snapshot"),
    Property("snapshot.fetch.size", _I, 0, min_value=0, doc="cursor batch size (0: server's)"),
    Property("snapshot.delay.ms", _L, 0, min_value=0),
    Property(_FILTER_OVERRIDE, _S, validator=_filter_collections,
             doc="<db>.<collection>,...: collections whose snapshot reads only the documents "
                 f"matching {_FILTER_OVERRIDE}.<db>.<collection> (a JSON query)"),
    # -- events, heartbeats, retries, runtime, signals --------------------------------------------
    *_shared(relational.EVENT_PROPERTIES),
    *_shared(relational.OPERATION_PROPERTIES),
    *_RUNTIME_AND_SIGNALS,
)

_NOT_IMPLEMENTED: Final = relational.NOT_IMPLEMENTED
IGNORED: Final[Mapping[str, str]] = {
    **dict.fromkeys(
        ("mongodb.poll.interval.ms", "mongodb.authentication.class",
         "cursor.pipeline", "cursor.pipeline.order", "cursor.oversize.skip.threshold",
         "mongodb.ssl.keystore", "mongodb.ssl.keystore.password", "mongodb.ssl.keystore.type",
         "mongodb.ssl.truststore", "mongodb.ssl.truststore.password",
         "mongodb.ssl.truststore.type", "schema.name.adjustment.mode",
         "field.name.adjustment.mode",
         "source.struct.version", "custom.metric.tags", "max.queue.size.in.bytes",
         "offset.flush.timeout.ms", "converters",
         "snapshot.include.collection.list", "incremental.snapshot.chunk.size.bytes"),
        _NOT_IMPLEMENTED),
    **dict.fromkeys(("mongodb.hosts", "mongodb.name", "mongodb.members.auto.discover",
                     "mongodb.connection.mode"),
                    "removed in Debezium 2.x: use mongodb.connection.string"),
}

PATTERN_PROPERTIES: Final = (
    PatternProperty(f"{_FILTER_OVERRIDE}.<db>.<collection>",
                    re.escape(_FILTER_OVERRIDE) + r"\..+\..+", _S,
                    doc="the JSON query the snapshot of <db>.<collection> reads with"),
)


def _check_signal_channels(context: ValidationContext) -> None:
    # The MongoDB streaming loop polls the signal collection and the file only.
    channels = context.values.get("signal.enabled.channels")
    if isinstance(channels, tuple) and "kafka" in (c.lower() for c in channels):
        context.error("signal.enabled.channels: the kafka channel is not implemented for "
                      "MongoDB (source and file are)")


def _check_scope(context: ValidationContext) -> None:
    if context.values.get("capture.scope") == "database" and not context.values.get(
            "capture.target"):
        context.error("capture.target: required with capture.scope=database (the database "
                      "to watch)")


def _check_event_format(context: ValidationContext) -> None:
    """Datastream events carry the whole document of every change: the capture modes whose
    updates have only the changed fields cannot give them; the JSON mode is Datastream's
    only."""
    values = context.values
    if values.get("headwater.event.format") == DATASTREAM:
        mode = values.get("capture.mode")
        if isinstance(mode, str) and "update_full" not in mode:
            context.error(f"capture.mode={mode}: Datastream events carry the whole document "
                          "of an update; use change_streams_update_full or "
                          "change_streams_update_full_with_pre_image")
    elif _JSON_MODE in context.explicit:
        context.error(f"{_JSON_MODE} is only used with headwater.event.format=datastream")
    check_output(context)


MONGODB_CONFIG_DEF: Final = ConfigDef(
    PROPERTIES,
    passthrough_prefixes=relational.PASSTHROUGH_PREFIXES,
    ignored=IGNORED,
    exclusive=(("database.include.list", "database.exclude.list"),
               ("collection.include.list", "collection.exclude.list")),
    checks=(check_queue, relational.check_tasks("MongoDB"), _check_scope,
            _check_connection_string, _check_signal_channels, _check_event_format),
    pattern_properties=PATTERN_PROPERTIES,
)


def mask_connection_string(text: str) -> str:
    """The connection string with its password (if any) replaced by asterisks, as Debezium's
    `ConnectionStrings.mask` shows it."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    user, at, hosts = netloc.rpartition("@")
    if not at:
        return text
    name, colon, _ = user.partition(":")
    masked = f"{name}:{REDACTED}@{hosts}" if colon else f"{name}@{hosts}"
    return urlunsplit(parts._replace(netloc=masked))


def _filter_queries(c: ValidatedConfig) -> dict[str, str]:
    listed = [n.strip() for n in (c.get_optional_str(_FILTER_OVERRIDE) or "").split(",")
              if n.strip()]
    prefix = _FILTER_OVERRIDE + "."
    given = {k[len(prefix):]: str(v) for k, v in c.patterned.items()}
    return {name: given[name] for name in listed if name in given}


@dataclass(frozen=True, slots=True)
class MongoDbConnectorConfig(CommonConnectorConfig):
    """Validated MongoDB connector configuration (attribute = property, ``.`` -> ``_``), after
    the properties of every connector (CommonConnectorConfig)."""

    mongodb_connection_string: Secret
    _: KW_ONLY
    connector_class: str = CONNECTOR_CLASS
    mongodb_user: str | None = None
    mongodb_password: Secret | None = None
    mongodb_authsource: str = "admin"
    mongodb_ssl_enabled: bool = False
    mongodb_ssl_invalid_hostname_allowed: bool = False
    mongodb_connect_timeout_ms: int = 10_000
    mongodb_server_selection_timeout_ms: int = 30_000
    mongodb_socket_timeout_ms: int = 0
    mongodb_heartbeat_frequency_ms: int = 10_000
    cursor_max_await_time_ms: int | None = None
    # capture.start.op.time (None: unset, Debezium's -1)
    capture_start_op_time: int | None = None
    database_include_list: tuple[str, ...] = ()
    database_exclude_list: tuple[str, ...] = ()
    collection_include_list: tuple[str, ...] = ()
    collection_exclude_list: tuple[str, ...] = ()
    filters_match_mode: str = "regex"
    field_exclude_list: str | None = None
    field_renames: str | None = None
    capture_mode: str = "change_streams_update_full"
    capture_mode_full_update_type: str = "lookup"
    capture_scope: str = "deployment"
    capture_target: str | None = None
    snapshot_mode: str = "initial"
    snapshot_fetch_size: int = 0
    # "<db>.<collection>" -> the JSON query its snapshot reads with
    snapshot_collection_filter_overrides: Mapping[str, str] = field(default_factory=dict)
    headwater_datastream_mongodb_json_mode: str = "canonical"
    _databases: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                   compare=False)
    _collections: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                     compare=False)

    def __post_init__(self) -> None:
        self._common_defaults()
        put = object.__setattr__
        literal = self.filters_match_mode == "literal"

        def names(items: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(re.escape(i) for i in items) if literal else items

        put(self, "_databases", NameFilter(names(self.database_include_list),
                                           names(self.database_exclude_list)))
        put(self, "_collections", NameFilter(names(self.collection_include_list),
                                             names(self.collection_exclude_list)))

    @classmethod
    def from_validated(cls, c: ValidatedConfig) -> MongoDbConnectorConfig:
        secret = c.get_secret("mongodb.connection.string")
        assert secret is not None  # required
        await_ms = c.values.get("cursor.max.await.time.ms")
        return cls(
            **cls.common_connector_values(c),
            **c.attributes(
                "connector.class", "mongodb.user", "mongodb.password", "mongodb.authsource",
                "mongodb.ssl.enabled", "mongodb.ssl.invalid.hostname.allowed",
                "mongodb.connect.timeout.ms", "mongodb.server.selection.timeout.ms",
                "mongodb.socket.timeout.ms", "mongodb.heartbeat.frequency.ms",
                "database.include.list", "database.exclude.list", "collection.include.list",
                "collection.exclude.list", "filters.match.mode", "field.exclude.list",
                "field.renames", "capture.mode", "capture.mode.full.update.type",
                "capture.scope", "capture.target", "snapshot.mode", "snapshot.fetch.size",
                _JSON_MODE),
            mongodb_connection_string=secret,
            cursor_max_await_time_ms=await_ms if isinstance(await_ms, int) else None,
            capture_start_op_time=(None if c.get_int("capture.start.op.time") < 0
                                   else c.get_int("capture.start.op.time")),
            snapshot_collection_filter_overrides=_filter_queries(c),
        )

    # -- derived values -------------------------------------------------------------------------

    @property
    def full_document(self) -> bool:
        """Whether update events carry the whole document (`*_update_full` modes)."""
        return "update_full" in self.capture_mode

    @property
    def pre_image(self) -> bool:
        return self.capture_mode.endswith("with_pre_image")

    def database_filter(self, database: str) -> bool:
        return self._databases.admits(database)

    def collection_filter(self, database: str, collection: str) -> bool:
        """Whether `<database>.<collection>` is captured (Debezium's Filters: the database
        lists, then the collection lists on the namespace; whole-name, case-insensitive)."""
        if self.capture_scope == "database" and database != self.capture_target:
            return False
        return self._databases.admits(database) and self._collections.admits(
            f"{database}.{collection}")

    def masked_connection_string(self) -> str:
        return mask_connection_string(self.mongodb_connection_string.reveal())

    def redacted(self) -> dict[str, object]:
        out = redacted_fields(self)
        out["mongodb_connection_string"] = self.masked_connection_string()
        return out


def validate_mongodb_config(raw: Mapping[str, object], *, base_dir: Path | None = None,
                            source: str | None = None, env: Mapping[str, str] | None = None
                            ) -> tuple[MongoDbConnectorConfig, list[str]]:
    """Validate a flat property map (ConfigError listing every problem)."""
    validated = MONGODB_CONFIG_DEF.validate(raw, base_dir=base_dir, source=source, env=env)
    return MongoDbConnectorConfig.from_validated(validated), list(validated.warnings)


def load_mongodb_config(path: Path, overrides: Mapping[str, str] | None = None, *,
                        secrets: bool = True) -> tuple[MongoDbConnectorConfig, list[str]]:
    """Load and validate a configuration file; `secrets=False` (read-only commands) leaves
    the secrets out and puts a stand-in for the required connection string."""
    raw = load_properties(path)
    if overrides:
        raw = MONGODB_CONFIG_DEF.merge(raw, overrides)
    if not secrets:
        raw = without_secrets(raw, lambda key: key in (
            "mongodb.connection.string", "mongodb.password"))
        raw["mongodb.connection.string"] = NO_CONNECTION
    return validate_mongodb_config(raw, base_dir=path.parent.resolve(), source=str(path))


def credentials(cfg: MongoDbConnectorConfig) -> dict[str, Any]:
    """pymongo keyword arguments for `mongodb.user` / `mongodb.password` (when set)."""
    out: dict[str, Any] = {}
    if cfg.mongodb_user:
        out["username"] = unquote(cfg.mongodb_user)
        out["authSource"] = cfg.mongodb_authsource
        if cfg.mongodb_password is not None:
            out["password"] = cfg.mongodb_password.reveal()
    return out


__all__ = ["CONNECTOR_CLASS", "MONGODB_CONFIG_DEF", "MongoDbConnectorConfig", "credentials",
           "load_mongodb_config", "mask_connection_string", "validate_mongodb_config"]
