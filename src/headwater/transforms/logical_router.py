"""Debezium's `io.debezium.transforms.ByLogicalTableRouter` (3.x: a deprecated alias of
`ToLogicalTopicRouter` with the legacy key field name `__dbz__physicalTableIdentifier`).

Routes the events of several physical tables (shards) to one topic.  Since their keys may then
collide, the key gains a field naming the physical table (`key.enforce.uniqueness`); the key
and envelope schemas are renamed after the new topic (`<topic>.Key`, `<topic>.Envelope`, the
row `<topic>.Value`) because Avro converters register schemas by name and the shards' schemas
must become one.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import (
    ConnectRecord,
    TransformError,
    field_schema,
    require_struct,
)
from headwater.model.schema import STRING, STRUCT, ConnectField, ConnectSchema
from headwater.transforms.extract_new_state import is_envelope
from headwater.transforms.fields import with_defaults
from headwater.transforms.kafka import compile_java_regex, java_replacement
from headwater.transforms.names import read_mode, schema_name_adjuster

log = logging.getLogger("headwater.transforms")

_KEY_FIELD_SCHEMA = ConnectSchema(STRING, optional=False)


class _Lru(OrderedDict[Any, Any]):
    """Kafka's LRUCache: `logical.table.cache.size` entries, least recently used evicted."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def lookup(self, key: Any) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def store(self, key: Any, value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


def _renamed(schema: ConnectSchema, name: str, fields: tuple[ConnectField, ...]) -> ConnectSchema:
    """Debezium's `copySchemaExcludingName`: version, doc, parameters and optionality kept."""
    return ConnectSchema(STRUCT, optional=schema.optional, name=name, version=schema.version,
                         parameters=schema.parameters, doc=schema.doc, fields=fields)


class ByLogicalTableRouter:
    def __init__(self, p: PluginProps) -> None:
        self.topic_regex = compile_java_regex(p.key("topic.regex"), p.required("topic.regex"))
        if "topic.replacement" not in p.values:
            p.required("topic.replacement")
        self.topic_replacement = java_replacement(p.get_raw("topic.replacement", ""))
        self.enforce_uniqueness = p.get_bool("key.enforce.uniqueness", True)
        self.key_field_name = p.get_str("key.field.name", "__dbz__physicalTableIdentifier") or ""
        key_regex = p.get_str("key.field.regex")
        self.key_regex = (compile_java_regex(p.key("key.field.regex"), key_regex)
                          if key_regex else None)
        self.key_replacement = ""
        if self.key_regex is not None:
            replacement = p.get_str("key.field.replacement")
            if replacement is None:
                raise PluginConfigError(f"{p.key('key.field.replacement')}: must be non-empty "
                                        "if key.field.regex is set")
            self.key_replacement = java_replacement(replacement)
        else:
            p.get_str("key.field.replacement")
        self.adjust = schema_name_adjuster(read_mode(p, "schema.name.adjustment.mode"))
        # 3.x reads the legacy name when the new one is absent.
        size = p.get_int("logical.destination.cache.size",
                         p.get_int("logical.table.cache.size", 16))
        if size <= 0:
            raise PluginConfigError(f"{p.key('logical.table.cache.size')}: must be positive")
        self._topics = _Lru(size)
        self._key_ids = _Lru(size)
        self._key_schemas = _Lru(size)
        self._envelopes = _Lru(size)
        log.warning("%s: ByLogicalTableRouter is deprecated in Debezium 3.x (use "
                    "io.debezium.transforms.ToLogicalTopicRouter there)", p.label)

    def _new_topic(self, topic: str) -> str | None:
        cached: str | None = self._topics.lookup(topic)
        if cached is not None:
            return cached
        if self.topic_regex.fullmatch(topic) is None:
            return None
        new = self.topic_regex.sub(self.topic_replacement, topic, count=1)
        self._topics.store(topic, new)
        return new

    def _key_schema(self, old: ConnectSchema, topic: str) -> ConnectSchema:
        # Keyed by the old schema only, as Debezium's cache is (here by identity: the
        # format hands out one schema object per table).
        cached = self._key_schemas.lookup(id(old))
        if cached is not None and cached[0] is old:
            return cached[1]  # type: ignore[no-any-return]
        fields = old.fields
        if self.enforce_uniqueness:
            if any(f.name == self.key_field_name for f in fields):
                raise TransformError(f"Cannot create field because of field name duplication "
                                     f"{self.key_field_name}")
            fields = (*fields, ConnectField(self.key_field_name, _KEY_FIELD_SCHEMA))
        new = _renamed(old, self.adjust(topic + ".Key"), fields)
        self._key_schemas.store(id(old), (old, new))
        return new

    def _physical_id(self, topic: str) -> str:
        if self.key_regex is None:
            return topic
        cached: str | None = self._key_ids.lookup(topic)
        if cached is not None:
            return cached
        if self.key_regex.fullmatch(topic) is None:
            return topic
        found = self.key_regex.sub(self.key_replacement, topic, count=1)
        self._key_ids.store(topic, found)
        return found

    def _envelope_schema(self, old: ConnectSchema, topic: str) -> ConnectSchema:
        cached = self._envelopes.lookup(id(old))
        if cached is not None and cached[0] is old:
            return cached[1]  # type: ignore[no-any-return]
        row = field_schema(old, "before") or field_schema(old, "after")
        new_row: ConnectSchema | None = None
        if row is not None:
            if row.type != STRUCT:
                # Kafka's Schema.fields() on a non-struct: Debezium fails the same way
                # (MongoDB envelopes carry JSON strings).
                raise TransformError("Cannot list fields on non-struct type "
                                     f"({row.type} 'before'/'after' of {old.name})")
            new_row = _renamed(row, self.adjust(topic + ".Value"), row.fields)
        fields = tuple(
            ConnectField(f.name, new_row) if new_row is not None and f.name in ("before", "after")
            else f for f in old.fields)
        new = _renamed(old, self.adjust(topic + ".Envelope"), fields)
        self._envelopes.store(id(old), (old, new))
        return new

    def apply(self, record: ConnectRecord) -> ConnectRecord:
        new_topic = self._new_topic(record.topic)
        if new_topic is None:
            return record
        if not new_topic:
            log.warning("Routing regex returned an empty topic name, propagating original record")
            return record
        key_schema: ConnectSchema | None = None
        key: dict[str, Any] | None = None
        if record.key is not None:
            old_key = require_struct(record.key, "Updating schema")
            if record.key_schema is None:
                raise TransformError("Updating schema: the key has no schema")
            key_schema = self._key_schema(record.key_schema, new_topic)
            key = {f.name: old_key.get(f.name) for f in record.key_schema.fields}
            if self.enforce_uniqueness:
                key[self.key_field_name] = self._physical_id(record.topic)
        if record.value is None or not is_envelope(record.value_schema):
            return record.replace(topic=new_topic, key_schema=key_schema, key=key)
        assert record.value_schema is not None
        envelope = require_struct(record.value, "Updating schema")
        schema = self._envelope_schema(record.value_schema, new_topic)
        # Struct.get: envelope fields take their defaults, rows are copied without.
        value = with_defaults(record.value_schema, envelope)
        return record.replace(topic=new_topic, key_schema=key_schema, key=key,
                              value_schema=schema, value=value)
