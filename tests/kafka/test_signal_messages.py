"""Kafka signal messages: key = topic.prefix, the types Debezium's Kafka channel takes."""

from __future__ import annotations

import pytest

from headwater.config import ConfigError
from headwater.config.kafka import kafka_signal_settings
from headwater.engine.kafka_signals import parse_message


def test_only_the_connectors_key_and_the_allowed_types() -> None:
    ok = parse_message(b"inv", b'{"type":"execute-snapshot","data":{"data-collections":'
                       b'["public.t"]}}', 5, "inv")
    assert ok is not None and ok.channel == "kafka" and ok.id == "kafka-5"
    assert ok.data == '{"data-collections":["public.t"]}'
    assert parse_message(b"other", b'{"type":"log","data":{"message":"x"}}', 1, "inv") is None
    assert parse_message(b"inv", b'{"type":"execute-snapshot","data":{"type":"blocking"}}',
                         2, "inv") is None
    assert parse_message(b"inv", b'{"type":"snapshot-window-open"}', 3, "inv") is None
    assert parse_message(b"inv", b"not json", 4, "inv") is None
    for kind in ("stop-snapshot", "pause-snapshot", "resume-snapshot", "log"):
        assert parse_message(b"inv", b'{"id":"a","type":"%s"}' % kind.encode(), 0, "inv")


def test_settings_defaults_and_errors() -> None:
    s = kafka_signal_settings({"signal.kafka.bootstrap.servers": "b:1",
                               "signal.consumer.fetch.min.bytes": "1"}, "inv")
    assert s.topic == "inv-signal" and s.consumer["group.id"] == "kafka-signal"
    assert s.consumer["fetch.min.bytes"] == "1"
    with pytest.raises(ConfigError) as err:
        kafka_signal_settings({"signal.kafka.topik": "x", "signal.consumer.nonsense": "1"}, "p")
    text = str(err.value)
    assert "signal.kafka.topik" in text and "bootstrap.servers" in text
    assert "signal.consumer.nonsense" in text
