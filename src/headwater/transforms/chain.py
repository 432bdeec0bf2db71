"""Builds the transform chain from Kafka Connect's `transforms` / `predicates` properties.

Kafka Connect's layout: `transforms=a,b` lists the transforms in order; `transforms.a.type` is
the class, `transforms.a.predicate` / `transforms.a.negate` make it conditional, and every other
`transforms.a.*` property belongs to the transform.  `predicates=p` and `predicates.p.type`
likewise.  Everything is checked at start: an unknown class, a property the class does not
have (or Headwater does not implement), a `transforms.x.*` for an `x` that is not listed, or a
predicate that is not defined, is an error naming it.  Silently passing a record through an
unimplemented transform would write something else than the user configured.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Final

from headwater.connect.props import PluginConfigError, PluginProps, sub_props
from headwater.connect.record import ConnectRecord
from headwater.transforms.base import Predicate, Transform

Factory = Callable[[PluginProps], Transform]
PredicateFactory = Callable[[PluginProps], Predicate]

_KAFKA = "org.apache.kafka.connect.transforms."
_T = "headwater.transforms."
# class name -> "module:factory" (imported only when configured: keeps start-up light).
TRANSFORMS: Final[dict[str, str]] = {
    "io.debezium.transforms.ExtractNewRecordState": _T + "extract_new_state:ExtractNewRecordState",
    "io.debezium.transforms.Filter": _T + "scripting:Filter",
    "io.debezium.transforms.ContentBasedRouter": _T + "scripting:ContentBasedRouter",
    "io.debezium.transforms.ByLogicalTableRouter": _T + "logical_router:ByLogicalTableRouter",
    "io.debezium.transforms.outbox.EventRouter": _T + "outbox:EventRouter",
    "io.debezium.transforms.HeaderToValue": _T + "header_to_value:HeaderToValue",
    "io.debezium.transforms.partitions.PartitionRouting":
        _T + "partition_routing:PartitionRouting",
    "io.debezium.transforms.TimezoneConverter": _T + "timezone_converter:TimezoneConverter",
    "io.debezium.transforms.EnforceRecordSize": _T + "enforce_record_size:EnforceRecordSize",
    "io.debezium.connector.mongodb.transforms.ExtractNewDocumentState":
        _T + "extract_new_document:ExtractNewDocumentState",
    "io.debezium.connector.postgresql.transforms.DecodeLogicalDecodingMessageContent": _T + "decode_message_content:DecodeLogicalDecodingMessageContent",  # noqa: E501
    _KAFKA + "RegexRouter": _T + "kafka:RegexRouter",
    _KAFKA + "ReplaceField$Value": _T + "kafka:replace_field_value",
    _KAFKA + "ReplaceField$Key": _T + "kafka:replace_field_key",
    _KAFKA + "MaskField$Value": _T + "kafka:mask_field_value",
    _KAFKA + "MaskField$Key": _T + "kafka:mask_field_key",
    _KAFKA + "InsertField$Value": _T + "kafka:insert_field_value",
    _KAFKA + "InsertField$Key": _T + "kafka:insert_field_key",
    _KAFKA + "ValueToKey": _T + "kafka:ValueToKey",
    _KAFKA + "TimestampConverter$Value": _T + "timestamp_converter:timestamp_converter_value",
    _KAFKA + "TimestampConverter$Key": _T + "timestamp_converter:timestamp_converter_key",
    _KAFKA + "HeaderFrom$Value": _T + "kafka:header_from_value",
    _KAFKA + "HeaderFrom$Key": _T + "kafka:header_from_key",
}
_P = _KAFKA + "predicates."
PREDICATES: Final[dict[str, str]] = {
    _P + "TopicNameMatches": _T + "predicates:TopicNameMatches",
    _P + "HasHeaderKey": _T + "predicates:HasHeaderKey",
    _P + "RecordIsTombstone": _T + "predicates:RecordIsTombstone",
}


def _load(target: str) -> Callable[[PluginProps], object]:
    module, name = target.split(":")
    factory: Callable[[PluginProps], object] = getattr(import_module(module), name)
    return factory


class _Step:
    """One configured transform with its optional predicate."""

    __slots__ = ("name", "negate", "predicate", "transform")

    def __init__(self, name: str, transform: Transform, predicate: Predicate | None,
                 negate: bool) -> None:
        self.name = name
        self.transform = transform
        self.predicate = predicate
        self.negate = negate


class TransformChain:
    """The configured transforms, applied in order; a transform returning None drops the record."""

    def __init__(self, steps: list[_Step]) -> None:
        self.steps = steps

    def __bool__(self) -> bool:
        return bool(self.steps)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        current: ConnectRecord | None = record
        for step in self.steps:
            assert current is not None
            if step.predicate is not None and step.predicate.test(current) == step.negate:
                continue
            current = step.transform.apply(current)
            if current is None:
                return None
        return current


def _names(props: Mapping[str, str], key: str) -> tuple[str, ...]:
    raw = props.get(key, "")
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    if len(set(names)) != len(names):
        raise PluginConfigError(f"{key}: a name is listed twice ({raw})")
    return names


def build_chain(props: Mapping[str, str]) -> TransformChain:
    """The chain described by `props` (all connector properties, or only `transforms*` and
    `predicates*`); PluginConfigError lists what is wrong."""
    errors: list[str] = []
    transform_names = _names(props, "transforms")
    predicate_names = _names(props, "predicates")
    for family, names in (("transforms", transform_names), ("predicates", predicate_names)):
        for key in props:
            if key.startswith(family + "."):
                name = key[len(family) + 1:].split(".", 1)[0]
                if name not in names:
                    errors.append(f"{key}: '{name}' is not listed in {family} "
                                  f"({', '.join(names) or 'empty'}); the property would be "
                                  "ignored")
    predicates: dict[str, Predicate] = {}
    for name in predicate_names:
        try:
            predicates[name] = _build_plugin(props, "predicates", name, PREDICATES)  # type: ignore[assignment]
        except PluginConfigError as exc:
            errors.append(str(exc))
    steps: list[_Step] = []
    used: set[str] = set()
    for name in transform_names:
        prefix = f"transforms.{name}."
        own = sub_props(props, prefix)
        predicate_name = own.pop("predicate", "").strip() or None
        negate_text = own.pop("negate", "").strip().lower()
        if negate_text not in ("", "true", "false"):
            errors.append(f"{prefix}negate: '{negate_text}' is not a boolean")
        if negate_text and predicate_name is None:
            errors.append(f"{prefix}negate: set without {prefix}predicate")
        predicate = None
        if predicate_name is not None:
            used.add(predicate_name)
            predicate = predicates.get(predicate_name)
            if predicate is None and predicate_name not in predicate_names:
                errors.append(f"{prefix}predicate: '{predicate_name}' is not listed in "
                              f"predicates ({', '.join(predicate_names) or 'empty'})")
        try:
            transform = _build_plugin(
                {**{prefix + k: v for k, v in own.items()}}, "transforms", name, TRANSFORMS)
        except PluginConfigError as exc:
            errors.append(str(exc))
            continue
        steps.append(_Step(name, transform, predicate,  # type: ignore[arg-type]
                           negate_text == "true"))
    if errors:
        raise PluginConfigError("\n".join(errors))
    return TransformChain(steps)


def _build_plugin(props: Mapping[str, str], family: str, name: str,
                  known: Mapping[str, str]) -> object:
    prefix = f"{family}.{name}."
    own = sub_props(props, prefix)
    class_name = own.pop("type", "").strip()
    what = "transform" if family == "transforms" else "predicate"
    if not class_name:
        raise PluginConfigError(f"{prefix}type: missing (the {what} class of '{name}')")
    target = known.get(class_name)
    if target is None:
        raise PluginConfigError(
            f"{prefix}type: {what} class '{class_name}' is not supported by Headwater "
            f"(supported: see docs/transforms.md)")
    plugin_props = PluginProps(f"{what} '{name}' ({class_name})", prefix, own)
    plugin = _load(target)(plugin_props)
    plugin_props.check_all_read()
    return plugin
