"""Which schema history store a MySQL/MariaDB connector uses: the file or the Kafka topic
(`schema.history.internal`), behind one small protocol so SchemaState does not care."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.ddl import SchemaChange
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.schema_history import FileSchemaHistory
from headwater.engine.metrics import SchemaHistoryMetrics
from headwater.relational.history_kafka import kafka_history_settings


class SchemaHistoryStore(Protocol):
    """What SchemaState needs from a history store."""

    clears: bool  # whether `clear` empties it (Kafka: a new snapshot appends)
    metrics: SchemaHistoryMetrics  # Debezium's schema-history context

    def exists(self) -> bool: ...

    def record(self, source: dict[str, Any], position: dict[str, Any], database: str | None,
               ddl: str, changes: list[SchemaChange], ansi_quotes: bool = False) -> None: ...

    def recover(self, schema: MySqlSchema,
                include: Callable[[dict[str, Any]], bool]) -> int: ...

    def last_position(self) -> dict[str, Any] | None: ...

    def clear(self) -> None: ...


def open_history(cfg: MySqlConnectorConfig, server_name: str) -> SchemaHistoryStore:
    """The configured store (nothing is read or created yet)."""
    settings = kafka_history_settings(cfg.schema_history)
    if not cfg.history_in_kafka:
        return FileSchemaHistory(Path(cfg.schema_history.schema_history_internal_file_filename))
    from headwater.connectors.mysql.kafka_history import KafkaSchemaHistory

    return KafkaSchemaHistory(settings, server_name)
