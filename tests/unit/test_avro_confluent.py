"""Headwater's AvroConverter checked by a real implementation: every record of the shared
samples and of a table with Kafka's logical types, written with each subject name strategy,
is decoded by confluent-kafka's own `SchemaRegistryClient` + `AvroDeserializer` (pointed at the
in-test registry, which follows Confluent's REST API) into the same record as its JsonConverter
form; the subjects are the ones confluent-kafka's own strategy functions name."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from headwater.converters.factory import AVRO, JSON, build_converter
from headwater.formats.structured import StructuredRenderer
from headwater.model.record import Op, SourceEvent
from headwater.model.schema import (
    ARRAY,
    BYTES,
    FLOAT32,
    INT8,
    INT32,
    INT64,
    MAP,
    STRING,
    STRUCT,
    Column,
    ConnectField,
    ConnectSchema,
    TableId,
    TableSchema,
)
from headwater.model.topic import TopicBatch
from headwater.transforms.chain import build_chain

from .avro_confluent import ConfluentAvro, json_record
from .connect_samples import debezium_format, rec, samples
from .fake_schema_registry import FakeSchemaRegistry

pytest.importorskip("confluent_kafka.schema_registry.avro")

STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")


def s(kind: str, optional: bool = True, **kw: Any) -> ConnectSchema:
    return ConnectSchema(kind, optional=optional, **kw)


VARIABLE_SCALE = s(STRUCT, name="io.debezium.data.VariableScaleDecimal", version=1,
                   doc="Variable scaled decimal", fields=(
                       ConnectField("scale", s(INT32, False)),
                       ConnectField("value", s(BYTES, False))))
WIDE = TableSchema(TableId("db", "public", "wide"), (
    Column("id", 0, "int4", s(INT32, False), fallback=0),
    Column("tiny", 1, "int1", s(INT8)),
    Column("f4", 2, "float4", s(FLOAT32)),
    Column("d", 3, "date", s(INT32, name="org.apache.kafka.connect.data.Date", version=1)),
    Column("t", 4, "time", s(INT32, name="org.apache.kafka.connect.data.Time", version=1)),
    Column("ts", 5, "timestamp", s(INT64, name="org.apache.kafka.connect.data.Timestamp",
                                   version=1)),
    Column("amount", 6, "numeric", s(BYTES, name="org.apache.kafka.connect.data.Decimal",
                                     version=1, parameters={"scale": "3"})),
    Column("anyscale", 7, "numeric", VARIABLE_SCALE),
    Column("counts", 8, "hstore", s(MAP, keys=s(STRING, False), values=s(INT64))),
    Column("names", 9, "map", s(MAP, keys=s(INT32, False), values=s(STRING))),
    Column("amounts", 10, "_numeric", s(ARRAY, items=s(
        BYTES, name="org.apache.kafka.connect.data.Decimal", version=1,
        parameters={"scale": "3"}))),
    Column("raw", 11, "bytea", s(BYTES)),
), ("id",))
ROW = (1, -7, 0.1, 19000, 45296789, 1700000000123, Decimal("-12.345"),
       {"scale": 2, "value": b"\x04\xd2"}, {"a": 1, "b": None}, {1: "x", -2: None},
       [Decimal("1.000"), None, Decimal("0.001")], b"\x00\xffhi")
NULLS = (2, *([None] * 11))


def events() -> list[SourceEvent]:
    return [*samples(),
            rec(WIDE, Op.CREATE, None, ROW), rec(WIDE, Op.UPDATE, ROW, NULLS),
            rec(WIDE, Op.DELETE, NULLS, None)]


def render(registry: FakeSchemaRegistry | None, strategy: str = "") -> TopicBatch:
    if registry is None:
        key = build_converter(JSON, {}, is_key=True, schemas_enable=True)
        value = build_converter(JSON, {}, is_key=False, schemas_enable=True)
    else:
        props = {f"{side}.converter.{name}": v for side in ("key", "value") for name, v in (
            ("schema.registry.url", registry.url),
            (f"{side}.subject.name.strategy",
             f"io.confluent.kafka.serializers.subject.{strategy}"))}
        key = build_converter(AVRO, props, is_key=True, schemas_enable=True)
        value = build_converter(AVRO, props, is_key=False, schemas_enable=True)
    return StructuredRenderer(debezium_format(), build_chain({}), key, value).render_batch(
        events())


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_confluent_deserializer_reads_the_json_records(strategy: str) -> None:
    from confluent_kafka.schema_registry import (
        record_subject_name_strategy,
        topic_record_subject_name_strategy,
        topic_subject_name_strategy,
    )
    from confluent_kafka.serialization import MessageField, SerializationContext

    naming = {"TopicNameStrategy": topic_subject_name_strategy,
              "RecordNameStrategy": record_subject_name_strategy,
              "TopicRecordNameStrategy": topic_record_subject_name_strategy}[strategy]
    json_batch = render(None)
    with FakeSchemaRegistry() as registry:
        avro_batch = render(registry, strategy)
        confluent = ConfluentAvro(registry.url)
        assert avro_batch.keys() == json_batch.keys()
        subjects: set[str] = set()
        compared = 0
        for topic, records in avro_batch.items():
            assert len(records) == len(json_batch[topic])
            for avro, json in zip(records, json_batch[topic], strict=True):
                for is_key, a, j in ((True, avro.key, json.key), (False, avro.value, json.value)):
                    assert confluent.decode(topic, a, is_key=is_key) == json_record(j), (
                        topic, is_key)
                    if a is None:
                        continue
                    compared += 1
                    # The subject confluent-kafka's serializer would use for this record.
                    schema_id = int.from_bytes(a[1:5], "big")
                    written = confluent.client.get_schema(schema_id)
                    assert written.schema_str is not None
                    record_name = _full_name(written.schema_str)
                    ctx = SerializationContext(topic, MessageField.KEY if is_key
                                               else MessageField.VALUE)
                    subject = naming(ctx, record_name)
                    assert subject is not None
                    subjects.add(subject)
        assert compared == sum((r.key is not None) + (r.value is not None)
                               for rs in json_batch.values() for r in rs) > 30
        assert set(registry.subjects) == subjects
    wide = next(r for r in avro_batch["inv.public.wide"] if r.value is not None)
    decoded = confluent_decode_offline(wide.value)
    assert decoded["after"]["d"] == dt.date(2022, 1, 8)
    assert decoded["after"]["ts"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000,
                                                 tzinfo=dt.UTC)
    assert decoded["after"]["amount"] == Decimal("-12.345")


def _full_name(schema_text: str) -> str:
    import json

    doc = json.loads(schema_text)
    return f"{doc['namespace']}.{doc['name']}" if doc.get("namespace") else doc["name"]


def confluent_decode_offline(data: bytes | None) -> Any:
    """The same record decoded once more outside the registry session: the wire format's
    schema id names the writer schema, which the records carry no other way."""
    with FakeSchemaRegistry() as registry:
        batch = render(registry, "TopicNameStrategy")
        wide = next(r for r in batch["inv.public.wide"] if r.value is not None)
        assert wide.value == data  # deterministic: same schema ids in a fresh registry
        return ConfluentAvro(registry.url).decode("inv.public.wide", wide.value, is_key=False)
