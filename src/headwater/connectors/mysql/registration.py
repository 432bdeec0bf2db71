"""The MySQL connector's registration (headwater.connectors.registry); it also runs Debezium's
MariaDB connector class, whose events carry `source.connector` "mariadb".

Light to import: the configuration, the connector (PyMySQL) and the source block are imported
when a configuration is loaded or a runtime is built.
"""

from __future__ import annotations

from headwater.connectors.lazy import config_loaders, connector_builder
from headwater.connectors.mysql.ordering import MYSQL_ORDER
from headwater.connectors.registry import ConnectorRegistration
from headwater.engine.topic_naming import DEFAULT_STRATEGY

# Debezium's MySQL connector has no unavailable.value.placeholder property: its constant.
UNAVAILABLE_VALUE_PLACEHOLDER = "__debezium_unavailable_value"

_LOAD, _LOAD_WITHOUT_SECRETS = config_loaders(
    "headwater.connectors.mysql.config:load_mysql_config")

REGISTRATION = ConnectorRegistration(
    name="MySQL",
    connector_classes=("io.debezium.connector.mysql.MySqlConnector",
                       "io.debezium.connector.mariadb.MariaDbConnector"),
    source_connectors=("mysql", "mariadb"),
    load_config=_LOAD,
    load_config_without_secrets=_LOAD_WITHOUT_SECRETS,
    build=connector_builder(
        kind="mysql", config="headwater.connectors.mysql.config:MySqlConnectorConfig",
        connector="headwater.connectors.mysql.connector:MySqlConnector",
        source_block="headwater.connectors.mysql.position:MySqlSourceBlock",
        placeholder=lambda cfg: UNAVAILABLE_VALUE_PLACEHOLDER),
    order=MYSQL_ORDER,
    default_topic_naming_strategy=DEFAULT_STRATEGY,  # BinlogConnectorConfig's default
    class_aliases=("mysql", "mariadb"),
    config_definition="headwater.connectors.mysql.config:MYSQL_CONFIG_DEF",
    validate_dialect="mysql",
)
