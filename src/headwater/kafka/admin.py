"""Topic creation before the first produce, by Kafka Connect's `topic.creation.*` rules.

Why create explicitly: a broker's auto-creation uses its own defaults (partition count,
cleanup policy), and the partition count decides where every key lands for the life of the
topic; Connect creates source topics with the AdminClient for the same reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from headwater.kafka.settings import TopicCreation

log = logging.getLogger("headwater.kafka.admin")

_TIMEOUT_S = 30.0


class TopicAdmin:
    """Knows which topics exist and their partition counts; creates the missing ones."""

    def __init__(self, client_config: Mapping[str, str], creation: TopicCreation) -> None:
        from confluent_kafka.admin import AdminClient

        self.client = AdminClient(dict(client_config))
        self.creation = creation
        self.partitions: dict[str, int] = {}

    def refresh(self) -> None:
        metadata = self.client.list_topics(timeout=_TIMEOUT_S)
        for name, topic in metadata.topics.items():
            if topic.error is None and topic.partitions:
                self.partitions[name] = len(topic.partitions)

    def ensure(self, topics: Iterable[str]) -> None:
        """Creates the topics not known yet (an existing one is left as it is)."""
        missing = [t for t in topics if t not in self.partitions]
        if not missing:
            return
        self.refresh()
        missing = [t for t in missing if t not in self.partitions]
        if not missing:
            return
        if not self.creation.enabled:
            raise RuntimeError(f"topics {', '.join(missing)} do not exist and "
                               "topic.creation.enable=false")
        self.create({t: self.creation.for_topic(t) for t in missing})

    def create(self, specs: Mapping[str, tuple[int, int, Mapping[str, str]]],
               timeout: float = _TIMEOUT_S) -> None:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.cimpl import NewTopic

        new = [NewTopic(name, partitions, replication, config=dict(configs))
               for name, (partitions, replication, configs) in specs.items()]
        futures: dict[str, Any] = self.client.create_topics(new, request_timeout=timeout)
        for name, future in futures.items():
            try:
                future.result(timeout)
                log.info("created topic %s (%d partitions)", name, specs[name][0])
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise RuntimeError(f"cannot create topic {name}: {exc}") from exc
        self.refresh()
        absent = [n for n in specs if n not in self.partitions]
        if absent:
            raise RuntimeError(f"topics {', '.join(absent)} were created but are not in the "
                               "cluster metadata")
