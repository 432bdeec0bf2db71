"""Assembles a capture runtime from a connector configuration (what `headwater run` runs).

Generic over connectors: `connector.class` picks a registration (headwater.connectors.registry),
which loads the typed configuration and builds the connector and its source block.
"""

from __future__ import annotations

from pathlib import Path

from headwater.config.loader import ConfigError, load_properties
from headwater.connectors.registry import CaptureConfig, RegistryError, registration_for_class
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.offsets import FileOffsetStore
from headwater.engine.runtime import CaptureRuntime
from headwater.engine.supersede import SnapshotRestarts
from headwater.engine.topic_naming import TopicNaming, TopicNamingError
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.kafka import assembly as kafka_assembly
from headwater.ops.logging import connector_name
from headwater.topics.sink import TopicLogSink


def load_connector_config(path: Path, *, secrets: bool = True) -> CaptureConfig:
    """The typed configuration of the connector `connector.class` names (ConfigError if that
    property is missing or names no registered connector).

    `secrets=False` is for the read-only commands (`status`, `topics`, `offsets`): they work
    from the topics and offsets alone, so the secrets need not be resolvable where they run.
    """
    value = load_properties(path).get("connector.class")
    try:
        registration = registration_for_class(None if value is None else str(value))
    except RegistryError as exc:
        raise ConfigError([str(exc)], source=str(path)) from None
    if not secrets and registration.load_config_without_secrets is not None:
        return registration.load_config_without_secrets(path)
    return registration.load_config(path)


def topic_naming(cfg: CaptureConfig) -> TopicNaming:
    """The connector's topic names from its `topic.*` properties (ConfigError if invalid)."""
    try:
        strategy = cfg.topic_naming_strategy or registration_for_class(
            cfg.connector_class).default_topic_naming_strategy
        return TopicNaming(cfg.topic_prefix, strategy, cfg.topic_delimiter,
                           cfg.topic_transaction, cfg.topic_heartbeat_prefix)
    except (RegistryError, TopicNamingError) as exc:
        raise ConfigError([str(exc)]) from None


def build_runtime(cfg: CaptureConfig) -> CaptureRuntime:
    registration = registration_for_class(cfg.connector_class)
    metrics = CaptureMetrics(queue_capacity=cfg.max_queue_size)
    connector_name.set(cfg.topic_prefix)
    naming = topic_naming(cfg)
    parts = registration.build(cfg, metrics, naming)
    fmt = DebeziumJsonFormat(
        parts.source_block,
        key_schemas=cfg.key_converter_schemas_enable,
        value_schemas=cfg.value_converter_schemas_enable,
        tombstones_on_delete=cfg.tombstones_on_delete,
        toasted_value_placeholder=parts.unavailable_value_placeholder,
        provide_transaction_metadata=cfg.provide_transaction_metadata,
        transaction_topic=cfg.topic_transaction,
        heartbeat_topic_prefix=cfg.topic_heartbeat_prefix,
        topic_naming=naming,
        context_headers=cfg.extended_headers_enabled,
    )
    # Kafka (headwater.topics.store=kafka, offset.storage.topic) or the local defaults.
    kafka = kafka_assembly.settings_of(cfg)
    sink = kafka_assembly.topic_writer(kafka) or TopicLogSink(
        Path(cfg.headwater_topics_dir),
        cfg.headwater_topics_segment_bytes,
        cfg.headwater_topics_segment_ms,
    )
    connector = parts.connector
    offsets = kafka_assembly.offset_store(kafka, connector.partition) or FileOffsetStore(
        Path(cfg.offset_storage_file_filename), connector.partition)
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
        # Superseding a restarted snapshot reads the local log (not done over Kafka).
        restarts=None if kafka.store == "kafka" else SnapshotRestarts(
            Path(cfg.headwater_topics_dir), tombstones_on_delete=cfg.tombstones_on_delete,
            batch_size=cfg.max_batch_size),
    )
