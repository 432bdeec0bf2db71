"""`org.apache.kafka.connect.json.JsonConverter`, producing exactly the fast path's bytes.

With `schemas.enable` the record is `{"schema": ..., "payload": ...}` with the schema in the
layout of `headwater.formats.connect_json` (cached per schema object: most records of a topic
share one); without, the payload alone.  BYTES and Decimal are base64 like the fast path; the
Kafka Date/Time/Timestamp logical types (made by TimestampConverter) are written as the integers
JsonConverter writes for them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from headwater.converters.base import logical_to_int
from headwater.formats.connect_json import json_default, schema_to_json
from headwater.model.schema import ConnectSchema

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview, Decimal)):
        return json_default(value)
    converted = logical_to_int(value)
    if converted is value:
        raise TypeError(f"cannot encode {type(value).__name__} as Kafka Connect JSON")
    return converted


class JsonConverter:
    """Kafka Connect JSON with or without the schema envelope."""

    def __init__(self, schemas_enable: bool = True) -> None:
        self.schemas_enable = schemas_enable
        self._schemas: dict[int, tuple[ConnectSchema, bytes]] = {}

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

    def from_connect(self, topic: str, schema: ConnectSchema | None, value: Any) -> bytes | None:
        if schema is None and value is None:
            return None
        body = orjson.dumps(value, default=_default, option=_OPTIONS)
        if not self.schemas_enable:
            return body
        return b'{"schema":' + self.schema_bytes(schema) + b',"payload":' + body + b"}"
