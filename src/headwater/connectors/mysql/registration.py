"""The MySQL connector's registration (headwater.connectors.registry); it also runs Debezium's
MariaDB connector class, whose events carry `source.connector` "mariadb".

Light to import: the configuration, the connector (PyMySQL) and the source block are imported
when a configuration is loaded or a runtime is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from headwater.connectors.mysql.ordering import MYSQL_ORDER
from headwater.connectors.registry import CaptureConfig, ConnectorParts, ConnectorRegistration
from headwater.engine.topic_naming import DEFAULT_STRATEGY

if TYPE_CHECKING:
    from headwater.engine.metrics import CaptureMetrics
    from headwater.engine.topic_naming import TopicNaming

# Debezium's MySQL connector has no unavailable.value.placeholder property: its constant.
UNAVAILABLE_VALUE_PLACEHOLDER = "__debezium_unavailable_value"


def _load_config(path: Path) -> CaptureConfig:
    from headwater.connectors.mysql.config import load_mysql_config

    return load_mysql_config(path)[0]


def _load_config_without_secrets(path: Path) -> CaptureConfig:
    from headwater.connectors.mysql.config import load_mysql_config

    return load_mysql_config(path, secrets=False)[0]


def _build(cfg: CaptureConfig, metrics: CaptureMetrics, naming: TopicNaming) -> ConnectorParts:
    from headwater.connectors.mysql.config import MySqlConnectorConfig
    from headwater.connectors.mysql.connector import MySqlConnector
    from headwater.connectors.mysql.position import MySqlSourceBlock
    from headwater.ops.logging import connector_type

    if not isinstance(cfg, MySqlConnectorConfig):
        raise TypeError(f"the MySQL connector needs a MySqlConnectorConfig, got "
                        f"{type(cfg).__name__}")
    connector_type.set("mysql")
    return ConnectorParts(MySqlConnector(cfg, metrics, naming), MySqlSourceBlock(),
                          UNAVAILABLE_VALUE_PLACEHOLDER)


REGISTRATION = ConnectorRegistration(
    name="MySQL",
    connector_classes=("io.debezium.connector.mysql.MySqlConnector",
                       "io.debezium.connector.mariadb.MariaDbConnector"),
    source_connectors=("mysql", "mariadb"),
    load_config=_load_config,
    load_config_without_secrets=_load_config_without_secrets,
    build=_build,
    order=MYSQL_ORDER,
    default_topic_naming_strategy=DEFAULT_STRATEGY,  # BinlogConnectorConfig's default
    class_aliases=("mysql", "mariadb"),
)
