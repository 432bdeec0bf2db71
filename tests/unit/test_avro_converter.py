"""AvroConverter: Confluent wire format and AvroData's schema mapping, against an in-test
registry that follows the documented Confluent Schema Registry REST API (not Confluent's
server: see fake_schema_registry.py)."""

from __future__ import annotations

import io
import json
import struct
from decimal import Decimal
from typing import Any

import fastavro
import pytest

from headwater.connect.props import PluginConfigError
from headwater.converters.avro import to_avro_schema
from headwater.converters.factory import AVRO, build_converter
from headwater.formats.structured import StructuredRenderer
from headwater.model.record import Op
from headwater.model.schema import (
    INT8,
    INT32,
    MAP,
    STRING,
    ConnectField,
    ConnectSchema,
)
from headwater.transforms.chain import build_chain

from .connect_samples import ITEM, ITEMS, debezium_format, rec, samples
from .fake_schema_registry import FakeSchemaRegistry


def decode(registry: FakeSchemaRegistry, data: bytes) -> tuple[int, Any, Any]:
    """Decode Confluent wire format bytes with the schema fetched from the registry."""
    assert data[0] == 0
    (schema_id,) = struct.unpack(">I", data[1:5])
    import urllib.request

    with urllib.request.urlopen(f"{registry.url}/schemas/ids/{schema_id}") as response:
        schema = json.loads(json.loads(response.read())["schema"])
    parsed = fastavro.parse_schema(schema)
    return schema_id, schema, fastavro.schemaless_reader(io.BytesIO(data[5:]), parsed)


def renderer(registry: FakeSchemaRegistry, props: dict[str, str] | None = None,
             chain: dict[str, str] | None = None) -> StructuredRenderer:
    all_props = {"key.converter.schema.registry.url": registry.url,
                 "value.converter.schema.registry.url": registry.url, **(props or {})}
    key = build_converter(AVRO, all_props, is_key=True, schemas_enable=True)
    value = build_converter(AVRO, all_props, is_key=False, schemas_enable=True)
    return StructuredRenderer(debezium_format(), build_chain(chain or {}), key, value)


def test_debezium_envelope_round_trips_through_registry_and_fastavro() -> None:
    with FakeSchemaRegistry() as registry:
        batch = renderer(registry).render_batch(samples())
        items = batch["inv.shop.items"]
        _, schema, value = decode(registry, items[0].value or b"")
        assert schema["type"] == "record" and schema["name"] == "Envelope"
        assert schema["namespace"] == "inv.shop.items"
        assert schema["connect.name"] == "inv.shop.items.Envelope"
        assert schema["connect.version"] == 2
        before = schema["fields"][0]
        assert before["name"] == "before" and before["default"] is None
        assert before["type"][0] == "null" and before["type"][1]["name"] == "Value"
        assert schema["fields"][1]["type"] == ["null", "inv.shop.items.Value"]  # by name
        fields = {f["name"]: f["type"] for f in before["type"][1]["fields"]}
        assert fields["price"] == ["null", {
            "type": "bytes", "scale": 2, "precision": 10, "logicalType": "decimal",
            "connect.version": 1,
            "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "connect.name": "org.apache.kafka.connect.data.Decimal"}]
        assert fields["at"] == ["null", {"type": "long", "connect.version": 1,
                                         "connect.name": "io.debezium.time.MicroTimestamp"}]
        assert fields["line"] == {"type": "int", "connect.type": "int16"}
        after = value["after"]
        assert after["price"] == Decimal("12.34") and after["blob"] == b"\x00\xff"
        assert after["tags"] == ["a", None] and after["at"] == ITEM[7]
        assert value["op"] == "c" and value["source"]["table"] == "items"
        assert value["transaction"]["total_order"] == 3
        _, key_schema, key = decode(registry, items[0].key or b"")
        assert key == {"order_id": 7, "line": 1} and key_schema["name"] == "Key"
        assert {"inv.shop.items-key", "inv.shop.items-value", "inv.public.customers-value"
                } <= set(registry.subjects)
        # Identical schemas are registered once per run: one POST per subject.
        posts = [p for m, p in registry.requests if m == "POST"]
        assert len(posts) == len(set(posts))
        # Tombstones stay null.
        assert any(r.value is None for r in batch["inv.public.customers"])


def test_unwrapped_row_is_an_optional_union_and_subject_strategies() -> None:
    unwrap = {"transforms": "unwrap",
              "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState"}
    strategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
    with FakeSchemaRegistry() as registry:
        r = renderer(registry, {"value.converter.value.subject.name.strategy": strategy,
                                "key.converter.key.subject.name.strategy": "RecordNameStrategy"},
                     unwrap)
        batch = r.render_batch([rec(ITEMS, Op.CREATE, None, ITEM)])
        (out,) = batch["inv.shop.items"]
        _, schema, value = decode(registry, out.value or b"")
        assert schema[0] == "null" and schema[1]["connect.name"] == "inv.shop.items.Value"
        assert value["price"] == Decimal("12.34")
        assert set(registry.subjects) == {"inv.shop.items-union", "inv.shop.items.Key"}


def test_basic_auth_user_info_and_lookup_without_registering() -> None:
    with FakeSchemaRegistry(user_info="u:p") as registry:
        props = {"value.converter.basic.auth.credentials.source": "USER_INFO",
                 "value.converter.basic.auth.user.info": "u:p",
                 "key.converter.schema.registry.url": registry.url.replace("://", "://u:p@")}
        out = renderer(registry, props).render_batch([rec(ITEMS, Op.CREATE, None, ITEM)])
        assert out["inv.shop.items"][0].value is not None
        props["value.converter.auto.register.schemas"] = "false"
        fresh = renderer(registry, props)
        assert fresh.render_batch([rec(ITEMS, Op.CREATE, None, ITEM)]) == out
        assert ("POST", "/subjects/inv.shop.items-value") in registry.requests


def test_connect_schema_mapping_details() -> None:
    unnamed = ConnectSchema("struct", optional=False, fields=(
        ConnectField("b", ConnectSchema(INT8, optional=False)),
        ConnectField("s", ConnectSchema(STRING, optional=True, default="x")),
        ConnectField("m", ConnectSchema(MAP, optional=False, keys=ConnectSchema(
            INT32, optional=False), values=ConnectSchema(STRING, optional=True))),
    ))
    avro = to_avro_schema(unnamed)
    assert avro["name"] == "ConnectDefault" and avro["namespace"] == "io.confluent.connect.avro"
    assert avro["fields"][0]["type"] == {"type": "int", "connect.type": "int8"}
    assert avro["fields"][1] == {"name": "s", "type": [
        {"type": "string", "connect.default": "x"}, "null"], "default": "x"}
    assert avro["fields"][2]["type"]["items"]["name"] == "MapEntry"
    assert to_avro_schema(unnamed, meta=False)["fields"][0]["type"] == "int"
    fastavro.parse_schema(avro)


@pytest.mark.parametrize(("props", "message"), [
    ({}, "schema.registry.url: missing"),
    ({"value.converter.schema.registry.url": "http://x",
      "value.converter.value.subject.name.strategy": "Nope"}, "is not one of"),
    ({"value.converter.schema.registry.url": "http://x",
      "value.converter.schema.registry.ssl.truststore.location": "/t"},
     "value.converter.schema.registry.ssl.truststore.location"),
    ({"value.converter.schema.registry.url": "http://x",
      "value.converter.basic.auth.user.info": "a:b"}, "USER_INFO"),
])
def test_avro_configuration_errors(props: dict[str, str], message: str) -> None:
    with pytest.raises(PluginConfigError, match=message):
        build_converter(AVRO, props, is_key=False, schemas_enable=True)
