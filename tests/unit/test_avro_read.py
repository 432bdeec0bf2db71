"""Avro back to JsonConverter bytes (`converters.avro_read`): every sample record written by
AvroConverter through the in-test registry (Confluent's documented REST API, not Confluent's
server: see fake_schema_registry.py) reads back as the bytes JsonConverter writes for it."""

from __future__ import annotations

import pytest

from headwater.converters.avro_read import AvroFormatError, AvroReader, to_connect_schema
from headwater.converters.connect_json import schema_to_json
from headwater.converters.factory import AVRO, JSON, build_converter
from headwater.converters.registry import SchemaRegistryClient
from headwater.formats.structured import StructuredRenderer
from headwater.model.schema import ConnectSchema
from headwater.transforms.chain import build_chain

from .connect_samples import debezium_format, samples
from .fake_schema_registry import FakeSchemaRegistry


def render(converter: str, props: dict[str, str]) -> dict[str, list[tuple[bytes | None,
                                                                           bytes | None]]]:
    key = build_converter(converter, props, is_key=True, schemas_enable=True)
    value = build_converter(converter, props, is_key=False, schemas_enable=True)
    batch = StructuredRenderer(debezium_format(), build_chain({}), key, value
                               ).render_batch(samples())
    return {t: [(r.key, r.value) for r in recs] for t, recs in batch.items()}


@pytest.mark.parametrize("meta", ["true", "false"])
def test_avro_reads_back_as_the_json_converter_bytes(meta: str) -> None:
    with FakeSchemaRegistry() as registry:
        props = {f"{side}.converter.{k}": v for side in ("key", "value")
                 for k, v in (("schema.registry.url", registry.url),
                              ("connect.meta.data", meta))}
        avro = render(AVRO, props)
        json_ = render(JSON, {})
        reader = AvroReader(SchemaRegistryClient([registry.url]))
        assert avro.keys() == json_.keys()
        for topic, records in avro.items():
            for (k, v), (jk, jv) in zip(records, json_[topic], strict=True):
                if meta == "true":
                    assert reader.to_json(topic, k) == jk
                    assert reader.to_json(topic, v) == jv
                else:  # the payload survives; Connect names/versions of primitives do not
                    assert (reader.to_json(topic, v) is None) == (jv is None)


def test_connect_schema_round_trip() -> None:
    from headwater.converters.avro import to_avro_schema

    from .connect_samples import ITEMS

    for column in ITEMS.columns:
        schema = column.schema
        back = to_connect_schema(to_avro_schema(schema))
        assert schema_to_json(back) == schema_to_json(schema), column.name
    opt = ConnectSchema("string", True, default="x")
    assert schema_to_json(to_connect_schema(to_avro_schema(opt))) == schema_to_json(opt)


def test_not_wire_format() -> None:
    reader = AvroReader(SchemaRegistryClient(["http://127.0.0.1:1"]))
    with pytest.raises(AvroFormatError, match="wire format"):
        reader.to_json("t", b'{"schema":')
    assert reader.to_json("t", None) is None
