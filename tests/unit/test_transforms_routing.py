"""ByLogicalTableRouter and the outbox EventRouter against the behaviour Debezium 3.x has."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord, TransformError
from headwater.converters.json import JsonConverter
from headwater.formats.structured import StructuredRenderer
from headwater.model.record import Op
from headwater.model.schema import INT64, STRING, Column, ConnectSchema, TableId, TableSchema
from headwater.transforms.chain import build_chain
from headwater.transforms.names import field_name_adjuster, schema_name_adjuster

from .connect_samples import CUSTOMERS, debezium_format, rec, samples

ROUTER = "io.debezium.transforms.ByLogicalTableRouter"
OUTBOX = "io.debezium.transforms.outbox.EventRouter"


def run(cls: str, props: dict[str, str], events: list[Any]) -> list[ConnectRecord]:
    chain = build_chain({"transforms": "t", "transforms.t.type": cls,
                         **{f"transforms.t.{k}": v for k, v in props.items()}})
    renderer = StructuredRenderer(debezium_format(), chain, JsonConverter(), JsonConverter())
    return renderer.transformed(events)


# -- ByLogicalTableRouter ----------------------------------------------------------------------

def test_logical_router_renames_topic_and_schemas_and_extends_the_key() -> None:
    out = run(ROUTER, {"topic.regex": r"inv\.public\.(.*)", "topic.replacement": "all.$1s"},
              samples())
    cust = [r for r in out if r.topic == "all.customerss"]
    assert len(cust) == 8
    first = cust[0]
    assert first.key_schema is not None and first.key_schema.name == "all.customerss.Key"
    assert [(f.name, f.schema.type, f.schema.optional) for f in first.key_schema.fields] == [
        ("id", "int32", False), ("__dbz__physicalTableIdentifier", "string", False)]
    assert first.key == {"id": 1, "__dbz__physicalTableIdentifier": "inv.public.customers"}
    assert first.value_schema is not None
    assert first.value_schema.name == "all.customerss.Envelope"
    fields = {f.name: f.schema for f in first.value_schema.fields}
    assert fields["before"].name == fields["after"].name == "all.customerss.Value"
    assert fields["before"].optional
    assert first.value["after"] == {"id": 1, "first_name": "Anne", "email": "a@x"}
    tombstone = cust[4]
    assert tombstone.value is None and tombstone.key is not None
    assert tombstone.key["__dbz__physicalTableIdentifier"] == "inv.public.customers"
    # Topics that do not match are left alone, whole-name match.
    assert any(r.topic == "inv.shop.items" for r in out)
    assert any(r.topic == "inv.transaction" for r in out)


def test_logical_router_key_regex_uniqueness_off_and_adjustment() -> None:
    props = {"topic.regex": r"inv\.public\.(.*)", "topic.replacement": "shard-all",
             "key.field.name": "shard", "key.field.regex": r"inv\.(.*)\.customers",
             "key.field.replacement": "$1", "schema.name.adjustment.mode": "avro"}
    first = run(ROUTER, props, samples())[0]
    assert first.key == {"id": 1, "shard": "public"}
    assert first.key_schema is not None and first.key_schema.name == "shard_all.Key"
    assert first.value_schema is not None and first.value_schema.name == "shard_all.Envelope"
    plain = run(ROUTER, {"topic.regex": r"inv\.public\.(.*)", "topic.replacement": "x",
                         "key.enforce.uniqueness": "false"}, samples())[0]
    assert plain.key == {"id": 1} and plain.key_schema is not None
    assert plain.key_schema.name == "x.Key"


def test_logical_router_configuration_errors() -> None:
    with pytest.raises(PluginConfigError, match=r"topic\.replacement"):
        build_chain({"transforms": "t", "transforms.t.type": ROUTER,
                     "transforms.t.topic.regex": "a"})
    with pytest.raises(PluginConfigError, match=r"key\.field\.replacement"):
        build_chain({"transforms": "t", "transforms.t.type": ROUTER,
                     "transforms.t.topic.regex": "a", "transforms.t.topic.replacement": "b",
                     "transforms.t.key.field.regex": "a"})


def test_name_adjusters_follow_debezium() -> None:
    avro = schema_name_adjuster("avro")
    assert avro("inv.public.my-table.Key") == "inv.public.my_table.Key"
    assert avro("1abc") == "_1abc"
    unicode = schema_name_adjuster("avro_unicode")
    assert unicode("a-b_c") == "a_u002db_u005fc"
    assert field_name_adjuster("avro")("a.b") == "a_b"
    assert schema_name_adjuster("none")("a-b") == "a-b"
    conflicts = schema_name_adjuster("avro")
    conflicts("a-b")
    with pytest.raises(TransformError, match="conflicts"):
        conflicts("a+b")


# -- Outbox EventRouter -------------------------------------------------------------------------

JSON = ConnectSchema(STRING, optional=True, name="io.debezium.data.Json", version=1)
UUID = ConnectSchema(STRING, optional=False, name="io.debezium.data.Uuid", version=1)
OUTBOX_TABLE = TableSchema(TableId("db", "public", "outbox"), (
    Column("id", 0, "uuid", UUID),
    Column("aggregatetype", 1, "varchar", ConnectSchema(STRING, optional=False)),
    Column("aggregateid", 2, "varchar", ConnectSchema(STRING, optional=False)),
    Column("type", 3, "varchar", ConnectSchema(STRING, optional=False)),
    Column("payload", 4, "jsonb", JSON),
    Column("created", 5, "timestamp", ConnectSchema(
        INT64, optional=True, name="io.debezium.time.MicroTimestamp", version=1)),
), ("id",))
ROW = ("6c5e1f0e-0000-4000-8000-000000000001", "Order", "o-1", "OrderCreated",
       '{"id": 1, "lines": [{"sku": "a", "qty": 2}], "note": null, "tags": []}',
       1700000000123456)


def outbox_events() -> list[Any]:
    row2 = (ROW[0][:-1] + "2", "Customer", "c-9", "Renamed", "", None)
    return [rec(OUTBOX_TABLE, Op.CREATE, None, ROW), rec(OUTBOX_TABLE, Op.DELETE, ROW, None),
            rec(OUTBOX_TABLE, Op.CREATE, None, row2)]


def test_outbox_defaults_route_by_aggregate_type_with_the_payload_as_value() -> None:
    out = run(OUTBOX, {}, outbox_events())
    assert [r.topic for r in out] == ["outbox.event.Order", "outbox.event.Customer"]
    first = out[0]
    assert (first.key, first.value, first.value_schema) == ("o-1", ROW[4], JSON)
    assert first.key_schema is not None and first.key_schema.type == "string"
    assert first.timestamp == 1700000000456  # the event's ts_ms
    ids = [h for h in first.headers if h.key == "id"]
    assert [(h.value, h.schema) for h in ids] == [(ROW[0], UUID)]
    assert out[1].value == "" and out[1].value_schema == JSON  # no tombstone by default


def test_outbox_envelope_fields_expansion_timestamp_and_tombstones() -> None:
    out = run(OUTBOX, {"table.fields.additional.placement": "type:header:eventType,"
                                                            "aggregateid:envelope:agg",
                       "table.field.event.timestamp": "created",
                       "table.expand.json.payload": "true",
                       "route.tombstone.on.empty.payload": "true",
                       "route.topic.replacement": "events.${routedByValue}"},
              outbox_events())
    first = out[0]
    assert first.topic == "events.Order"
    assert first.timestamp == 1700000000123
    assert first.value == {"payload": {"id": 1, "lines": [{"sku": "a", "qty": 2}]},
                           "agg": "o-1"}
    schema = first.value_schema
    assert schema is not None and schema.name == "inv.public.outbox.Order.Value"
    payload = schema.fields[0].schema
    assert payload.name == "payload"
    assert [(f.name, f.schema.type) for f in payload.fields] == [("id", "int32"),
                                                                  ("lines", "array")]
    lines = payload.fields[1].schema.items
    assert lines is not None and lines.name == "payload.lines"
    assert [h.value for h in first.headers if h.key == "eventType"] == ["OrderCreated"]
    empty = out[1]
    assert (empty.topic, empty.value, empty.value_schema) == ("events.Customer", None, None)
    assert empty.key == "c-9"


def test_outbox_json_null_and_empty_array_behaviours() -> None:
    out = run(OUTBOX, {"table.expand.json.payload": "true",
                       "table.json.payload.null.behavior": "optional_bytes",
                       "table.json.payload.empty.array.behavior": "optional_string"},
              outbox_events()[:1])
    assert out[0].value == {"id": 1, "lines": [{"sku": "a", "qty": 2}], "note": None,
                            "tags": []}
    schema = out[0].value_schema
    assert schema is not None
    assert [(f.name, f.schema.type) for f in schema.fields] == [
        ("id", "int32"), ("lines", "array"), ("note", "bytes"), ("tags", "array")]


def test_outbox_updates_per_invalid_op_behaviour(caplog: pytest.LogCaptureFixture) -> None:
    update = [rec(OUTBOX_TABLE, Op.UPDATE, ROW, ROW)]
    with caplog.at_level(logging.WARNING, "headwater.transforms"):
        assert run(OUTBOX, {}, update) == []
    assert "Unexpected update message" in caplog.text
    with pytest.raises(TransformError, match="Unexpected update"):
        run(OUTBOX, {"table.op.invalid.behavior": "fatal"}, update)
    # Other tables' events are still envelopes: they fail as Debezium fails (no payload).
    with pytest.raises(TransformError, match="payload"):
        run(OUTBOX, {}, [rec(CUSTOMERS, Op.CREATE, None, (1, "A", None))])


def test_outbox_configuration_errors() -> None:
    for key, value in (("table.fields.additional.placement", "a:partition"),
                       ("table.fields.additional.placement", "a"),
                       ("table.op.invalid.behavior", "ignore"),
                       ("tracing.span.context.field", "x")):
        with pytest.raises(PluginConfigError):
            build_chain({"transforms": "t", "transforms.t.type": OUTBOX,
                         f"transforms.t.{key}": value})
