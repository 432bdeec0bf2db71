"""Kafka Connect JsonConverter rendering of schemas and of the values it cannot write natively.

Consumers of Debezium's JSON events parse `{"schema": ..., "payload": ...}` produced by
`org.apache.kafka.connect.json.JsonConverter`; this module reproduces its schema layout
(`type`, `fields`/`items`/`keys`/`values`, `optional`, `name`, `version`, `doc`, `parameters`,
`default`, and `field` for struct members) and its value encodings: BYTES as base64, Connect
`Decimal` as the base64 of the unscaled two's-complement big-endian integer.
"""

from __future__ import annotations

import base64
import re
from decimal import Decimal
from typing import Any

from headwater.convert.decimal import decimal_to_unscaled_bytes
from headwater.model.schema import NO_DEFAULT, ConnectSchema

_AVRO_INVALID = re.compile(r"[^A-Za-z0-9_]")
# JsonConverter names FLOAT32 and FLOAT64 "float" and "double" (its JsonSchema type names);
# every other Connect type keeps its lower-case name.
_JSON_TYPE_NAMES = {"float32": "float", "float64": "double"}


def schema_to_json(schema: ConnectSchema, field_name: str | None = None) -> dict[str, Any]:
    """The JsonConverter form of one schema (a struct member when `field_name` is given)."""
    node: dict[str, Any] = {"type": _JSON_TYPE_NAMES.get(schema.type, schema.type)}
    if schema.fields:
        node["fields"] = [schema_to_json(f.schema, f.name) for f in schema.fields]
    elif schema.type == "struct":
        node["fields"] = []
    if schema.items is not None:
        node["items"] = schema_to_json(schema.items)
    if schema.keys is not None:
        node["keys"] = schema_to_json(schema.keys)
    if schema.values is not None:
        node["values"] = schema_to_json(schema.values)
    node["optional"] = schema.optional
    if schema.name is not None:
        node["name"] = schema.name
    if schema.version is not None:
        node["version"] = schema.version
    if schema.doc is not None:
        node["doc"] = schema.doc
    if schema.parameters:
        node["parameters"] = dict(schema.parameters)
    if schema.default is not NO_DEFAULT:
        node["default"] = json_default(schema.default) if isinstance(
            schema.default, (bytes, Decimal)
        ) else schema.default
    if field_name is not None:
        node["field"] = field_name
    return node


def json_default(value: Any) -> Any:
    """orjson `default=` hook: the Connect JSON encodings of bytes and decimals."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Decimal):
        return base64.b64encode(decimal_to_unscaled_bytes(value)).decode("ascii")
    raise TypeError(f"cannot encode {type(value).__name__} as Kafka Connect JSON")


def avro_name(part: str, *, first: bool = False) -> str:
    """Sanitise one dotted part of a schema name to Avro rules (invalid characters become `_`)."""
    cleaned = _AVRO_INVALID.sub("_", part)
    if first and cleaned and not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = "_" + cleaned[1:]  # Debezium replaces an invalid first character
    return cleaned
