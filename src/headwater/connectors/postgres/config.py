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

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from headwater.config.connector_common import NameFilter, check_queue
from headwater.config.definition import (
    ConfigDef,
    ConfigValue,
    Property,
    ValidatedConfig,
    regex_list_validator,
)
from headwater.config.output import check_output
from headwater.config.secrets import Secret
from headwater.relational import config as relational
from headwater.relational.config import (
    ConfigLoader,
    RelationalConnectorConfig,
    parse_message_key_columns,
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

log = logging.getLogger("headwater.connectors.postgres.config")

_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES

# System schemas never captured (Debezium's SystemTablesPredicate plus pg_toast), and built-in
# tables living in user schemas (PostGIS), skipped like Debezium's table.ignore.builtin=true.
_SYSTEM_SCHEMAS: Final = frozenset({"pg_catalog", "information_schema", "pg_toast"})
_SYSTEM_SCHEMA_PREFIXES: Final = ("pg_temp", "pg_toast_temp")
_BUILTIN_TABLES: Final = frozenset({"spatial_ref_sys"})

_SLOT_NAME: Final = re.compile(r"[a-z0-9_]{1,63}")


# --------------------------------------------------------------------------------------------
# Parsers and validators


def _connector_class(text: str) -> str:
    if text == CONNECTOR_CLASS or text.lower() in ("postgres", "postgresql"):
        return CONNECTOR_CLASS
    raise ValueError(f"the PostgreSQL connector ({CONNECTOR_CLASS}, or 'postgres'/'postgresql')")


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


# --------------------------------------------------------------------------------------------
# The property set: the shared relational groups plus PostgreSQL's own

PROPERTIES: Final[tuple[Property, ...]] = (
    *relational.identity_properties(
        Property("connector.class", _S, CONNECTOR_CLASS, parser=_connector_class,
                 doc="io.debezium.connector.postgresql.PostgresConnector (or postgres/postgresql)"),
        "PostgreSQL"),
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
    Property("slot.failover", _B, False,
             doc="create the slot with FAILOVER (synchronized to standbys) on a PostgreSQL 17+ "
                 "primary; elsewhere a plain slot, with a warning"),
    Property("slot.max.retries", _I, 6, min_value=0),
    Property("slot.retry.delay.ms", _L, 10_000, min_value=0),
    Property("offset.mismatch.strategy", _E, "no_validation",
             allowed=("no_validation", "trust_offset", "trust_slot", "trust_greater_lsn"),
             doc="stored offset vs the slot's position at start"),
    Property("slot.seek.to.known.offset.on.start", _B, False,
             deprecated="use offset.mismatch.strategy (true = trust_offset, false = "
                        "no_validation)"),
    Property("status.update.interval.ms", _I, 10_000, min_value=1,
             doc="standby status update (LSN feedback) interval"),
    Property("lsn.flush.mode", _E, "connector",
             allowed=("connector", "manual", "connector_and_driver"),
             doc="who confirms the slot's position: the connector once durable; manual: never "
                 "(WAL is kept until someone else advances the slot); connector_and_driver: "
                 "also the server's keepalive position when idle (heartbeats on)"),
    Property("flush.lsn.source", _B, True,
             deprecated="use lsn.flush.mode (true = connector, false = manual)"),
    Property("publication.name", _S, "dbz_publication", validator=_identifier),
    Property("publication.autocreate.mode", _E, "all_tables",
             allowed=("all_tables", "disabled", "filtered"),
             rejected_values={"no_tables": "publications without tables are not supported yet"}),
    Property("publish.via.partition.root", _B, False,
             doc="create the publication WITH (publish_via_partition_root = true): changes of "
                 "a partition arrive as its partitioned root table's (the root's topic)"),
    # -- snapshot -------------------------------------------------------------------------------
    Property("snapshot.mode", _E, "initial",
             allowed=("initial", "always", "no_data", "initial_only", "when_needed"),
             value_aliases={"never": "no_data", "exported": "initial"},
             rejected_values=dict.fromkeys(
                 ("custom", "configuration_based"), "custom snapshotters are not supported")),
    *relational.snapshot_properties(
        "initial snapshot reader processes (key-range chunks, one exported snapshot)"),
    # -- filters --------------------------------------------------------------------------------
    *relational.filter_properties("schema"),
    # -- events ---------------------------------------------------------------------------------
    *relational.EVENT_PROPERTIES,
    Property("time.precision.mode", _E, "adaptive",
             allowed=("adaptive", "adaptive_time_microseconds", "connect")),
    Property("hstore.handling.mode", _E, "json", allowed=("json", "map")),
    Property("interval.handling.mode", _E, "numeric", allowed=("numeric", "string")),
    Property("include.unknown.datatypes", _B, False),
    Property("unavailable.value.placeholder", _S, "__debezium_unavailable_value",
             aliases=("toasted.value.placeholder",), validator=relational.placeholder_validator,
             doc="value of unchanged TOASTed columns; 'hex:' prefix = hex-encoded bytes"),
    Property("money.fraction.digits", _I, 2, min_value=0, max_value=38,
             doc="scale of money values with decimal.handling.mode=precise"),
    Property("message.prefix.include.list", _LIST, validator=regex_list_validator,
             doc=relational.DOC_REGEX + "logical decoding message prefix (op m events)"),
    Property("message.prefix.exclude.list", _LIST, validator=regex_list_validator,
             doc=relational.DOC_REGEX + "logical decoding message prefix (op m events)"),
    # -- heartbeats, retries, runtime, signals ----------------------------------------------
    *relational.OPERATION_PROPERTIES,
    Property("headwater.pgoutput.streaming", _B, True,
             doc="pgoutput protocol 2 with streaming of large in-progress transactions "
                 "(PostgreSQL 14+; buffered on disk until their commit); false: protocol 1"),
)

IGNORED: Final[Mapping[str, str]] = {
    name: relational.NOT_IMPLEMENTED
    for name in (
        *relational.IGNORED_NAMES,
        "schema.refresh.mode", "slot.stream.params", "snapshot.isolation.mode",
        "snapshot.locking.mode", "snapshot.custom.class", "database.sslfactory",
        "database.query.timeout.ms", "table.ignore.builtin", "xmin.fetch.interval.ms",
        "replica.identity.autoset.values", "query.fetch.size",
    )
} | {
    "database.whitelist": "not a PostgreSQL connector property; use schema.include.list or "
    "table.include.list",
    "database.history.kafka.topic": "PostgreSQL keeps no schema history",
    "column.mask.hash.hashing.strategy": "not a Debezium property; hashing strategy V2 is "
    "selected by the property name column.mask.hash.v2.<algorithm>.with.salt.<salt>",
}

POSTGRES_CONFIG_DEF: Final = ConfigDef(
    PROPERTIES,
    passthrough_prefixes=relational.PASSTHROUGH_PREFIXES,
    ignored=IGNORED,
    ignored_patterns=(*relational.IGNORED_PATTERNS,
                      (r"snapshot\.mode\.configuration\.based\..+", relational.NOT_IMPLEMENTED)),
    exclusive=(*relational.exclusive_lists("schema"),
               ("message.prefix.include.list", "message.prefix.exclude.list")),
    checks=(check_queue, check_output, relational.check_tasks("PostgreSQL"),
            relational.check_heartbeat),
    pattern_properties=relational.PATTERN_PROPERTIES,
)


def _mismatch_strategy(c: ValidatedConfig) -> str:
    """Debezium's resolveOffsetSlotMismatchStrategy: ``offset.mismatch.strategy`` if given,
    else the deprecated ``slot.seek.to.known.offset.on.start`` (true = trust_offset)."""
    if not c.is_set("offset.mismatch.strategy") and c.is_set(
            "slot.seek.to.known.offset.on.start"):
        return "trust_offset" if c.get_bool("slot.seek.to.known.offset.on.start") else (
            "no_validation")
    return c.get_str("offset.mismatch.strategy")


def _lsn_flush_mode(c: ValidatedConfig) -> str:
    """Debezium's resolveLsnFlushMode: ``lsn.flush.mode`` if given, else the deprecated
    ``flush.lsn.source`` (true = connector, false = manual), else connector."""
    if not c.is_set("lsn.flush.mode") and c.is_set("flush.lsn.source"):
        return "connector" if c.get_bool("flush.lsn.source") else "manual"
    return c.get_str("lsn.flush.mode")


def _heartbeat_fallback(values: dict[str, Any], lsn_flush_mode: str) -> dict[str, Any]:
    """Debezium's applyLsnFlushModeHeartbeatFallback: connector_and_driver needs periodic
    chances to confirm the keepalive position, so without heartbeats and transaction metadata
    the heartbeat interval becomes 600000 ms (with a warning)."""
    if (lsn_flush_mode == "connector_and_driver" and values["heartbeat_interval_ms"] == 0
            and not values["provide_transaction_metadata"]):
        log.warning("heartbeat.interval.ms was internally set to 600000 ms since "
                    "lsn.flush.mode=connector_and_driver requires periodic opportunities to "
                    "confirm LSNs; set heartbeat.interval.ms above 0 or enable "
                    "provide.transaction.metadata if this is not desired")
        values = values | {"heartbeat_interval_ms": 600_000}
    return values


# --------------------------------------------------------------------------------------------
# Typed configuration


def is_system_schema(schema: str) -> bool:
    """PostgreSQL system schemas, never captured whatever the filters say."""
    lowered = schema.lower()
    return lowered in _SYSTEM_SCHEMAS or lowered.startswith(_SYSTEM_SCHEMA_PREFIXES)


@dataclass(frozen=True, slots=True)
class PostgresConnectorConfig(RelationalConnectorConfig):
    """Validated PostgreSQL connector configuration (attribute = property, ``.``/``-`` -> ``_``).

    Build it with :func:`load_postgres_config` / :func:`validate_postgres_config`; direct
    construction (tests) needs only the four required values and applies Debezium's defaults.
    """

    database_dbname: str
    connector_class: str = CONNECTOR_CLASS
    database_port: int = 5432
    database_sslmode: str = "prefer"
    database_sslcert: Path | None = None
    database_sslkey: Path | None = None
    database_sslrootcert: Path | None = None
    database_sslpassword: Secret | None = None
    database_tcp_keepalive: bool = True
    plugin_name: str = "pgoutput"
    slot_name: str = "debezium"
    slot_drop_on_stop: bool = False
    slot_max_retries: int = 6
    slot_retry_delay_ms: int = 10_000
    status_update_interval_ms: int = 10_000
    publication_name: str = "dbz_publication"
    publication_autocreate_mode: str = "all_tables"
    schema_include_list: tuple[str, ...] = ()
    schema_exclude_list: tuple[str, ...] = ()
    time_precision_mode: str = "adaptive"
    hstore_handling_mode: str = "json"
    interval_handling_mode: str = "numeric"
    include_unknown_datatypes: bool = False
    unavailable_value_placeholder: str = "__debezium_unavailable_value"
    money_fraction_digits: int = 2
    headwater_pgoutput_streaming: bool = True
    message_prefix_include_list: tuple[str, ...] = ()
    message_prefix_exclude_list: tuple[str, ...] = ()
    # Resolved with the deprecated slot.seek.to.known.offset.on.start (from_validated).
    offset_mismatch_strategy: str = "no_validation"
    slot_failover: bool = False
    # Resolved with the deprecated flush.lsn.source (from_validated).
    lsn_flush_mode: str = "connector"
    publish_via_partition_root: bool = False
    _schemas: NameFilter = field(default=NameFilter((), ()), init=False, repr=False,
                                 compare=False)

    def __post_init__(self) -> None:
        RelationalConnectorConfig.__post_init__(self)
        object.__setattr__(
            self, "_schemas", NameFilter(self.schema_include_list, self.schema_exclude_list))

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_validated(cls, config: ValidatedConfig) -> PostgresConnectorConfig:
        """Build from the result of ``POSTGRES_CONFIG_DEF.validate``."""
        c = config
        lsn_flush_mode = _lsn_flush_mode(c)
        return cls(
            **_heartbeat_fallback(cls.common_values(c), lsn_flush_mode),
            **c.attributes(
                "database.dbname", "connector.class", "database.port", "database.sslmode",
                "database.sslcert", "database.sslkey", "database.sslrootcert",
                "database.sslpassword", "plugin.name", "slot.name", "slot.drop.on.stop",
                "slot.max.retries", "slot.retry.delay.ms", "status.update.interval.ms",
                "publication.name", "publication.autocreate.mode", "schema.include.list",
                "schema.exclude.list", "time.precision.mode", "hstore.handling.mode",
                "interval.handling.mode", "include.unknown.datatypes",
                "unavailable.value.placeholder", "money.fraction.digits",
                "headwater.pgoutput.streaming", "message.prefix.include.list",
                "message.prefix.exclude.list", "slot.failover", "publish.via.partition.root",
                database_tcp_keepalive="database.tcpKeepAlive"),
            offset_mismatch_strategy=_mismatch_strategy(c),
            lsn_flush_mode=lsn_flush_mode,
        )

    # -- derived values -----------------------------------------------------------------------

    @property
    def toasted_value_placeholder(self) -> str:
        """Debezium 1.x name of :attr:`unavailable_value_placeholder`."""
        return self.unavailable_value_placeholder

    @property
    def unavailable_value_placeholder_bytes(self) -> bytes:
        """The placeholder as bytes (``hex:`` prefix decoded, as Debezium does)."""
        return relational.placeholder_bytes(self.unavailable_value_placeholder)

    # -- filters ------------------------------------------------------------------------------

    def schema_filter(self, schema: str) -> bool:
        """Whether ``schema`` is captured (system schemas never are)."""
        return not is_system_schema(schema) and self._schemas.admits(schema)

    def message_filter(self) -> NameFilter:
        """Which logical decoding message prefixes are emitted (Debezium's
        LogicalDecodingMessageFilter: an include list, else an exclude list)."""
        return NameFilter(self.message_prefix_include_list, self.message_prefix_exclude_list)

    def table_filter(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` is captured.

        Debezium semantics: the schema must pass the schema lists and ``<schema>.<table>`` the
        table lists; each regular expression must match the whole name, case-insensitively; an
        include list admits only what it matches, an exclude list removes what it matches.
        """
        if not self.schema_filter(schema) or table.lower() in _BUILTIN_TABLES:
            return False
        return self._tables.admits(f"{schema}.{table}")

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

# --------------------------------------------------------------------------------------------
# Entry points

_LOADER: Final = ConfigLoader[PostgresConnectorConfig](
    POSTGRES_CONFIG_DEF, PostgresConnectorConfig.from_validated)
validate_postgres_config = _LOADER.validate
load_postgres_config = _LOADER.load
