"""Topic creation before the first produce, by Kafka Connect's `topic.creation.*` rules.

Why create explicitly: a broker's auto-creation uses its own defaults (partition count,
cleanup policy), and the partition count decides where every key lands for the life of the
topic; Connect creates source topics with the AdminClient for the same reason.

Why wait after CreateTopics: the answer means the controller has accepted the topics, not that
every broker knows them.  A KRaft cluster spreads new topics to the brokers' metadata
asynchronously, so a produce or a metadata request right after the create can still find
no such topic (or partitions without a leader).  Like Kafka Connect (its `KafkaBasedLog` polls
`partitionsFor` after creating a topic, backing off, until a deadline), `create` returns only
once every new topic is in the cluster metadata with its partitions and a leader for each, and
each leader answers ListOffsets for its partition (a broker's metadata names it leader a
moment before it serves the partition); otherwise it fails naming the topics and the
deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from headwater.config.kafka import TopicCreation

log = logging.getLogger("headwater.kafka.admin")

_TIMEOUT_S = 30.0
_FIRST_WAIT_S = 0.05
_MAX_WAIT_S = 1.0


class TopicMetadataTimeout(RuntimeError):
    """Created topics did not appear in the cluster metadata, with leaders, by the deadline."""


class TopicAdmin:
    """Knows which topics exist and their partition counts; creates the missing ones."""

    def __init__(self, client_config: Mapping[str, str], creation: TopicCreation,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, client: Any = None) -> None:
        if client is None:
            from confluent_kafka.admin import AdminClient

            client = AdminClient(dict(client_config))
        self.client = client
        self.creation = creation
        self.partitions: dict[str, int] = {}
        self._sleep = sleep
        self._clock = clock

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
        self.await_metadata({name: spec[0] for name, spec in specs.items()}, timeout)

    def await_metadata(self, expected: Mapping[str, int], timeout: float = _TIMEOUT_S) -> None:
        """Polls the metadata, backing off, until each topic has its partitions (`expected`
        count; -1: the broker's default, any) each with a leader; records their counts."""
        deadline = self._clock() + timeout
        wait = _FIRST_WAIT_S
        waiting = dict(expected)
        while True:
            why = {name: problem for name, want in waiting.items()
                   if (problem := self._unready(name, want)) is not None}
            waiting = {name: waiting[name] for name in why}
            if not waiting:
                return
            left = deadline - self._clock()
            if left <= 0:
                detail = "; ".join(f"{name}: {problem}" for name, problem in why.items())
                raise TopicMetadataTimeout(
                    f"topics {', '.join(why)} were created but did not appear in the cluster "
                    f"metadata with a leader for every partition within {timeout:g}s of "
                    f"CreateTopics ({detail})")
            self._sleep(min(wait, left))
            wait = min(wait * 2, _MAX_WAIT_S)

    def _unready(self, name: str, want: int) -> str | None:
        """Why topic `name` is not usable yet, or None (then its count is recorded)."""
        from confluent_kafka import KafkaException

        try:
            topic = self.client.list_topics(name, timeout=_MAX_WAIT_S * 5).topics.get(name)
        except KafkaException as exc:
            return f"metadata request failed: {exc}"
        if topic is None or topic.error is not None:
            return f"not in the metadata ({topic.error if topic is not None else 'absent'})"
        if not topic.partitions or (want > 0 and len(topic.partitions) < want):
            return f"{len(topic.partitions)} of {want} partitions"
        leaderless = sorted(p for p, part in topic.partitions.items()
                            if part.leader < 0 or part.error is not None)
        if leaderless:
            return f"no leader for partitions {leaderless}"
        unserved = self._unserved(name, sorted(topic.partitions))
        if unserved:
            return unserved
        self.partitions[name] = len(topic.partitions)
        return None

    def _unserved(self, name: str, partitions: list[int]) -> str | None:
        """Whether every partition's leader answers ListOffsets for it.  A broker's metadata
        can name it leader before it serves the partition (Apache Kafka 4.4 answers
        NOT_LEADER_OR_FOLLOWER meanwhile); a reader asking for watermarks then fails."""
        from confluent_kafka import KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

        latest: Any = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        futures = self.client.list_offsets(
            {TopicPartition(name, p): latest for p in partitions},
            request_timeout=_MAX_WAIT_S * 5)
        errors: dict[int, str] = {}
        for tp, future in futures.items():
            try:
                future.result()
            except KafkaException as exc:
                errors[tp.partition] = exc.args[0].name()
        if errors:
            return ("partitions not served by their leader yet: "
                    + ", ".join(f"{p} ({err})" for p, err in sorted(errors.items())))
        return None
