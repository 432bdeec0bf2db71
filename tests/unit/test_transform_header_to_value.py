"""Debezium's HeaderToValue: the expectations of Debezium 3.x's
`debezium-connect-plugins/src/test/java/io/debezium/transforms/HeaderToValueTest.java`
(each test names the Java test it follows)."""

from __future__ import annotations

import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord, Header, TransformError
from headwater.model.schema import ARRAY, FLOAT32, INT64, STRING, ConnectSchema
from headwater.transforms.chain import build_chain

from .smt_envelopes import envelope_record, envelope_schema, struct

CLS = "io.debezium.transforms.HeaderToValue"
ROW = struct("mysql-server-1.inventory.products.Value",
             ("id", ConnectSchema(INT64, optional=False)),
             ("price", ConnectSchema(FLOAT32, optional=False)),
             ("product", ConnectSchema(STRING, optional=False)), optional=False)
SCHEMA = envelope_schema(ROW, ConnectSchema(STRING, optional=False),
                         "mysql-server-1.inventory.product.Envelope")
S = ConnectSchema(STRING, optional=False)
ARR = ConnectSchema(ARRAY, optional=True, name="h1", items=ConnectSchema(STRING))


def apply(props: dict[str, str], record: ConnectRecord) -> ConnectRecord:
    chain = build_chain({"transforms": "h", "transforms.h.type": CLS,
                         **{f"transforms.h.{k}": v for k, v in props.items()}})
    out = chain.apply(record)
    assert out is not None
    return out


def product(*headers: Header, op: str = "c") -> ConnectRecord:
    return envelope_record(SCHEMA, op, {"id": 101, "price": 20.0, "product": "a product"},
                           "src", "topic", headers)


def test_headers_copied_into_fields() -> None:
    """whenARecordThatContainsADefinedHeaderItWillBeCopiedInTheDefinedField (and the
    trimming test: ` f1, f2 `)."""
    out = apply({"headers": " h1 , h2", "fields": " f1, f2 ", "operation": "copy"},
                product(Header("h1", S, "this is a value from h1 header"),
                        Header("h2", S, "this is a value from h2 header")))
    assert out.value["f1"] == "this is a value from h1 header"
    assert out.value["f2"] == "this is a value from h2 header"
    assert out.value_schema is not None
    assert [f.name for f in out.value_schema.fields][-2:] == ["f1", "f2"]
    assert out.value_schema.name == "mysql-server-1.inventory.product.Envelope"
    assert [h.key for h in out.headers] == ["h1", "h2"]


def test_move_removes_the_headers() -> None:
    """whenARecordThatContainsADefinedHeaderAndOperationIsMove...: only h4 stays."""
    headers = [Header(k, ARR, ["v1", "v2"]) for k in ("h1", "h2", "h3", "h4")]
    out = apply({"headers": "h1,h2,h3", "fields": "f1,f2,f3", "operation": "move"},
                product(*headers))
    assert out.value["f1"] == out.value["f2"] == out.value["f3"] == ["v1", "v2"]
    assert [h.key for h in out.headers] == ["h4"]
    assert out.value_schema is not None
    assert out.value_schema.fields[-1].schema == ARR


def test_nested_fields() -> None:
    """supportNestedField: `after.f2` lands in the row; `source.f3` has no header here."""
    out = apply({"headers": "h1,h2,h3", "fields": "f1,after.f2,source.f3", "operation": "copy"},
                product(Header("h1", S, "v1"), Header("h2", S, "v2")))
    assert out.value["f1"] == "v1"
    assert out.value["after"]["f2"] == "v2"
    assert out.value["after"]["product"] == "a product"
    assert out.value_schema is not None
    after = next(f.schema for f in out.value_schema.fields if f.name == "after")
    assert [f.name for f in after.fields] == ["id", "price", "product", "f2"]
    assert after.name == "mysql-server-1.inventory.products.Value"


def test_nested_field_in_a_new_parent_struct() -> None:
    """ConnectRecordUtil: a parent that does not exist becomes an optional struct."""
    out = apply({"headers": "h1", "fields": "meta.f1", "operation": "copy"},
                product(Header("h1", S, "v1")))
    assert out.value["meta"] == {"f1": "v1"}
    assert out.value_schema is not None
    meta = out.value_schema.fields[-1]
    assert meta.name == "meta" and meta.schema.optional
    assert [f.name for f in meta.schema.fields] == ["f1"]


def test_nested_into_a_primitive_is_refused() -> None:
    with pytest.raises(TransformError, match="Field 'op' is a primitive type"):
        apply({"headers": "h1", "fields": "op.x", "operation": "copy"},
              product(Header("h1", S, "v1")))


def test_records_without_the_headers_and_tombstones_pass() -> None:
    """notExistingHeader / notExistingNestedField / whenARecordNotContainsHeadersShouldBe
    Skipped / whenATombstoneRecordItShouldBeSkipped."""
    record = product(Header("h2", S, "v2"))
    assert apply({"headers": "h1,", "fields": "f1", "operation": "copy"}, record) is record
    assert apply({"headers": "h1,", "fields": "parent.f1", "operation": "copy"},
                 record) is record
    tombstone = record.replace(value=None, value_schema=None)
    assert apply({"headers": "h2", "fields": "f2", "operation": "move"}, tombstone) is tombstone


@pytest.mark.parametrize(("props", "message"), [
    ({"headers": "h1", "fields": "f1", "operation": "invalidOp"},
     "transforms.h.operation: 'invalidOp' is not one of move, copy"),
    ({"headers": "h1", "operation": "copy"}, "transforms.h.fields: missing"),
    ({"fields": "f1", "operation": "copy"}, "transforms.h.headers: missing"),
    ({"headers": "h1", "fields": "f1"}, "transforms.h.operation: missing"),
    ({"headers": "h1,h2", "fields": "f1", "operation": "copy"},
     "'fields' config must have the same number of elements as 'headers' config"),
    ({"headers": "h1,h2", "fields": ",f2", "operation": "copy"},
     "transforms.h.fields: ',f2' has an empty element"),
    ({"headers": "header one", "fields": "f1", "operation": "copy"},
     "transforms.h.headers: 'header one' has an element containing a space"),
    ({"headers": "headerOne", "fields": "after. fieldOne", "operation": "copy"},
     "transforms.h.fields: 'after. fieldOne' has an element containing a space"),
])
def test_config_errors(props: dict[str, str], message: str) -> None:
    """whenOperationIsNotMoveOrCopy... / whenNoFieldsDeclared... / whenNoHeadersDeclared... /
    whenHeadersAndFieldsHaveDifferentSize... / whenFieldsOrHeadersContainsAnEmptyValue... /
    whenFieldsOrHeadersContainsASpace... / whenNestedFieldIsSeparatedWithADotAndASpace..."""
    with pytest.raises(PluginConfigError) as info:
        build_chain({"transforms": "h", "transforms.h.type": CLS,
                     **{f"transforms.h.{k}": v for k, v in props.items()}})
    assert message in str(info.value)
    assert "\n" not in str(info.value)
