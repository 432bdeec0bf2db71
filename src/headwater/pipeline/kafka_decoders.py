"""The pipeline's `ValueDecoder` for Kafka records, chosen by the connector's own
`key.converter` / `value.converter` (and their `*.converter.*` properties): the pipeline reads
what the capture wrote, so the same properties say how to read it.

JsonConverter records are what the decoders read already (identity).  AvroConverter records
(Confluent wire format) are turned into JsonConverter's bytes via the schema registry
(`converters.avro_read`), so the column-wise and event-by-event paths work unchanged and both
formats give the same target.  Other converters (String, ByteArray) do not carry Debezium's
envelope in a form the pipeline can read: refused when the pipeline starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from headwater.converters.factory import AVRO, JSON
from headwater.pipeline.kafka_source import ValueDecoder, json_decoder

_DEFAULT = JSON


def converter_problems(props: Mapping[str, str]) -> list[str]:
    """What keeps the pipeline from reading this connector's records (empty: nothing)."""
    problems = []
    for side in ("key", "value"):
        name = props.get(f"{side}.converter") or _DEFAULT
        if name not in (JSON, AVRO):
            problems.append(f"{side}.converter: the pipeline reads {JSON} or {AVRO} records "
                            f"from Kafka, not {name}")
    return problems


def decoder_for(props: Mapping[str, str]) -> ValueDecoder:
    """The decoder for the records the connector `props` writes (see the module doc)."""
    from headwater.converters.avro import AvroConverter
    from headwater.converters.avro_read import AvroReader
    from headwater.converters.factory import build_converter

    readers: dict[str, AvroReader | None] = {}
    for side in ("key", "value"):
        name = props.get(f"{side}.converter") or _DEFAULT
        if name == AVRO:
            converter = build_converter(AVRO, props, is_key=side == "key", schemas_enable=True)
            assert isinstance(converter, AvroConverter)
            readers[side] = AvroReader(converter.client)
        else:
            readers[side] = None
    key_reader, value_reader = readers["key"], readers["value"]
    if key_reader is None and value_reader is None:
        return json_decoder

    def decode(topic: str, key: bytes | None, value: bytes | None
               ) -> tuple[bytes | None, bytes | None]:
        return (key_reader.to_json(topic, key) if key_reader is not None else key,
                value_reader.to_json(topic, value) if value_reader is not None else value)

    return decode
