"""The SQL Server connector's registration (headwater.connectors.registry), declared through
the change-table connectors' shared form (connectors.changetable_registration).

Light to import: the configuration, the connector and its driver load on first use.
"""

from __future__ import annotations

from headwater.connectors.changetable_registration import changetable_registration
from headwater.connectors.sqlserver.ordering import SQLSERVER_ORDER

REGISTRATION = changetable_registration(
    name="SQL Server", kind="sqlserver",
    connector_class="io.debezium.connector.sqlserver.SqlServerConnector",
    config="SqlServerConnectorConfig", loader="load_sqlserver_config",
    config_definition="SQLSERVER_CONFIG_DEF", connector="SqlServerConnector",
    source_block="SqlServerSourceBlock", order=SQLSERVER_ORDER,
    extras=("sqlserver",))
