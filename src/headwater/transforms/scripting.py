"""Debezium's scripting SMTs `io.debezium.transforms.Filter` and `ContentBasedRouter`, with
Headwater's own safe expression evaluator (transforms/expression.py) in place of JSR-223.

`language` must name Groovy or JavaScript (`jsr223.groovy`, `jsr223.graal.js`,
`jsr223.nashorn`): the expression is read as the common subset of both.  `topic.regex`
restricts the transform to matching topics; `null.handling.mode` says what happens to
tombstones: `keep` (default: passed on untouched), `drop`, or `evaluate` (the expression sees
`value` null).
"""

from __future__ import annotations

import re
from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import ConnectRecord
from headwater.transforms.expression import ExpressionError, evaluate, parse, record_env

LANGUAGES = ("jsr223.groovy", "jsr223.graal.js", "jsr223.nashorn")


class _Scripted:
    def __init__(self, p: PluginProps, expression_property: str) -> None:
        language = p.required("language")
        if language not in LANGUAGES:
            raise PluginConfigError(
                f"{p.key('language')}: '{language}' is not supported (Headwater evaluates a "
                f"safe subset of Groovy/JavaScript: {', '.join(LANGUAGES)})")
        text = p.required(expression_property)
        try:
            self.tree = parse(text)
        except ExpressionError as exc:
            raise PluginConfigError(f"{p.key(expression_property)}: {exc}") from None
        pattern = p.get_str("topic.regex")
        self.topic_regex = re.compile(pattern) if pattern else None
        self.null_mode = p.choice("null.handling.mode", ("keep", "drop", "evaluate"), "keep")

    def _applies(self, record: ConnectRecord) -> bool:
        return self.topic_regex is None or self.topic_regex.fullmatch(record.topic) is not None

    def _evaluate(self, record: ConnectRecord) -> Any:
        return evaluate(self.tree, record_env(record))


class Filter(_Scripted):
    """Keeps the records for which `condition` is true."""

    def __init__(self, p: PluginProps) -> None:
        super().__init__(p, "condition")

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if not self._applies(record):
            return record
        if record.value is None and self.null_mode != "evaluate":
            return record if self.null_mode == "keep" else None
        return record if self._evaluate(record) is True else None


class ContentBasedRouter(_Scripted):
    """Sends each record to the topic `topic.expression` returns (null: unchanged)."""

    def __init__(self, p: PluginProps) -> None:
        super().__init__(p, "topic.expression")

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if not self._applies(record):
            return record
        if record.value is None and self.null_mode != "evaluate":
            return record if self.null_mode == "keep" else None
        topic = self._evaluate(record)
        if topic is None:
            return record
        return record.replace(topic=str(topic))
