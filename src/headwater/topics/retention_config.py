"""The local topic log's cleanup configuration: retention and compaction, default and per topic.

Why these names: the values are Kafka's per-topic configs under `headwater.topics.`
(`cleanup.policy`, `retention.ms`, `retention.bytes`, `min.compaction.lag.ms`,
`max.compaction.lag.ms`, `delete.retention.ms`, `min.cleanable.dirty.ratio`; -1 = unlimited),
and the per-topic groups work like Kafka Connect's `topic.creation.<group>.*` (KIP-158), which
the Kafka store already reads: the first listed group whose `include` regexes match the whole
topic name (and `exclude` do not) wins, and its values override the defaults.

    headwater.topics.retention.ms=604800000
    headwater.topics.retention.ignore.consumers=false
    headwater.topics.retention.groups=big,state
    headwater.topics.retention.big.include=inv\\.public\\.events
    headwater.topics.retention.big.retention.bytes=1073741824
    headwater.topics.retention.state.include=inv\\.public\\.customers
    headwater.topics.retention.state.cleanup.policy=compact
    headwater.topics.retention.state.delete.retention.ms=3600000

A value that could not take effect is an error, as an unknown key is: retention keys where the
policy has no `delete`, compaction keys where it has no `compact`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from headwater.config.loader import ConfigError
from headwater.topics.compaction import MAX_LONG, CompactionPolicy
from headwater.topics.retention import RetentionPolicy

TOPICS: Final = "headwater.topics."
PREFIX: Final = "headwater.topics.retention."
CHECK_INTERVAL: Final = PREFIX + "check.interval.ms"
DEFAULT_CHECK_INTERVAL_MS: Final = 10_000
_RETENTION: Final = ("retention.ms", "retention.bytes")
_COMPACTION: Final = ("min.compaction.lag.ms", "max.compaction.lag.ms", "delete.retention.ms",
                      "min.cleanable.dirty.ratio")
_CONFIGS: Final = ("cleanup.policy", *_RETENTION, *_COMPACTION)
_MINIMUM: Final = {"retention.ms": -1, "retention.bytes": -1, "min.compaction.lag.ms": 0,
                   "max.compaction.lag.ms": 1, "delete.retention.ms": 0}
# The defaults are Kafka's names under `headwater.topics.`; those outside `headwater.topics.
# retention.` (which the configuration loader passes through by prefix) are listed here.
TOP_LEVEL_KEYS: Final = tuple(TOPICS + c for c in ("cleanup.policy", *_COMPACTION))
_RESERVED: Final = frozenset({"ms", "bytes", "ignore", "groups", "check"})
# Every key of the defaults; a listed group adds `<PREFIX><group>.<config>`, include, exclude.
DEFAULT_KEYS: Final = frozenset({PREFIX + "ignore.consumers", PREFIX + "groups", CHECK_INTERVAL,
                                 *(TOPICS + c for c in _CONFIGS)})


@dataclass(frozen=True, slots=True)
class _Settings:
    """The values set at one level (the defaults, or a group), None where not set."""

    cleanup: frozenset[str] | None = None
    longs: Mapping[str, int] = field(default_factory=dict)  # by Kafka name
    ratio: float | None = None

    def names(self) -> list[str]:
        return ([] if self.cleanup is None else ["cleanup.policy"]) + list(self.longs) + (
            [] if self.ratio is None else ["min.cleanable.dirty.ratio"])


@dataclass(frozen=True, slots=True)
class _Group:
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    policy: RetentionPolicy


@dataclass(frozen=True, slots=True)
class RetentionRules:
    """The policy of each topic (its group's values over the defaults), and how often the
    writer applies them (`headwater.topics.retention.check.interval.ms`, after Kafka's broker
    setting `log.retention.check.interval.ms`)."""

    default: RetentionPolicy = field(default_factory=RetentionPolicy)
    groups: tuple[_Group, ...] = ()
    check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS

    @property
    def active(self) -> bool:
        return self.default.active or any(g.policy.active for g in self.groups)

    def for_topic(self, topic: str) -> RetentionPolicy:
        for group in self.groups:
            if any(p.fullmatch(topic) for p in group.include) and not any(
                    p.fullmatch(topic) for p in group.exclude):
                return group.policy
        return self.default


def local_retention(passthrough: Mapping[str, str]) -> RetentionRules:
    """The rules for the local topic log.  Called only when the events go to the local log:
    with the Kafka store or the files destination the keys would do nothing, so they are
    refused there (`refuse_elsewhere`)."""
    return retention_rules(passthrough)


def _ours(key: str) -> bool:
    return key.startswith(PREFIX) or key.startswith(TOP_LEVEL_KEYS)


def refuse_elsewhere(passthrough: Mapping[str, str], where: str) -> None:
    keys = sorted(k for k in passthrough if _ours(k))
    if keys:
        raise ConfigError([f"{', '.join(keys)}: retention and compaction of the local topic "
                           f"log, but the events go to {where}"])


def _long(props: Mapping[str, str], key: str, minimum: int, errors: list[str]) -> int | None:
    if key not in props:
        return None
    try:
        value = int(props[key])
    except ValueError:
        value = minimum - 1
    if not minimum <= value <= MAX_LONG:
        what = "-1 (unlimited) or a number >= 0" if minimum == -1 else f"a number >= {minimum}"
        errors.append(f"{key}: expected {what}, got {props[key]!r}")
        return None
    return value


def _settings(props: Mapping[str, str], prefix: str, errors: list[str]) -> _Settings:
    """The values set under `prefix` (Kafka's names after it), each checked."""
    cleanup = None
    if prefix + "cleanup.policy" in props:
        text = props[prefix + "cleanup.policy"]
        cleanup = frozenset(p.strip().lower() for p in text.split(",") if p.strip())
        if not cleanup or not cleanup <= {"delete", "compact"}:
            errors.append(f"{prefix}cleanup.policy: expected delete, compact or "
                          f"compact,delete, got {text!r}")
            cleanup = None
    longs = {name: value for name, least in _MINIMUM.items()
             if (value := _long(props, prefix + name, least, errors)) is not None}
    ratio = None
    key = prefix + "min.cleanable.dirty.ratio"
    if key in props:
        try:
            ratio = float(props[key])
        except ValueError:
            ratio = -1.0
        if not 0.0 <= ratio <= 1.0:
            errors.append(f"{key}: expected a number from 0 to 1, got {props[key]!r}")
            ratio = None
    return _Settings(cleanup, longs, ratio)


def _compaction(values: _Settings, base: CompactionPolicy) -> CompactionPolicy:
    longs = values.longs
    return CompactionPolicy(
        longs.get("min.compaction.lag.ms", base.min_compaction_lag_ms),
        longs.get("max.compaction.lag.ms", base.max_compaction_lag_ms),
        longs.get("delete.retention.ms", base.delete_retention_ms),
        base.min_cleanable_dirty_ratio if values.ratio is None else values.ratio)


def _policy(values: _Settings, base: RetentionPolicy, base_compaction: CompactionPolicy,
            prefix: str, errors: list[str]) -> RetentionPolicy:
    """`base` with `values` over it (`base_compaction`: the compaction values under it, also
    where it does not compact); a value set at this level that cannot take effect in the
    resulting policy is an error."""
    kinds = values.cleanup
    if kinds is None:
        kinds = frozenset({"delete"} if base.delete else set()) | frozenset(
            {"compact"} if base.compaction is not None else set())
    compaction = _compaction(values, base_compaction)
    longs = values.longs
    if compaction.min_compaction_lag_ms > compaction.max_compaction_lag_ms:
        errors.append(f"{prefix}min.compaction.lag.ms ({compaction.min_compaction_lag_ms}) "
                      f"is larger than max.compaction.lag.ms "
                      f"({compaction.max_compaction_lag_ms})")
    policy = RetentionPolicy(
        longs.get("retention.ms", base.retention_ms),
        longs.get("retention.bytes", base.retention_bytes),
        base.ignore_consumers, "delete" in kinds,
        compaction if "compact" in kinds else None)
    if prefix != TOPICS:  # (the defaults are checked against every policy: `_unused`)
        errors += _unused(values, [policy], prefix, kinds)
    return policy


def _unused(values: _Settings, policies: list[RetentionPolicy], prefix: str,
            kinds: frozenset[str]) -> list[str]:
    """The values set that no policy in `policies` uses."""
    idle = [n for n in values.names()
            if (n in _RETENTION and not any(p.delete for p in policies))
            or (n in _COMPACTION and not any(p.compaction for p in policies))]
    if not idle:
        return []
    return [f"{', '.join(prefix + n for n in idle)}: no effect with cleanup.policy="
            f"{','.join(sorted(kinds)) or 'none'}"]


def retention_rules(passthrough: Mapping[str, str]) -> RetentionRules:
    """The rules in a configuration's pass-through keys (ConfigError listing every problem)."""
    props = {k: v for k, v in passthrough.items() if _ours(k)}
    errors: list[str] = []
    names = [g.strip() for g in props.get(PREFIX + "groups", "").split(",") if g.strip()]
    known = set(DEFAULT_KEYS)
    for name in names:
        if name in _RESERVED:
            errors.append(f"{PREFIX}groups: {name!r} is a reserved name")
        known |= {f"{PREFIX}{name}.{c}" for c in (*_CONFIGS, "include", "exclude")}
    errors += [f"{k}: unknown (see docs/topic-log.md, Retention and Compaction)"
               for k in props if k not in known]
    ignore = props.get(PREFIX + "ignore.consumers", "false").strip().lower()
    if ignore not in ("true", "false"):
        errors.append(f"{PREFIX}ignore.consumers: expected true or false, got {ignore!r}")
    interval = _long(props, CHECK_INTERVAL, 1, errors) or DEFAULT_CHECK_INTERVAL_MS
    top = _settings(props, TOPICS, errors)
    default = _policy(top, RetentionPolicy(ignore_consumers=ignore == "true"),
                      CompactionPolicy(), TOPICS, errors)
    # (a group that compacts inherits these also when the default policy does not compact)
    default_compaction = _compaction(top, CompactionPolicy())
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
        policy = _policy(_settings(props, base, errors), default, default_compaction, base,
                         errors)
        groups.append(_Group(patterns["include"], patterns["exclude"], policy))
    policies = [default, *(g.policy for g in groups)]
    errors += _unused(top, policies, TOPICS, frozenset().union(*(
        ({"delete"} if p.delete else set()) | ({"compact"} if p.compaction else set())
        for p in policies)))
    if errors:
        raise ConfigError(errors)
    return RetentionRules(default, tuple(groups), interval)
