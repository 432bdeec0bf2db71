"""The SQL Server connector's registration (headwater.connectors.registry).

Light to import: the configuration, the connector and its driver load on first use.
"""

from __future__ import annotations

from headwater.connectors.lazy import config_loaders, connector_builder
from headwater.connectors.registry import ConnectorRegistration
from headwater.connectors.sqlserver.ordering import SQLSERVER_ORDER
from headwater.engine.topic_naming import SCHEMA_STRATEGY

_LOAD, _LOAD_WITHOUT_SECRETS = config_loaders(
    "headwater.connectors.sqlserver.config:load_sqlserver_config")

REGISTRATION = ConnectorRegistration(
    name="SQL Server",
    connector_classes=("io.debezium.connector.sqlserver.SqlServerConnector",),
    source_connectors=("sqlserver",),
    load_config=_LOAD,
    load_config_without_secrets=_LOAD_WITHOUT_SECRETS,
    build=connector_builder(
        kind="sqlserver", config="headwater.connectors.sqlserver.config:SqlServerConnectorConfig",
        connector="headwater.connectors.sqlserver.connector:SqlServerConnector",
        source_block="headwater.connectors.sqlserver.position:SqlServerSourceBlock",
        placeholder=lambda cfg: "__debezium_unavailable_value"),
    order=SQLSERVER_ORDER,
    default_topic_naming_strategy=SCHEMA_STRATEGY,
    class_aliases=("sqlserver",),
    config_definition="headwater.connectors.sqlserver.config:SQLSERVER_CONFIG_DEF",
)
