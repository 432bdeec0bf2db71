"""Pieces every connector configuration shares: Debezium's include/exclude list semantics,
`database.initial.statements` splitting, the queue-size check and secret-safe printing."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from headwater.config.definition import ValidationContext
from headwater.config.secrets import REDACTED, Secret, is_sensitive_key


class NameFilter:
    """An include list admits only what it matches, else an exclude list removes what it
    matches; each regular expression must match the whole name, case-insensitively."""

    __slots__ = ("exclude", "include")

    def __init__(self, include: Iterable[str], exclude: Iterable[str]) -> None:
        self.include = tuple(re.compile(p, re.IGNORECASE) for p in include)
        self.exclude = tuple(re.compile(p, re.IGNORECASE) for p in exclude)

    def admits(self, name: str) -> bool:
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)


def split_statements(text: str) -> tuple[str, ...]:
    """Split ``database.initial.statements`` on ``;`` (``;;`` is a literal semicolon)."""
    statements: list[str] = []
    buffer: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char == ";":
            if text[position + 1 : position + 2] == ";":
                buffer.append(";")
                position += 2
                continue
            statements.append("".join(buffer).strip())
            buffer = []
        else:
            buffer.append(char)
        position += 1
    statements.append("".join(buffer).strip())
    return tuple(statement for statement in statements if statement)


def check_queue(context: ValidationContext) -> None:
    batch, queue = context.values.get("max.batch.size"), context.values.get("max.queue.size")
    if isinstance(batch, int) and isinstance(queue, int) and queue <= batch:
        context.error(
            f"{context.label('max.queue.size')} ({queue}) must be larger than "
            f"{context.label('max.batch.size')} ({batch})"
        )


def redacted_fields(config: Any) -> dict[str, object]:
    """A configuration dataclass's public fields, safe to print or log (secrets masked)."""
    out: dict[str, object] = {}
    for name in config.__dataclass_fields__:
        if name.startswith("_"):
            continue
        value = getattr(config, name)
        if isinstance(value, Secret):
            value = REDACTED
        elif name == "passthrough":
            value = {key: REDACTED if is_sensitive_key(key) else text
                     for key, text in value.items()}
        out[name] = value
    return out
