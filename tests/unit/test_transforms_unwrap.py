"""ExtractNewRecordState against the behaviour Debezium documents, and the chain's refusals."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord
from headwater.converters.json import JsonConverter
from headwater.formats.structured import StructuredRenderer
from headwater.model.record import Op
from headwater.transforms.chain import build_chain

from .connect_samples import CUSTOMERS, ITEMS, debezium_format, rec, samples

UNWRAP = "io.debezium.transforms.ExtractNewRecordState"


def run(props: dict[str, str], events: list[Any] | None = None) -> list[ConnectRecord]:
    chain = build_chain({"transforms": "unwrap", "transforms.unwrap.type": UNWRAP,
                         **{f"transforms.unwrap.{k}": v for k, v in props.items()}})
    renderer = StructuredRenderer(debezium_format(), chain, JsonConverter(), JsonConverter())
    return renderer.transformed(events if events is not None else samples())


def customers(out: list[ConnectRecord]) -> list[ConnectRecord]:
    return [r for r in out if r.topic == "inv.public.customers"]


def test_tutorial_configuration_flattens_and_rewrites_deletes() -> None:
    out = run({"drop.tombstones": "false", "delete.handling.mode": "rewrite",
               "add.fields": "op,table,lsn,source.ts_ms"})
    cust = customers(out)
    first = cust[0]
    assert first.value == {"id": 1, "first_name": "Anne", "email": "a@x", "__deleted": "false",
                           "__op": "r", "__table": "customers", "__lsn": 24023128,
                           "__source_ts_ms": 1700000000123}
    assert first.value_schema is not None
    assert first.value_schema.name == "inv.public.customers.Value"
    assert [(f.name, f.schema.type, f.schema.optional) for f in first.value_schema.fields[3:]] == [
        ("__deleted", "string", True), ("__op", "string", True), ("__table", "string", True),
        ("__lsn", "int64", True), ("__source_ts_ms", "int64", True)]
    assert first.key == {"id": 1}
    ops = [(r.value or {}).get("__op") for r in cust]
    # r, c, u, d + tombstone, d (key change) + tombstone, c
    assert ops == ["r", "c", "u", "d", None, "d", None, "c"]
    delete = cust[3]
    assert delete.value["__deleted"] == "true" and delete.value["id"] == 2
    # NOT NULL columns absent from the before image carry Debezium's fallback
    assert delete.value["first_name"] == ""
    assert cust[4].value is None and cust[4].value_schema is None  # tombstone kept
    assert not [r for r in out if r.topic == "inv.shop.items" and r.key is None]  # no truncate
    # Not change events: pass unchanged.
    assert [r.topic for r in out if r.topic in ("inv.transaction", "__debezium-heartbeat.inv")
            ] == ["inv.transaction", "__debezium-heartbeat.inv"]


def test_default_mode_tombstone_keeps_a_null_value_and_drops_the_tombstone() -> None:
    out = customers(run({}))
    assert [r.value["id"] if r.value else None for r in out] == [1, 2, 2, None, None, 4]
    delete = out[3]
    assert delete.value_schema is not None and delete.value_schema.name is not None
    assert delete.value_schema.name.endswith(".Value")
    assert JsonConverter().from_connect(delete.topic, delete.value_schema, None) is not None
    assert orjson.loads(JsonConverter().from_connect(
        delete.topic, delete.value_schema, None) or b"")["payload"] is None
    assert JsonConverter(False).from_connect(delete.topic, delete.value_schema, None) == b"null"


@pytest.mark.parametrize(("mode", "expected"), [
    ("drop", ["r", "c", "u", "c"]),
    ("delete-to-tombstone", ["r", "c", "u", "tomb", "tomb", "c"]),
    ("rewrite", ["r", "c", "u", "del", "del", "c"]),
    ("rewrite-with-tombstone", ["r", "c", "u", "del", "tomb", "del", "tomb", "c"]),
])
def test_delete_tombstone_handling_modes(mode: str, expected: list[str]) -> None:
    out = customers(run({"delete.tombstone.handling.mode": mode, "add.fields": "op"}))

    def kind(r: ConnectRecord) -> str:
        if r.value is None:
            assert r.value_schema is None
            return "tomb"
        if r.value.get("__deleted") == "true":
            return "del"
        return str(r.value["__op"])

    assert [kind(r) for r in out] == expected


def test_add_headers_and_renamed_and_transaction_fields() -> None:
    out = run({"add.headers": "op,source.ts_ms", "add.headers.prefix": "h_",
               "add.fields": "source.ts_ms:when,id,total_order", "add.fields.prefix": "m_",
               "delete.tombstone.handling.mode": "rewrite-with-tombstone"})
    item = next(r for r in out if r.topic == "inv.shop.items")
    assert item.value["m_when"] == 1700000000123
    assert item.value["m_id"] == "555:24023128" and item.value["m_total_order"] == 3
    assert customers(out)[0].value["m_id"] is None  # no transaction block: null
    names = [h.key for h in item.headers]
    assert names[-2:] == ["h_op", "h_source_ts_ms"]
    assert item.header("h_op").value == "c"  # type: ignore[union-attr]
    tomb = next(r for r in customers(out) if r.value is None)
    assert [(h.key, h.value) for h in tomb.headers if h.key.startswith("h_")] == [("h_op", "d")]


def test_route_by_field() -> None:
    out = run({"route.by.field": "first_name", "delete.tombstone.handling.mode": "rewrite"})
    topics = [r.topic for r in customers(out)] + [r.topic for r in out if r.topic in (
        "Anne", "Bob", "Bobby", "C")]
    assert "Anne" in topics and "Bobby" in topics and "C" in topics


def test_replace_null_with_default_in_rewritten_rows() -> None:
    from headwater.model.schema import INT32, STRING, Column, ConnectSchema, TableId, TableSchema

    table = TableSchema(TableId("db", "public", "d"), (
        Column("id", 0, "int4", ConnectSchema(INT32, optional=False)),
        Column("s", 1, "text", ConnectSchema(STRING, optional=True, default="dflt")),
    ), ("id",))
    events = [rec(table, Op.CREATE, None, (1, None))]
    assert run({"delete.tombstone.handling.mode": "rewrite"}, events)[0].value["s"] == "dflt"
    assert run({"delete.tombstone.handling.mode": "rewrite",
                "replace.null.with.default": "false"}, events)[0].value["s"] is None
    assert run({}, events)[0].value["s"] is None


def test_rendered_json_of_unwrapped_event() -> None:
    chain = build_chain({"transforms": "unwrap", "transforms.unwrap.type": UNWRAP})
    renderer = StructuredRenderer(debezium_format(value_schemas=False), chain,
                                  JsonConverter(False), JsonConverter(False))
    batch = renderer.render_batch([rec(ITEMS, Op.CREATE, None, (
        1, 2, None, None, None, b"\x01", None, None, None))])
    (record,) = batch["inv.shop.items"]
    assert orjson.loads(record.value or b"") == {
        "order_id": 1, "line": 2, "price": None, "weight": None, "ok": None, "blob": "AQ==",
        "tags": None, "at": None, "note": None}
    assert orjson.loads(record.key or b"") == {"order_id": 1, "line": 2}
    assert CUSTOMERS  # the sample table module is shared


@pytest.mark.parametrize(("props", "message"), [
    ({"transforms": "x", "transforms.x.type": "com.example.Nope"},
     "transform class 'com.example.Nope' is not supported"),
    ({"transforms": "x"}, "transforms.x.type: missing"),
    ({"transforms": "x", "transforms.x.type": UNWRAP, "transforms.x.drop.tombstone": "true"},
     "transforms.x.drop.tombstone"),
    ({"transforms": "x", "transforms.x.type": UNWRAP,
      "transforms.x.delete.tombstone.handling.mode": "bogus"}, "is not one of"),
    ({"transforms": "x", "transforms.x.type": UNWRAP, "transforms.y.type": UNWRAP},
     "transforms.y.type: 'y' is not listed"),
    ({"transforms": "x", "transforms.x.type": UNWRAP, "transforms.x.predicate": "p"},
     "'p' is not listed in predicates"),
    ({"transforms": "x", "transforms.x.type": UNWRAP, "transforms.x.negate": "true"},
     "set without"),
    ({"transforms": "x", "transforms.x.type": UNWRAP, "transforms.x.drop.tombstones": "false",
      "transforms.x.delete.tombstone.handling.mode": "drop"}, "cannot be combined"),
    ({"predicates": "p", "predicates.p.type": "com.example.P"},
     "predicate class 'com.example.P' is not supported"),
])
def test_configuration_errors_name_the_property(props: dict[str, str], message: str) -> None:
    with pytest.raises(PluginConfigError, match=message.replace("(", r"\(").replace(
            ")", r"\)").replace(".", r"\.")):
        build_chain(props)
