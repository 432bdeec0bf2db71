"""TopicAdmin waits after CreateTopics until the new topics are in the cluster metadata with a
leader for every partition, and fails naming the topics and the deadline otherwise.

The cluster here is scripted: each metadata request returns the next state of a topic, as a
KRaft cluster's brokers learn a new topic some time after the controller accepted it (the
real cluster's side is tests/kafka/test_fresh_cluster.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")

# (confluent-kafka re-exports these by plain imports, no `as` or __all__, as src/ meets too)
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    ClusterMetadata,
    PartitionMetadata,
    TopicMetadata,
)

from headwater.config.kafka import TopicCreation
from headwater.kafka.admin import TopicAdmin, TopicMetadataTimeout


def topic(name: str, leaders: list[int] | None) -> TopicMetadata:
    """A topic's metadata; `leaders` None: the broker does not know the topic yet."""
    from confluent_kafka import KafkaError

    meta = TopicMetadata()
    meta.topic = name
    if leaders is None:
        meta.error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
        return meta
    for i, leader in enumerate(leaders):
        part = PartitionMetadata()
        part.id, part.leader = i, leader
        meta.partitions[i] = part
    return meta


class ScriptedCluster:
    """An AdminClient whose metadata for each topic follows a script (the last state stays)."""

    def __init__(self, script: dict[str, list[list[int] | None]],
                 unserved: dict[str, int] | None = None) -> None:
        self.script = {name: iter(states) for name, states in script.items()}
        # ListOffsets answers NOT_LEADER this many times per topic before it serves it
        self.unserved = dict(unserved or {})
        self.offset_requests: list[str] = []
        self.last: dict[str, list[int] | None] = {}
        self.requests: list[str] = []
        self.created: list[str] = []

    def list_topics(self, name: str | None = None, timeout: float = -1) -> ClusterMetadata:
        assert name is not None, "the wait asks for the new topics only"
        self.requests.append(name)
        states: Iterator[list[int] | None] = self.script[name]
        self.last[name] = next(states, self.last.get(name))
        meta = ClusterMetadata()
        meta.topics = {name: topic(name, self.last[name])}
        return meta

    def list_offsets(self, specs: dict[Any, Any], request_timeout: float = -1
                     ) -> dict[Any, Any]:
        from concurrent.futures import Future

        from confluent_kafka import KafkaError, KafkaException

        out: dict[Any, Any] = {}
        for tp in specs:
            self.offset_requests.append(tp.topic)
            future: Future[None] = Future()
            if self.unserved.get(tp.topic, 0) > 0:
                future.set_exception(KafkaException(KafkaError(
                    KafkaError.NOT_LEADER_FOR_PARTITION)))
            else:
                future.set_result(None)
            out[tp] = future
        for name in {tp.topic for tp in specs}:
            self.unserved[name] = self.unserved.get(name, 0) - 1
        return out

    def create_topics(self, new: list[Any], request_timeout: float = -1) -> dict[str, Any]:
        from concurrent.futures import Future

        out: dict[str, Any] = {}
        for spec in new:
            self.created.append(spec.topic)
            future: Future[None] = Future()
            future.set_result(None)
            out[spec.topic] = future
        return out


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def admin(cluster: ScriptedCluster, clock: Clock) -> TopicAdmin:
    return TopicAdmin({}, TopicCreation(), sleep=clock.sleep, clock=clock, client=cluster)


def test_create_returns_once_every_topic_has_leaders_for_all_partitions() -> None:
    cluster = ScriptedCluster({
        "a": [None, None, [-1, -1, -1], [1, -1, 2], [1, 3, 2]],
        "b": [None, [2]],
    })
    clock = Clock()
    hw = admin(cluster, clock)
    hw.create({"a": (3, 3, {}), "b": (1, 3, {})})
    assert cluster.created == ["a", "b"]
    assert hw.partitions == {"a": 3, "b": 1}
    # a is asked for five times (until its last state), b twice: ready topics are not re-asked
    assert cluster.requests.count("a") == 5 and cluster.requests.count("b") == 2
    assert clock.sleeps == [0.05, 0.1, 0.2, 0.4]  # backing off, as Connect's KafkaBasedLog


def test_a_leader_that_does_not_serve_its_partition_yet_is_waited_for() -> None:
    cluster = ScriptedCluster({"a": [[1, 1]]}, unserved={"a": 2})
    clock = Clock()
    hw = admin(cluster, clock)
    hw.create({"a": (2, 1, {})})
    assert hw.partitions == {"a": 2}
    assert cluster.offset_requests == ["a"] * 6  # two partitions, asked three times
    assert len(clock.sleeps) == 2


def test_timeout_says_which_partitions_are_not_served() -> None:
    cluster = ScriptedCluster({"a": [[1]]}, unserved={"a": 1000})
    with pytest.raises(TopicMetadataTimeout,
                       match=r"a: partitions not served by their leader yet: 0 "
                             r"\(NOT_LEADER_FOR_PARTITION\)"):
        admin(cluster, Clock()).create({"a": (1, 1, {})}, timeout=2)


def test_fewer_partitions_than_created_is_not_ready_yet() -> None:
    cluster = ScriptedCluster({"a": [[1], [1, 2, 3]]})
    hw = admin(cluster, Clock())
    hw.create({"a": (3, 3, {})})
    assert hw.partitions == {"a": 3}


def test_broker_default_partition_count_accepts_any() -> None:
    cluster = ScriptedCluster({"h": [None, [1, 1]]})
    hw = admin(cluster, Clock())
    hw.create({"h": (-1, -1, {})})
    assert hw.partitions == {"h": 2}


def test_timeout_names_the_topics_the_deadline_and_what_is_missing() -> None:
    cluster = ScriptedCluster({"ok": [[1]], "late": [None], "headless": [[1, -1]]})
    clock = Clock()
    hw = admin(cluster, clock)
    with pytest.raises(TopicMetadataTimeout) as caught:
        hw.create({"ok": (1, 1, {}), "late": (1, 1, {}), "headless": (2, 1, {})}, timeout=5)
    message = str(caught.value)
    assert "topics late, headless were created" in message
    assert "within 5s of CreateTopics" in message
    assert "late: not in the metadata" in message
    assert "headless: no leader for partitions [1]" in message
    assert "ok" not in message.split("(", maxsplit=1)[0]
    assert clock.now == pytest.approx(5.0)  # waited up to the deadline, not past it
    assert max(clock.sleeps) == 1.0  # the back-off is capped
