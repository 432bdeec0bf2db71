"""The Kafka pieces of one capture run, chosen from the configuration: kept apart from
headwater.capture so that the assembly there only asks "which writer, which offset store"."""

from __future__ import annotations

from typing import Any

from headwater.config.kafka import KafkaSettings, kafka_settings


def settings_of(cfg: Any) -> KafkaSettings:
    """The Kafka settings of a connector configuration (ConfigError if invalid)."""
    passthrough = getattr(cfg, "passthrough", {}) or {}
    name = getattr(cfg, "name", None) or cfg.topic_prefix
    return kafka_settings(passthrough, str(name))


def topic_writer(settings: KafkaSettings) -> Any:
    """The Kafka topic writer when `headwater.topics.store=kafka`, else None."""
    if settings.store != "kafka":
        return None
    from headwater.kafka.writer import KafkaTopicWriter

    return KafkaTopicWriter(settings)


def offset_store(settings: KafkaSettings, partition: dict[str, Any]) -> Any:
    """Connect's offsets topic when `offset.storage.topic` is set, else None."""
    if settings.offset_topic is None:
        return None
    from headwater.kafka.offsets import KafkaOffsetStore

    return KafkaOffsetStore(settings, partition)


def topic_ranges(settings: KafkaSettings, topic_prefix: str) -> Any:
    """The Kafka store's `TopicRanges` (superseding an interrupted snapshot reads its topics
    back) when `headwater.topics.store=kafka`, else None."""
    if settings.store != "kafka":
        return None
    from headwater.kafka.ranges import KafkaTopicRanges

    return KafkaTopicRanges(settings, topic_prefix)
