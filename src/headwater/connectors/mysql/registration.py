"""The MySQL connector's registration (headwater.connectors.registry); it also runs Debezium's
MariaDB connector class, whose events carry `source.connector` "mariadb".

Light to import: the configuration, the connector (PyMySQL) and the source block are imported
when a configuration is loaded or a runtime is built.
"""

from __future__ import annotations

from headwater.connectors.lazy import package_registration
from headwater.connectors.mysql.ordering import MYSQL_ORDER
from headwater.model.topic_naming import DEFAULT_STRATEGY

REGISTRATION = package_registration(
    name="MySQL", kind="mysql", stem="MySql",
    connector_classes=("io.debezium.connector.mysql.MySqlConnector",
                       "io.debezium.connector.mariadb.MariaDbConnector"),
    source_connectors=("mysql", "mariadb"),
    placeholder=lambda cfg: str(cfg.unavailable_value_placeholder), order=MYSQL_ORDER,
    default_topic_naming_strategy=DEFAULT_STRATEGY,  # BinlogConnectorConfig's default
    class_aliases=("mysql", "mariadb"), validate_dialect="mysql")
