"""Reading Confluent Avro back: wire-format bytes -> Connect schema and value -> the bytes
JsonConverter (schemas enabled) writes for them.

Why JSON at the end: the pipeline's decoders (column-wise and event by event) read Debezium
envelopes in JsonConverter's form, so an Avro record becomes exactly the record the JSON path
would have carried and both paths give the same target.  The schema mapping is the
Avro-to-Connect half of Confluent's `AvroData` (`toConnectSchema`), the inverse of
`converters.avro`: `connect.type` int8/int16, `connect.name`/`version`/`parameters`/`doc`/
`default` restore the Connect metadata, a union with `null` is an optional schema, Avro logical
types without Connect metadata become Kafka's Decimal/Date/Time/Timestamp, an Avro `map` a
string-keyed MAP and an array of `io.confluent.connect.avro.MapEntry` records a MAP of other
keys.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable
from typing import Any

import fastavro

from headwater.connect.logical import DATE, DECIMAL, TIME, TIMESTAMP
from headwater.converters.json import JsonConverter
from headwater.converters.registry import SchemaRegistryClient
from headwater.model.schema import NO_DEFAULT, ConnectField, ConnectSchema

_CONNECT_DEFAULT = "io.confluent.connect.avro.ConnectDefault"
_MAP_ENTRY = "io.confluent.connect.avro.MapEntry"
_TYPES = {"int": "int32", "long": "int64", "float": "float32", "double": "float64",
          "boolean": "boolean", "string": "string", "bytes": "bytes"}
_LOGICAL = {("bytes", "decimal"): DECIMAL, ("int", "date"): DATE,
            ("int", "time-millis"): TIME, ("long", "timestamp-millis"): TIMESTAMP}


class AvroFormatError(ValueError):
    """Bytes that are not Confluent's wire format, or an Avro schema Connect cannot hold."""


class _ToConnect:
    """One top-level Avro schema -> Connect schema (named records are resolved by name)."""

    def __init__(self) -> None:
        self.named: dict[str, ConnectSchema] = {}

    def schema(self, avro: Any, optional: bool = False, default: Any = NO_DEFAULT
               ) -> ConnectSchema:
        if isinstance(avro, list):
            branches = [b for b in avro if b != "null"]
            if len(branches) != 1 or len(avro) != 2:
                raise AvroFormatError(f"a union other than [null, T] has no Connect schema: "
                                      f"{json.dumps(avro)[:200]}")
            return self.schema(branches[0], True, default)
        if isinstance(avro, str):
            if avro in self.named:
                return _with(self.named[avro], optional, default)
            avro = {"type": avro}
        node: dict[str, Any] = avro
        t = node["type"]
        if isinstance(t, (dict, list)):
            return self.schema(t, optional, default)
        if "connect.default" in node:
            default = node["connect.default"]
        if t == "record":
            return self._record(node, optional, default)
        params = node.get("connect.parameters")
        name = node.get("connect.name")
        version = node.get("connect.version")
        if t == "array":
            items = node["items"]
            entry = items if isinstance(items, dict) else None
            full = _full_name(entry) if entry and entry.get("type") == "record" else items
            if full == _MAP_ENTRY or (isinstance(items, str) and items.endswith(".MapEntry")):
                resolved = self.schema(items)
                keys = resolved.fields[0].schema
                values = resolved.fields[1].schema
                return ConnectSchema("map", optional, name, version, params,
                                     _default(default), keys=keys, values=values,
                                     doc=node.get("connect.doc"))
            return ConnectSchema("array", optional, name, version, params, _default(default),
                                 items=self.schema(items), doc=node.get("connect.doc"))
        if t == "map":
            return ConnectSchema("map", optional, name, version, params, _default(default),
                                 keys=ConnectSchema("string", False),
                                 values=self.schema(node["values"]),
                                 doc=node.get("connect.doc"))
        if t not in _TYPES:
            raise AvroFormatError(f"Avro type {t!r} has no Connect schema")
        connect_type = node.get("connect.type") or _TYPES[t]
        logical = _LOGICAL.get((t, node.get("logicalType", "")))
        if logical is not None and name is None:  # written without Connect metadata
            name, version = logical, 1
            if logical == DECIMAL:
                params = {"scale": str(node.get("scale", 0))}
                if "precision" in node:
                    params["connect.decimal.precision"] = str(node["precision"])
        if default is not NO_DEFAULT and connect_type == "bytes" and isinstance(default, str):
            default = default.encode("latin-1")  # Avro's JSON form of bytes
        return ConnectSchema(connect_type, optional, name, version, params, _default(default),
                             doc=node.get("connect.doc"))

    def _record(self, node: dict[str, Any], optional: bool, default: Any) -> ConnectSchema:
        full = _full_name(node)
        name = node.get("connect.name")
        if name is None and not full.startswith(_CONNECT_DEFAULT):
            name = full
        fields = []
        placeholder = ConnectSchema("struct", False, name)
        self.named[full] = placeholder  # a recursive reference would see this (unsupported)
        for f in node["fields"]:
            fdefault = f.get("default", NO_DEFAULT)
            fields.append(ConnectField(f["name"], self.schema(f["type"], False, fdefault)))
        schema = ConnectSchema("struct", False, name, node.get("connect.version"),
                               node.get("connect.parameters"), NO_DEFAULT, tuple(fields),
                               doc=node.get("doc"))
        self.named[full] = schema
        return _with(schema, optional, default)


def _full_name(node: dict[str, Any]) -> str:
    ns = node.get("namespace")
    name = str(node["name"])
    return f"{ns}.{name}" if ns and "." not in name else name


def _default(value: Any) -> Any:
    # Avro's field default null is "no default" in Connect (AvroData writes null for none).
    return NO_DEFAULT if value is None else value


def _with(schema: ConnectSchema, optional: bool, default: Any) -> ConnectSchema:
    if not optional and default is NO_DEFAULT:
        return schema
    return ConnectSchema(schema.type, optional, schema.name, schema.version, schema.parameters,
                         _default(default) if schema.type != "struct" else NO_DEFAULT,
                         schema.fields, schema.items, schema.keys, schema.values, schema.doc)


def to_connect_schema(avro: Any) -> ConnectSchema:
    """AvroData.toConnectSchema for the schemas `converters.avro` writes."""
    return _ToConnect().schema(avro)


def _value(schema: ConnectSchema, datum: Any) -> Any:
    """fastavro's datum as the Connect value JsonConverter writes (maps of MapEntry records
    back to dicts; logical types stay Python objects, which JsonConverter turns to ints)."""
    if datum is None:
        return None
    if schema.type == "struct":
        return {f.name: _value(f.schema, datum.get(f.name)) for f in schema.fields}
    if schema.type == "array":
        assert schema.items is not None
        return [_value(schema.items, v) for v in datum]
    if schema.type == "map":
        assert schema.values is not None
        if isinstance(datum, list):
            assert schema.keys is not None
            return {_value(schema.keys, e["key"]): _value(schema.values, e["value"])
                    for e in datum}
        return {k: _value(schema.values, v) for k, v in datum.items()}
    return datum


class AvroReader:
    """Confluent wire format -> JsonConverter bytes, schemas fetched by id and cached."""

    def __init__(self, client: SchemaRegistryClient) -> None:
        self.client = client
        self._schemas: dict[int, tuple[Any, ConnectSchema]] = {}
        self._json = JsonConverter(schemas_enable=True)

    def schema(self, schema_id: int) -> tuple[Any, ConnectSchema]:
        found = self._schemas.get(schema_id)
        if found is None:
            avro = json.loads(self.client.schema_by_id(schema_id))
            found = self._schemas[schema_id] = (fastavro.parse_schema(avro),
                                                to_connect_schema(avro))
        return found

    def to_json(self, topic: str, data: bytes | None) -> bytes | None:
        if data is None:
            return None  # a tombstone stays one
        if len(data) < 5 or data[0] != 0:
            raise AvroFormatError(f"topic {topic}: a record that is not in Confluent's wire "
                                  "format (magic byte 0, schema id, Avro)")
        (schema_id,) = struct.unpack(">I", data[1:5])
        parsed, connect = self.schema(schema_id)
        datum = fastavro.schemaless_reader(io.BytesIO(data[5:]), parsed, None)
        return self._json.from_connect(topic, connect, _value(connect, datum))


BytesToJson = Callable[[str, bytes | None], bytes | None]
