"""MySQL connector configuration: Debezium names, 1.0 aliases, clear errors, filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.config import ConfigError
from headwater.connectors.mysql.config import (
    MARIADB_CONNECTOR_CLASS,
    validate_mysql_config,
)
from headwater.connectors.mysql.connection import binlog_status_statement

BASE = {"topic.prefix": "m", "database.hostname": "h", "database.user": "u",
        "database.server.id": "5500"}


def test_defaults_follow_current_debezium() -> None:
    cfg, warnings = validate_mysql_config(BASE)
    assert cfg.snapshot_mode == "initial" and cfg.snapshot_locking_mode == "minimal"
    assert cfg.time_precision_mode == "adaptive_time_microseconds"
    assert cfg.bigint_unsigned_handling_mode == "long" and cfg.include_schema_changes
    assert cfg.database_port == 3306 and cfg.database_server_id == 5500
    assert cfg.skipped_operations == frozenset({"t"}) and not cfg.include_query
    assert cfg.schema_history.schema_history_internal_file_filename == Path("data/history/m.jsonl")
    assert warnings == []


def test_one_dot_zero_names_are_aliases_with_warnings() -> None:
    cfg, warnings = validate_mysql_config({
        "database.server.name": "legacy", "database.hostname": "h", "database.user": "u",
        "database.server.id": "1", "database.whitelist": "inv",
        "table.blacklist": "inv.secret", "snapshot.mode": "schema_only_recovery",
        "database.history.skip.unparseable.ddl": "true",
    })
    assert cfg.topic_prefix == "legacy" and cfg.snapshot_mode == "recovery"
    assert cfg.schema_history_internal_skip_unparseable_ddl
    assert cfg.table_filter("inv", "orders") and not cfg.table_filter("inv", "secret")
    assert not cfg.table_filter("other", "orders")
    joined = " ".join(warnings)
    assert "database.whitelist" in joined and "schema_only_recovery" in joined


def test_system_databases_are_never_captured() -> None:
    cfg, _ = validate_mysql_config(BASE)
    assert not cfg.table_filter("mysql", "user")
    assert not cfg.table_filter("performance_schema", "threads")
    assert cfg.table_filter("shop", "orders")


def test_errors_name_the_property() -> None:
    with pytest.raises(ConfigError) as err:
        validate_mysql_config({**BASE, "snapshot.locking.mode": "minimal_percona",
                               "database.port": "99999", "max.queue.size": "10",
                               "max.batch.size": "20"})
    text = str(err.value)
    assert "snapshot.locking.mode" in text and "Percona" in text
    assert "database.port" in text and "max.queue.size" in text


KAFKA_HISTORY = "io.debezium.storage.kafka.history.KafkaSchemaHistory"


def test_kafka_history_settings_are_read() -> None:
    cfg, _ = validate_mysql_config({
        **BASE, "schema.history.internal": KAFKA_HISTORY,
        "schema.history.internal.kafka.topic": "h",
        "schema.history.internal.kafka.bootstrap.servers": "b:9092",
        "schema.history.internal.kafka.recovery.attempts": "7",
        "schema.history.internal.producer.linger.ms": "3"})
    assert cfg.history_in_kafka and cfg.schema_history.schema_history_internal_kafka_topic == "h"
    assert cfg.schema_history.schema_history_internal_kafka_recovery_attempts == 7
    from headwater.relational.history_kafka import kafka_history_settings

    settings = kafka_history_settings(cfg.schema_history)
    assert settings.bootstrap_servers == "b:9092" and settings.producer == {"linger.ms": "3"}


def test_kafka_history_needs_a_topic_and_file_history_refuses_kafka_settings() -> None:
    with pytest.raises(ConfigError) as err:
        validate_mysql_config({**BASE, "schema.history.internal": KAFKA_HISTORY})
    assert "schema.history.internal.kafka.topic is required" in str(err.value)
    with pytest.raises(ConfigError) as err:
        validate_mysql_config({**BASE, "database.history.kafka.topic": "h"})
    assert "schema.history.internal=" + KAFKA_HISTORY in str(err.value)
    with pytest.raises(ConfigError) as err:
        validate_mysql_config({**BASE, "schema.history.internal": "com.example.MyHistory"})
    assert "FileSchemaHistory" in str(err.value)
    cfg, _ = validate_mysql_config({
        **BASE, "database.history": "io.debezium.relational.history.KafkaDatabaseHistory",
        "database.history.kafka.topic": "h",
        "database.history.kafka.bootstrap.servers": "b:9092"})
    assert cfg.history_in_kafka


def test_random_server_id_with_a_warning() -> None:
    raw = dict(BASE)
    del raw["database.server.id"]
    cfg, warnings = validate_mysql_config(raw)
    assert 5400 <= cfg.database_server_id <= 6400
    assert any("database.server.id" in w for w in warnings)


def test_mariadb_connector_class_and_gtid_filters() -> None:
    cfg, _ = validate_mysql_config({**BASE, "connector.class": "mariadb",
                                    "gtid.source.excludes": "0-2"})
    assert cfg.connector_class == MARIADB_CONNECTOR_CLASS and cfg.is_mariadb
    assert cfg.gtid_source_filter("0-1") and not cfg.gtid_source_filter("0-2")


@pytest.mark.parametrize(("version", "statement"), [
    ("10.11.19-MariaDB-0+deb12u1-log", "SHOW MASTER STATUS"),
    ("5.7.44-log", "SHOW MASTER STATUS"),
    ("8.0.36", "SHOW MASTER STATUS"),
    ("8.2.0", "SHOW BINARY LOG STATUS"),
    ("8.4.3", "SHOW BINARY LOG STATUS"),
    ("9.1.0-commercial", "SHOW BINARY LOG STATUS"),
])
def test_binlog_status_statement_per_server(version: str, statement: str) -> None:
    assert binlog_status_statement(version) == statement
