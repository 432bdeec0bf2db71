"""PostgreSQL connector properties (Debezium names and defaults) and the typed configuration.

Why this module exists: a Debezium PostgreSQL connector configuration should run on Headwater
unchanged, and anything Headwater cannot honour must say so at startup instead of being silently
ignored.  :data:`POSTGRES_CONFIG_DEF` declares every property with the name and default of
*current* Debezium (2.x/3.x); :class:`PostgresConnectorConfig` is the frozen, typed value the rest
of the connector reads, including the include/exclude filter logic and the libpq connection
parameters.

Choices where the Debezium 1.0 guide (the project reference) and current Debezium differ - we
follow current Debezium and say so here:

* ``topic.prefix`` (required) replaces ``database.server.name`` (accepted as a deprecated alias).
* ``max.batch.size`` 2048, ``max.queue.size`` 8192, ``poll.interval.ms`` 500 (the guide lists
  10240 / 20240 / 1000 for PostgreSQL in 1.0).
* ``database.sslmode`` defaults to ``prefer`` (1.0: ``disable``).
* ``hstore.handling.mode`` defaults to ``json`` (the guide's property table says ``map``).
* ``unavailable.value.placeholder`` is the current name of ``toasted.value.placeholder`` (alias).
* ``topic.heartbeat.prefix`` is the current name of ``heartbeat.topics.prefix`` (alias).
* ``plugin.name``: Debezium defaults to ``decoderbufs``; Headwater speaks only ``pgoutput``, so
  that is the default and any other plugin is a configuration error.
* ``snapshot.mode``: ``initial``, ``always``, ``no_data``, ``initial_only``, ``when_needed``.
  ``never`` (Debezium <= 2.x) is a deprecated alias of ``no_data``: no snapshot of table data;
  streaming starts from the stored offset, or from where the replication slot is (created at
  startup if missing).  ``exported`` (1.x lock-free snapshot) is a deprecated alias of
  ``initial``, which already uses the slot's exported snapshot in current Debezium.
* ``skipped.operations`` defaults to ``t`` (truncate events are not emitted), as Debezium 2.x.

Headwater-specific behaviour:

* Relative paths (``offset.storage.file.filename``, ``headwater.topics.dir``, SSL files,
  ``${file:...}`` secrets) are resolved against the directory holding the configuration file -
  not the working directory - so a pipeline finds its offsets wherever it is started from.  The
  offsets file defaults to ``data/offsets/<topic.prefix>.json`` there.  Without a file (a
  mapping validated directly), paths stay relative to the working directory.
* ``offset.flush.interval.ms`` is accepted for compatibility but offsets are flushed together with
  every durable batch of the topic log, which is stricter than a periodic flush.
* Events are encoded like Kafka Connect's ``JsonConverter``; ``key.converter`` /
  ``value.converter`` may only name that converter, and ``*.converter.schemas.enable`` choose
  between ``{"schema":..., "payload":...}`` and the bare payload.

Column mappers (``column.truncate.to.<length>.chars``, ``column.mask.with.<length>.chars``,
``column.mask.hash[.v2].<algorithm>.with.salt.<salt>``, ``column.propagate.source.type``,
``datatype.propagate.source.type``) are validated here (a malformed length, an unknown hash
algorithm or an invalid regular expression is an error naming the property, where Debezium
would ignore the property or fail later) and exposed as
:attr:`PostgresConnectorConfig.column_mappers`; their semantics are in
:mod:`headwater.relational.column_mappers`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from headwater.config.connector_common import (
    RUNTIME_PROPERTIES,
    NameFilter,
    check_queue,
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
    ValidationContext,
    Validator,
    regex_list_validator,
)
from headwater.config.loader import load_properties
from headwater.config.secrets import Secret
from headwater.config.signals import SIGNAL_PROPERTIES, SignalConfig, signal_config
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

__all__ = [
    "CONNECTOR_CLASS",
    "POSTGRES_CONFIG_DEF",
    "PostgresConnectorConfig",
    "is_system_schema",
    "load_postgres_config",
    "parse_message_key_columns",
    "validate_postgres_config",
]

CONNECTOR_CLASS: Final = "io.debezium.connector.postgresql.PostgresConnector"

_S = PropertyType.STRING
_I = PropertyType.INT
_L = PropertyType.LONG
_B = PropertyType.BOOLEAN
_E = PropertyType.ENUM
_LIST = PropertyType.LIST
_PW = PropertyType.PASSWORD
_P = PropertyType.PATH

# System schemas never captured (Debezium's SystemTablesPredicate plus pg_toast), and built-in
# tables living in user schemas (PostGIS), skipped like Debezium's table.ignore.builtin=true.
_SYSTEM_SCHEMAS: Final = frozenset({"pg_catalog", "information_schema", "pg_toast"})
_SYSTEM_SCHEMA_PREFIXES: Final = ("pg_temp", "pg_toast_temp")
_BUILTIN_TABLES: Final = frozenset({"spatial_ref_sys"})

_TOPIC_NAME: Final = re.compile(r"[A-Za-z0-9._\-]+")
_SLOT_NAME: Final = re.compile(r"[a-z0-9_]{1,63}")
_HEX: Final = re.compile(r"(?:[0-9a-fA-F]{2})*")
_SKIPPABLE: Final = ("c", "u", "d", "t", "none")

# Namespaces owned by other Headwater modules, which validate their own keys.
HEADWATER_PASSTHROUGH_PREFIXES: Final = ("headwater.pipeline.", "headwater.ops.", "headwater.sink.")


# --------------------------------------------------------------------------------------------
# Parsers and validators


def _connector_class(text: str) -> str:
    if text == CONNECTOR_CLASS or text.lower() in ("postgres", "postgresql"):
        return CONNECTOR_CLASS
    raise ValueError(f"the PostgreSQL connector ({CONNECTOR_CLASS}, or 'postgres'/'postgresql')")




def _topic_name(what: str) -> Validator:
    def check(value: ConfigValue) -> str | None:
        if isinstance(value, str) and not _TOPIC_NAME.fullmatch(value):
            return f"'{value}' is not a valid {what}: use only letters, digits, '_', '.' and '-'"
        return None

    return check


def _slot_name(value: ConfigValue) -> str | None:
    if isinstance(value, str) and not _SLOT_NAME.fullmatch(value):
        return (
            f"'{value}' is not a valid replication slot name: use only lowercase letters, "
            "digits and '_', at most 63 characters"
        )
    return None


def _identifier(value: ConfigValue) -> str | None:
    if isinstance(value, str) and len(value.encode()) > 63:
        return f"'{value}' is longer than PostgreSQL's 63-byte identifier limit"
    return None


def _hostname(value: ConfigValue) -> str | None:
    if isinstance(value, str) and any(char.isspace() for char in value):
        return f"'{value}' is not a host name (it contains whitespace)"
    return None


def _placeholder(value: ConfigValue) -> str | None:
    if isinstance(value, str) and value.startswith("hex:") and not _HEX.fullmatch(value[4:]):
        return f"'{value}': after 'hex:' an even number of hexadecimal digits is expected"
    return None


def _skipped_operations(value: ConfigValue) -> str | None:
    if not isinstance(value, tuple):
        return None
    bad = [item for item in value if item.lower() not in _SKIPPABLE]
    if bad:
        return f"'{','.join(bad)}' not allowed: expected a list of c, u, d, t or none"
    return None


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



# --------------------------------------------------------------------------------------------
# The property set

_DOC_REGEX = "comma-separated regular expressions matched against the whole "

PROPERTIES: Final[tuple[Property, ...]] = (
    # -- identity ------------------------------------------------------------------------------
    Property("name", _S, doc="unique connector name; defaults to topic.prefix"),
    Property("connector.class", _S, CONNECTOR_CLASS, parser=_connector_class,
             doc="io.debezium.connector.postgresql.PostgresConnector (or postgres/postgresql)"),
    Property("tasks.max", _I, 1, min_value=1, doc="the PostgreSQL connector uses one task"),
    Property("topic.prefix", _S, required=True, aliases=("database.server.name",),
             validator=_topic_name("topic prefix"),
             doc="logical server name, prefix of every topic name"),
    # -- connection -----------------------------------------------------------------------------
    Property("database.hostname", _S, required=True, validator=_hostname,
             doc="PostgreSQL server host name or IP address"),
    Property("database.port", _I, 5432, min_value=1, max_value=65535),
    Property("database.user", _S, required=True, doc="role with REPLICATION and LOGIN"),
    Property("database.password", _PW),
    Property("database.dbname", _S, required=True, doc="database to capture"),
    Property("database.sslmode", _E, "prefer",
             allowed=("disable", "allow", "prefer", "require", "verify-ca", "verify-full")),
    Property("database.sslcert", _P, doc="client certificate file"),
    Property("database.sslkey", _P, doc="client private key file"),
    Property("database.sslrootcert", _P, doc="root certificate(s) to verify the server"),
    Property("database.sslpassword", _PW, doc="password of database.sslkey"),
    Property("database.tcpKeepAlive", _B, True, doc="TCP keep-alive probes (libpq keepalives)"),
    Property("database.initial.statements", _S,
             doc="';'-separated SQL run on every non-replication connection (';;' = ';')"),
    # -- replication ----------------------------------------------------------------------------
    Property("plugin.name", _E, "pgoutput", allowed=("pgoutput",),
             rejected_values=dict.fromkeys(
                 ("decoderbufs", "wal2json", "wal2json_streaming", "wal2json_rds",
                  "wal2json_rds_streaming"),
                 "only the pgoutput plugin (built into PostgreSQL 10+) is supported"),
             hint="only the pgoutput plugin (built into PostgreSQL 10+) is supported"),
    Property("slot.name", _S, "debezium", validator=_slot_name),
    Property("slot.drop.on.stop", _B, False),
    Property("slot.max.retries", _I, 6, min_value=0),
    Property("slot.retry.delay.ms", _L, 10_000, min_value=0),
    Property("status.update.interval.ms", _I, 10_000, min_value=1,
             doc="standby status update (LSN feedback) interval"),
    Property("publication.name", _S, "dbz_publication", validator=_identifier),
    Property("publication.autocreate.mode", _E, "all_tables",
             allowed=("all_tables", "disabled", "filtered"),
             rejected_values={"no_tables": "publications without tables are not supported yet"}),
    # -- snapshot -------------------------------------------------------------------------------
    Property("snapshot.mode", _E, "initial",
             allowed=("initial", "always", "no_data", "initial_only", "when_needed"),
             value_aliases={"never": "no_data", "exported": "initial"},
             rejected_values=dict.fromkeys(
                 ("custom", "configuration_based"), "custom snapshotters are not supported")),
    Property("snapshot.lock.timeout.ms", _L, 10_000, min_value=0),
    Property("snapshot.fetch.size", _I, 10_240, min_value=1),
    Property("snapshot.delay.ms", _L, 0, min_value=0),
    Property("snapshot.max.threads", _I, 1, min_value=1,
             doc="initial snapshot reader processes (key-range chunks, one exported snapshot)"),
    # -- filters --------------------------------------------------------------------------------
    Property("schema.include.list", _LIST, aliases=("schema.whitelist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "schema name"),
    Property("schema.exclude.list", _LIST, aliases=("schema.blacklist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "schema name"),
    Property("table.include.list", _LIST, aliases=("table.whitelist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "<schema>.<table>"),
    Property("table.exclude.list", _LIST, aliases=("table.blacklist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "<schema>.<table>"),
    Property("column.include.list", _LIST, aliases=("column.whitelist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "<schema>.<table>.<column>"),
    Property("column.exclude.list", _LIST, aliases=("column.blacklist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "<schema>.<table>.<column>"),
    Property(COLUMN_PROPAGATE_PROPERTY, _LIST, validator=regex_list_validator,
             doc=_DOC_REGEX + "<schema>.<table>.<column>; adds __debezium.source.column.* "
                 "schema parameters"),
    Property(DATATYPE_PROPAGATE_PROPERTY, _LIST, validator=regex_list_validator,
             doc=_DOC_REGEX + "<schema>.<table>.<type name>; adds __debezium.source.column.* "
                 "schema parameters"),
    Property("message.key.columns", _S, validator=_message_key_columns,
             doc="<table regex>:<column>,...;... key columns replacing the primary key"),
    Property("skipped.operations", _LIST, ("t",), validator=_skipped_operations,
             doc="operations not emitted: c, u, d, t (truncate), or none"),
    # -- events ---------------------------------------------------------------------------------
    Property("tombstones.on.delete", _B, True),
    Property("time.precision.mode", _E, "adaptive",
             allowed=("adaptive", "adaptive_time_microseconds", "connect")),
    Property("decimal.handling.mode", _E, "precise", allowed=("precise", "double", "string")),
    Property("hstore.handling.mode", _E, "json", allowed=("json", "map")),
    Property("interval.handling.mode", _E, "numeric", allowed=("numeric", "string")),
    Property("binary.handling.mode", _E, "bytes",
             allowed=("bytes", "base64", "base64-url-safe", "hex")),
    Property("include.unknown.datatypes", _B, False),
    Property("unavailable.value.placeholder", _S, "__debezium_unavailable_value",
             aliases=("toasted.value.placeholder",), validator=_placeholder,
             doc="value of unchanged TOASTed columns; 'hex:' prefix = hex-encoded bytes"),
    Property("provide.transaction.metadata", _B, False),
    Property("topic.transaction", _S, "transaction", validator=_topic_name("topic name"),
             doc="transaction metadata topic is <topic.prefix>.<topic.transaction>"),
    Property("event.processing.failure.handling.mode", _E, "fail",
             allowed=("fail", "warn", "skip"), value_aliases={"ignore": "skip"}),
    # -- heartbeats -----------------------------------------------------------------------------
    Property("heartbeat.interval.ms", _I, 0, min_value=0, doc="0 disables heartbeats"),
    Property("heartbeat.action.query", _S, doc="SQL run on the source at every heartbeat"),
    Property("money.fraction.digits", _I, 2, min_value=0, max_value=38,
             doc="scale of money values with decimal.handling.mode=precise"),
    Property("errors.max.retries", _I, -1, min_value=-1,
             doc="reconnect attempts after a retriable error (lost connection, server "
                 "restart) before failing; -1 retries forever, 0 never"),
    Property("retriable.restart.connector.wait.ms", _L, 10_000, min_value=0,
             doc="first wait before reconnecting; doubles per attempt up to 10 times this"),
    Property("topic.heartbeat.prefix", _S, "__debezium-heartbeat",
             aliases=("heartbeat.topics.prefix",), validator=_topic_name("topic prefix"),
             doc="heartbeat topic is <topic.heartbeat.prefix>.<topic.prefix>"),
    # -- runtime --------------------------------------------------------------------------------
    *RUNTIME_PROPERTIES,
    Property("headwater.pgoutput.streaming", _B, True,
             doc="pgoutput protocol 2 with streaming of large in-progress transactions "
                 "(PostgreSQL 14+; buffered on disk until their commit); false: protocol 1"),
    # signals and incremental snapshots (docs/snapshots.md)
    *SIGNAL_PROPERTIES,
)

_NOT_IMPLEMENTED = "a Debezium option Headwater does not implement"
IGNORED: Final[Mapping[str, str]] = {
    name: _NOT_IMPLEMENTED
    for name in (
        "schema.refresh.mode", "slot.stream.params", "slot.failover", "snapshot.isolation.mode",
        "snapshot.locking.mode", "snapshot.select.statement.overrides", "snapshot.custom.class",
        "snapshot.include.collection.list", "sanitize.field.names",
        "database.sslfactory",
        "database.query.timeout.ms", "converters", "notification.enabled.channels",
        "table.ignore.builtin",
        "schema.name.adjustment.mode",
        "field.name.adjustment.mode", "xmin.fetch.interval.ms",
        "lsn.flush.mode", "flush.lsn.source", "publish.via.partition.root",
        "replica.identity.autoset.values", "message.prefix.include.list",
        "message.prefix.exclude.list", "max.queue.size.in.bytes", "offset.flush.timeout.ms",
        "query.fetch.size", "source.struct.version", "include.schema.comments",
        "custom.metric.tags", "header.converter",
    )
} | {
    "database.whitelist": "not a PostgreSQL connector property; use schema.include.list or "
    "table.include.list",
    "database.history.kafka.topic": "PostgreSQL keeps no schema history",
    "column.mask.hash.hashing.strategy": "not a Debezium property; hashing strategy V2 is "
    "selected by the property name column.mask.hash.v2.<algorithm>.with.salt.<salt>",
}
IGNORED_PATTERNS: Final = (
    (r"snapshot\.select\.statement\.overrides\..+", _NOT_IMPLEMENTED),
    (r"snapshot\.mode\.configuration\.based\..+", _NOT_IMPLEMENTED),
)
PATTERN_PROPERTIES: Final = (
    PatternProperty("column.truncate.to.<length>.chars", TRUNCATE_PROPERTY, _LIST,
                    validator=regex_list_validator,
                    key_check=lambda match: length_problem(match["length"]),
                    doc=_DOC_REGEX + "<schema>.<table>.<column>; values longer than <length> "
                        "characters are truncated"),
    PatternProperty("column.mask.with.<length>.chars", MASK_PROPERTY, _LIST,
                    validator=regex_list_validator,
                    key_check=lambda match: length_problem(match["length"]),
                    doc=_DOC_REGEX + "<schema>.<table>.<column>; character values are replaced "
                        "by <length> asterisks"),
    PatternProperty("column.mask.hash[.v2].<algorithm>.with.salt.<salt>", HASH_PROPERTY, _LIST,
                    validator=regex_list_validator,
                    key_check=lambda match: algorithm_problem(match["algorithm"]),
                    doc=_DOC_REGEX + "<schema>.<table>.<column>; character values are replaced "
                        "by the hex digest of salt + value (hashing strategy V1, or V2 with .v2)"),
)
PASSTHROUGH_PREFIXES: Final = (
    "offset.storage.",
    "transforms.",
    "predicates.",
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "debezium.",  # Debezium Server leftovers (debezium.sink.*, debezium.format.*)
    *HEADWATER_PASSTHROUGH_PREFIXES,
)
_EXCLUSIVE: Final = (
    ("schema.include.list", "schema.exclude.list"),
    ("table.include.list", "table.exclude.list"),
    ("column.include.list", "column.exclude.list"),
)



def _check_tasks(context: ValidationContext) -> None:
    tasks = context.values.get("tasks.max")
    if isinstance(tasks, int) and tasks > 1:
        context.warning(f"tasks.max: {tasks} ignored; the PostgreSQL connector uses one task")


def _check_heartbeat(context: ValidationContext) -> None:
    if context.values.get("heartbeat.action.query") and context.values.get(
        "heartbeat.interval.ms"
    ) == 0:
        context.warning(
            "heartbeat.action.query has no effect while heartbeat.interval.ms is 0"
        )


POSTGRES_CONFIG_DEF: Final = ConfigDef(
    PROPERTIES,
    passthrough_prefixes=PASSTHROUGH_PREFIXES,
    ignored=IGNORED,
    ignored_patterns=IGNORED_PATTERNS,
    exclusive=_EXCLUSIVE,
    checks=(check_queue, _check_tasks, _check_heartbeat),
    pattern_properties=PATTERN_PROPERTIES,
)


# --------------------------------------------------------------------------------------------
# Typed configuration


def is_system_schema(schema: str) -> bool:
    """PostgreSQL system schemas, never captured whatever the filters say."""
    lowered = schema.lower()
    return lowered in _SYSTEM_SCHEMAS or lowered.startswith(_SYSTEM_SCHEMA_PREFIXES)


_UNSET_PATH: Final = Path()


@dataclass(frozen=True, slots=True)
class PostgresConnectorConfig:
    """Validated PostgreSQL connector configuration (attribute = property, ``.``/``-`` -> ``_``).

    Build it with :func:`load_postgres_config` / :func:`validate_postgres_config`; direct
    construction (tests) needs only the four required values and applies Debezium's defaults.
    """

    topic_prefix: str
    database_hostname: str
    database_user: str
    database_dbname: str
    name: str = ""  # defaults to topic_prefix
    connector_class: str = CONNECTOR_CLASS
    tasks_max: int = 1
    database_port: int = 5432
    database_password: Secret | None = None
    database_sslmode: str = "prefer"
    database_sslcert: Path | None = None
    database_sslkey: Path | None = None
    database_sslrootcert: Path | None = None
    database_sslpassword: Secret | None = None
    database_tcp_keepalive: bool = True
    database_initial_statements: tuple[str, ...] = ()
    plugin_name: str = "pgoutput"
    slot_name: str = "debezium"
    slot_drop_on_stop: bool = False
    slot_max_retries: int = 6
    slot_retry_delay_ms: int = 10_000
    status_update_interval_ms: int = 10_000
    publication_name: str = "dbz_publication"
    publication_autocreate_mode: str = "all_tables"
    snapshot_mode: str = "initial"
    snapshot_lock_timeout_ms: int = 10_000
    snapshot_fetch_size: int = 10_240
    snapshot_delay_ms: int = 0
    snapshot_max_threads: int = 1
    schema_include_list: tuple[str, ...] = ()
    schema_exclude_list: tuple[str, ...] = ()
    table_include_list: tuple[str, ...] = ()
    table_exclude_list: tuple[str, ...] = ()
    column_include_list: tuple[str, ...] = ()
    column_exclude_list: tuple[str, ...] = ()
    message_key_columns: tuple[tuple[str, tuple[str, ...]], ...] = ()
    skipped_operations: frozenset[str] = frozenset({"t"})
    tombstones_on_delete: bool = True
    time_precision_mode: str = "adaptive"
    decimal_handling_mode: str = "precise"
    hstore_handling_mode: str = "json"
    interval_handling_mode: str = "numeric"
    binary_handling_mode: str = "bytes"
    include_unknown_datatypes: bool = False
    unavailable_value_placeholder: str = "__debezium_unavailable_value"
    provide_transaction_metadata: bool = False
    topic_transaction: str = "transaction"
    event_processing_failure_handling_mode: str = "fail"
    heartbeat_interval_ms: int = 0
    heartbeat_action_query: str | None = None
    errors_max_retries: int = -1
    money_fraction_digits: int = 2
    retriable_restart_connector_wait_ms: int = 10_000
    topic_heartbeat_prefix: str = "__debezium-heartbeat"
    topic_naming_strategy: str | None = None  # None: the connector's default
    topic_delimiter: str = "."
    max_batch_size: int = 2048
    max_queue_size: int = 8192
    poll_interval_ms: int = 500
    key_converter_schemas_enable: bool = True
    value_converter_schemas_enable: bool = True
    offset_storage_file_filename: Path = _UNSET_PATH  # default data/offsets/<topic_prefix>.json
    offset_flush_interval_ms: int = 60_000
    headwater_topics_dir: Path = Path("data/topics")
    headwater_topics_segment_bytes: int = 67_108_864
    headwater_topics_segment_ms: int = 1000
    headwater_pgoutput_streaming: bool = True
    passthrough: Mapping[str, str] = field(
        default_factory=dict, repr=False, compare=False, hash=False
    )
    # Built from column.truncate/mask/propagate properties; read through `column_mappers`.
    _column_mappers: ColumnMappers = field(default=ColumnMappers(), repr=False, compare=False)
    # signal.*, incremental.snapshot.*, read.only; read through `signals`
    _signals: SignalConfig = field(default_factory=SignalConfig, repr=False, compare=False)
    _schemas: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                 compare=False)
    _tables: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                compare=False)
    _columns: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                 compare=False)
    _key_columns: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not self.name:
            put(self, "name", self.topic_prefix)
        if self.offset_storage_file_filename == _UNSET_PATH:
            put(self, "offset_storage_file_filename", default_offsets_file(self.topic_prefix))
        put(self, "_schemas", NameFilter(self.schema_include_list, self.schema_exclude_list))
        put(self, "_tables", NameFilter(self.table_include_list, self.table_exclude_list))
        put(self, "_columns", NameFilter(self.column_include_list, self.column_exclude_list))
        put(self, "_key_columns", tuple(
            (re.compile(table, re.IGNORECASE), columns)
            for table, columns in self.message_key_columns
        ))

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_validated(cls, config: ValidatedConfig) -> PostgresConnectorConfig:
        """Build from the result of ``POSTGRES_CONFIG_DEF.validate``."""
        c = config
        base = c.base_dir
        key_columns = c.get_optional_str("message.key.columns")
        statements = c.get_optional_str("database.initial.statements")
        skipped = {op.lower() for op in c.get_list("skipped.operations")} - {"none"}
        offsets = c.get_optional_path("offset.storage.file.filename")
        if offsets is None:
            offsets = default_offsets_file(c.get_str("topic.prefix"), base)
        return cls(
            topic_prefix=c.get_str("topic.prefix"),
            database_hostname=c.get_str("database.hostname"),
            database_user=c.get_str("database.user"),
            database_dbname=c.get_str("database.dbname"),
            name=c.get_optional_str("name") or c.get_str("topic.prefix"),
            connector_class=c.get_str("connector.class"),
            tasks_max=c.get_int("tasks.max"),
            database_port=c.get_int("database.port"),
            database_password=c.get_secret("database.password"),
            database_sslmode=c.get_str("database.sslmode"),
            database_sslcert=c.get_optional_path("database.sslcert"),
            database_sslkey=c.get_optional_path("database.sslkey"),
            database_sslrootcert=c.get_optional_path("database.sslrootcert"),
            database_sslpassword=c.get_secret("database.sslpassword"),
            database_tcp_keepalive=c.get_bool("database.tcpKeepAlive"),
            database_initial_statements=split_statements(statements) if statements else (),
            plugin_name=c.get_str("plugin.name"),
            slot_name=c.get_str("slot.name"),
            slot_drop_on_stop=c.get_bool("slot.drop.on.stop"),
            slot_max_retries=c.get_int("slot.max.retries"),
            slot_retry_delay_ms=c.get_int("slot.retry.delay.ms"),
            status_update_interval_ms=c.get_int("status.update.interval.ms"),
            publication_name=c.get_str("publication.name"),
            publication_autocreate_mode=c.get_str("publication.autocreate.mode"),
            snapshot_mode=c.get_str("snapshot.mode"),
            snapshot_lock_timeout_ms=c.get_int("snapshot.lock.timeout.ms"),
            snapshot_fetch_size=c.get_int("snapshot.fetch.size"),
            snapshot_delay_ms=c.get_int("snapshot.delay.ms"),
            snapshot_max_threads=c.get_int("snapshot.max.threads"),
            schema_include_list=c.get_list("schema.include.list"),
            schema_exclude_list=c.get_list("schema.exclude.list"),
            table_include_list=c.get_list("table.include.list"),
            table_exclude_list=c.get_list("table.exclude.list"),
            column_include_list=c.get_list("column.include.list"),
            column_exclude_list=c.get_list("column.exclude.list"),
            message_key_columns=parse_message_key_columns(key_columns) if key_columns else (),
            skipped_operations=frozenset(skipped),
            tombstones_on_delete=c.get_bool("tombstones.on.delete"),
            time_precision_mode=c.get_str("time.precision.mode"),
            decimal_handling_mode=c.get_str("decimal.handling.mode"),
            hstore_handling_mode=c.get_str("hstore.handling.mode"),
            interval_handling_mode=c.get_str("interval.handling.mode"),
            binary_handling_mode=c.get_str("binary.handling.mode"),
            include_unknown_datatypes=c.get_bool("include.unknown.datatypes"),
            unavailable_value_placeholder=c.get_str("unavailable.value.placeholder"),
            provide_transaction_metadata=c.get_bool("provide.transaction.metadata"),
            topic_transaction=c.get_str("topic.transaction"),
            event_processing_failure_handling_mode=c.get_str(
                "event.processing.failure.handling.mode"
            ),
            heartbeat_interval_ms=c.get_int("heartbeat.interval.ms"),
            heartbeat_action_query=c.get_optional_str("heartbeat.action.query"),
            errors_max_retries=c.get_int("errors.max.retries"),
            money_fraction_digits=c.get_int("money.fraction.digits"),
            retriable_restart_connector_wait_ms=c.get_int("retriable.restart.connector.wait.ms"),
            topic_heartbeat_prefix=c.get_str("topic.heartbeat.prefix"),
            topic_naming_strategy=c.get_optional_str("topic.naming.strategy"),
            topic_delimiter=c.get_str("topic.delimiter"),
            max_batch_size=c.get_int("max.batch.size"),
            max_queue_size=c.get_int("max.queue.size"),
            poll_interval_ms=c.get_int("poll.interval.ms"),
            key_converter_schemas_enable=c.get_bool("key.converter.schemas.enable"),
            value_converter_schemas_enable=c.get_bool("value.converter.schemas.enable"),
            offset_storage_file_filename=offsets,
            offset_flush_interval_ms=c.get_int("offset.flush.interval.ms"),
            headwater_topics_dir=c.get_path("headwater.topics.dir"),
            headwater_topics_segment_bytes=c.get_int("headwater.topics.segment.bytes"),
            headwater_topics_segment_ms=c.get_int("headwater.topics.segment.ms"),
            headwater_pgoutput_streaming=c.get_bool("headwater.pgoutput.streaming"),
            _signals=signal_config(c),
            passthrough=dict(c.passthrough),
            _column_mappers=ColumnMappers.from_config({
                **c.patterned,
                COLUMN_PROPAGATE_PROPERTY: c.get_list(COLUMN_PROPAGATE_PROPERTY),
                DATATYPE_PROPAGATE_PROPERTY: c.get_list(DATATYPE_PROPAGATE_PROPERTY),
            }),
        )

    # -- derived values -----------------------------------------------------------------------

    @property
    def column_mappers(self) -> ColumnMappers:
        """Column truncation, masking, hashing and source-type propagation rules."""
        return self._column_mappers

    @property
    def signals(self) -> SignalConfig:
        """Signal channels and incremental snapshot settings (headwater.config.signals)."""
        return self._signals

    @property
    def toasted_value_placeholder(self) -> str:
        """Debezium 1.x name of :attr:`unavailable_value_placeholder`."""
        return self.unavailable_value_placeholder

    @property
    def unavailable_value_placeholder_bytes(self) -> bytes:
        """The placeholder as bytes (``hex:`` prefix decoded, as Debezium does)."""
        text = self.unavailable_value_placeholder
        if text.startswith("hex:"):
            return bytes.fromhex(text[4:])
        return text.encode()

    @property
    def heartbeat_topic(self) -> str:
        return f"{self.topic_heartbeat_prefix}.{self.topic_prefix}"

    @property
    def transaction_topic(self) -> str:
        return f"{self.topic_prefix}.{self.topic_transaction}"

    # -- filters ------------------------------------------------------------------------------

    def schema_filter(self, schema: str) -> bool:
        """Whether ``schema`` is captured (system schemas never are)."""
        return not is_system_schema(schema) and self._schemas.admits(schema)

    def table_filter(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` is captured.

        Debezium semantics: the schema must pass the schema lists and ``<schema>.<table>`` the
        table lists; each regular expression must match the whole name, case-insensitively; an
        include list admits only what it matches, an exclude list removes what it matches.
        """
        if not self.schema_filter(schema) or table.lower() in _BUILTIN_TABLES:
            return False
        return self._tables.admits(f"{schema}.{table}")

    def column_filter(self, schema: str, table: str, column: str) -> bool:
        """Whether a column is kept in events (matched as ``<schema>.<table>.<column>``)."""
        return self._columns.admits(f"{schema}.{table}.{column}")

    def key_columns(self, schema: str, table: str) -> tuple[str, ...] | None:
        """``message.key.columns`` for ``schema.table`` (first matching entry), else ``None``."""
        name = f"{schema}.{table}"
        for pattern, columns in self._key_columns:
            if pattern.fullmatch(name):
                return columns
        return None

    # -- connection ---------------------------------------------------------------------------

    def dsn_kwargs(self) -> dict[str, str | int]:
        """Keyword arguments for ``psycopg2.connect`` (the password is revealed here)."""
        kwargs: dict[str, str | int] = {
            "host": self.database_hostname,
            "port": self.database_port,
            "user": self.database_user,
            "dbname": self.database_dbname,
            "sslmode": self.database_sslmode,
            "keepalives": 1 if self.database_tcp_keepalive else 0,
            "application_name": f"headwater-{self.name}"[:63],
        }
        if self.database_password is not None:
            kwargs["password"] = self.database_password.reveal()
        for key, path in (
            ("sslcert", self.database_sslcert),
            ("sslkey", self.database_sslkey),
            ("sslrootcert", self.database_sslrootcert),
        ):
            if path is not None:
                kwargs[key] = str(path)
        if self.database_sslpassword is not None:
            kwargs["sslpassword"] = self.database_sslpassword.reveal()
        return kwargs

    def redacted(self) -> dict[str, object]:
        """Attributes as a dict safe to print or log (secrets masked)."""
        out = redacted_fields(self)
        out["column_mappers"] = self._column_mappers.describe()
        return out


def default_offsets_file(topic_prefix: str, base_dir: Path | None = None) -> Path:
    """``data/offsets/<topic_prefix>.json`` under ``base_dir`` (or relative to the cwd)."""
    relative = Path("data") / "offsets" / f"{topic_prefix}.json"
    return base_dir / relative if base_dir is not None else relative


# --------------------------------------------------------------------------------------------
# Entry points


def validate_postgres_config(
    raw: Mapping[str, object],
    *,
    base_dir: Path | None = None,
    source: str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[PostgresConnectorConfig, list[str]]:
    """Validate a flat property map; return the typed config and the warnings.

    Raises :class:`~headwater.config.definition.ConfigError` listing every problem.
    """
    validated = POSTGRES_CONFIG_DEF.validate(raw, base_dir=base_dir, source=source, env=env)
    return PostgresConnectorConfig.from_validated(validated), list(validated.warnings)


def load_postgres_config(
    path: Path, overrides: Mapping[str, str] | None = None
) -> tuple[PostgresConnectorConfig, list[str]]:
    """Load, merge ``overrides`` (e.g. from the command line) and validate a config file.

    Relative paths in the file are resolved against the file's directory.
    """
    raw = load_properties(path)
    if overrides:
        raw = POSTGRES_CONFIG_DEF.merge(raw, overrides)
    return validate_postgres_config(raw, base_dir=path.parent.resolve(), source=str(path))
