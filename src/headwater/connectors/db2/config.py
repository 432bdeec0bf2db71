"""Db2 connector properties (Debezium's Db2ConnectorConfig names and defaults) and the typed
configuration.

Beside the change-table connectors' shared properties (relational.changetables.config), Db2's
own: the connection (`database.dbname`, port 50000), its `snapshot.isolation.mode` values,
`snapshot.locking.mode`, `db2.platform` (LUW or ZOS, whose change query differs),
`cdc.control.schema` and `cdc.change.tables.schema` (both ASNCDC), `query.fetch.size` and
`z.stop.lsn.ignore`.  `headwater.db2.driver` is Headwater's: the DB-API module with
ibm_db_dbi's `connect(dsn, user, password)` the connector opens its connections with
(`ibm_db_dbi`, imported only when the connector starts; the tests name the PostgreSQL-backed
emulation, headwater.testing.db2_emulation.dbapi).

Db2 has no Datastream source: `headwater.event.format=datastream` is refused at start
(config.output.refuse_datastream).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from headwater.config.definition import Property, ValidatedConfig
from headwater.config.output import refuse_datastream
from headwater.relational import config as relational
from headwater.relational.changetables.config import (
    ChangeTableConnectorConfig,
    changetable_config_def,
    changetable_properties,
)
from headwater.relational.changetables.signal_config import signal_collection_property
from headwater.relational.config import ConfigLoader

CONNECTOR_CLASS: Final = "io.debezium.connector.db2.Db2Connector"
_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES

ISOLATION_MODES: Final = ("exclusive", "repeatable_read", "read_committed", "read_uncommitted")

PROPERTIES: Final[tuple[Property, ...]] = changetable_properties(
    connector_class=CONNECTOR_CLASS, kind="db2", label="Db2", port=50000,
    connection=(Property("database.dbname", _S, required=True, doc="the database to capture"),),
    driver=Property("headwater.db2.driver", _S, "ibm_db_dbi",
                    doc="DB-API module with ibm_db_dbi's connect(dsn, user, password); tests "
                        "name the emulation"),
    isolation_modes=ISOLATION_MODES,
    reading=(
        Property("snapshot.locking.mode", _E, "exclusive", allowed=("exclusive", "none")),
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
    ),
    signal_collection=signal_collection_property(2, "<schema>.<table>", several=False),
)

DB2_CONFIG_DEF: Final = changetable_config_def(
    PROPERTIES, "Db2", ignored=("streaming.query.timespan.seconds",),
    output_check=refuse_datastream("Db2", "Datastream has no Db2 source, so there is no "
                                          "Datastream event shape to write"))


@dataclass(frozen=True, slots=True)
class Db2ConnectorConfig(ChangeTableConnectorConfig):
    """Validated Db2 connector configuration (attribute = property)."""

    database_dbname: str = "TESTDB"
    connector_class: str = CONNECTOR_CLASS
    database_port: int = 50000
    headwater_db2_driver: str = "ibm_db_dbi"
    snapshot_locking_mode: str = "exclusive"
    db2_platform: str = "luw"
    cdc_control_schema: str = "ASNCDC"
    cdc_change_tables_schema: str = "ASNCDC"
    query_fetch_size: int = 10_000
    z_stop_lsn_ignore: bool = False

    @classmethod
    def from_validated(cls, c: ValidatedConfig) -> Db2ConnectorConfig:
        return cls(**cls.changetable_values(c), **c.attributes(
            "database.dbname", "headwater.db2.driver", "snapshot.locking.mode", "db2.platform",
            "cdc.control.schema", "cdc.change.tables.schema", "query.fetch.size",
            "z.stop.lsn.ignore"))

    def is_signal_table(self, schema: str, table: str, database: str | None = None) -> bool:
        """Whether `<schema>.<table>` is the signal table (`signal.data.collection`), compared
        in upper case: Db2 folds unquoted names to upper case, as its catalog shows them."""
        wanted = (schema.upper(), table.upper())
        return any(tuple(p.upper() for p in parts) == wanted
                   for parts in self.signal_names)

    def never_captured(self, schema: str, table: str) -> bool:
        """Like Debezium's Db2 system-table filter: the ASN control and CD tables and the
        catalog's are never captured."""
        upper_schema, lower_table = schema.upper(), table.lower()
        return (upper_schema in ("ASNCDC", self.cdc_control_schema.upper(),
                                 self.cdc_change_tables_schema.upper())
                or upper_schema.startswith(("SYS", "SYSTOOLS"))
                or lower_table.startswith(("ibmsnap_", "ibmqrep_")))

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
