"""SQL Server connector properties (Debezium names and defaults) and the typed configuration.

The shared relational groups (identity, filters, snapshot, events, heartbeats, retries,
runtime, signals) come from `relational.config`; this module adds only SQL Server's own:
the connection (`database.names`, `database.encrypt`, `database.trustServerCertificate`),
`snapshot.isolation.mode`, `data.query.mode`, `max.iteration.transactions` and
`time.precision.mode`.  `headwater.sqlserver.driver` is Headwater's: the DB-API module with
pymssql's `connect` signature the connector opens its connections with (`pymssql`; the tests
name the PostgreSQL-backed emulation, headwater.testing.sqlserver_emulation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from headwater.config.connector_common import check_queue
from headwater.config.definition import ConfigDef, Property, ValidatedConfig
from headwater.config.output import check_output
from headwater.relational import config as relational
from headwater.relational import history_config as history
from headwater.relational.config import ConfigLoader, RelationalConnectorConfig

CONNECTOR_CLASS: Final = "io.debezium.connector.sqlserver.SqlServerConnector"
_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES

ISOLATION_MODES: Final = ("read_uncommitted", "read_committed", "repeatable_read", "snapshot",
                          "exclusive")


def _connector_class(text: str) -> str:
    if text == CONNECTOR_CLASS or text.lower() == "sqlserver":
        return CONNECTOR_CLASS
    raise ValueError(f"the SQL Server connector ({CONNECTOR_CLASS}, or 'sqlserver')")


PROPERTIES: Final[tuple[Property, ...]] = (
    *relational.identity_properties(
        Property("connector.class", _S, CONNECTOR_CLASS, parser=_connector_class,
                 doc="io.debezium.connector.sqlserver.SqlServerConnector (or sqlserver)"),
        "SQL Server"),
    Property("database.hostname", _S, required=True),
    Property("database.port", _I, 1433, min_value=1, max_value=65535),
    Property("database.instance", _S, doc="named instance (hostname\\instance)"),
    Property("database.user", _S, required=True),
    Property("database.password", _PW),
    Property("database.names", _LIST, required=True, aliases=("database.dbname",),
             doc="the databases to capture, one partition each"),
    Property("database.encrypt", _B, True, doc="TLS to the server (driver 'encrypt')"),
    Property("database.trustServerCertificate", _B, False,
             doc="accept the server certificate without validating it"),
    Property("database.initial.statements", _S),
    Property("headwater.sqlserver.driver", _S, "pymssql",
             doc="DB-API module with pymssql's connect(); tests name the emulation"),
    Property("snapshot.mode", _E, "initial",
             allowed=("initial", "initial_only", "no_data", "when_needed", "always",
                      "recovery"),
             value_aliases={"schema_only": "no_data", "schema_only_recovery": "recovery"}),
    Property("snapshot.isolation.mode", _E, "repeatable_read", allowed=ISOLATION_MODES),
    *relational.snapshot_properties("snapshot reader threads (Headwater reads with one)"),
    Property("data.query.mode", _E, "function", allowed=("function", "direct"),
             doc="function: cdc.fn_cdc_get_all_changes_<ci>; direct: the <ci>_CT table"),
    Property("max.iteration.transactions", _I, 500, min_value=0,
             doc="transactions read per poll (0: up to the current maximum LSN)"),
    Property("streaming.fetch.size", _I, 0, min_value=0),
    *relational.filter_properties("schema"),
    *relational.EVENT_PROPERTIES,
    Property("time.precision.mode", _E, "adaptive",
             allowed=("adaptive", "adaptive_time_microseconds", "connect")),
    *history.HISTORY_PROPERTIES,  # the schema history block (relational/history_config.py)
    *relational.OPERATION_PROPERTIES,
)

IGNORED: Final[Mapping[str, str]] = {
    name: relational.NOT_IMPLEMENTED
    for name in (*relational.IGNORED_NAMES, "snapshot.locking.mode",
                 "incremental.snapshot.option.recompile", "database.applicationIntent",
                 "driver.encrypt", "driver.trustServerCertificate")
}

SQLSERVER_CONFIG_DEF: Final = ConfigDef(
    PROPERTIES,
    passthrough_prefixes=(*relational.PASSTHROUGH_PREFIXES, "driver.",
                          *history.HISTORY_PASSTHROUGH),
    ignored={**IGNORED, **history.HISTORY_IGNORED},
    ignored_patterns=relational.IGNORED_PATTERNS,
    exclusive=relational.exclusive_lists("schema"),
    checks=(check_queue, check_output, relational.check_tasks("SQL Server"),
            relational.check_heartbeat, history.check_history),
    pattern_properties=relational.PATTERN_PROPERTIES,
)


@dataclass(frozen=True, slots=True)
class SqlServerConnectorConfig(RelationalConnectorConfig):
    """Validated SQL Server connector configuration (attribute = property)."""

    database_names: tuple[str, ...] = ("testDB",)
    connector_class: str = CONNECTOR_CLASS
    database_port: int = 1433
    database_instance: str | None = None
    database_encrypt: bool = True
    database_trust_server_certificate: bool = False
    headwater_sqlserver_driver: str = "pymssql"
    snapshot_isolation_mode: str = "repeatable_read"
    data_query_mode: str = "function"
    max_iteration_transactions: int = 500
    streaming_fetch_size: int = 0
    schema_include_list: tuple[str, ...] = ()
    schema_exclude_list: tuple[str, ...] = ()
    time_precision_mode: str = "adaptive"
    # include.schema.changes, schema.history.internal.* (relational/history_config.py)
    schema_history: history.SchemaHistoryConfig = field(
        default_factory=history.SchemaHistoryConfig)

    @classmethod
    def from_validated(cls, c: ValidatedConfig) -> SqlServerConnectorConfig:
        return cls(
            **cls.common_values(c),
            database_names=c.get_list("database.names"),
            connector_class=c.get_str("connector.class"),
            database_port=c.get_int("database.port"),
            database_instance=c.get_optional_str("database.instance"),
            database_encrypt=c.get_bool("database.encrypt"),
            database_trust_server_certificate=c.get_bool("database.trustServerCertificate"),
            headwater_sqlserver_driver=c.get_str("headwater.sqlserver.driver"),
            snapshot_isolation_mode=c.get_str("snapshot.isolation.mode"),
            data_query_mode=c.get_str("data.query.mode"),
            max_iteration_transactions=c.get_int("max.iteration.transactions"),
            streaming_fetch_size=c.get_int("streaming.fetch.size"),
            schema_include_list=c.get_list("schema.include.list"),
            schema_exclude_list=c.get_list("schema.exclude.list"),
            time_precision_mode=c.get_str("time.precision.mode"),
            schema_history=history.schema_history_config(c),
        )

    def table_filter(self, schema: str, table: str) -> bool:
        """Whether `<schema>.<table>` is captured (Debezium's whole-name, case-insensitive
        regular expressions; the schema lists first)."""
        from headwater.config.connector_common import NameFilter

        if not NameFilter(self.schema_include_list, self.schema_exclude_list).admits(schema):
            return False
        return self._tables.admits(f"{schema}.{table}")

    def connect_kwargs(self, database: str) -> dict[str, Any]:
        """Keyword arguments of pymssql.connect (the password is revealed here)."""
        server = self.database_hostname
        if self.database_instance:
            server = f"{server}\\{self.database_instance}"
        kwargs: dict[str, Any] = {
            "server": server, "port": str(self.database_port), "user": self.database_user,
            "database": database, "autocommit": False,
            "appname": f"headwater-{self.name}"[:128],
        }
        if self.database_password is not None:
            kwargs["password"] = self.database_password.reveal()
        if self.database_encrypt:
            # FreeTDS: "require" encrypts; it validates the certificate only when told to.
            kwargs["encryption"] = "require"
        return kwargs


_LOADER: Final = ConfigLoader[SqlServerConnectorConfig](
    SQLSERVER_CONFIG_DEF, SqlServerConnectorConfig.from_validated)
validate_sqlserver_config = _LOADER.validate
load_sqlserver_config = _LOADER.load
