"""The SQL Server connector's registration (headwater.connectors.registry), declared through
the change-table connectors' shared form (connectors.changetable_registration).

Light to import: the configuration, the connector and its driver load on first use.
"""

from __future__ import annotations

from headwater.connectors.changetable_registration import changetable_registration
from headwater.connectors.sqlserver.ordering import SQLSERVER_ORDER

REGISTRATION = changetable_registration(
    name="SQL Server", kind="sqlserver",
    stem="SqlServer", connector_class="io.debezium.connector.sqlserver.SqlServerConnector",
    order=SQLSERVER_ORDER, extras=("sqlserver",))
