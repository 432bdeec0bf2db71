"""What every relational connector's configuration shares: properties, checks, a typed base.

Debezium declares these once in `CommonConnectorConfig` / `RelationalDatabaseConnectorConfig`
and every connector inherits them; so do we.  A connector module (connectors/<db>/config.py)
adds only what is its own - connection, replication, type modes - and builds its `ConfigDef`
from the groups below, so a property common to all connectors is declared, parsed and
documented in exactly one place and cannot drift between connectors.

The groups follow the user guide's sections: identity, filters, snapshot, events, operations
(heartbeats, retries, the runtime's queue, converters, offsets and topic log, signals).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, TypeVar, Unpack

from headwater.config.connector_common import (
    RUNTIME_PROPERTIES,
    CommonConnectorConfig,
    NameFilter,
    redacted_fields,
    split_statements,
)
from headwater.config.definition import (
    ConfigDef,
    ConfigValue,
    PatternProperty,
    Property,
    PropertyType,
    ValidatedConfig,
    ValidateOptions,
    ValidationContext,
    Validator,
    list_members_validator,
    regex_list_validator,
)
from headwater.config.kafka import KAFKA_PREFIXES
from headwater.config.loader import load_properties
from headwater.config.secrets import Secret, without_secrets
from headwater.config.signals import SIGNAL_PROPERTIES
from headwater.relational.column_mappers import (
    COLUMN_PROPAGATE_PROPERTY,
    DATATYPE_PROPAGATE_PROPERTY,
    HASH_PROPERTY,
    MASK_PROPERTY,
    TRUNCATE_PROPERTY,
    ColumnMappers,
    algorithm_problem,
    length_problem,
)
from headwater.topics.retention_config import TOP_LEVEL_KEYS as CLEANUP_KEYS

# The property types, short: a connector module unpacks them into _S, _I, ... as here.
TYPE_ALIASES: Final = (PropertyType.STRING, PropertyType.INT, PropertyType.LONG,
                       PropertyType.BOOLEAN, PropertyType.ENUM, PropertyType.LIST,
                       PropertyType.PASSWORD, PropertyType.PATH)
_S, _I, _L, _B, _E, _LIST, _PW, _P = TYPE_ALIASES

_TOPIC_NAME: Final = re.compile(r"[A-Za-z0-9._\-]+")
_SKIPPABLE: Final = ("c", "u", "d", "t", "none")
FAILURE_MODES: Final = ("fail", "warn", "skip")
DOC_REGEX: Final = "comma-separated regular expressions matched against the whole "
NOT_IMPLEMENTED: Final = "a Debezium option Headwater does not implement"

# Namespaces owned by other Headwater modules, which validate their own keys.
HEADWATER_PASSTHROUGH_PREFIXES: Final = ("headwater.pipeline.", "headwater.ops.", "headwater.sink.",
                                          "headwater.topics.retention.",
                                          "spark.",  # the pipeline's Spark session settings
                                          # (a prefix also admits the key without its dot)
                                          *(k + "." for k in CLEANUP_KEYS))
PASSTHROUGH_PREFIXES: Final = (
    "offset.storage.", "transforms.", "predicates.", "key.converter.", "value.converter.",
    "header.converter.",
    "debezium.",  # Debezium Server leftovers (debezium.sink.*, debezium.format.*)
    *HEADWATER_PASSTHROUGH_PREFIXES,
    *KAFKA_PREFIXES,  # validated by headwater.config.kafka when the runtime is built
)
# Debezium options of every relational connector that Headwater does not implement (warned).
IGNORED_NAMES: Final = (
    "snapshot.select.statement.overrides", "snapshot.include.collection.list",
    "sanitize.field.names", "converters", "schema.name.adjustment.mode",
    "field.name.adjustment.mode",
    "source.struct.version", "include.schema.comments", "custom.metric.tags",
    "max.queue.size.in.bytes", "offset.flush.timeout.ms",
)
IGNORED_PATTERNS: Final = ((r"snapshot\.select\.statement\.overrides\..+", NOT_IMPLEMENTED),)


# -- validators ----------------------------------------------------------------------------------

def topic_name_validator(what: str) -> Validator:
    def check(value: ConfigValue) -> str | None:
        if isinstance(value, str) and not _TOPIC_NAME.fullmatch(value):
            return f"'{value}' is not a valid {what}: use only letters, digits, '_', '.' and '-'"
        return None

    return check


_HEX: Final = re.compile(r"(?:[0-9a-fA-F]{2})*")
DEFAULT_UNAVAILABLE_VALUE: Final = "__debezium_unavailable_value"


def placeholder_validator(value: ConfigValue) -> str | None:
    """`unavailable.value.placeholder`: text, or ``hex:`` and the bytes in hexadecimal."""
    if isinstance(value, str) and value.startswith("hex:") and not _HEX.fullmatch(value[4:]):
        return f"'{value}': after 'hex:' an even number of hexadecimal digits is expected"
    return None


def placeholder_bytes(text: str) -> bytes:
    """The placeholder as bytes (``hex:`` prefix decoded, as Debezium does)."""
    if text.startswith("hex:"):
        return bytes.fromhex(text[4:])
    return text.encode()


_skipped_operations: Final = list_members_validator(
    _SKIPPABLE,
    lambda bad: f"'{','.join(bad)}' not allowed: expected a list of c, u, d, t or none")


def parse_message_key_columns(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Parse ``message.key.columns``: ``<table regex>:<col>,<col>;<table regex>:<col>...``.

    Raises ``ValueError`` describing the first malformed entry.
    """
    entries: list[tuple[str, tuple[str, ...]]] = []
    for raw_entry in text.split(";"):
        entry = raw_entry.strip()
        if not entry:
            continue
        table, sep, columns_text = entry.rpartition(":")
        columns = tuple(column.strip() for column in columns_text.split(",") if column.strip())
        if not sep or not table.strip() or not columns:
            raise ValueError(
                f"entry '{entry}' is not of the form <schema>.<table>:<column>[,<column>...]"
            )
        try:
            re.compile(table.strip(), re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"invalid table regular expression '{table.strip()}': {exc}") from None
        entries.append((table.strip(), columns))
    return tuple(entries)


def _message_key_columns(value: ConfigValue) -> str | None:
    if isinstance(value, str):
        try:
            parse_message_key_columns(value)
        except ValueError as exc:
            return str(exc)
    return None


# -- property groups -----------------------------------------------------------------------------

def identity_properties(connector_class: Property, database: str) -> tuple[Property, ...]:
    """name, connector.class, tasks.max, topic.prefix (`database`: the connector's name)."""
    return (
        Property("name", _S, doc="unique connector name; defaults to topic.prefix"),
        connector_class,
        Property("tasks.max", _I, 1, min_value=1, doc=f"the {database} connector uses one task"),
        Property("topic.prefix", _S, required=True, aliases=("database.server.name",),
                 validator=topic_name_validator("topic prefix"),
                 doc="logical server name, prefix of every topic name"),
    )


def filter_properties(container: str) -> tuple[Property, ...]:
    """The include/exclude lists; `container` is what holds tables ("schema", "database")."""
    lists = []
    for kind, what in ((container, f"{container} name"), ("table", f"<{container}>.<table>"),
                       ("column", f"<{container}>.<table>.<column>")):
        for way, old in (("include", "whitelist"), ("exclude", "blacklist")):
            lists.append(Property(f"{kind}.{way}.list", _LIST, aliases=(f"{kind}.{old}",),
                                  validator=regex_list_validator, doc=DOC_REGEX + what))
    propagate = f"<{container}>.<table>.<column>; adds __debezium.source.column.* parameters"
    return (
        *lists,
        Property(COLUMN_PROPAGATE_PROPERTY, _LIST, validator=regex_list_validator,
                 doc=DOC_REGEX + propagate),
        Property(DATATYPE_PROPAGATE_PROPERTY, _LIST, validator=regex_list_validator,
                 doc=DOC_REGEX + propagate.replace("<column>", "<type name>")),
        Property("message.key.columns", _S, validator=_message_key_columns,
                 doc="<table regex>:<column>,...;... key columns replacing the primary key"),
        Property("skipped.operations", _LIST, ("t",), validator=_skipped_operations,
                 doc="operations not emitted: c, u, d, t (truncate), or none"),
    )


def snapshot_properties(max_threads_doc: str) -> tuple[Property, ...]:
    return (
        Property("snapshot.lock.timeout.ms", _L, 10_000, min_value=0),
        Property("snapshot.fetch.size", _I, 10_240, min_value=1),
        Property("snapshot.delay.ms", _L, 0, min_value=0),
        Property("snapshot.max.threads", _I, 1, min_value=1, doc=max_threads_doc),
    )


EVENT_PROPERTIES: Final[tuple[Property, ...]] = (
    Property("tombstones.on.delete", _B, True),
    Property("extended.headers.enabled", _B, True,
             doc="Debezium 3.2+ __debezium.context.* headers (connector logical name, task, "
                 "connector name, run id) on every data event"),
    Property("decimal.handling.mode", _E, "precise", allowed=("precise", "double", "string")),
    Property("binary.handling.mode", _E, "bytes",
             allowed=("bytes", "base64", "base64-url-safe", "hex")),
    Property("provide.transaction.metadata", _B, False),
    Property("topic.transaction", _S, "transaction", validator=topic_name_validator("topic name"),
             doc="transaction metadata topic is <topic.prefix>.<topic.transaction>"),
    Property("event.processing.failure.handling.mode", _E, "fail", allowed=FAILURE_MODES,
             value_aliases={"ignore": "skip"},
             doc="an event that cannot be processed: fail (stop), warn or skip (logged, "
                 "counted in NumberOfErroneousEvents, not emitted)"),
    Property("event.converting.failure.handling.mode", _E, "fail", allowed=FAILURE_MODES,
             doc="a column value that cannot be converted: fail (stop, naming table, column "
                 "and value), warn or skip (written as null, logged, counted); Debezium's "
                 "default is warn, Headwater's fail (docs/compatibility.md)"),
)

OPERATION_PROPERTIES: Final[tuple[Property, ...]] = (
    Property("heartbeat.interval.ms", _I, 0, min_value=0, doc="0 disables heartbeats"),
    Property("heartbeat.action.query", _S, doc="SQL run on the source at every heartbeat"),
    Property("topic.heartbeat.prefix", _S, "__debezium-heartbeat",
             aliases=("heartbeat.topics.prefix",), validator=topic_name_validator("topic prefix"),
             doc="heartbeat topic is <topic.heartbeat.prefix>.<topic.prefix>"),
    Property("errors.max.retries", _I, -1, min_value=-1,
             doc="reconnect attempts after a retriable error (lost connection, server "
                 "restart) before failing; -1 retries forever, 0 never"),
    Property("retriable.restart.connector.wait.ms", _L, 10_000, min_value=0,
             doc="first wait before reconnecting; doubles per attempt up to 10 times this"),
    *RUNTIME_PROPERTIES,
    # signals and incremental snapshots (docs/snapshots.md)
    *SIGNAL_PROPERTIES,
)

PATTERN_PROPERTIES: Final = (
    PatternProperty("column.truncate.to.<length>.chars", TRUNCATE_PROPERTY, _LIST,
                    validator=regex_list_validator,
                    key_check=lambda match: length_problem(match["length"]),
                    doc=DOC_REGEX + "<schema>.<table>.<column>; values longer than <length> "
                        "characters are truncated"),
    PatternProperty("column.mask.with.<length>.chars", MASK_PROPERTY, _LIST,
                    validator=regex_list_validator,
                    key_check=lambda match: length_problem(match["length"]),
                    doc=DOC_REGEX + "<schema>.<table>.<column>; character values are replaced "
                        "by <length> asterisks"),
    PatternProperty("column.mask.hash[.v2].<algorithm>.with.salt.<salt>", HASH_PROPERTY, _LIST,
                    validator=regex_list_validator,
                    key_check=lambda match: algorithm_problem(match["algorithm"]),
                    doc=DOC_REGEX + "<schema>.<table>.<column>; character values are replaced "
                        "by the hex digest of salt + value (hashing strategy V1, or V2 with .v2)"),
)


def exclusive_lists(container: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{kind}.include.list", f"{kind}.exclude.list")
                 for kind in (container, "table", "column"))


def check_tasks(database: str) -> Any:
    def check(context: ValidationContext) -> None:
        tasks = context.values.get("tasks.max")
        if isinstance(tasks, int) and tasks > 1:
            context.warning(f"tasks.max: {tasks} ignored; the {database} connector uses one task")

    return check


def check_heartbeat(context: ValidationContext) -> None:
    if context.values.get("heartbeat.action.query") and context.values.get(
        "heartbeat.interval.ms"
    ) == 0:
        context.warning("heartbeat.action.query has no effect while heartbeat.interval.ms is 0")


# -- the typed base ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RelationalConnectorConfig(CommonConnectorConfig):
    """The validated properties every relational connector has, after those of every
    connector (CommonConnectorConfig).  Subclasses add their own fields and the container
    filter (schema, database)."""

    database_hostname: str
    database_user: str
    _: KW_ONLY
    database_password: Secret | None = None
    database_initial_statements: tuple[str, ...] = ()
    snapshot_mode: str = "initial"
    snapshot_lock_timeout_ms: int = 10_000
    snapshot_fetch_size: int = 10_240
    table_include_list: tuple[str, ...] = ()
    table_exclude_list: tuple[str, ...] = ()
    column_include_list: tuple[str, ...] = ()
    column_exclude_list: tuple[str, ...] = ()
    message_key_columns: tuple[tuple[str, tuple[str, ...]], ...] = ()
    decimal_handling_mode: str = "precise"
    binary_handling_mode: str = "bytes"
    event_converting_failure_handling_mode: str = "fail"
    heartbeat_action_query: str | None = None
    key_converter: str = "org.apache.kafka.connect.json.JsonConverter"
    value_converter: str = "org.apache.kafka.connect.json.JsonConverter"
    offset_flush_interval_ms: int = 60_000
    # Built from column.truncate/mask/propagate properties; read through `column_mappers`.
    _column_mappers: ColumnMappers = field(default=ColumnMappers(), repr=False, compare=False)
    _tables: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                compare=False)
    _columns: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                 compare=False)
    _key_columns: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self._common_defaults()
        put = object.__setattr__
        put(self, "_tables", NameFilter(self.table_include_list, self.table_exclude_list))
        put(self, "_columns", NameFilter(self.column_include_list, self.column_exclude_list))
        put(self, "_key_columns", tuple(
            (re.compile(table, re.IGNORECASE), columns)
            for table, columns in self.message_key_columns
        ))

    @staticmethod
    def common_values(c: ValidatedConfig) -> dict[str, Any]:
        """The base's constructor arguments from a validated configuration."""
        key_columns = c.get_optional_str("message.key.columns")
        statements = c.get_optional_str("database.initial.statements")
        return {
            **CommonConnectorConfig.common_connector_values(c),
            **c.attributes(
                "database.hostname", "database.user", "database.password", "snapshot.mode",
                "snapshot.lock.timeout.ms", "snapshot.fetch.size", "table.include.list",
                "table.exclude.list", "column.include.list", "column.exclude.list",
                "decimal.handling.mode", "binary.handling.mode",
                "event.converting.failure.handling.mode", "heartbeat.action.query",
                "key.converter", "value.converter", "offset.flush.interval.ms"),
            "database_initial_statements": split_statements(statements) if statements else (),
            "message_key_columns": (parse_message_key_columns(key_columns)
                                    if key_columns else ()),
            "_column_mappers": ColumnMappers.from_config({
                **c.patterned,
                COLUMN_PROPAGATE_PROPERTY: c.get_list(COLUMN_PROPAGATE_PROPERTY),
                DATATYPE_PROPAGATE_PROPERTY: c.get_list(DATATYPE_PROPAGATE_PROPERTY),
            }),
        }

    # -- derived values -----------------------------------------------------------------------

    @property
    def column_mappers(self) -> ColumnMappers:
        """Column truncation, masking, hashing and source-type propagation rules."""
        return self._column_mappers

    # -- filters (Debezium semantics: whole-name, case-insensitive regular expressions) ---------

    def column_filter(self, container: str, table: str, column: str) -> bool:
        """Whether a column is kept in events (matched as ``<container>.<table>.<column>``)."""
        return self._columns.admits(f"{container}.{table}.{column}")

    def key_columns(self, container: str, table: str) -> tuple[str, ...] | None:
        """``message.key.columns`` for the table (first matching entry), else ``None``."""
        name = f"{container}.{table}"
        for pattern, columns in self._key_columns:
            if pattern.fullmatch(name):
                return columns
        return None

    def redacted(self) -> dict[str, object]:
        """Attributes as a dict safe to print or log (secrets masked)."""
        out = redacted_fields(self)
        out["column_mappers"] = self._column_mappers.describe()
        return out


C = TypeVar("C", bound=RelationalConnectorConfig)


class ConfigLoader(Generic[C]):
    """A connector's entry points: validate a property map, or load a configuration file."""

    def __init__(self, definition: ConfigDef, build: Any) -> None:
        self.definition = definition
        self.build = build  # ValidatedConfig -> the connector's typed configuration

    def validate(
        self, raw: Mapping[str, object], **options: Unpack[ValidateOptions]
    ) -> tuple[C, list[str]]:
        """Validate a flat property map (`options` as `ConfigDef.validate` takes them); return
        the typed config and the warnings.

        Raises :class:`~headwater.config.definition.ConfigError` listing every problem.
        """
        validated = self.definition.validate(raw, **options)
        config: C = self.build(validated)
        return config, list(validated.warnings)

    def load(
        self, path: Path, overrides: Mapping[str, str] | None = None, *, secrets: bool = True
    ) -> tuple[C, list[str]]:
        """Load, merge ``overrides`` (e.g. from the command line) and validate a config file.

        Relative paths in the file are resolved against the file's directory.  `secrets=False`
        is for the read-only commands (`status`, `topics`, `offsets`): they work from the
        topics and offsets alone, so the secret properties (database password, ...) are left
        out before validation and need not be resolvable where those commands run.
        """
        raw = load_properties(path)
        if overrides:
            raw = self.definition.merge(raw, overrides)
        if not secrets:
            raw = without_secrets(raw, self._is_secret)
        return self.validate(raw, base_dir=path.parent.resolve(), source=str(path))

    def _is_secret(self, key: str) -> bool:
        name = self.definition.canonical_name(key)
        return name is not None and self.definition[name].is_secret
