"""MySQL / MariaDB connector properties (Debezium names and defaults) and the typed configuration.

Why this module exists: a Debezium MySQL (or MariaDB) connector configuration should run on
Headwater unchanged, and what Headwater cannot honour must say so at start-up.  Names and
defaults follow *current* Debezium (2.x/3.x); the 1.0 names of the reference are accepted as
deprecated aliases:

* ``topic.prefix`` replaces ``database.server.name``; ``database.include.list`` /
  ``table.include.list`` (and the exclude lists) replace the white/black lists.
* The schema history is a local file (``schema.history.internal.file.filename``, default
  ``data/history/<topic.prefix>.jsonl`` next to the configuration), Debezium's
  ``FileSchemaHistory``, or a Kafka topic with
  ``schema.history.internal=io.debezium.storage.kafka.history.KafkaSchemaHistory`` and
  ``schema.history.internal.kafka.*`` (`headwater.connectors.mysql.kafka_history`; 1.x
  ``database.history.*`` names are aliases).
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from headwater.config.connector_common import NameFilter, check_queue
from headwater.config.definition import (
    ConfigDef,
    Property,
    ValidatedConfig,
    ValidationContext,
    regex_list_validator,
)
from headwater.config.output import check_output
from headwater.relational import config as relational
from headwater.relational import history_config as history
from headwater.relational.config import ConfigLoader, RelationalConnectorConfig

CONNECTOR_CLASS: Final = "io.debezium.connector.mysql.MySqlConnector"
MARIADB_CONNECTOR_CLASS: Final = "io.debezium.connector.mariadb.MariaDbConnector"

_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES

# Databases the server keeps for itself: never captured (Debezium's table.ignore.builtin).
SYSTEM_DATABASES: Final = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


def _connector_class(text: str) -> str:
    lowered = text.lower()
    if text in (CONNECTOR_CLASS, MARIADB_CONNECTOR_CLASS) or lowered in ("mysql", "mariadb"):
        return MARIADB_CONNECTOR_CLASS if "maria" in lowered else CONNECTOR_CLASS
    raise ValueError(
        f"the MySQL connector ({CONNECTOR_CLASS}, {MARIADB_CONNECTOR_CLASS}, 'mysql' or 'mariadb')"
    )


_KH = "schema.history.internal.kafka."

PROPERTIES: Final[tuple[Property, ...]] = (
    *relational.identity_properties(Property("connector.class", _S, CONNECTOR_CLASS,
                                  parser=_connector_class), "MySQL"),
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
    *relational.snapshot_properties(
        "initial snapshot reader processes (key-range chunks, snapshots opened under the read "
        "lock); > 1 needs snapshot.locking.mode minimal or extended"),
    Property("min.row.count.to.stream.results", _L, 1000, min_value=0),
    # -- filters --------------------------------------------------------------------------------
    *relational.filter_properties("database"),
    Property("table.ignore.builtin", _B, True),
    Property("gtid.source.includes", _LIST, validator=regex_list_validator,
             doc="server UUIDs (MySQL) / domain-server ids (MariaDB) whose GTIDs are used"),
    Property("gtid.source.excludes", _LIST, validator=regex_list_validator),
    # -- events ---------------------------------------------------------------------------------
    *relational.EVENT_PROPERTIES,
    Property("time.precision.mode", _E, "adaptive_time_microseconds",
             allowed=("adaptive_time_microseconds", "adaptive", "connect")),
    Property("bigint.unsigned.handling.mode", _E, "long", allowed=("long", "precise")),
    Property("unavailable.value.placeholder", _S, relational.DEFAULT_UNAVAILABLE_VALUE,
             validator=relational.placeholder_validator,
             doc="value of BLOB/TEXT columns binlog_row_image=NOBLOB leaves out; 'hex:' prefix "
                 "= hex-encoded bytes"),
    Property("enable.time.adjuster", _B, True),
    Property("include.schema.changes", _B, True),
    Property("include.query", _B, False,
             doc="original SQL in source.query (needs binlog_annotate_row_events / "
                 "binlog_rows_query_log_events)"),
    Property("inconsistent.schema.handling.mode", _E, "fail", allowed=("fail", "warn", "skip"),
             value_aliases={"ignore": "skip"}),
    # -- schema history (the store's properties are shared: relational/history_config.py) -----
    *history.HISTORY_STORE_PROPERTIES,
    Property("schema.history.internal.skip.unparseable.ddl", _B, False,
             aliases=("database.history.skip.unparseable.ddl",)),
    # -- heartbeats, retries, runtime, signals ----------------------------------------------------
    *relational.OPERATION_PROPERTIES,
)

IGNORED: Final[Mapping[str, str]] = {
    name: relational.NOT_IMPLEMENTED
    for name in (*relational.IGNORED_NAMES, "binlog.buffer.size", "database.jdbc.driver",
                 "database.protocol", "use.nongraceful.disconnect")
} | dict.fromkeys((_KH + "buffer.batch.size",), relational.NOT_IMPLEMENTED)
_PASSTHROUGH: Final = (
    *relational.PASSTHROUGH_PREFIXES, "database.history.producer.", "database.history.consumer.",
    "schema.history.internal.producer.", "schema.history.internal.consumer.",
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
    passthrough_prefixes=_PASSTHROUGH,
    ignored=IGNORED,
    ignored_patterns=relational.IGNORED_PATTERNS,
    exclusive=(*relational.exclusive_lists("database"),
               ("gtid.source.includes", "gtid.source.excludes")),
    checks=(check_queue, check_output, relational.check_tasks("MySQL"), relational.check_heartbeat,
            _check_snapshot_threads, _check_server_id, history.check_history),
    pattern_properties=relational.PATTERN_PROPERTIES,
)


@dataclass(frozen=True, slots=True)
class MySqlConnectorConfig(RelationalConnectorConfig):
    """Validated MySQL connector configuration (attribute = property, ``.`` -> ``_``)."""

    connector_class: str = CONNECTOR_CLASS
    database_port: int = 3306
    database_server_id: int = 0  # 0: chosen at random in __post_init__
    database_ssl_mode: str = "disabled"
    database_ssl_truststore: Path | None = None
    connect_timeout_ms: int = 30_000
    connect_keep_alive: bool = True
    connect_keep_alive_interval_ms: int = 60_000
    min_row_count_to_stream_results: int = 1000
    snapshot_locking_mode: str = "minimal"
    database_include_list: tuple[str, ...] = ()
    database_exclude_list: tuple[str, ...] = ()
    table_ignore_builtin: bool = True
    gtid_source_includes: tuple[str, ...] = ()
    gtid_source_excludes: tuple[str, ...] = ()
    time_precision_mode: str = "adaptive_time_microseconds"
    bigint_unsigned_handling_mode: str = "long"
    unavailable_value_placeholder: str = relational.DEFAULT_UNAVAILABLE_VALUE
    enable_time_adjuster: bool = True
    include_schema_changes: bool = True
    include_query: bool = False
    inconsistent_schema_handling_mode: str = "fail"
    # schema.history.internal.* but skip.unparseable.ddl: the store's properties, as the
    # change-table connectors have them (relational/history_config.py)
    schema_history: history.SchemaHistoryConfig = field(
        default_factory=history.SchemaHistoryConfig)
    schema_history_internal_skip_unparseable_ddl: bool = False
    _databases: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                   compare=False)
    _gtid_sources: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                      compare=False)

    def __post_init__(self) -> None:
        RelationalConnectorConfig.__post_init__(self)
        put = object.__setattr__
        if self.database_server_id == 0:
            put(self, "database_server_id", random.randint(5400, 6400))
        put(self, "_databases",
            NameFilter(self.database_include_list, self.database_exclude_list))
        put(self, "_gtid_sources", NameFilter(self.gtid_source_includes, self.gtid_source_excludes))

    @classmethod
    def from_validated(cls, config: ValidatedConfig) -> MySqlConnectorConfig:
        c = config
        server_id = c.values.get("database.server.id")
        return cls(
            **cls.common_values(c),
            **c.attributes(
                "connector.class", "database.port", "database.ssl.mode",
                "database.ssl.truststore", "connect.timeout.ms", "connect.keep.alive",
                "connect.keep.alive.interval.ms", "min.row.count.to.stream.results",
                "snapshot.locking.mode", "database.include.list", "database.exclude.list",
                "table.ignore.builtin", "gtid.source.includes", "gtid.source.excludes",
                "time.precision.mode", "bigint.unsigned.handling.mode",
                "unavailable.value.placeholder", "enable.time.adjuster", "include.schema.changes",
                "include.query", "inconsistent.schema.handling.mode",
                "schema.history.internal.skip.unparseable.ddl"),
            database_server_id=int(server_id) if isinstance(server_id, int) else 0,
            schema_history=history.schema_history_config(c),
        )

    # -- derived values -----------------------------------------------------------------------

    @property
    def history_in_kafka(self) -> bool:
        return self.schema_history.history_in_kafka

    @property
    def is_mariadb(self) -> bool:
        return self.connector_class == MARIADB_CONNECTOR_CLASS

    # -- filters (Debezium semantics: whole-name, case-insensitive regular expressions) ---------

    def database_filter(self, database: str) -> bool:
        if self.table_ignore_builtin and database.lower() in SYSTEM_DATABASES:
            return False
        return self._databases.admits(database)

    def table_filter(self, database: str, table: str) -> bool:
        if not self.database_filter(database):
            return False
        return self._tables.admits(f"{database}.{table}")

    def gtid_source_filter(self, source: str) -> bool:
        """Whether GTIDs of `source` (MySQL server UUID, MariaDB "domain-server") are used."""
        return self._gtid_sources.admits(source)

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


# --------------------------------------------------------------------------------------------
# Entry points

_LOADER: Final = ConfigLoader[MySqlConnectorConfig](
    MYSQL_CONFIG_DEF, MySqlConnectorConfig.from_validated)
validate_mysql_config = _LOADER.validate
load_mysql_config = _LOADER.load
