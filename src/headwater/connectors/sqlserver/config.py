"""SQL Server connector properties (Debezium names and defaults) and the typed configuration.

Beside the change-table connectors' shared properties (relational.changetables.config), SQL
Server's own: `snapshot.mode=when_needed_no_data` (Debezium 3.x's SQL Server connector alone
has it), the connection (`database.names`, `database.instance`, `database.encrypt`,
`database.trustServerCertificate`), its `snapshot.isolation.mode` values, `data.query.mode`,
`max.iteration.transactions` and `streaming.fetch.size`.  `headwater.sqlserver.driver` is
Headwater's: the DB-API module with pymssql's `connect` signature the connector opens its
connections with (`pymssql`; the tests name the PostgreSQL-backed emulation,
headwater.testing.sqlserver_emulation).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

from headwater.config.definition import Property, ValidatedConfig, ValidationContext
from headwater.model.schema import TableId
from headwater.relational import config as relational
from headwater.relational.changetables.config import (
    SNAPSHOT_MODE,
    SNAPSHOT_MODES,
    ChangeTableConnectorConfig,
    changetable_config_def,
    changetable_properties,
)
from headwater.relational.changetables.signal_config import (
    check_signal_databases,
    signal_collection_property,
)
from headwater.relational.config import ConfigLoader

CONNECTOR_CLASS: Final = "io.debezium.connector.sqlserver.SqlServerConnector"
_S, _I, _L, _B, _E, _LIST, _PW, _P = relational.TYPE_ALIASES

ISOLATION_MODES: Final = ("read_uncommitted", "read_committed", "repeatable_read", "snapshot",
                          "exclusive")

PROPERTIES: Final[tuple[Property, ...]] = changetable_properties(
    connector_class=CONNECTOR_CLASS, kind="sqlserver", label="SQL Server", port=1433,
    connection=(
        Property("database.instance", _S, doc="named instance (hostname\\instance)"),
        Property("database.names", _LIST, required=True, aliases=("database.dbname",),
                 doc="the databases to capture, one partition each"),
        Property("database.encrypt", _B, True, doc="TLS to the server (driver 'encrypt')"),
        Property("database.trustServerCertificate", _B, False,
                 doc="accept the server certificate without validating it"),
    ),
    driver=Property("headwater.sqlserver.driver", _S, "pymssql",
                    doc="DB-API module with pymssql's connect(); tests name the emulation"),
    isolation_modes=ISOLATION_MODES,
    reading=(
        Property("data.query.mode", _E, "function", allowed=("function", "direct"),
                 doc="function: cdc.fn_cdc_get_all_changes_<ci>; direct: the <ci>_CT table"),
        Property("max.iteration.transactions", _I, 500, min_value=0,
                 doc="transactions read per poll (0: up to the current maximum LSN)"),
        Property("incremental.snapshot.option.recompile", _B, False,
                 doc="OPTION(RECOMPILE) on incremental snapshot chunk queries"),
        Property("streaming.fetch.size", _I, 0, min_value=0,
                 doc="change rows fetched from the driver at a time per table (0: all)"),
    ),
    signal_collection=signal_collection_property(3, "<database>.<schema>.<table>",
                                                 several=True),
    snapshot_mode=dataclasses.replace(
        SNAPSHOT_MODE, allowed=(*SNAPSHOT_MODES, "when_needed_no_data")),
)



def check_certificate_validation(context: ValidationContext) -> None:
    """`database.encrypt=true` with `database.trustServerCertificate=false` (Debezium's
    defaults) asks for TLS that validates the server's certificate.  pymssql.connect has no
    argument for that (FreeTDS validates only with a `ca file` in its own freetds.conf, which
    Headwater neither writes nor can see), so the connection would be encrypted but
    unverified: refused rather than pretended.  Other drivers (the tests' emulation) are
    theirs to judge."""
    values = context.values
    if (values.get("headwater.sqlserver.driver") == "pymssql"
            and values.get("database.encrypt") is True
            and values.get("database.trustServerCertificate") is False
            and context.ok("database.encrypt", "database.trustServerCertificate")):
        context.error(
            "database.trustServerCertificate=false: the driver (pymssql) cannot validate the "
            "server's certificate, so database.encrypt=true would be TLS without it; set "
            "database.trustServerCertificate=true (encrypt, certificate not validated) or "
            "database.encrypt=false")


SQLSERVER_CONFIG_DEF: Final = changetable_config_def(
    PROPERTIES, "SQL Server",
    ignored=("snapshot.locking.mode", "database.applicationIntent", "driver.encrypt",
             "driver.trustServerCertificate"),
    checks=(check_signal_databases, check_certificate_validation))


@dataclass(frozen=True, slots=True)
class SqlServerConnectorConfig(ChangeTableConnectorConfig):
    """Validated SQL Server connector configuration (attribute = property)."""

    database_names: tuple[str, ...] = ("testDB",)
    connector_class: str = CONNECTOR_CLASS
    database_port: int = 1433
    database_instance: str | None = None
    database_encrypt: bool = True
    database_trust_server_certificate: bool = False
    headwater_sqlserver_driver: str = "pymssql"
    data_query_mode: str = "function"
    max_iteration_transactions: int = 500
    incremental_snapshot_option_recompile: bool = False
    streaming_fetch_size: int = 0

    @classmethod
    def from_validated(cls, c: ValidatedConfig) -> SqlServerConnectorConfig:
        return cls(**cls.changetable_values(c), **c.attributes(
            "database.names", "database.instance", "database.encrypt",
            "database.trustServerCertificate", "headwater.sqlserver.driver", "data.query.mode",
            "max.iteration.transactions", "incremental.snapshot.option.recompile",
            "streaming.fetch.size"))

    @property
    def signal_tables(self) -> frozenset[TableId]:
        """The signal tables (`signal.data.collection`), at most one per database."""
        return frozenset(TableId(*parts) for parts in self.signal_names)

    def is_signal_table(self, schema: str, table: str, database: str | None = None) -> bool:
        return database is not None and TableId(database, schema, table) in self.signal_tables

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
        # pymssql's `encryption` (FreeTDS): "require" encrypts everything; "off" asks for no
        # encryption (mssql-jdbc's encrypt=false: the login packet alone is encrypted, unless
        # the server forces more).  Given either way, so a freetds.conf cannot change it.
        # Certificate validation has no argument: check_certificate_validation refuses
        # what would need one.
        kwargs["encryption"] = "require" if self.database_encrypt else "off"
        return kwargs


_LOADER: Final = ConfigLoader[SqlServerConnectorConfig](
    SQLSERVER_CONFIG_DEF, SqlServerConnectorConfig.from_validated)
validate_sqlserver_config = _LOADER.validate
load_sqlserver_config = _LOADER.load
