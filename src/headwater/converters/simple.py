"""Kafka's `StringConverter` and `ByteArrayConverter`: no schema, no envelope.

StringConverter writes `String.valueOf(value)` in UTF-8 (its `converter.encoding`); for a Struct
or a Map that is Java's `toString`, which no consumer can parse reliably, so Headwater refuses
structured values instead of inventing a rendering.  ByteArrayConverter accepts only BYTES.
"""

from __future__ import annotations

from typing import Any

from headwater.connect.record import TransformError
from headwater.model.schema import ConnectSchema


class StringConverter:
    def __init__(self, encoding: str = "UTF-8") -> None:
        self.encoding = encoding

    def from_connect(self, topic: str, schema: ConnectSchema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, (dict, list)):
            raise TransformError(
                f"StringConverter cannot write a {schema.type if schema else 'structured'} "
                f"value (topic {topic}): Java's toString form is not supported; use an "
                "unwrapping/extracting transform or another converter")
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (bytes, bytearray)):
            raise TransformError(f"StringConverter cannot write BYTES (topic {topic})")
        else:
            text = str(value)
        return text.encode(self.encoding)


class ByteArrayConverter:
    def from_connect(self, topic: str, schema: ConnectSchema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if schema is not None and schema.type != "bytes":
            raise TransformError(
                f"ByteArrayConverter: invalid schema type {schema.type} for topic {topic}: "
                "only BYTES is supported")
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TransformError(
                f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}")
        return bytes(value)
