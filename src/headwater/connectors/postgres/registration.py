"""The PostgreSQL connector's registration (headwater.connectors.registry).

Light to import: the configuration, the connector (psycopg2) and the source block are imported
when a configuration is loaded or a runtime is built.
"""

from __future__ import annotations

from headwater.connectors.lazy import package_registration
from headwater.connectors.postgres.ordering import POSTGRES_ORDER
from headwater.model.topic_naming import SCHEMA_STRATEGY

REGISTRATION = package_registration(
    name="PostgreSQL", kind="postgres", stem="Postgres",
    connector_classes=("io.debezium.connector.postgresql.PostgresConnector",),
    source_connectors=("postgresql",),
    placeholder=lambda cfg: str(cfg.unavailable_value_placeholder), order=POSTGRES_ORDER,
    default_topic_naming_strategy=SCHEMA_STRATEGY,  # Debezium's common default
    class_aliases=("postgres", "postgresql"), validate_dialect="postgres")
