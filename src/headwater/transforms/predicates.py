"""Kafka's predicates (`org.apache.kafka.connect.transforms.predicates.*`)."""

from __future__ import annotations

import re

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import ConnectRecord


class TopicNameMatches:
    """True when the whole topic name matches `pattern` (Java `Matcher.matches`)."""

    def __init__(self, p: PluginProps) -> None:
        pattern = p.required("pattern")
        try:
            self.pattern = re.compile(pattern)
        except re.error as exc:
            raise PluginConfigError(f"{p.key('pattern')}: invalid regex: {exc}") from None

    def test(self, record: ConnectRecord) -> bool:
        return self.pattern.fullmatch(record.topic) is not None


class HasHeaderKey:
    def __init__(self, p: PluginProps) -> None:
        self.name = p.required("name")

    def test(self, record: ConnectRecord) -> bool:
        return any(h.key == self.name for h in record.headers)


class RecordIsTombstone:
    def __init__(self, p: PluginProps) -> None:
        pass

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None
