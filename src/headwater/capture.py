"""Assembles a capture runtime from a connector configuration (what `headwater run` runs)."""

from __future__ import annotations

from pathlib import Path

from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.postgres.config import PostgresConnectorConfig
from headwater.connectors.postgres.connector import PostgresConnector
from headwater.connectors.postgres.position import PostgresSourceBlock
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.offsets import FileOffsetStore
from headwater.engine.runtime import CaptureRuntime
from headwater.engine.source import Connector
from headwater.formats.debezium_json import DebeziumJsonFormat, SourceBlock
from headwater.ops.logging import connector_name, connector_type
from headwater.topics.sink import TopicLogSink


def load_connector_config(
    path: Path, *, secrets: bool = True
) -> PostgresConnectorConfig | MySqlConnectorConfig:
    """The typed configuration of either connector, chosen by `connector.class`.

    `secrets=False` is for the read-only commands (`status`, `topics`, `offsets`): they work
    from the topics and offsets alone, so the secret properties (database password, ...) are
    left out before validation and need not be resolvable (an unset `${env:...}`, an
    unreadable `${file:...}`) where those commands run.
    """
    from headwater.config.loader import load_properties
    from headwater.config.secrets import without_secrets
    from headwater.connectors.mysql.config import MYSQL_CONFIG_DEF, validate_mysql_config
    from headwater.connectors.postgres.config import (
        POSTGRES_CONFIG_DEF,
        validate_postgres_config,
    )

    raw = load_properties(path)
    kind = str(raw.get("connector.class", "")).lower()
    mysql = "mysql" in kind or "maria" in kind
    definition = MYSQL_CONFIG_DEF if mysql else POSTGRES_CONFIG_DEF
    if not secrets:
        def is_secret(key: str) -> bool:
            name = definition.canonical_name(key)
            return name is not None and definition[name].is_secret

        raw = without_secrets(raw, is_secret)
    base_dir, source = path.parent.resolve(), str(path)
    if mysql:
        return validate_mysql_config(raw, base_dir=base_dir, source=source)[0]
    return validate_postgres_config(raw, base_dir=base_dir, source=source)[0]


def build_runtime(cfg: PostgresConnectorConfig | MySqlConnectorConfig) -> CaptureRuntime:
    metrics = CaptureMetrics(queue_capacity=cfg.max_queue_size)
    connector: Connector
    source_block: SourceBlock
    connector_name.set(cfg.topic_prefix)
    if isinstance(cfg, MySqlConnectorConfig):
        # Imported here: the MySQL side needs PyMySQL, which PostgreSQL-only users may lack.
        from headwater.connectors.mysql.connector import MySqlConnector
        from headwater.connectors.mysql.position import MySqlSourceBlock

        connector_type.set("mysql")
        connector = MySqlConnector(cfg, metrics)
        source_block = MySqlSourceBlock()
        placeholder = "__debezium_unavailable_value"
    else:
        connector_type.set("postgres")
        connector = PostgresConnector(cfg, metrics)
        source_block = PostgresSourceBlock()
        placeholder = cfg.unavailable_value_placeholder
    fmt = DebeziumJsonFormat(
        source_block,
        key_schemas=cfg.key_converter_schemas_enable,
        value_schemas=cfg.value_converter_schemas_enable,
        tombstones_on_delete=cfg.tombstones_on_delete,
        toasted_value_placeholder=placeholder,
        provide_transaction_metadata=cfg.provide_transaction_metadata,
        transaction_topic=cfg.topic_transaction,
        heartbeat_topic_prefix=cfg.topic_heartbeat_prefix,
    )
    sink = TopicLogSink(
        Path(cfg.headwater_topics_dir),
        cfg.headwater_topics_segment_bytes,
        cfg.headwater_topics_segment_ms,
    )
    offsets = FileOffsetStore(Path(cfg.offset_storage_file_filename), connector.partition)
    return CaptureRuntime(
        connector,
        fmt,
        sink,
        offsets,
        max_queue_size=cfg.max_queue_size,
        max_batch_size=cfg.max_batch_size,
        poll_interval_ms=cfg.poll_interval_ms,
        metrics=metrics,
        max_retries=cfg.errors_max_retries,
        retry_wait_ms=cfg.retriable_restart_connector_wait_ms,
    )
