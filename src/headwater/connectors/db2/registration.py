"""The Db2 connector's registration (headwater.connectors.registry).

Light to import: the configuration, the connector and its driver (ibm_db) load on first use.
"""

from __future__ import annotations

from headwater.connectors.db2.ordering import DB2_ORDER
from headwater.connectors.lazy import config_loaders, connector_builder
from headwater.connectors.registry import ConnectorRegistration
from headwater.engine.topic_naming import SCHEMA_STRATEGY

_LOAD, _LOAD_WITHOUT_SECRETS = config_loaders("headwater.connectors.db2.config:load_db2_config")

REGISTRATION = ConnectorRegistration(
    name="Db2",
    connector_classes=("io.debezium.connector.db2.Db2Connector",),
    source_connectors=("db2",),
    load_config=_LOAD,
    load_config_without_secrets=_LOAD_WITHOUT_SECRETS,
    build=connector_builder(
        kind="db2", config="headwater.connectors.db2.config:Db2ConnectorConfig",
        connector="headwater.connectors.db2.connector:Db2Connector",
        source_block="headwater.connectors.db2.position:Db2SourceBlock",
        placeholder=lambda cfg: "__debezium_unavailable_value"),
    order=DB2_ORDER,
    default_topic_naming_strategy=SCHEMA_STRATEGY,
    class_aliases=("db2",),
    config_definition="headwater.connectors.db2.config:DB2_CONFIG_DEF",
)
