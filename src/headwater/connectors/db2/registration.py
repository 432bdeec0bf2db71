"""The Db2 connector's registration (headwater.connectors.registry), declared through the
change-table connectors' shared form (connectors.changetable_registration).

Light to import: the configuration, the connector and its driver (ibm_db) load on first use.
"""

from __future__ import annotations

from headwater.connectors.changetable_registration import changetable_registration
from headwater.connectors.db2.ordering import DB2_ORDER

REGISTRATION = changetable_registration(
    name="Db2", kind="db2", stem="Db2", connector_class="io.debezium.connector.db2.Db2Connector",
    order=DB2_ORDER)
