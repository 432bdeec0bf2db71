"""The MongoDB connector's registration (headwater.connectors.registry).

Light to import: the configuration, the connector (pymongo) and the source block are imported
when a configuration is loaded or a runtime is built.
"""

from __future__ import annotations

from headwater.connectors.lazy import config_loaders, connector_builder
from headwater.connectors.mongodb.ordering import MONGODB_ORDER
from headwater.connectors.registry import ConnectorRegistration
from headwater.engine.topic_naming import DEFAULT_STRATEGY

# Debezium's MongoDB connector has no unavailable.value.placeholder: its events never carry one.
UNAVAILABLE_VALUE_PLACEHOLDER = "__debezium_unavailable_value"

_LOAD, _LOAD_WITHOUT_SECRETS = config_loaders(
    "headwater.connectors.mongodb.config:load_mongodb_config")

REGISTRATION = ConnectorRegistration(
    name="MongoDB",
    connector_classes=("io.debezium.connector.mongodb.MongoDbConnector",),
    source_connectors=("mongodb",),
    load_config=_LOAD,
    load_config_without_secrets=_LOAD_WITHOUT_SECRETS,
    build=connector_builder(
        kind="mongodb", config="headwater.connectors.mongodb.config:MongoDbConnectorConfig",
        connector="headwater.connectors.mongodb.connector:MongoDbConnector",
        source_block="headwater.connectors.mongodb.position:MongoDbSourceBlock",
        placeholder=lambda cfg: UNAVAILABLE_VALUE_PLACEHOLDER),
    order=MONGODB_ORDER,
    default_topic_naming_strategy=DEFAULT_STRATEGY,  # <prefix>.<database>.<collection>
    class_aliases=("mongodb", "mongo"),
    config_definition="headwater.connectors.mongodb.config:MONGODB_CONFIG_DEF",
    extras=("mongodb",),
)
