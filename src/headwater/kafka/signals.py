"""The Kafka signal channel (`signal.enabled.channels` with `kafka`), Debezium's
KafkaSignalChannel: signals are messages on `signal.kafka.topic` (default
`<topic.prefix>-signal`), partition 0, whose key is the connector's `topic.prefix` (other keys
are ignored, as Debezium does) and whose value is `{"type": ..., "data": {...}}`.

Why the position lives in the connector offset: a signal must run once.  The next offset to
read travels with the events (`signal_kafka_offset`, like the file channel's byte position), so
a signal whose effects were not yet stored is read again after a crash and one whose effects
were is not.  The offset is also committed to the consumer group (`signal.kafka.groupId`) for
the tools that watch groups, and is where a connector without a stored position starts.

Signal types: the ones Debezium's Kafka channel is documented for, incremental
`execute-snapshot`, `stop-snapshot`, `pause-snapshot`, `resume-snapshot` and `log`; anything
else (a blocking snapshot, the connector's own watermarks) is logged and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from headwater.config.loader import ConfigError
from headwater.engine.signals import Signal

log = logging.getLogger("headwater.kafka.signals")

KAFKA_SIGNAL_TYPES: Final = frozenset({"execute-snapshot", "stop-snapshot", "pause-snapshot",
                                       "resume-snapshot", "log"})
OFFSET_FIELD: Final = "signal_kafka_offset"
_OWN: Final = ("signal.kafka.topic", "signal.kafka.bootstrap.servers", "signal.kafka.groupId",
               "signal.kafka.poll.timeout.ms")


@dataclass(frozen=True, slots=True)
class KafkaSignalSettings:
    topic: str
    key: str  # topic.prefix: only messages with this key are signals for this connector
    consumer: Mapping[str, str] = field(default_factory=dict)  # librdkafka config
    poll_timeout_ms: int = 0


def kafka_signal_settings(passthrough: Mapping[str, str], topic_prefix: str
                          ) -> KafkaSignalSettings:
    """`signal.kafka.*` and `signal.consumer.*` (ConfigError listing every problem).  The
    cluster is `signal.kafka.bootstrap.servers`, else the connector's `bootstrap.servers`."""
    from headwater.kafka.settings import client_config

    errors: list[str] = []
    for key in passthrough:
        if key.startswith("signal.kafka.") and key not in _OWN:
            errors.append(f"{key}: unknown (the Kafka signal channel has {', '.join(_OWN)})")
    bootstrap = (passthrough.get("signal.kafka.bootstrap.servers")
                 or passthrough.get("bootstrap.servers") or "").strip()
    if not bootstrap:
        errors.append("signal.kafka.bootstrap.servers: required with the kafka signal channel")
    timeout = passthrough.get("signal.kafka.poll.timeout.ms", "0")
    if not timeout.isdigit():
        errors.append(f"signal.kafka.poll.timeout.ms: expected an integer >= 0, got {timeout!r}")
    overrides = client_config({k[16:]: v for k, v in passthrough.items()
                               if k.startswith("signal.consumer.")}, errors, "signal.consumer.")
    if errors:
        raise ConfigError(errors)
    consumer = {"bootstrap.servers": bootstrap,
                "group.id": passthrough.get("signal.kafka.groupId", "kafka-signal"),
                **overrides, "enable.auto.commit": "false", "enable.partition.eof": "false",
                "auto.offset.reset": "earliest"}
    return KafkaSignalSettings(passthrough.get("signal.kafka.topic") or f"{topic_prefix}-signal",
                               topic_prefix, consumer, int(timeout))


def parse_message(key: bytes | None, value: bytes | None, offset: int, expected_key: str
                  ) -> Signal | None:
    """The signal a message carries for this connector, or None (logged) if it carries none."""
    if key is None or key.decode("utf-8", "replace") != expected_key:
        log.debug("signal message at offset %d: key %r is not the connector's %r; ignored",
                  offset, key, expected_key)
        return None
    if not value:
        return None
    try:
        doc = orjson.loads(value)
        if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
            raise ValueError("not a JSON object with a type")
    except (orjson.JSONDecodeError, ValueError) as exc:
        log.warning("signal message at offset %d ignored (%s): %r", offset, exc, value[:200])
        return None
    kind = doc["type"].strip().lower()
    data = doc.get("data")
    if kind not in KAFKA_SIGNAL_TYPES or (
            kind == "execute-snapshot" and isinstance(data, dict)
            and str(data.get("type") or "incremental").lower() != "incremental"):
        log.warning("signal message at offset %d: %s%s is not accepted on the Kafka channel "
                    "(incremental execute-snapshot, stop-snapshot, pause-snapshot, "
                    "resume-snapshot and log are); ignored", offset, kind,
                    f" ({data.get('type')})" if isinstance(data, dict) and data.get("type")
                    else "")
        return None
    text = data if isinstance(data, str) or data is None else orjson.dumps(data).decode()
    return Signal(str(doc.get("id") or f"kafka-{offset}"), kind, text, "kafka")


class KafkaSignalChannel:
    """Reads partition 0 of the signal topic from `position` (None: the group's committed
    offset, else the earliest)."""

    def __init__(self, settings: KafkaSignalSettings, position: int | None) -> None:
        self.settings = settings
        self.position = position
        self._consumer: Any = None

    def _open(self) -> Any:
        from confluent_kafka import OFFSET_STORED, Consumer, TopicPartition

        from headwater.kafka.admin import TopicAdmin
        from headwater.kafka.settings import TopicCreation, TopicCreationGroup

        conf = dict(self.settings.consumer)
        admin_conf = {k: v for k, v in conf.items() if k not in (
            "group.id", "enable.auto.commit", "enable.partition.eof", "auto.offset.reset")}
        one = TopicCreationGroup("signal", (), (), 1, -1, {})
        TopicAdmin(admin_conf, TopicCreation(True, (), one)).ensure([self.settings.topic])
        consumer = Consumer(conf)
        start = OFFSET_STORED if self.position is None else self.position
        consumer.assign([TopicPartition(self.settings.topic, 0, start)])
        log.info("reading signals from %s[0] at %s", self.settings.topic,
                 "the group's committed offset" if self.position is None else self.position)
        return consumer

    def poll(self) -> list[Signal]:
        if self._consumer is None:
            self._consumer = self._open()
        messages = self._consumer.consume(200, self.settings.poll_timeout_ms / 1000.0)
        signals: list[Signal] = []
        for msg in messages:
            err = msg.error()
            if err is not None:
                log.warning("signal topic %s: %s", self.settings.topic, err)
                continue
            self.position = msg.offset() + 1
            signal = parse_message(msg.key(), msg.value(), msg.offset(), self.settings.key)
            if signal is not None:
                signals.append(signal)
        if messages and self.position is not None:
            from confluent_kafka import TopicPartition

            self._consumer.commit(offsets=[TopicPartition(self.settings.topic, 0,
                                                          self.position)], asynchronous=True)
        return signals

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
