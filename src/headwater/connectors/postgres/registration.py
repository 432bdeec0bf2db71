"""The PostgreSQL connector's registration (headwater.connectors.registry).

Light to import: the configuration, the connector (psycopg2) and the source block are imported
when a configuration is loaded or a runtime is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from headwater.connectors.postgres.ordering import POSTGRES_ORDER
from headwater.connectors.registry import CaptureConfig, ConnectorParts, ConnectorRegistration
from headwater.engine.topic_naming import SCHEMA_STRATEGY

if TYPE_CHECKING:
    from headwater.engine.metrics import CaptureMetrics
    from headwater.engine.topic_naming import TopicNaming


def _load_config(path: Path) -> CaptureConfig:
    from headwater.connectors.postgres.config import load_postgres_config

    return load_postgres_config(path)[0]


def _load_config_without_secrets(path: Path) -> CaptureConfig:
    from headwater.connectors.postgres.config import load_postgres_config

    return load_postgres_config(path, secrets=False)[0]


def _build(cfg: CaptureConfig, metrics: CaptureMetrics, naming: TopicNaming) -> ConnectorParts:
    from headwater.connectors.postgres.config import PostgresConnectorConfig
    from headwater.connectors.postgres.connector import PostgresConnector
    from headwater.connectors.postgres.position import PostgresSourceBlock
    from headwater.ops.logging import connector_type

    if not isinstance(cfg, PostgresConnectorConfig):
        raise TypeError(f"the PostgreSQL connector needs a PostgresConnectorConfig, got "
                        f"{type(cfg).__name__}")
    connector_type.set("postgres")
    return ConnectorParts(PostgresConnector(cfg, metrics, naming), PostgresSourceBlock(),
                          cfg.unavailable_value_placeholder)


REGISTRATION = ConnectorRegistration(
    name="PostgreSQL",
    connector_classes=("io.debezium.connector.postgresql.PostgresConnector",),
    source_connectors=("postgresql",),
    load_config=_load_config,
    load_config_without_secrets=_load_config_without_secrets,
    build=_build,
    order=POSTGRES_ORDER,
    default_topic_naming_strategy=SCHEMA_STRATEGY,  # Debezium's common default
    class_aliases=("postgres", "postgresql"),
)
