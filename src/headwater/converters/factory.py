"""Builds the key, value and header converters from `key.converter` / `value.converter` /
`header.converter` and their `*.converter.*` properties (every property must be one the
converter implements)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from headwater.connect.props import PluginConfigError, PluginProps, sub_props
from headwater.converters.base import Converter

JSON: Final = "org.apache.kafka.connect.json.JsonConverter"
STRING: Final = "org.apache.kafka.connect.storage.StringConverter"
BYTE_ARRAY: Final = "org.apache.kafka.connect.converters.ByteArrayConverter"
AVRO: Final = "io.confluent.connect.avro.AvroConverter"
CLOUDEVENTS: Final = "io.debezium.converters.CloudEventsConverter"
SUPPORTED: Final = (JSON, STRING, BYTE_ARRAY, AVRO, CLOUDEVENTS)
# Converters whose bytes are JSON documents (the local topic log stores only those).
JSON_BYTES: Final = (JSON, CLOUDEVENTS)
SIMPLE_HEADER: Final = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
# The `header.converter` classes (Kafka Connect's HeaderConverter implementations that can
# write Debezium's headers: ByteArrayConverter refuses their STRING and STRUCT schemas).
HEADER_SUPPORTED: Final = (SIMPLE_HEADER, JSON, STRING)


def check_converter_class(text: str) -> str:
    """Property parser of `key.converter` / `value.converter`."""
    if text not in SUPPORTED:
        raise ValueError("one of " + ", ".join(SUPPORTED))
    return text


def check_header_converter_class(text: str) -> str:
    """Property parser of `header.converter`."""
    if text not in HEADER_SUPPORTED:
        raise ValueError("one of " + ", ".join(HEADER_SUPPORTED))
    return text


def _json(p: PluginProps, schemas_enable: bool) -> Converter:
    from headwater.converters.json import JsonConverter

    p.ignore("schemas.cache.size")  # a cache size: no effect on the bytes
    p.choice("decimal.format", ("BASE64",), "BASE64")
    p.choice("converter.type", ("key", "value", "header"), None)
    if p.has("replace.null.with.default") and p.get_bool("replace.null.with.default", True):
        raise PluginConfigError(
            f"{p.prefix}replace.null.with.default=true: Headwater writes null values as null "
            "(set false or leave unset)")
    return JsonConverter(schemas_enable)


def _string(p: PluginProps) -> Converter:
    from headwater.converters.simple import StringConverter

    encoding = p.get_str("converter.encoding", "UTF-8") or "UTF-8"
    enc = p.get_str("encoding")
    try:
        "".encode(enc or encoding)
    except LookupError:
        raise PluginConfigError(f"{p.prefix}converter.encoding: unknown encoding") from None
    return StringConverter(enc or encoding)


def build_header_converter(class_name: str, props: Mapping[str, str]) -> Converter:
    """The `header.converter` configured from the `header.converter.*` properties; the
    default of a Kafka Connect worker is SimpleHeaderConverter (headwater.converters.headers).
    JsonConverter's `header.converter.schemas.enable` defaults to true, as in Connect."""
    prefix = "header.converter."
    p = PluginProps(f"header.converter {class_name}", prefix, sub_props(props, prefix))
    converter: Converter
    if class_name == SIMPLE_HEADER:
        from headwater.converters.headers import SimpleHeaderConverter

        converter = SimpleHeaderConverter()
    elif class_name == JSON:
        converter = _json(p, p.get_bool("schemas.enable", True))
    elif class_name == STRING:
        converter = _string(p)
    else:
        raise PluginConfigError(f"header.converter: '{class_name}' is not supported "
                                f"(supported: {', '.join(HEADER_SUPPORTED)})")
    p.check_all_read()
    return converter


def build_converter(class_name: str, props: Mapping[str, str], *, is_key: bool,
                    schemas_enable: bool) -> Converter:
    """The converter `class_name` configured from the `<key|value>.converter.*` properties
    (`props`: all connector properties; `schemas.enable` comes typed in `schemas_enable`)."""
    side = "key" if is_key else "value"
    prefix = f"{side}.converter."
    own = sub_props(props, prefix)
    own.pop("schemas.enable", None)
    p = PluginProps(f"{side}.converter {class_name}", prefix, own)
    converter: Converter
    if class_name == JSON:
        converter = _json(p, schemas_enable)
    elif class_name == STRING:
        converter = _string(p)
    elif class_name == BYTE_ARRAY:
        from headwater.converters.simple import ByteArrayConverter

        converter = ByteArrayConverter()
    elif class_name == AVRO:
        from headwater.converters.avro import AvroConverter

        converter = AvroConverter.from_props(p, is_key=is_key)
    elif class_name == CLOUDEVENTS:
        # Debezium's converter reads `json.schemas.enable`, not `schemas.enable` (ignored, as
        # there); keys are no envelopes, so a CloudEvents key converter writes null keys.
        from headwater.converters.cloudevents import CloudEventsConverter

        converter = CloudEventsConverter(p)
    else:
        raise PluginConfigError(f"{side}.converter: '{class_name}' is not supported "
                                f"(supported: {', '.join(SUPPORTED)})")
    p.check_all_read()
    return converter
