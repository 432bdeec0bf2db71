"""The PostgreSQL connector's registration (headwater.connectors.registry).

Light to import: the configuration, the connector (psycopg2) and the source block are imported
when a configuration is loaded or a runtime is built.
"""

from __future__ import annotations

from headwater.connectors.lazy import config_loaders, connector_builder
from headwater.connectors.postgres.ordering import POSTGRES_ORDER
from headwater.connectors.registry import ConnectorRegistration
from headwater.engine.topic_naming import SCHEMA_STRATEGY

_LOAD, _LOAD_WITHOUT_SECRETS = config_loaders(
    "headwater.connectors.postgres.config:load_postgres_config")

REGISTRATION = ConnectorRegistration(
    name="PostgreSQL",
    connector_classes=("io.debezium.connector.postgresql.PostgresConnector",),
    source_connectors=("postgresql",),
    load_config=_LOAD,
    load_config_without_secrets=_LOAD_WITHOUT_SECRETS,
    build=connector_builder(
        kind="postgres", config="headwater.connectors.postgres.config:PostgresConnectorConfig",
        connector="headwater.connectors.postgres.connector:PostgresConnector",
        source_block="headwater.connectors.postgres.position:PostgresSourceBlock",
        placeholder=lambda cfg: str(cfg.unavailable_value_placeholder)),
    order=POSTGRES_ORDER,
    default_topic_naming_strategy=SCHEMA_STRATEGY,  # Debezium's common default
    class_aliases=("postgres", "postgresql"),
    config_definition="headwater.connectors.postgres.config:POSTGRES_CONFIG_DEF",
    validate_dialect="postgres",
)
