"""`headwater.topics.retention.*`: the local topic log's retention, default and per topic.

Why these names: the values are Kafka's per-topic configs (`retention.ms`, `retention.bytes`,
-1 = unlimited), and the per-topic groups work like Kafka Connect's `topic.creation.<group>.*`
(KIP-158), which the Kafka store already reads: the first listed group whose `include` regexes
match the whole topic name (and `exclude` do not) wins.

    headwater.topics.retention.ms=604800000
    headwater.topics.retention.bytes=-1
    headwater.topics.retention.ignore.consumers=false
    headwater.topics.retention.groups=big
    headwater.topics.retention.big.include=inv\\.public\\.events
    headwater.topics.retention.big.retention.bytes=1073741824
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from headwater.config.loader import ConfigError
from headwater.topics.retention import RetentionPolicy

PREFIX: Final = "headwater.topics.retention."
_CONFIGS: Final = ("retention.ms", "retention.bytes")
_RESERVED: Final = frozenset({"ms", "bytes", "ignore", "groups"})


@dataclass(frozen=True, slots=True)
class _Group:
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    values: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class RetentionRules:
    """The policy of each topic: its group's values over the defaults."""

    default: RetentionPolicy = field(default_factory=RetentionPolicy)
    groups: tuple[_Group, ...] = ()

    @property
    def active(self) -> bool:
        return self.default.active or any(g.values for g in self.groups)

    def for_topic(self, topic: str) -> RetentionPolicy:
        for group in self.groups:
            if any(p.fullmatch(topic) for p in group.include) and not any(
                    p.fullmatch(topic) for p in group.exclude):
                return RetentionPolicy(
                    group.values.get("retention.ms", self.default.retention_ms),
                    group.values.get("retention.bytes", self.default.retention_bytes),
                    self.default.ignore_consumers)
        return self.default


def local_retention(passthrough: Mapping[str, str]) -> RetentionRules:
    """The rules for the local topic log.  Called only when the events go to the local log:
    with the Kafka store or the files destination the keys would do nothing, so they are
    refused there (`refuse_elsewhere`)."""
    return retention_rules(passthrough)


def refuse_elsewhere(passthrough: Mapping[str, str], where: str) -> None:
    keys = sorted(k for k in passthrough if k.startswith(PREFIX))
    if keys:
        raise ConfigError([f"{', '.join(keys)}: retention of the local topic log, but the "
                           f"events go to {where}"])


def _number(props: Mapping[str, str], key: str, errors: list[str]) -> int | None:
    if key not in props:
        return None
    try:
        value = int(props[key])
    except ValueError:
        value = -2
    if value < -1:
        errors.append(f"{key}: expected -1 (unlimited) or a number >= 0, got {props[key]!r}")
        return None
    return value


def retention_rules(passthrough: Mapping[str, str]) -> RetentionRules:
    """The rules in a configuration's pass-through keys (ConfigError listing every problem)."""
    props = {k: v for k, v in passthrough.items() if k.startswith(PREFIX)}
    errors: list[str] = []
    names = [g.strip() for g in props.get(PREFIX + "groups", "").split(",") if g.strip()]
    known = {PREFIX + "ms", PREFIX + "bytes", PREFIX + "ignore.consumers", PREFIX + "groups"}
    for name in names:
        if name in _RESERVED:
            errors.append(f"{PREFIX}groups: {name!r} is a reserved name")
        known |= {f"{PREFIX}{name}.{c}" for c in (*_CONFIGS, "include", "exclude")}
    errors += [f"{k}: unknown (see docs/topic-log.md, Retention)" for k in props
               if k not in known]
    ignore = props.get(PREFIX + "ignore.consumers", "false").strip().lower()
    if ignore not in ("true", "false"):
        errors.append(f"{PREFIX}ignore.consumers: expected true or false, got {ignore!r}")
    ms, size = _number(props, PREFIX + "ms", errors), _number(props, PREFIX + "bytes", errors)
    default = RetentionPolicy(-1 if ms is None else ms, -1 if size is None else size,
                              ignore == "true")
    groups = []
    for name in names:
        base = f"{PREFIX}{name}."
        patterns: dict[str, tuple[re.Pattern[str], ...]] = {}
        for part in ("include", "exclude"):
            try:
                patterns[part] = tuple(re.compile(p.strip()) for p in
                                       props.get(base + part, "").split(",") if p.strip())
            except re.error as exc:
                errors.append(f"{base}{part}: not a regular expression ({exc})")
                patterns[part] = ()
        if not patterns["include"]:
            errors.append(f"{base}include: required (regexes of the group's topics)")
        values = {c: v for c in _CONFIGS
                  if (v := _number(props, base + c, errors)) is not None}
        groups.append(_Group(patterns["include"], patterns["exclude"], values))
    if errors:
        raise ConfigError(errors)
    return RetentionRules(default, tuple(groups))
