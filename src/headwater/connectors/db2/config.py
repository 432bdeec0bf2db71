"""Db2 connector properties (Debezium's Db2ConnectorConfig names and defaults) and the typed
configuration.

The shared relational groups (identity, filters, snapshot, events, heartbeats, retries,
runtime, signals) come from `relational.config`; this module adds Db2's own: the connection
(`database.dbname`, port 50000), `snapshot.isolation.mode`, `snapshot.locking.mode`,
`db2.platform` (LUW or ZOS, whose change query differs), `cdc.control.schema` and
`cdc.change.tables.schema` (both ASNCDC), `query.fetch.size`, `z.stop.lsn.ignore` and
`time.precision.mode`.  `headwater.db2.driver` is Headwater's: the DB-API module with
ibm_db_dbi's `connect(dsn, user, password)` the connector opens its connections with
(`ibm_db_dbi`, imported only when the connector starts; the tests name the PostgreSQL-backed
emulation, headwater.testing.db2_emulation.dbapi).
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

CONNECTOR_CLASS: Final = "io.debezium.connector.db2.Db2Connector"
_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES

ISOLATION_MODES: Final = ("exclusive", "repeatable_read", "read_committed", "read_uncommitted")


def _connector_class(text: str) -> str:
    if text == CONNECTOR_CLASS or text.lower() == "db2":
        return CONNECTOR_CLASS
    raise ValueError(f"the Db2 connector ({CONNECTOR_CLASS}, or 'db2')")


PROPERTIES: Final[tuple[Property, ...]] = (
    *relational.identity_properties(
        Property("connector.class", _S, CONNECTOR_CLASS, parser=_connector_class,
                 doc="io.debezium.connector.db2.Db2Connector (or db2)"),
        "Db2"),
    Property("database.hostname", _S, required=True),
    Property("database.port", _I, 50000, min_value=1, max_value=65535),
    Property("database.user", _S, required=True),
    Property("database.password", _PW),
    Property("database.dbname", _S, required=True, doc="the database to capture"),
    Property("database.initial.statements", _S),
    Property("headwater.db2.driver", _S, "ibm_db_dbi",
             doc="DB-API module with ibm_db_dbi's connect(dsn, user, password); tests name "
                 "the emulation"),
    Property("snapshot.mode", _E, "initial",
             allowed=("initial", "initial_only", "no_data", "when_needed", "always",
                      "recovery"),
             value_aliases={"schema_only": "no_data", "schema_only_recovery": "recovery"}),
    Property("snapshot.isolation.mode", _E, "repeatable_read", allowed=ISOLATION_MODES),
    Property("snapshot.locking.mode", _E, "exclusive", allowed=("exclusive", "none")),
    *relational.snapshot_properties("snapshot reader threads (Headwater reads with one)"),
    Property("db2.platform", _E, "luw", allowed=("luw", "zos"), value_aliases={"z": "zos"},
             doc="LUW (Linux, Unix, Windows) or ZOS (also Z): which change-table query is "
                 "used; case-insensitive"),
    Property("cdc.control.schema", _S, "ASNCDC",
             doc="schema of IBMSNAP_REGISTER and the other ASN control tables"),
    Property("cdc.change.tables.schema", _S, "ASNCDC", doc="schema of the CD tables"),
    Property("query.fetch.size", _I, 10_000, min_value=0,
             doc="change rows fetched at a time while streaming"),
    Property("z.stop.lsn.ignore", _B, False,
             doc="ignore IBMSNAP_REGISTER.CD_OLD_SYNCHPOINT as a table's stop LSN"),
    *relational.filter_properties("schema"),
    *relational.EVENT_PROPERTIES,
    Property("time.precision.mode", _E, "adaptive",
             allowed=("adaptive", "adaptive_time_microseconds", "connect")),
    *history.HISTORY_PROPERTIES,  # the schema history block (relational/history_config.py)
    *relational.OPERATION_PROPERTIES,
)

IGNORED: Final[Mapping[str, str]] = {
    name: relational.NOT_IMPLEMENTED
    for name in (*relational.IGNORED_NAMES,
                 "streaming.query.timespan.seconds")
}

DB2_CONFIG_DEF: Final = ConfigDef(
    PROPERTIES,
    passthrough_prefixes=(*relational.PASSTHROUGH_PREFIXES, "driver.",
                          *history.HISTORY_PASSTHROUGH),
    ignored={**IGNORED, **history.HISTORY_IGNORED},
    ignored_patterns=relational.IGNORED_PATTERNS,
    exclusive=relational.exclusive_lists("schema"),
    checks=(check_queue, check_output, relational.check_tasks("Db2"),
            relational.check_heartbeat, history.check_history),
    pattern_properties=relational.PATTERN_PROPERTIES,
)


@dataclass(frozen=True, slots=True)
class Db2ConnectorConfig(RelationalConnectorConfig):
    """Validated Db2 connector configuration (attribute = property)."""

    database_dbname: str = "TESTDB"
    connector_class: str = CONNECTOR_CLASS
    database_port: int = 50000
    headwater_db2_driver: str = "ibm_db_dbi"
    snapshot_isolation_mode: str = "repeatable_read"
    snapshot_locking_mode: str = "exclusive"
    db2_platform: str = "luw"
    cdc_control_schema: str = "ASNCDC"
    cdc_change_tables_schema: str = "ASNCDC"
    query_fetch_size: int = 10_000
    z_stop_lsn_ignore: bool = False
    schema_include_list: tuple[str, ...] = ()
    schema_exclude_list: tuple[str, ...] = ()
    time_precision_mode: str = "adaptive"
    # include.schema.changes, schema.history.internal.* (relational/history_config.py)
    schema_history: history.SchemaHistoryConfig = field(
        default_factory=history.SchemaHistoryConfig)

    @classmethod
    def from_validated(cls, c: ValidatedConfig) -> Db2ConnectorConfig:
        return cls(
            **cls.common_values(c),
            database_dbname=c.get_str("database.dbname"),
            connector_class=c.get_str("connector.class"),
            database_port=c.get_int("database.port"),
            headwater_db2_driver=c.get_str("headwater.db2.driver"),
            snapshot_isolation_mode=c.get_str("snapshot.isolation.mode"),
            snapshot_locking_mode=c.get_str("snapshot.locking.mode"),
            db2_platform=c.get_str("db2.platform"),
            cdc_control_schema=c.get_str("cdc.control.schema"),
            cdc_change_tables_schema=c.get_str("cdc.change.tables.schema"),
            query_fetch_size=c.get_int("query.fetch.size"),
            z_stop_lsn_ignore=c.get_bool("z.stop.lsn.ignore"),
            schema_include_list=c.get_list("schema.include.list"),
            schema_exclude_list=c.get_list("schema.exclude.list"),
            time_precision_mode=c.get_str("time.precision.mode"),
            schema_history=history.schema_history_config(c),
        )

    def table_filter(self, schema: str, table: str) -> bool:
        """Whether `<schema>.<table>` is captured (Debezium's whole-name, case-insensitive
        regular expressions; the schema lists first).  Like Debezium's Db2 system-table filter,
        the ASN control and CD tables are never captured."""
        from headwater.config.connector_common import NameFilter

        upper_schema, lower_table = schema.upper(), table.lower()
        if (upper_schema in ("ASNCDC", self.cdc_control_schema.upper(),
                             self.cdc_change_tables_schema.upper())
                or upper_schema.startswith(("SYS", "SYSTOOLS"))
                or lower_table.startswith(("ibmsnap_", "ibmqrep_"))):
            return False
        if not NameFilter(self.schema_include_list, self.schema_exclude_list).admits(schema):
            return False
        return self._tables.admits(f"{schema}.{table}")

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ibm_db_dbi.connect (the password is revealed here)."""
        dsn = (f"DATABASE={self.database_dbname};HOSTNAME={self.database_hostname};"
               f"PORT={self.database_port};PROTOCOL=TCPIP;UID={self.database_user};")
        if self.database_password is not None:
            dsn += f"PWD={self.database_password.reveal()};"
        return {"dsn": dsn, "user": "", "password": ""}


_LOADER: Final = ConfigLoader[Db2ConnectorConfig](DB2_CONFIG_DEF, Db2ConnectorConfig.from_validated)
validate_db2_config = _LOADER.validate
load_db2_config = _LOADER.load
