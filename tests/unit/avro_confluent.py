"""Decoding Headwater's Avro records with confluent-kafka's own `SchemaRegistryClient` and
`AvroDeserializer`, and the JSON form of the same records mapped to what that deserializer
returns, so that the two can be compared as equal records (tests/unit/test_avro_confluent.py,
tests/kafka/test_avro_confluent.py)."""

from __future__ import annotations

import base64
import datetime as dt
import struct
from decimal import Decimal
from typing import Any

import orjson

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# The Connect names that AvroData maps to Avro logical types (and back from the deserializer).
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_DATE = "org.apache.kafka.connect.data.Date"
_TIME = "org.apache.kafka.connect.data.Time"
_TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"


class ConfluentAvro:
    """confluent-kafka's deserializer pointed at a registry URL (the writer schema is fetched
    by the id in the wire format)."""

    def __init__(self, url: str) -> None:
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        self.client = SchemaRegistryClient({"url": url})
        self.deserializer = AvroDeserializer(self.client)

    def decode(self, topic: str, data: bytes | None, *, is_key: bool) -> Any:
        from confluent_kafka.serialization import MessageField, SerializationContext

        field = MessageField.KEY if is_key else MessageField.VALUE
        return self.deserializer(data, SerializationContext(topic, field))


def _float32(value: float) -> float:
    (single,) = struct.unpack("<f", struct.pack("<f", value))
    return float(single)


def avro_form(schema: dict[str, Any] | None, value: Any) -> Any:
    """A JsonConverter payload (with its Connect schema JSON) as the Avro datum
    AvroDeserializer gives for the same Connect data: bytes decoded from base64, Kafka's
    Decimal/Date/Time/Timestamp as Decimal/date/time/datetime, FLOAT32 at float32 precision,
    maps with non-string keys as AvroData's MapEntry records."""
    if value is None or schema is None:
        return value
    kind, name = schema["type"], schema.get("name")
    if kind == "struct":
        return {f["field"]: avro_form(f, value.get(f["field"])) for f in schema["fields"]}
    if kind == "array":
        return [avro_form(schema["items"], v) for v in value]
    if kind == "map":
        keys, values = schema["keys"], schema["values"]
        if keys["type"] == "string" and not keys.get("optional", False):
            return {k: avro_form(values, v) for k, v in value.items()}
        return [{"key": avro_form(keys, k), "value": avro_form(values, v)} for k, v in value]
    if kind == "bytes":
        raw = base64.b64decode(value)
        if name == _DECIMAL:
            scale = int(schema["parameters"]["scale"])
            unscaled = int.from_bytes(raw, "big", signed=True)
            digits = tuple(int(c) for c in str(abs(unscaled)))
            return Decimal((1 if unscaled < 0 else 0, digits, -scale))
        return raw
    if name == _DATE:
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if name == _TIME:
        return (_EPOCH + dt.timedelta(milliseconds=value)).time()
    if name == _TIMESTAMP:
        return _EPOCH + dt.timedelta(milliseconds=value)
    if kind == "float":
        return _float32(value)
    return value


def json_record(data: bytes | None) -> Any:
    """A JsonConverter record (schemas enabled) in the Avro datum form; None for null."""
    if data is None:
        return None
    doc = orjson.loads(data)
    return avro_form(doc["schema"], doc["payload"])
