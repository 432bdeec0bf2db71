"""Confluent's `io.confluent.connect.avro.AvroConverter`: Connect data as Avro, in the
Confluent wire format (magic byte 0, the 4-byte big-endian schema id from the registry, Avro
binary), with the Connect-to-Avro schema mapping of Confluent's `AvroData`:

* INT8/INT16 are Avro `int` with `connect.type` int8/int16; INT32 `int`, INT64 `long`,
  FLOAT32 `float`, FLOAT64 `double`, BOOLEAN, STRING, BYTES as named;
* STRUCT is a `record` named after the Connect schema name (namespace = up to the last dot;
  unnamed structs are `io.confluent.connect.avro.ConnectDefault`, `ConnectDefault2`...); a
  record name seen before in the same schema is referenced by name, as Avro requires;
* an optional schema is a union with `null` first and field default null (with a Connect
  default: the type first and that default);
* `connect.name`, `connect.version`, `connect.parameters`, `connect.doc`, `connect.default`
  carry the Connect metadata (`connect.meta.data=false` leaves them out);
* Connect Decimal is `bytes` with `logicalType: decimal`, `precision` (from
  `connect.decimal.precision`, default 64) and `scale`; Kafka Date/Time/Timestamp get the Avro
  `date`/`time-millis`/`timestamp-millis` logical types; Debezium's io.debezium.time.* types
  stay their INT32/INT64 with `connect.name`;
* MAP with STRING keys is an Avro `map`; other keys an array of
  `io.confluent.connect.avro.MapEntry` records (key, value).
"""

from __future__ import annotations

import base64
import io
import json
import struct
from typing import Any

import fastavro

from headwater.connect.logical import DATE, DECIMAL, TIME, TIMESTAMP
from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import TransformError
from headwater.converters.registry import SchemaRegistryClient
from headwater.model.schema import NO_DEFAULT, ConnectSchema

_PRIMITIVES = {"int8": "int", "int16": "int", "int32": "int", "int64": "long",
               "float32": "float", "float64": "double", "boolean": "boolean", "string": "string",
               "bytes": "bytes"}
_NAMESPACE = "io.confluent.connect.avro"
_STRATEGY_PREFIX = "io.confluent.kafka.serializers.subject."
STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")


def _default_json(schema: ConnectSchema, value: Any) -> Any:
    """A Connect default as an Avro JSON default (bytes as ISO-8859-1 text, as Avro does)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    if isinstance(value, dict):
        return {k: _default_json(schema, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_default_json(schema, v) for v in value]
    if hasattr(value, "as_tuple"):  # Decimal
        from headwater.convert.decimal import decimal_to_unscaled_bytes

        return decimal_to_unscaled_bytes(value).decode("latin-1")
    return value


class AvroSchemaBuilder:
    """Connect schema -> Avro schema (JSON form), one call per top-level schema."""

    def __init__(self, meta: bool = True) -> None:
        self.meta = meta
        self.defined: set[str] = set()
        self.unnamed = 0

    def build(self, schema: ConnectSchema) -> Any:
        return self._optional(schema, self._type(schema))

    def _optional(self, schema: ConnectSchema, avro: Any) -> Any:
        if not schema.optional:
            return avro
        if schema.default is not NO_DEFAULT and schema.default is not None:
            return [avro, "null"]
        return ["null", avro]

    def _type(self, schema: ConnectSchema) -> Any:
        node: dict[str, Any]
        t = schema.type
        if t == "struct":
            return self._record(schema)
        if t == "array":
            assert schema.items is not None
            node = {"type": "array", "items": self.build(schema.items)}
        elif t == "map":
            assert schema.keys is not None and schema.values is not None
            if schema.keys.type == "string" and not schema.keys.optional:
                node = {"type": "map", "values": self.build(schema.values)}
            else:
                name = "MapEntry"
                entry: Any = f"{_NAMESPACE}.{name}"
                if entry not in self.defined:
                    self.defined.add(entry)
                    entry = {"type": "record", "name": name, "namespace": _NAMESPACE,
                             "fields": [{"name": "key", "type": self.build(schema.keys)},
                                        {"name": "value", "type": self.build(schema.values)}]}
                node = {"type": "array", "items": entry}
        else:
            node = {"type": _PRIMITIVES[t]}
            if t in ("int8", "int16") and self.meta:
                node["connect.type"] = t
            if schema.name == DECIMAL and t == "bytes":
                params = dict(schema.parameters or {})
                node["scale"] = int(params.get("scale", "0"))
                node["precision"] = int(params.get("connect.decimal.precision", "64"))
                node["logicalType"] = "decimal"
            elif schema.name == DATE and t == "int32":
                node["logicalType"] = "date"
            elif schema.name == TIME and t == "int32":
                node["logicalType"] = "time-millis"
            elif schema.name == TIMESTAMP and t == "int64":
                node["logicalType"] = "timestamp-millis"
        if self.meta:
            if schema.doc is not None:
                node["connect.doc"] = schema.doc
            self._meta(schema, node)
        if len(node) == 1 and t not in ("array", "map"):
            return node["type"]
        return node

    def _meta(self, schema: ConnectSchema, node: dict[str, Any]) -> None:
        if schema.version is not None:
            node["connect.version"] = schema.version
        if schema.parameters:
            node["connect.parameters"] = dict(schema.parameters)
        if schema.default is not NO_DEFAULT and schema.default is not None:
            node["connect.default"] = _default_json(schema, schema.default)
        if schema.name is not None:
            node["connect.name"] = schema.name

    def _record(self, schema: ConnectSchema) -> Any:
        if schema.name:
            full = schema.name
        else:
            self.unnamed += 1
            full = f"{_NAMESPACE}.ConnectDefault" + ("" if self.unnamed == 1 else
                                                     str(self.unnamed))
        if full in self.defined:
            return full
        self.defined.add(full)
        namespace, _, name = full.rpartition(".")
        node: dict[str, Any] = {"type": "record", "name": name}
        if namespace:
            node["namespace"] = namespace
        if schema.doc is not None:
            node["doc"] = schema.doc
        fields = []
        for f in schema.fields:
            field: dict[str, Any] = {"name": f.name, "type": self.build(f.schema)}
            if f.schema.default is not NO_DEFAULT and f.schema.default is not None:
                field["default"] = _default_json(f.schema, f.schema.default)
            elif f.schema.optional:
                field["default"] = None
            fields.append(field)
        node["fields"] = fields
        if self.meta:
            self._meta(schema, node)
        return node


def to_avro_schema(schema: ConnectSchema, meta: bool = True) -> Any:
    return AvroSchemaBuilder(meta).build(schema)


def _datum(schema: ConnectSchema, value: Any) -> Any:
    """A Connect value in the form fastavro writes for the mapped schema."""
    if value is None:
        return None
    t = schema.type
    if t == "struct":
        return {f.name: _datum(f.schema, value.get(f.name)) for f in schema.fields}
    if t == "array":
        assert schema.items is not None
        return [_datum(schema.items, v) for v in value]
    if t == "map":
        assert schema.keys is not None and schema.values is not None
        if schema.keys.type == "string" and not schema.keys.optional:
            return {k: _datum(schema.values, v) for k, v in value.items()}
        return [{"key": _datum(schema.keys, k), "value": _datum(schema.values, v)}
                for k, v in value.items()]
    if t == "bytes" and isinstance(value, memoryview):
        return bytes(value)
    if t == "bytes" and isinstance(value, str):
        # The capture hands some BYTES values (PostgreSQL numeric as Decimal) in the fast
        # path's form, already base64 as JsonConverter writes them: Avro wants the bytes.
        return base64.b64decode(value)
    return value


def _record_name(avro: Any) -> str:
    """Confluent's `AvroSchema.name()`: a named type's full name, else its type name."""
    if isinstance(avro, dict) and avro.get("type") == "record":
        ns = avro.get("namespace")
        return f"{ns}.{avro['name']}" if ns else str(avro["name"])
    if isinstance(avro, list):
        return "union"
    if isinstance(avro, dict):
        return str(avro["type"])
    return str(avro)


class AvroConverter:
    def __init__(self, client: SchemaRegistryClient, *, is_key: bool, strategy: str,
                 auto_register: bool = True, meta: bool = True) -> None:
        self.client = client
        self.is_key = is_key
        self.strategy = strategy
        self.auto_register = auto_register
        self.meta = meta
        self._schemas: dict[int, tuple[ConnectSchema, Any, str, Any]] = {}
        self._ids: dict[tuple[str, str], int] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_schemas"] = {}
        return state

    @classmethod
    def from_props(cls, p: PluginProps, *, is_key: bool) -> AvroConverter:
        urls = [u.strip() for u in p.required("schema.registry.url").split(",") if u.strip()]
        source = p.choice("basic.auth.credentials.source", ("URL", "USER_INFO"), "URL")
        user_info = p.get_str("basic.auth.user.info")
        if source == "USER_INFO" and not user_info:
            raise PluginConfigError(f"{p.key('basic.auth.user.info')}: required with "
                                    "basic.auth.credentials.source=USER_INFO")
        if source == "URL" and user_info:
            raise PluginConfigError(f"{p.key('basic.auth.user.info')}: set, but "
                                    "basic.auth.credentials.source is URL (set USER_INFO)")
        side = "key" if is_key else "value"
        strategy_text = p.get_str(f"{side}.subject.name.strategy", "TopicNameStrategy") or ""
        other = "value" if is_key else "key"
        p.ignore(f"{other}.subject.name.strategy")  # Confluent reads only its side's
        strategy = strategy_text.removeprefix(_STRATEGY_PREFIX)
        if strategy not in STRATEGIES:
            raise PluginConfigError(
                f"{p.key(side + '.subject.name.strategy')}: '{strategy_text}' is not one of "
                + ", ".join(_STRATEGY_PREFIX + s for s in STRATEGIES))
        p.ignore("schemas.cache.config")  # a cache size
        if p.get_bool("use.latest.version", False):
            raise PluginConfigError(f"{p.key('use.latest.version')}: not supported")
        if p.get_bool("enhanced.avro.schema.support", False):
            raise PluginConfigError(f"{p.key('enhanced.avro.schema.support')}: not supported")
        return cls(SchemaRegistryClient(urls, user_info if source == "USER_INFO" else None),
                   is_key=is_key, strategy=strategy,
                   auto_register=p.get_bool("auto.register.schemas", True),
                   meta=p.get_bool("connect.meta.data", True))

    def subject(self, topic: str, avro: Any) -> str:
        if self.strategy == "TopicNameStrategy":
            return f"{topic}-{'key' if self.is_key else 'value'}"
        if self.strategy == "RecordNameStrategy":
            return _record_name(avro)
        return f"{topic}-{_record_name(avro)}"

    def _prepared(self, schema: ConnectSchema) -> tuple[Any, str, Any]:
        cached = self._schemas.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1], cached[2], cached[3]
        avro = to_avro_schema(schema, self.meta)
        text = json.dumps(avro, separators=(",", ":"))
        parsed = fastavro.parse_schema(avro, _write_hint=False)
        if len(self._schemas) > 4096:
            self._schemas.clear()
        self._schemas[id(schema)] = (schema, avro, text, parsed)
        return avro, text, parsed

    def from_connect(self, topic: str, schema: ConnectSchema | None, value: Any) -> bytes | None:
        if value is None and (schema is None or schema.optional):
            return None  # Confluent writes a null for a null value (tombstones stay tombstones)
        if schema is None:
            raise TransformError(
                f"AvroConverter: a schemaless {'key' if self.is_key else 'value'} (topic "
                f"{topic}) cannot be written as Avro")
        avro, text, parsed = self._prepared(schema)
        subject = self.subject(topic, avro)
        key = (subject, text)
        schema_id = self._ids.get(key)
        if schema_id is None:
            schema_id = (self.client.register(subject, text) if self.auto_register
                         else self.client.lookup(subject, text))
            self._ids[key] = schema_id
        out = io.BytesIO()
        out.write(b"\x00" + struct.pack(">I", schema_id))
        fastavro.schemaless_writer(out, parsed, _datum(schema, value))
        return out.getvalue()
