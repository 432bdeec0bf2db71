"""Which schema history store a MySQL/MariaDB connector uses: the file or the Kafka topic
(`schema.history.internal`), behind one small protocol so SchemaState does not care."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from headwater.config.loader import ConfigError
from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.ddl import SchemaChange
from headwater.connectors.mysql.schema_history import FileSchemaHistory, MySqlSchema
from headwater.engine.metrics import SchemaHistoryMetrics


class SchemaHistoryStore(Protocol):
    """What SchemaState needs from a history store."""

    clears: bool  # whether `clear` empties it (Kafka: a new snapshot appends)
    metrics: SchemaHistoryMetrics  # Debezium's schema-history context

    def exists(self) -> bool: ...

    def record(self, source: dict[str, Any], position: dict[str, Any], database: str | None,
               ddl: str, changes: list[SchemaChange]) -> None: ...

    def recover(self, schema: MySqlSchema,
                include: Callable[[dict[str, Any]], bool]) -> int: ...

    def last_position(self) -> dict[str, Any] | None: ...

    def clear(self) -> None: ...


_PRODUCER = "schema.history.internal.producer."
_CONSUMER = "schema.history.internal.consumer."
_OLD = {"database.history.producer.": _PRODUCER, "database.history.consumer.": _CONSUMER}


def kafka_history_settings(cfg: MySqlConnectorConfig) -> Any:
    """The KafkaHistorySettings of a configuration; the `producer.*`/`consumer.*` overrides
    are translated to librdkafka names (ConfigError for one that has no equivalent)."""
    from headwater.kafka.history import KafkaHistorySettings
    from headwater.kafka.settings import client_config

    passthrough = dict(getattr(cfg, "passthrough", {}) or {})
    for old, new in _OLD.items():
        for key in [k for k in passthrough if k.startswith(old)]:
            passthrough.setdefault(new + key[len(old):], passthrough.pop(key))
    errors: list[str] = []
    producer = client_config({k[len(_PRODUCER):]: v for k, v in passthrough.items()
                              if k.startswith(_PRODUCER)}, errors, _PRODUCER)
    consumer = client_config({k[len(_CONSUMER):]: v for k, v in passthrough.items()
                              if k.startswith(_CONSUMER)}, errors, _CONSUMER)
    if not cfg.history_in_kafka and (producer or consumer):
        errors.append(f"{_PRODUCER}*/{_CONSUMER}*: client settings of the Kafka schema "
                      "history, but the history is a file")
    if errors:
        raise ConfigError(errors)
    return KafkaHistorySettings(
        topic=cfg.schema_history_internal_kafka_topic or "",
        bootstrap_servers=cfg.schema_history_internal_kafka_bootstrap_servers or "",
        recovery_poll_interval_ms=cfg.schema_history_internal_kafka_recovery_poll_interval_ms,
        recovery_attempts=cfg.schema_history_internal_kafka_recovery_attempts,
        query_timeout_ms=cfg.schema_history_internal_kafka_query_timeout_ms,
        create_timeout_ms=cfg.schema_history_internal_kafka_create_timeout_ms,
        producer=producer, consumer=consumer)


def open_history(cfg: MySqlConnectorConfig, server_name: str) -> SchemaHistoryStore:
    """The configured store (nothing is read or created yet)."""
    settings = kafka_history_settings(cfg)
    if not cfg.history_in_kafka:
        return FileSchemaHistory(Path(cfg.schema_history_internal_file_filename))
    from headwater.kafka.history import KafkaSchemaHistory

    return KafkaSchemaHistory(settings, server_name)
