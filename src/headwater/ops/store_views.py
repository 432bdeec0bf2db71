"""Read-only views of a connector's stores where its configuration puts them: the topics
(the local topic log, or Kafka with `headwater.topics.store=kafka`) and the stored offset (a
file, or Kafka Connect's offsets topic with `offset.storage.topic`).

Why here and not in the stores: the commands that only look (`topics list`, `offsets show`)
must never create what they look at -- `KafkaOffsetStore.load` creates its topic first, the
topic log takes its writer's lock -- and must name where they looked, so an answer such as
"no offsets" says which file or topic was empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.config.kafka import KafkaSettings
from headwater.ops.cli_errors import UserError
from headwater.state_format import STAMP_FILE, TOPIC_LOG, offsets_document, open_state_dir

_KAFKA_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class KafkaTopic:
    """One Kafka topic of a connector: partitions and the sum of their offsets' ranges."""

    name: str
    partitions: int
    start: int
    end: int

    @property
    def records(self) -> int:
        return self.end - self.start


def kafka_place(settings: KafkaSettings) -> str:
    return f"Kafka at {settings.common.get('bootstrap.servers', '?')}"


def _consumer(settings: KafkaSettings) -> Any:
    from headwater.extras import require

    require("kafka", "reading Kafka")
    from confluent_kafka import Consumer

    return Consumer(settings.consumer_config(f"headwater-cli-{settings.connector_name}"))


def _metadata(consumer: Any, settings: KafkaSettings) -> Any:
    from confluent_kafka import KafkaException

    try:
        return consumer.list_topics(timeout=_KAFKA_TIMEOUT_S)
    except KafkaException as exc:
        raise UserError(f"cannot read topics from {kafka_place(settings)} "
                        f"(bootstrap.servers): {exc.args[0] if exc.args else exc}") from None


def connector_topic(name: str, prefix: str) -> bool:
    """A topic a connector with `topic.prefix` writes: `<prefix>` (schema changes),
    `<prefix>.*` (tables, transactions) and `__debezium-heartbeat.<prefix>`."""
    return (name == prefix or name.startswith(prefix + ".")
            or name == f"__debezium-heartbeat.{prefix}")


def kafka_topics(settings: KafkaSettings, prefix: str) -> list[KafkaTopic]:
    """The connector's topics in Kafka, by name, with their offsets (nothing is created)."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(settings)
    try:
        metadata = _metadata(consumer, settings)
        out = []
        for name in sorted(metadata.topics):
            topic = metadata.topics[name]
            if not connector_topic(name, prefix) or topic.error is not None:
                continue
            start = end = 0
            for p in topic.partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(name, p),
                                                           timeout=_KAFKA_TIMEOUT_S)
                start, end = start + low, end + high
            out.append(KafkaTopic(name, len(topic.partitions), start, end))
        return out
    finally:
        consumer.close()


def kafka_offset(settings: KafkaSettings, partition: dict[str, Any]) -> dict[str, Any] | None:
    """The connector's last offset in the offsets topic (None: none stored, or no such
    topic); UserError when a stored value is not an offset."""
    from headwater.kafka.consume import partition_counts, read_until_end
    from headwater.kafka.offsets import offset_key

    assert settings.offset_topic is not None
    topic = settings.offset_topic
    key = offset_key(settings.connector_name, partition)
    consumer = _consumer(settings)
    try:
        _metadata(consumer, settings)  # reachable, or one line saying it is not
        count = partition_counts(consumer, [topic], _KAFKA_TIMEOUT_S).get(topic, 0)
        found: bytes | None = None
        for msg in read_until_end(consumer, {(topic, p): 0 for p in range(count)},
                                  timeout=_KAFKA_TIMEOUT_S):
            if msg.key() == key:
                found = msg.value()
    finally:
        consumer.close()
    if found is None:
        return None
    return offsets_document(found, f"offsets topic {topic} in {kafka_place(settings)}: the "
                            f"value for {key.decode()}", UserError)


def existing_topics_dir(root: Path, named_by: str) -> Path:
    """`root` when it is a directory of a topic log this release reads; a missing one is a
    wrong path, not an empty log, and one a newer Headwater stamped is refused
    (`StateFormatError`; an unstamped one is left so: the commands only look)."""
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise UserError(f"topics directory {root} ({named_by}) {what}")
    open_state_dir(root, TOPIC_LOG, stamp=False)
    return root


def remove_if_unused(root: Path) -> bool:
    """Remove `root` when it holds nothing but the writer's lock file and format stamp: a
    run that failed before writing must not leave a directory a pipeline would start on."""
    try:
        entries = list(root.iterdir())
    except OSError:
        return False
    if any(e.name not in (".lock", STAMP_FILE) for e in entries):
        return False
    for e in entries:
        e.unlink(missing_ok=True)
    try:
        root.rmdir()
    except OSError:
        return False
    return True
