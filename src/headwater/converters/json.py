"""`org.apache.kafka.connect.json.JsonConverter`, producing exactly the fast path's bytes.

With `schemas.enable` the record is `{"schema": ..., "payload": ...}` with the schema in the
layout of `headwater.converters.connect_json` (cached per schema object: most records of a topic
share one); without, the payload alone.  BYTES and Decimal are base64 like the fast path; the
Kafka Date/Time/Timestamp logical types (made by TimestampConverter) are written as the integers
JsonConverter writes for them.  A map whose keys are not strings is written as JsonConverter
writes it: an array of `[key, value]` pairs (a JSON object only when the key schema is STRING;
schemaless, when every key is a string).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from headwater.connect.logical import logical_to_int
from headwater.converters.connect_json import json_default, schema_to_json
from headwater.model.schema import ARRAY, MAP, STRING, STRUCT, ConnectSchema

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview, Decimal)):
        return json_default(value)
    converted = logical_to_int(value)
    if converted is value:
        raise TypeError(f"cannot encode {type(value).__name__} as Kafka Connect JSON")
    return converted


def _has_pair_maps(schema: ConnectSchema) -> bool:
    """Whether a schema holds a map with non-STRING keys (written as pairs)."""
    if schema.type == MAP:
        assert schema.keys is not None and schema.values is not None
        return schema.keys.type != STRING or _has_pair_maps(schema.values)
    if schema.type == ARRAY:
        assert schema.items is not None
        return _has_pair_maps(schema.items)
    if schema.type == STRUCT:
        return any(_has_pair_maps(f.schema) for f in schema.fields)
    return False


def _pairs(schema: ConnectSchema | None, value: Any) -> Any:
    """The value with every non-STRING-keyed map as JsonConverter's `[[key, value], ...]`."""
    if value is None:
        return None
    if schema is None:
        if isinstance(value, dict):
            if all(isinstance(k, str) for k in value):
                return {k: _pairs(None, v) for k, v in value.items()}
            return [[_pairs(None, k), _pairs(None, v)] for k, v in value.items()]
        if isinstance(value, list):
            return [_pairs(None, v) for v in value]
        return value
    if schema.type == MAP:
        assert schema.keys is not None and schema.values is not None
        if schema.keys.type == STRING:
            return {k: _pairs(schema.values, v) for k, v in value.items()}
        return [[_pairs(schema.keys, k), _pairs(schema.values, v)] for k, v in value.items()]
    if schema.type == ARRAY:
        return [_pairs(schema.items, v) for v in value]
    if schema.type == STRUCT:
        out = dict(value)
        for f in schema.fields:
            if f.name in out:
                out[f.name] = _pairs(f.schema, out[f.name])
        return out
    return value


class JsonConverter:
    """Kafka Connect JSON with or without the schema envelope."""

    def __init__(self, schemas_enable: bool = True) -> None:
        self.schemas_enable = schemas_enable
        self._schemas: dict[int, tuple[ConnectSchema, bytes]] = {}
        self._pair_maps: dict[int, tuple[ConnectSchema, bool]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"schemas_enable": self.schemas_enable}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["schemas_enable"])  # type: ignore[misc]

    def schema_bytes(self, schema: ConnectSchema | None) -> bytes:
        if schema is None:
            return b"null"
        cached = self._schemas.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        rendered = orjson.dumps(schema_to_json(schema))
        if len(self._schemas) > 4096:
            self._schemas.clear()
        self._schemas[id(schema)] = (schema, rendered)
        return rendered

    def _needs_pairs(self, schema: ConnectSchema) -> bool:
        cached = self._pair_maps.get(id(schema))
        if cached is None or cached[0] is not schema:
            if len(self._pair_maps) > 4096:
                self._pair_maps.clear()
            cached = self._pair_maps[id(schema)] = (schema, _has_pair_maps(schema))
        return cached[1]

    def from_connect(self, topic: str, schema: ConnectSchema | None, value: Any) -> bytes | None:
        if schema is None and value is None:
            return None
        if schema is None or self._needs_pairs(schema):
            value = _pairs(schema, value)
        body = orjson.dumps(value, default=_default, option=_OPTIONS)
        if not self.schemas_enable:
            return body
        return b'{"schema":' + self.schema_bytes(schema) + b',"payload":' + body + b"}"
