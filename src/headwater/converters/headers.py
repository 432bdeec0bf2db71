"""Record headers as a Kafka Connect worker's `header.converter` writes them, and read back.

Kafka Connect turns each header (key, Connect schema, value) into bytes with the worker's
`header.converter`; by default `org.apache.kafka.connect.storage.SimpleHeaderConverter`, which
writes `Values.convertToString` as UTF-8 (`kb` for the string `kb`, `{"id":2}` for a key
struct) and null for a null value.  A sink in a worker with default settings, such as
Debezium's JDBC sink reading `__debezium.context.*` and `__debezium.newkey`, reads them back with
the same converter, so Headwater writes that form unless `header.converter` names another
(JsonConverter, whose `header.converter.schemas.enable` defaults to true, or StringConverter).

The bytes are made once, by the format (`DebeziumJsonFormat`, `StructuredRenderer`); the topic
log and the Kafka writer store them as they are.  `header_value` is the one reader: it takes
either form, so topics written by older Headwater versions (JsonConverter envelopes) or under a
configured JsonConverter read the same.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from headwater.converters.values import convert_to_string, parse_string
from headwater.model.schema import ConnectSchema

SIMPLE_HEADER_CONVERTER: Final = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

__all__ = ["SIMPLE_HEADER_CONVERTER", "SimpleHeaderConverter", "header_value"]


class SimpleHeaderConverter:
    """`SimpleHeaderConverter.fromConnectHeader`: `Values.convertToString` in UTF-8."""

    def from_connect(self, topic: str, schema: ConnectSchema | None, value: Any) -> bytes | None:
        text = convert_to_string(schema, value)
        return None if text is None else text.encode("utf-8")


def header_value(raw: bytes | None) -> Any:
    """The value of a header written by either converter: a JsonConverter envelope
    (`{"schema":...,"payload":...}`) gives its payload, anything else is read as
    SimpleHeaderConverter text (`Values.parseString`: `kb` is the string, `{"id":2}` a map).

    A quoted string (JsonConverter without schemas, `"kb"`) reads as the string inside, where
    Kafka's parser would keep the quotes: that is the value its writer meant."""
    if raw is None:
        return None
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(raw)  # SimpleHeaderConverter's own fallback: the bytes as BYTES
    if text.startswith('{"schema":'):
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and doc.keys() == {"schema", "payload"}:
            return doc["payload"]
    if text.startswith('"') and text.endswith('"') and len(text) > 1:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return parse_string(text)
