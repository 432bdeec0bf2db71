"""MySQL / MariaDB connector properties (Debezium names and defaults) and the typed configuration.

Why this module exists: a Debezium MySQL (or MariaDB) connector configuration should run on
Headwater unchanged, and what Headwater cannot honour must say so at start-up.  Names and
defaults follow *current* Debezium (2.x/3.x); the 1.0 names of the reference are accepted as
deprecated aliases:

* ``topic.prefix`` replaces ``database.server.name``; ``database.include.list`` /
  ``table.include.list`` (and the exclude lists) replace the white/black lists.
* The schema history is a local file (``schema.history.internal.file.filename``, default
  ``data/history/<topic.prefix>.jsonl`` next to the configuration), Debezium's
  ``FileSchemaHistory``; ``database.history.kafka.*`` are rejected with that hint.
  ``schema.history.internal.skip.unparseable.ddl`` and
  ``schema.history.internal.store.only.captured.tables.ddl`` keep their meaning (1.0 names:
  ``database.history.skip.unparseable.ddl``, ``database.history.store.only.monitored.tables.ddl``).
* ``snapshot.mode``: ``initial``, ``initial_only``, ``when_needed``, ``no_data``, ``never``,
  ``always``, ``recovery``; ``schema_only`` is the deprecated alias of ``no_data`` and
  ``schema_only_recovery`` of ``recovery``, as in Debezium 2.x.  ``never`` reads the binlog from
  its beginning (the oldest file the server still has).
* ``database.server.id`` defaults to a random number in 5400..6400 (as Debezium 1.0) and a
  warning says to set it: two readers with one id disconnect each other.
* ``database.ssl.mode`` accepts Debezium's values; ``disabled`` is the default.
* ``signal.*``, ``incremental.snapshot.*`` and ``read.only`` are the shared signal properties
  (`headwater.config.signals`); the signal table is named ``<database>.<table>``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

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
    Property,
    PropertyType,
    ValidatedConfig,
    ValidationContext,
    regex_list_validator,
)
from headwater.config.loader import load_properties
from headwater.config.secrets import Secret
from headwater.config.signals import SIGNAL_PROPERTIES, SignalConfig, signal_config
from headwater.connectors.postgres.config import (
    HEADWATER_PASSTHROUGH_PREFIXES,
    PATTERN_PROPERTIES,
    default_offsets_file,
    parse_message_key_columns,
)
from headwater.relational.column_mappers import (
    COLUMN_PROPAGATE_PROPERTY,
    DATATYPE_PROPAGATE_PROPERTY,
    ColumnMappers,
)

CONNECTOR_CLASS: Final = "io.debezium.connector.mysql.MySqlConnector"
MARIADB_CONNECTOR_CLASS: Final = "io.debezium.connector.mariadb.MariaDbConnector"
SCHEMA_HISTORY_CLASS: Final = "io.debezium.storage.file.history.FileSchemaHistory"

_S = PropertyType.STRING
_I = PropertyType.INT
_L = PropertyType.LONG
_B = PropertyType.BOOLEAN
_E = PropertyType.ENUM
_LIST = PropertyType.LIST
_PW = PropertyType.PASSWORD
_P = PropertyType.PATH

# Databases the server keeps for itself: never captured (Debezium's table.ignore.builtin).
SYSTEM_DATABASES: Final = frozenset({"mysql", "information_schema", "performance_schema", "sys"})
_TOPIC_NAME: Final = re.compile(r"[A-Za-z0-9._\-]+")
_SKIPPABLE: Final = ("c", "u", "d", "t", "none")


def _connector_class(text: str) -> str:
    lowered = text.lower()
    if text in (CONNECTOR_CLASS, MARIADB_CONNECTOR_CLASS) or lowered in ("mysql", "mariadb"):
        return MARIADB_CONNECTOR_CLASS if "maria" in lowered else CONNECTOR_CLASS
    raise ValueError(
        f"the MySQL connector ({CONNECTOR_CLASS}, {MARIADB_CONNECTOR_CLASS}, 'mysql' or 'mariadb')"
    )


def _fixed(expected: str, why: str) -> Any:
    def parse(text: str) -> str:
        if text != expected:
            raise ValueError(f"{expected} ({why})")
        return text

    return parse


def _topic_name(value: ConfigValue) -> str | None:
    if isinstance(value, str) and not _TOPIC_NAME.fullmatch(value):
        return f"'{value}' is not a valid topic prefix: use only letters, digits, '_', '.', '-'"
    return None


def _skipped_operations(value: ConfigValue) -> str | None:
    if isinstance(value, tuple):
        bad = [item for item in value if item.lower() not in _SKIPPABLE]
        if bad:
            return f"'{','.join(bad)}' not allowed: expected a list of c, u, d, t or none"
    return None


def _message_key_columns(value: ConfigValue) -> str | None:
    if isinstance(value, str):
        try:
            parse_message_key_columns(value)
        except ValueError as exc:
            return str(exc)
    return None



_DOC_REGEX = "comma-separated regular expressions matched against the whole "

PROPERTIES: Final[tuple[Property, ...]] = (
    Property("name", _S, doc="unique connector name; defaults to topic.prefix"),
    Property("connector.class", _S, CONNECTOR_CLASS, parser=_connector_class),
    Property("tasks.max", _I, 1, min_value=1, doc="the MySQL connector uses one task"),
    Property("topic.prefix", _S, required=True, aliases=("database.server.name",),
             validator=_topic_name, doc="logical server name, prefix of every topic name"),
    # -- connection -----------------------------------------------------------------------------
    Property("database.hostname", _S, required=True),
    Property("database.port", _I, 3306, min_value=1, max_value=65535),
    Property("database.user", _S, required=True,
             doc="needs SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT "
                 "(MariaDB: BINLOG MONITOR)"),
    Property("database.password", _PW),
    Property("database.server.id", _L, min_value=1, max_value=2**32 - 1,
             doc="numeric id of this binlog reader, unique among the servers of the cluster"),
    Property("database.ssl.mode", _E, "disabled",
             allowed=("disabled", "preferred", "required", "verify_ca", "verify_identity")),
    Property("database.ssl.truststore", _P, doc="CA certificate file (PEM) to verify the server"),
    Property("database.initial.statements", _S,
             doc="';'-separated SQL run on every non-binlog connection (';;' = ';')"),
    Property("connect.timeout.ms", _L, 30_000, min_value=1),
    Property("connect.keep.alive", _B, True),
    Property("connect.keep.alive.interval.ms", _L, 60_000, min_value=1),
    # -- snapshot -------------------------------------------------------------------------------
    Property("snapshot.mode", _E, "initial",
             allowed=("initial", "initial_only", "when_needed", "no_data", "never", "always",
                      "recovery"),
             value_aliases={"schema_only": "no_data", "schema_only_recovery": "recovery"},
             rejected_values=dict.fromkeys(
                 ("custom", "configuration_based"), "custom snapshotters are not supported")),
    Property("snapshot.locking.mode", _E, "minimal", allowed=("minimal", "extended", "none"),
             rejected_values={"minimal_percona": "Percona backup locks are not supported",
                              "custom": "custom locking is not supported"}),
    Property("snapshot.lock.timeout.ms", _L, 10_000, min_value=0),
    Property("snapshot.fetch.size", _I, 10_240, min_value=1),
    Property("snapshot.delay.ms", _L, 0, min_value=0),
    Property("snapshot.max.threads", _I, 1, min_value=1,
             doc="initial snapshot reader processes (key-range chunks, snapshots opened under"
                 " the read lock); > 1 needs snapshot.locking.mode minimal or extended"),
    Property("min.row.count.to.stream.results", _L, 1000, min_value=0),
    # -- filters --------------------------------------------------------------------------------
    Property("database.include.list", _LIST, aliases=("database.whitelist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "database name"),
    Property("database.exclude.list", _LIST, aliases=("database.blacklist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "database name"),
    Property("table.include.list", _LIST, aliases=("table.whitelist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "<database>.<table>"),
    Property("table.exclude.list", _LIST, aliases=("table.blacklist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "<database>.<table>"),
    Property("column.include.list", _LIST, aliases=("column.whitelist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "<database>.<table>.<column>"),
    Property("column.exclude.list", _LIST, aliases=("column.blacklist",),
             validator=regex_list_validator, doc=_DOC_REGEX + "<database>.<table>.<column>"),
    Property(COLUMN_PROPAGATE_PROPERTY, _LIST, validator=regex_list_validator),
    Property(DATATYPE_PROPAGATE_PROPERTY, _LIST, validator=regex_list_validator),
    Property("table.ignore.builtin", _B, True),
    Property("message.key.columns", _S, validator=_message_key_columns),
    Property("skipped.operations", _LIST, ("t",), validator=_skipped_operations),
    Property("gtid.source.includes", _LIST, validator=regex_list_validator,
             doc="server UUIDs (MySQL) / domain-server ids (MariaDB) whose GTIDs are used"),
    Property("gtid.source.excludes", _LIST, validator=regex_list_validator),
    # -- events ---------------------------------------------------------------------------------
    Property("tombstones.on.delete", _B, True),
    Property("time.precision.mode", _E, "adaptive_time_microseconds",
             allowed=("adaptive_time_microseconds", "adaptive", "connect")),
    Property("decimal.handling.mode", _E, "precise", allowed=("precise", "double", "string")),
    Property("bigint.unsigned.handling.mode", _E, "long", allowed=("long", "precise")),
    Property("binary.handling.mode", _E, "bytes",
             allowed=("bytes", "base64", "base64-url-safe", "hex")),
    Property("enable.time.adjuster", _B, True),
    Property("include.schema.changes", _B, True),
    Property("include.query", _B, False,
             doc="original SQL in source.query (needs binlog_annotate_row_events / "
                 "binlog_rows_query_log_events)"),
    Property("event.processing.failure.handling.mode", _E, "fail",
             allowed=("fail", "warn", "skip"), value_aliases={"ignore": "skip"}),
    Property("inconsistent.schema.handling.mode", _E, "fail", allowed=("fail", "warn", "skip"),
             value_aliases={"ignore": "skip"}),
    Property("provide.transaction.metadata", _B, False),
    Property("topic.transaction", _S, "transaction"),
    # -- schema history -------------------------------------------------------------------------
    Property("schema.history.internal", _S, SCHEMA_HISTORY_CLASS,
             parser=_fixed(SCHEMA_HISTORY_CLASS, "Headwater keeps the history in a local file")),
    Property("schema.history.internal.file.filename", _P,
             aliases=("database.history.file.filename",),
             doc="schema history file; default data/history/<topic.prefix>.jsonl"),
    Property("schema.history.internal.skip.unparseable.ddl", _B, False,
             aliases=("database.history.skip.unparseable.ddl",)),
    Property("schema.history.internal.store.only.captured.tables.ddl", _B, False,
             aliases=("database.history.store.only.monitored.tables.ddl",
                      "database.history.store.only.captured.tables.ddl")),
    Property("schema.history.internal.store.only.captured.databases.ddl", _B, False),
    # -- heartbeats and runtime -------------------------------------------------------------------
    Property("heartbeat.interval.ms", _I, 0, min_value=0),
    Property("heartbeat.action.query", _S),
    Property("topic.heartbeat.prefix", _S, "__debezium-heartbeat",
             aliases=("heartbeat.topics.prefix",), validator=_topic_name),
    Property("errors.max.retries", _I, -1, min_value=-1),
    Property("retriable.restart.connector.wait.ms", _L, 10_000, min_value=0),
    *RUNTIME_PROPERTIES,
    # signals and incremental snapshots (docs/snapshots.md, MariaDB section)
    *SIGNAL_PROPERTIES,
)

_NOT_IMPLEMENTED = "a Debezium option Headwater does not implement"
IGNORED: Final[Mapping[str, str]] = {
    name: _NOT_IMPLEMENTED
    for name in (
        "snapshot.select.statement.overrides", "snapshot.include.collection.list",
        "sanitize.field.names", "converters", "binlog.buffer.size",
        "schema.name.adjustment.mode",
        "field.name.adjustment.mode", "notification.enabled.channels",
        "source.struct.version", "include.schema.comments", "custom.metric.tags",
        "header.converter", "max.queue.size.in.bytes", "offset.flush.timeout.ms",
        "database.jdbc.driver", "database.protocol", "use.nongraceful.disconnect",
    )
} | {
    "database.history.kafka.topic": "the schema history is a local file: "
    "schema.history.internal.file.filename",
    "database.history.kafka.bootstrap.servers": "the schema history is a local file: "
    "schema.history.internal.file.filename",
    "schema.history.internal.kafka.topic": "the schema history is a local file: "
    "schema.history.internal.file.filename",
    "schema.history.internal.kafka.bootstrap.servers": "the schema history is a local file: "
    "schema.history.internal.file.filename",
}
IGNORED_PATTERNS: Final = (
    (r"(database\.history|schema\.history\.internal)\.kafka\..+",
     "the schema history is a local file: schema.history.internal.file.filename"),
    (r"snapshot\.select\.statement\.overrides\..+", _NOT_IMPLEMENTED),
)
PASSTHROUGH_PREFIXES: Final = (
    "offset.storage.", "transforms.", "predicates.", "key.converter.", "value.converter.",
    "header.converter.", "debezium.", "database.history.producer.",
    "database.history.consumer.", "schema.history.internal.producer.",
    "schema.history.internal.consumer.",
    *HEADWATER_PASSTHROUGH_PREFIXES,
)
_EXCLUSIVE: Final = (
    ("database.include.list", "database.exclude.list"),
    ("table.include.list", "table.exclude.list"),
    ("column.include.list", "column.exclude.list"),
    ("gtid.source.includes", "gtid.source.excludes"),
)



def _check_snapshot_threads(context: ValidationContext) -> None:
    # Parallel readers are one consistent point only because each opens its snapshot while the
    # parent holds the read lock; without a lock they would be snapshots of different moments.
    threads = context.values.get("snapshot.max.threads")
    if isinstance(threads, int) and threads > 1 and \
            context.values.get("snapshot.locking.mode") == "none":
        context.error(
            f"{context.label('snapshot.max.threads')} ({threads}) needs a read lock to open "
            "every reader's snapshot at one point: set snapshot.locking.mode to minimal or "
            "extended, or snapshot.max.threads=1"
        )


def _check_server_id(context: ValidationContext) -> None:
    if context.values.get("database.server.id") is None:
        context.warning(
            "database.server.id is not set: a random id in 5400..6400 is used; set a fixed id "
            "unique among the servers and binlog readers of the cluster"
        )


MYSQL_CONFIG_DEF: Final = ConfigDef(
    PROPERTIES,
    passthrough_prefixes=PASSTHROUGH_PREFIXES,
    ignored=IGNORED,
    ignored_patterns=IGNORED_PATTERNS,
    exclusive=_EXCLUSIVE,
    checks=(check_queue, _check_snapshot_threads, _check_server_id),
    pattern_properties=PATTERN_PROPERTIES,
)


_UNSET_PATH: Final = Path()


def default_history_file(topic_prefix: str, base_dir: Path | None = None) -> Path:
    relative = Path("data") / "history" / f"{topic_prefix}.jsonl"
    return base_dir / relative if base_dir is not None else relative


@dataclass(frozen=True, slots=True)
class MySqlConnectorConfig:
    """Validated MySQL connector configuration (attribute = property, ``.`` -> ``_``)."""

    topic_prefix: str
    database_hostname: str
    database_user: str
    name: str = ""
    connector_class: str = CONNECTOR_CLASS
    database_port: int = 3306
    database_password: Secret | None = None
    database_server_id: int = 0  # 0: chosen at random in __post_init__
    database_ssl_mode: str = "disabled"
    database_ssl_truststore: Path | None = None
    database_initial_statements: tuple[str, ...] = ()
    connect_timeout_ms: int = 30_000
    connect_keep_alive: bool = True
    snapshot_mode: str = "initial"
    snapshot_locking_mode: str = "minimal"
    snapshot_lock_timeout_ms: int = 10_000
    snapshot_fetch_size: int = 10_240
    snapshot_delay_ms: int = 0
    snapshot_max_threads: int = 1
    database_include_list: tuple[str, ...] = ()
    database_exclude_list: tuple[str, ...] = ()
    table_include_list: tuple[str, ...] = ()
    table_exclude_list: tuple[str, ...] = ()
    column_include_list: tuple[str, ...] = ()
    column_exclude_list: tuple[str, ...] = ()
    table_ignore_builtin: bool = True
    message_key_columns: tuple[tuple[str, tuple[str, ...]], ...] = ()
    skipped_operations: frozenset[str] = frozenset({"t"})
    gtid_source_includes: tuple[str, ...] = ()
    gtid_source_excludes: tuple[str, ...] = ()
    tombstones_on_delete: bool = True
    time_precision_mode: str = "adaptive_time_microseconds"
    decimal_handling_mode: str = "precise"
    bigint_unsigned_handling_mode: str = "long"
    binary_handling_mode: str = "bytes"
    enable_time_adjuster: bool = True
    include_schema_changes: bool = True
    include_query: bool = False
    event_processing_failure_handling_mode: str = "fail"
    inconsistent_schema_handling_mode: str = "fail"
    provide_transaction_metadata: bool = False
    topic_transaction: str = "transaction"
    schema_history_internal_file_filename: Path = _UNSET_PATH
    schema_history_internal_skip_unparseable_ddl: bool = False
    schema_history_internal_store_only_captured_tables_ddl: bool = False
    heartbeat_interval_ms: int = 0
    heartbeat_action_query: str | None = None
    topic_heartbeat_prefix: str = "__debezium-heartbeat"
    topic_naming_strategy: str | None = None  # None: the connector's default
    topic_delimiter: str = "."
    errors_max_retries: int = -1
    retriable_restart_connector_wait_ms: int = 10_000
    max_batch_size: int = 2048
    max_queue_size: int = 8192
    poll_interval_ms: int = 500
    key_converter_schemas_enable: bool = True
    value_converter_schemas_enable: bool = True
    offset_storage_file_filename: Path = _UNSET_PATH
    headwater_topics_dir: Path = Path("data/topics")
    headwater_topics_segment_bytes: int = 67_108_864
    headwater_topics_segment_ms: int = 1000
    passthrough: Mapping[str, str] = field(
        default_factory=dict, repr=False, compare=False, hash=False
    )
    _column_mappers: ColumnMappers = field(default=ColumnMappers(), repr=False, compare=False)
    # signal.*, incremental.snapshot.*, read.only; read through `signals`
    _signals: SignalConfig = field(default_factory=SignalConfig, repr=False, compare=False)
    _filters: dict[str, NameFilter] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _key_columns: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not self.name:
            put(self, "name", self.topic_prefix)
        if self.database_server_id == 0:
            put(self, "database_server_id", random.randint(5400, 6400))
        if self.offset_storage_file_filename == _UNSET_PATH:
            put(self, "offset_storage_file_filename", default_offsets_file(self.topic_prefix))
        if self.schema_history_internal_file_filename == _UNSET_PATH:
            put(self, "schema_history_internal_file_filename",
                default_history_file(self.topic_prefix))
        put(self, "_filters", {
            kind: NameFilter(getattr(self, f"{kind}_include_list"),
                             getattr(self, f"{kind}_exclude_list"))
            for kind in ("database", "table", "column")
        } | {"gtid": NameFilter(self.gtid_source_includes, self.gtid_source_excludes)})
        put(self, "_key_columns", tuple(
            (re.compile(table, re.IGNORECASE), columns)
            for table, columns in self.message_key_columns
        ))

    @classmethod
    def from_validated(cls, config: ValidatedConfig) -> MySqlConnectorConfig:
        c = config
        base = c.base_dir
        prefix = c.get_str("topic.prefix")
        key_columns = c.get_optional_str("message.key.columns")
        statements = c.get_optional_str("database.initial.statements")
        server_id = c.values.get("database.server.id")
        return cls(
            topic_prefix=prefix,
            database_hostname=c.get_str("database.hostname"),
            database_user=c.get_str("database.user"),
            name=c.get_optional_str("name") or prefix,
            connector_class=c.get_str("connector.class"),
            database_port=c.get_int("database.port"),
            database_password=c.get_secret("database.password"),
            database_server_id=int(server_id) if isinstance(server_id, int) else 0,
            database_ssl_mode=c.get_str("database.ssl.mode"),
            database_ssl_truststore=c.get_optional_path("database.ssl.truststore"),
            database_initial_statements=split_statements(statements) if statements else (),
            connect_timeout_ms=c.get_int("connect.timeout.ms"),
            connect_keep_alive=c.get_bool("connect.keep.alive"),
            snapshot_mode=c.get_str("snapshot.mode"),
            snapshot_locking_mode=c.get_str("snapshot.locking.mode"),
            snapshot_lock_timeout_ms=c.get_int("snapshot.lock.timeout.ms"),
            snapshot_fetch_size=c.get_int("snapshot.fetch.size"),
            snapshot_delay_ms=c.get_int("snapshot.delay.ms"),
            snapshot_max_threads=c.get_int("snapshot.max.threads"),
            database_include_list=c.get_list("database.include.list"),
            database_exclude_list=c.get_list("database.exclude.list"),
            table_include_list=c.get_list("table.include.list"),
            table_exclude_list=c.get_list("table.exclude.list"),
            column_include_list=c.get_list("column.include.list"),
            column_exclude_list=c.get_list("column.exclude.list"),
            table_ignore_builtin=c.get_bool("table.ignore.builtin"),
            message_key_columns=parse_message_key_columns(key_columns) if key_columns else (),
            skipped_operations=frozenset(
                op.lower() for op in c.get_list("skipped.operations")) - {"none"},
            gtid_source_includes=c.get_list("gtid.source.includes"),
            gtid_source_excludes=c.get_list("gtid.source.excludes"),
            tombstones_on_delete=c.get_bool("tombstones.on.delete"),
            time_precision_mode=c.get_str("time.precision.mode"),
            decimal_handling_mode=c.get_str("decimal.handling.mode"),
            bigint_unsigned_handling_mode=c.get_str("bigint.unsigned.handling.mode"),
            binary_handling_mode=c.get_str("binary.handling.mode"),
            enable_time_adjuster=c.get_bool("enable.time.adjuster"),
            include_schema_changes=c.get_bool("include.schema.changes"),
            include_query=c.get_bool("include.query"),
            event_processing_failure_handling_mode=c.get_str(
                "event.processing.failure.handling.mode"),
            inconsistent_schema_handling_mode=c.get_str("inconsistent.schema.handling.mode"),
            provide_transaction_metadata=c.get_bool("provide.transaction.metadata"),
            topic_transaction=c.get_str("topic.transaction"),
            schema_history_internal_file_filename=(
                c.get_optional_path("schema.history.internal.file.filename")
                or default_history_file(prefix, base)),
            schema_history_internal_skip_unparseable_ddl=c.get_bool(
                "schema.history.internal.skip.unparseable.ddl"),
            schema_history_internal_store_only_captured_tables_ddl=c.get_bool(
                "schema.history.internal.store.only.captured.tables.ddl"),
            heartbeat_interval_ms=c.get_int("heartbeat.interval.ms"),
            heartbeat_action_query=c.get_optional_str("heartbeat.action.query"),
            topic_heartbeat_prefix=c.get_str("topic.heartbeat.prefix"),
            topic_naming_strategy=c.get_optional_str("topic.naming.strategy"),
            topic_delimiter=c.get_str("topic.delimiter"),
            errors_max_retries=c.get_int("errors.max.retries"),
            retriable_restart_connector_wait_ms=c.get_int("retriable.restart.connector.wait.ms"),
            max_batch_size=c.get_int("max.batch.size"),
            max_queue_size=c.get_int("max.queue.size"),
            poll_interval_ms=c.get_int("poll.interval.ms"),
            key_converter_schemas_enable=c.get_bool("key.converter.schemas.enable"),
            value_converter_schemas_enable=c.get_bool("value.converter.schemas.enable"),
            offset_storage_file_filename=(
                c.get_optional_path("offset.storage.file.filename")
                or default_offsets_file(prefix, base)),
            headwater_topics_dir=c.get_path("headwater.topics.dir"),
            headwater_topics_segment_bytes=c.get_int("headwater.topics.segment.bytes"),
            headwater_topics_segment_ms=c.get_int("headwater.topics.segment.ms"),
            passthrough=dict(c.passthrough),
            _signals=signal_config(c),
            _column_mappers=ColumnMappers.from_config({
                **c.patterned,
                COLUMN_PROPAGATE_PROPERTY: c.get_list(COLUMN_PROPAGATE_PROPERTY),
                DATATYPE_PROPAGATE_PROPERTY: c.get_list(DATATYPE_PROPAGATE_PROPERTY),
            }),
        )

    # -- derived values -----------------------------------------------------------------------

    @property
    def column_mappers(self) -> ColumnMappers:
        return self._column_mappers

    @property
    def signals(self) -> SignalConfig:
        """Signal channels and incremental snapshot settings (headwater.config.signals)."""
        return self._signals

    @property
    def is_mariadb(self) -> bool:
        return self.connector_class == MARIADB_CONNECTOR_CLASS

    @property
    def heartbeat_topic(self) -> str:
        return f"{self.topic_heartbeat_prefix}.{self.topic_prefix}"

    @property
    def transaction_topic(self) -> str:
        return f"{self.topic_prefix}.{self.topic_transaction}"

    # -- filters (Debezium semantics: whole-name, case-insensitive regular expressions) ---------

    def database_filter(self, database: str) -> bool:
        if self.table_ignore_builtin and database.lower() in SYSTEM_DATABASES:
            return False
        return self._filters["database"].admits(database)

    def table_filter(self, database: str, table: str) -> bool:
        if not self.database_filter(database):
            return False
        return self._filters["table"].admits(f"{database}.{table}")

    def column_filter(self, database: str, table: str, column: str) -> bool:
        return self._filters["column"].admits(f"{database}.{table}.{column}")

    def gtid_source_filter(self, source: str) -> bool:
        """Whether GTIDs of `source` (MySQL server UUID, MariaDB "domain-server") are used."""
        return self._filters["gtid"].admits(source)

    def key_columns(self, database: str, table: str) -> tuple[str, ...] | None:
        name = f"{database}.{table}"
        for pattern, columns in self._key_columns:
            if pattern.fullmatch(name):
                return columns
        return None

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``pymysql.connect`` (the password is revealed here)."""
        kwargs: dict[str, Any] = {
            "host": self.database_hostname,
            "port": self.database_port,
            "user": self.database_user,
            "password": self.database_password.reveal() if self.database_password else "",
            "connect_timeout": max(1, self.connect_timeout_ms // 1000),
            "charset": "utf8mb4",
        }
        if self.database_ssl_mode != "disabled":
            ssl: dict[str, Any] = {}
            if self.database_ssl_truststore is not None:
                ssl["ca"] = str(self.database_ssl_truststore)
            if self.database_ssl_mode in ("verify_ca", "verify_identity"):
                ssl["check_hostname"] = self.database_ssl_mode == "verify_identity"
            kwargs["ssl"] = ssl or {"check_hostname": False}
        return kwargs

    def redacted(self) -> dict[str, object]:
        return redacted_fields(self)


def validate_mysql_config(
    raw: Mapping[str, object],
    *,
    base_dir: Path | None = None,
    source: str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[MySqlConnectorConfig, list[str]]:
    validated = MYSQL_CONFIG_DEF.validate(raw, base_dir=base_dir, source=source, env=env)
    return MySqlConnectorConfig.from_validated(validated), list(validated.warnings)


def load_mysql_config(
    path: Path, overrides: Mapping[str, str] | None = None
) -> tuple[MySqlConnectorConfig, list[str]]:
    raw = load_properties(path)
    if overrides:
        raw = MYSQL_CONFIG_DEF.merge(raw, overrides)
    return validate_mysql_config(raw, base_dir=path.parent.resolve(), source=str(path))
