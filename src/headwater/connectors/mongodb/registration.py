"""The MongoDB connector's registration (headwater.connectors.registry).

Light to import: the configuration, the connector (pymongo) and the source block are imported
when a configuration is loaded or a runtime is built.
"""

from __future__ import annotations

from headwater.connectors.lazy import package_registration
from headwater.connectors.mongodb.ordering import MONGODB_ORDER
from headwater.model.topic_naming import DEFAULT_STRATEGY

# Debezium's MongoDB connector has no unavailable.value.placeholder: its events never carry one.
UNAVAILABLE_VALUE_PLACEHOLDER = "__debezium_unavailable_value"

REGISTRATION = package_registration(
    name="MongoDB", kind="mongodb", stem="MongoDb",
    connector_classes=("io.debezium.connector.mongodb.MongoDbConnector",),
    source_connectors=("mongodb",),
    placeholder=lambda cfg: UNAVAILABLE_VALUE_PLACEHOLDER, order=MONGODB_ORDER,
    default_topic_naming_strategy=DEFAULT_STRATEGY,  # <prefix>.<database>.<collection>
    class_aliases=("mongodb", "mongo"), extras=("mongodb",), event_model="documents")
