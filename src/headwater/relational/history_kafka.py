"""The schema history in a Kafka topic (Debezium's KafkaSchemaHistory): the topic itself
(`KafkaHistoryTopic`, shared by MySQL/MariaDB, SQL Server and Db2; MySQL's DDL replay on it is
`headwater.connectors.mysql.kafka_history`).

Why a topic: a Debezium deployment keeps its history there (`schema.history.internal=
io.debezium.storage.kafka.history.KafkaSchemaHistory`), so the same configuration, and the same
topic, work with Headwater.  The layout is Debezium's: one partition, infinite retention
(`cleanup.policy=delete`, `retention.ms` = Long.MAX_VALUE, `retention.bytes=-1`), key-less
records whose value is the history record JSON the file history writes (one record per DDL
statement).  Recovery reads the partition from offset 0 to its end.

A new snapshot does not clear the topic (Kafka has no atomic truncate, and Debezium never
clears it either: it appends).  Recovery therefore starts at the first record of the *last*
snapshot: a record whose position carries `"snapshot": true` and whose predecessor is not a
record of the same snapshot (a streamed DDL, or a snapshot record at another position).  The
DDL before it describes an older run and is skipped; see docs/kafka.md.  (SQL Server and Db2
find their last snapshot per source partition the same way: changetables/history.py.)

Durability: `record` returns once the brokers acknowledged the record (acks=all, idempotent
producer); the capture acknowledges a binlog position only after that, so the history is never
behind the offsets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from headwater.config.kafka import TopicCreation, client_config
from headwater.config.loader import ConfigError
from headwater.engine.metrics import SchemaHistoryMetrics
from headwater.kafka.consume import KafkaReadError, read_until_end
from headwater.relational.history_config import SchemaHistoryConfig
from headwater.relational.history_file import SchemaHistoryError, parse_record

log = logging.getLogger("headwater.relational.history_kafka")

# Debezium's topic settings for the history (KafkaSchemaHistory.initializeStorage).
TOPIC_CONFIGS: Final = {"cleanup.policy": "delete", "retention.ms": str((1 << 63) - 1),
                        "retention.bytes": "-1"}


@dataclass(frozen=True, slots=True)
class KafkaHistorySettings:
    """`schema.history.internal.kafka.*` and the history's own client overrides."""

    topic: str
    bootstrap_servers: str
    recovery_poll_interval_ms: int = 100
    recovery_attempts: int = 100
    query_timeout_ms: int = 3000
    create_timeout_ms: int = 30000
    producer: Mapping[str, str] = field(default_factory=dict)  # librdkafka names
    consumer: Mapping[str, str] = field(default_factory=dict)

    @property
    def recovery_timeout_s(self) -> float:
        """Debezium gives up after `attempts` polls in a row that return nothing."""
        return max(1.0, self.recovery_attempts * self.recovery_poll_interval_ms / 1000.0)


_PRODUCER = "schema.history.internal.producer."
_CONSUMER = "schema.history.internal.consumer."
_OLD = {"database.history.producer.": _PRODUCER, "database.history.consumer.": _CONSUMER}


def kafka_history_settings(cfg: SchemaHistoryConfig) -> KafkaHistorySettings:
    """The KafkaHistorySettings of a history block (MySQL's, the change-table connectors'); the
    `producer.*`/`consumer.*` overrides are translated to librdkafka names (ConfigError for one
    that has no equivalent)."""
    passthrough = dict(cfg.passthrough)
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


def last_snapshot_start(records: list[dict[str, Any]]) -> int:
    """Index of the first record of the last snapshot in the history (0 if none)."""
    start = 0
    previous: dict[str, Any] | None = None
    for i, record in enumerate(records):
        position = record["position"]
        if position.get("snapshot") and not (
                previous is not None and previous.get("snapshot")
                and _where(previous) == _where(position)):
            start = i
        previous = position
    return start


def _where(position: dict[str, Any]) -> tuple[Any, ...]:
    return (position.get("file"), position.get("pos"), position.get("gtid"))


class KafkaHistoryTopic:
    """The history topic: appended to record by record, read whole to recover.  What a record
    means is the connector's: MySQL replays DDL (`KafkaSchemaHistory`), SQL Server and Db2
    their `tableChanges` (relational.changetables.history)."""

    clears = False  # `clear` cannot empty a topic: a new snapshot appends (module docstring)

    def __init__(self, settings: KafkaHistorySettings, server_name: str) -> None:
        self.settings = settings
        self.topic = settings.topic
        self.server_name = server_name
        self._producer: Any = None
        self._ensured = False
        # what the topic holds, once read: (label, record)
        self._records: list[tuple[str, dict[str, Any]]] | None = None
        # Debezium's schema-history metrics context, read by the connector's metrics.
        self.metrics = SchemaHistoryMetrics()

    def __str__(self) -> str:
        return f"schema history topic {self.topic}"

    def _common(self) -> dict[str, str]:
        return {"bootstrap.servers": self.settings.bootstrap_servers}

    def _partitions(self) -> int | None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({**self._common(), **self.settings.consumer})
        metadata = admin.list_topics(timeout=self.settings.query_timeout_ms / 1000.0)
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None or not topic.partitions:
            return None
        return len(topic.partitions)

    def _ensure_topic(self) -> None:
        """Creates the topic as Debezium does; an existing one must have one partition (the
        history's order is the partition's order)."""
        if self._ensured:
            return
        count = self._partitions()
        if count is None:
            from headwater.kafka.admin import TopicAdmin

            admin = TopicAdmin({**self._common(), **self.settings.producer}, TopicCreation())
            admin.create({self.topic: (1, -1, TOPIC_CONFIGS)},
                         timeout=self.settings.create_timeout_ms / 1000.0)
            log.info("created the schema history topic %s", self.topic)
        elif count != 1:
            raise SchemaHistoryError(
                f"{self}: has {count} partitions; a schema history topic must have exactly one "
                "(its order is the order of the DDL)")
        self._ensured = True

    def records(self) -> list[tuple[str, dict[str, Any]]]:
        """Every record of the topic, in order, each with its label ("offset N")."""
        if self._records is not None:
            return self._records
        from confluent_kafka import Consumer

        self._ensure_topic()
        consumer = Consumer({
            **self._common(), **self.settings.consumer,
            "group.id": f"{self.server_name}-schemahistory", "enable.auto.commit": "false",
            "enable.partition.eof": "true", "auto.offset.reset": "earliest"})
        records: list[tuple[str, dict[str, Any]]] = []
        try:
            for msg in read_until_end(consumer, {(self.topic, 0): 0},
                                      timeout=self.settings.recovery_timeout_s):
                value = msg.value()
                if value is None:
                    continue
                label = f"offset {msg.offset()}"
                records.append((label, parse_record(value, f"{self}: {label}")))
        except KafkaReadError as exc:
            raise SchemaHistoryError(
                f"{self}: could not be read to its end ({exc}); consider raising "
                "schema.history.internal.kafka.recovery.poll.interval.ms") from exc
        finally:
            consumer.close()
        self._records = records
        return records

    def exists(self) -> bool:
        return bool(self.records())

    def append(self, value: bytes, change: str) -> None:
        """Stores one record; returns once the brokers acknowledged it."""
        from confluent_kafka import Producer

        self._ensure_topic()
        if self._producer is None:
            self._producer = Producer({**self._common(), **self.settings.producer,
                                       "enable.idempotence": "true", "acks": "all"})
        errors: list[Any] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        self._producer.produce(self.topic, value, None, partition=0, on_delivery=delivered)
        while self._producer.flush(1.0) > 0 and not errors:
            pass
        if errors:
            raise SchemaHistoryError(f"{self}: a record was not stored: {errors[0]}")
        if self._records is not None:
            self._records.append((f"offset +{len(self._records)}",
                                  parse_record(value, str(self))))
        self.metrics.applied(change)

    def recovering(self) -> None:
        """Recovery starts (the metrics' status)."""
        self.metrics.status = "RECOVERING"
        self.metrics.recovery_start_ms = int(time.time() * 1000)

    def clear(self) -> None:
        """A new snapshot starts: nothing is removed (see the module docstring)."""
        log.info("%s: a new snapshot appends its history; recovery starts at the last "
                 "snapshot's first record", self)

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None
