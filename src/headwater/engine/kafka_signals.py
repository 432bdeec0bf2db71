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
from typing import Any, Final

import orjson

from headwater.config.kafka import KafkaSignalSettings, TopicCreation, TopicCreationGroup
from headwater.engine.signals import Signal

# NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS (Kafka's codes)
_COORDINATOR_ERRORS: Final = frozenset({16, 15, 14})

log = logging.getLogger("headwater.engine.kafka_signals")

KAFKA_SIGNAL_TYPES: Final = frozenset({"execute-snapshot", "stop-snapshot", "pause-snapshot",
                                       "resume-snapshot", "log"})
OFFSET_FIELD: Final = "signal_kafka_offset"
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
        reopen = False
        for msg in messages:
            err = msg.error()
            if err is not None:
                log.warning("signal topic %s: %s", self.settings.topic, err)
                # A group coordinator not ready yet (a fresh cluster) fails the fetch of the
                # committed offset, and the assigned partition then never starts: assign again.
                reopen = reopen or err.code() in _COORDINATOR_ERRORS
                continue
            self.position = msg.offset() + 1
            signal = parse_message(msg.key(), msg.value(), msg.offset(), self.settings.key)
            if signal is not None:
                signals.append(signal)
        if messages and self.position is not None:
            from confluent_kafka import TopicPartition

            self._consumer.commit(offsets=[TopicPartition(self.settings.topic, 0,
                                                          self.position)], asynchronous=True)
        if reopen:
            self.close()  # the next poll assigns the partition again, at `position` if known
        return signals

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
