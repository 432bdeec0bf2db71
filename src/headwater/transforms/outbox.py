"""Debezium's outbox event router, `io.debezium.transforms.outbox.EventRouter` (3.x).

An application writes events into an outbox table in the same transaction as its business
change; this transform turns each inserted outbox row into the event itself: topic from
`route.by.field` through `route.topic.regex`/`route.topic.replacement`
(`outbox.event.<aggregatetype>`), key from `table.field.event.key`, value the payload (or a
struct of payload plus `envelope` additional fields), an `id` header, timestamp from
`table.field.event.timestamp` or the event's `ts_ms`.  Only inserts (and snapshot reads) are
events: deletes (applications purge the table) and tombstones are dropped, updates are dropped
with a warning or error log, or stop the capture (`table.op.invalid.behavior`).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import (
    ConnectRecord,
    Header,
    TransformError,
    field_schema,
    require_struct,
)
from headwater.model.schema import INT64, NO_DEFAULT, STRING, STRUCT, ConnectField, ConnectSchema
from headwater.transforms.extract_new_state import is_envelope
from headwater.transforms.json_schema import JsonExpansionError, JsonSchemaData
from headwater.transforms.kafka import compile_java_regex, java_replacement
from headwater.transforms.names import field_name_adjuster, read_mode

log = logging.getLogger("headwater.transforms")

_KEY_STRING = ConnectSchema(STRING, optional=False)  # Schema.STRING_SCHEMA
_TIMESTAMP_DIVISORS = {"io.debezium.time.Timestamp": 1, "io.debezium.time.MicroTimestamp": 1000,
                       "io.debezium.time.NanoTimestamp": 1_000_000}


def _get(schema: ConnectSchema, struct: dict[str, Any], name: str) -> Any:
    """Kafka's `Struct.get(name)`: the field's default when null; an unknown name is an error."""
    found = field_schema(schema, name)
    if found is None:
        raise TransformError(f"{name} is not a valid field name")
    value = struct.get(name)
    if value is None and found.default is not NO_DEFAULT:
        return found.default
    return value


class _Additional:
    """One `table.fields.additional.placement` entry: `column:placement[:alias]`."""

    def __init__(self, p: PluginProps, spec: str) -> None:
        parts = spec.split(":")
        if len(parts) not in (2, 3):
            raise PluginConfigError(
                f"{p.key('table.fields.additional.placement')}: A comma-separated list of valid "
                f"String pairs or trios is expected but got: {spec}")
        self.field = parts[0].strip()
        self.placement = parts[1].strip().lower()
        if self.placement == "partition":
            raise PluginConfigError(
                f"{p.key('table.fields.additional.placement')}: placement 'partition' is not "
                "supported by Headwater (its local topics have no partitions)")
        if self.placement not in ("header", "envelope"):
            raise PluginConfigError(
                f"{p.key('table.fields.additional.placement')}: unknown placement "
                f"'{parts[1].strip()}' (header, envelope)")
        self.alias = parts[2].strip() if len(parts) == 3 else self.field


class EventRouter:
    def __init__(self, p: PluginProps) -> None:
        self.field_id = p.get_str("table.field.event.id", "id") or "id"
        self.field_key = p.get_str("table.field.event.key", "aggregateid")
        p.get_str("table.field.event.type")  # only documents the table in Debezium 3.x
        self.field_payload = p.get_str("table.field.event.payload", "payload") or "payload"
        self.field_timestamp = p.get_str("table.field.event.timestamp")
        self.field_version = p.get_str("table.field.event.schema.version")
        self.route_by = p.get_str("route.by.field", "aggregatetype") or "aggregatetype"
        self.route_regex = compile_java_regex(
            p.key("route.topic.regex"), p.get_str("route.topic.regex", "(?<routedByValue>.*)")
            or "")
        self.route_replacement = java_replacement(
            p.get_str("route.topic.replacement", "outbox.event.${routedByValue}") or "")
        self.tombstone_on_empty = p.get_bool("route.tombstone.on.empty.payload", False)
        self.invalid_op = p.choice("table.op.invalid.behavior", ("warn", "error", "fatal"),
                                   "warn")
        self.expand = p.get_bool("table.expand.json.payload", False)
        null_mode = p.choice("table.json.payload.null.behavior", ("ignore", "optional_bytes"),
                             "ignore")
        array_mode = p.choice("table.json.payload.empty.array.behavior",
                              ("ignore", "optional_string"), "ignore")
        self.json = JsonSchemaData(null_mode == "optional_bytes", array_mode == "optional_string",
                                   field_name_adjuster(read_mode(p, "field.name.adjustment.mode")))
        self.additional = [_Additional(p, spec)
                           for spec in p.get_list("table.fields.additional.placement")]
        self.missing_ignore = p.choice("table.field.additional.missing", ("error", "ignore"),
                                       "error") == "ignore"
        self.only_headers = not any(a.placement == "envelope" for a in self.additional)
        self._value_schemas: dict[str, ConnectSchema] = {}
        self._versioned: dict[int | None, ConnectSchema] = {}

    # -- pieces -----------------------------------------------------------------------------
    def _timestamp(self, envelope: dict[str, Any], schema: ConnectSchema,
                   row: dict[str, Any]) -> int:
        fallback = envelope.get("ts_ms")
        if fallback is None:
            raise TransformError("the event has no ts_ms")
        if self.field_timestamp is None:
            return int(fallback)
        found = field_schema(schema, self.field_timestamp)
        if found is None:
            raise TransformError(
                f"Unable to find timestamp field {self.field_timestamp} in event")
        if found.type != INT64:
            raise TransformError(f"Field '{self.field_timestamp}' is not of type INT64")
        value = _get(schema, row, self.field_timestamp)
        if value is None:
            return int(fallback)
        if found.name is None:
            raise TransformError(f"Unsupported field type {found.type} (without logical schema "
                                 "name) for event timestamp")
        divisor = _TIMESTAMP_DIVISORS.get(found.name)
        if divisor is None or isinstance(value, dt.datetime):
            raise TransformError(f"Unsupported field type {found.name} for event timestamp")
        return int(value) // divisor if value >= 0 else -(-int(value) // divisor)

    def _schema_name(self, row_schema: ConnectSchema, routed: str) -> str:
        name = row_schema.name
        if name is None:
            return routed
        dot = name.rfind(".")
        return f"{name[:dot + 1]}{routed}.{name[dot + 1:]}" if dot != -1 else f"{routed}.{name}"

    def _value_schema(self, payload_schema: ConnectSchema, row_schema: ConnectSchema,
                      routed: str, version: int | None, versioned: bool) -> ConnectSchema:
        # Debezium caches by payload schema (or by version alone): the first routed topic
        # names the schema of every later event with an equal payload schema.
        cache_key = repr(payload_schema)
        cached = self._versioned.get(version) if versioned else self._value_schemas.get(
            cache_key)
        if cached is not None:
            return cached
        fields = [ConnectField("payload", payload_schema)]
        for extra in self.additional:
            if extra.placement != "envelope":
                continue
            found = field_schema(row_schema, extra.field)
            if found is None:
                if not self.missing_ignore:
                    raise TransformError(f"Unable to find field {extra.field} in event")
                continue
            if any(f.name == extra.alias for f in fields):
                raise TransformError(
                    f"Cannot create field because of field name duplication {extra.alias}")
            fields.append(ConnectField(extra.alias, found))
        schema = ConnectSchema(STRUCT, optional=False, name=self._schema_name(row_schema, routed),
                               version=version, fields=tuple(fields))
        if versioned:
            self._versioned[version] = schema
        else:
            if len(self._value_schemas) >= 10_000:
                self._value_schemas.clear()
            self._value_schemas[cache_key] = schema
        return schema

    def _expand(self, payload: Any, schema: ConnectSchema, key: Any
                ) -> tuple[Any, ConnectSchema]:
        if isinstance(payload, str):
            try:
                node = self.json.parse(payload)
                expanded_schema = self.json.to_schema(self.field_payload, node)
            except JsonExpansionError as exc:
                log.warning("JSON expansion failed: %s", exc)
                return payload, schema
            if expanded_schema is None or expanded_schema.type != STRUCT:
                # Debezium has already replaced the schema when building the value fails.
                raise TransformError(f"Invalid Java object for schema with type "
                                     f"{expanded_schema.type if expanded_schema else 'null'}: "
                                     "class java.lang.String for field: payload")
            return self.json.to_value(node, expanded_schema), expanded_schema
        if payload is not None:
            log.warning("Expand JSON payload is turned on but payload is not a string in %s", key)
        return payload, schema

    def _invalid(self, record: ConnectRecord) -> None:
        if self.invalid_op == "fatal":
            raise TransformError(f"Unexpected update message received {record.key}, fail.")
        level = logging.ERROR if self.invalid_op == "error" else logging.WARNING
        log.log(level, "Unexpected update message received %s and ignored", record.key)

    # -- the transform ----------------------------------------------------------------------
    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.value is None:
            return None  # tombstones (of the purging deletes) are not events
        if not is_envelope(record.value_schema):
            return record
        assert record.value_schema is not None
        envelope = require_struct(record.value, "Detect Debezium Operation")
        op = envelope.get("op")
        if op == "d":
            return None
        if op == "u":
            self._invalid(record)
            return None
        row_schema = field_schema(record.value_schema, "after")
        row = require_struct(envelope.get("after"), "Read Outbox Event")
        assert row_schema is not None
        payload_schema = field_schema(row_schema, self.field_payload)
        if payload_schema is None:
            raise TransformError(f"Unable to find payload field {self.field_payload} in event")
        timestamp = self._timestamp(envelope, row_schema, row)
        event_id = _get(row_schema, row, self.field_id)
        id_schema = field_schema(row_schema, self.field_id)
        assert id_schema is not None
        payload = _get(row_schema, row, self.field_payload)
        headers = [*record.headers, Header("id", id_schema, event_id)]
        if self.expand:
            payload, payload_schema = self._expand(payload, payload_schema, record.key)
        routed = _get(row_schema, row, self.route_by)
        route_schema = field_schema(row_schema, self.route_by)
        assert route_schema is not None
        if route_schema.type != STRING:
            raise TransformError(f"Field '{self.route_by}' is not of type STRING")
        if routed is None:
            raise TransformError(f"{self.route_by} is null: the event has no topic")
        value_schema: ConnectSchema | None = None
        value: Any = None
        if not self.only_headers:
            version = None
            if self.field_version is not None:
                version = _get(row_schema, row, self.field_version)
            value_schema = self._value_schema(payload_schema, row_schema, routed, version,
                                              self.field_version is not None)
            value = {f.name: None for f in value_schema.fields}
            value["payload"] = payload
        for extra in self.additional:
            found = field_schema(row_schema, extra.field)
            if found is None and self.missing_ignore:
                continue
            field_value = _get(row_schema, row, extra.field)
            if extra.placement == "envelope":
                value[extra.alias] = field_value
            else:
                assert found is not None
                headers.append(Header(extra.alias, found, field_value))
        deleting = payload is None or (isinstance(payload, str)
                                       and not payload.strip("".join(map(chr, range(33)))))
        if deleting and self.tombstone_on_empty:
            value_schema, value = None, None
        elif self.only_headers:
            value_schema, value = payload_schema, payload
        key_schema = _KEY_STRING
        key = None
        if self.field_key is not None:
            key = _get(row_schema, row, self.field_key)
            key_schema = field_schema(row_schema, self.field_key) or _KEY_STRING
        topic = str(routed)
        if self.route_regex.fullmatch(topic) is not None:
            topic = self.route_regex.sub(self.route_replacement, topic, count=1)
        return ConnectRecord(topic, None, key_schema, key, value_schema, value, timestamp,
                             tuple(headers))
