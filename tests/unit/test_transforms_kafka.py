"""Kafka's SMTs and predicates, against the behaviour the Kafka documentation states."""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord, Header
from headwater.converters.json import JsonConverter
from headwater.model.schema import INT32, INT64, STRING, ConnectField, ConnectSchema
from headwater.transforms.chain import build_chain

K = "org.apache.kafka.connect.transforms."
VALUE_SCHEMA = ConnectSchema("struct", optional=False, name="x.Value", fields=(
    ConnectField("id", ConnectSchema(INT32, optional=False)),
    ConnectField("name", ConnectSchema(STRING, optional=True)),
    ConnectField("ts", ConnectSchema(INT64, optional=True)),
    ConnectField("secret", ConnectSchema(STRING, optional=True, default="d")),
))
VALUE = {"id": 5, "name": "n", "ts": 1700000000123, "secret": "s3"}


def record(value: Any = VALUE, schema: ConnectSchema | None = VALUE_SCHEMA,
           topic: str = "inv.public.t", headers: tuple[Header, ...] = ()) -> ConnectRecord:
    return ConnectRecord(topic, None, None, None, schema, value, 1700000000999, headers)


def apply(cls: str, props: dict[str, str], rec: ConnectRecord | None = None,
          extra: dict[str, str] | None = None) -> ConnectRecord | None:
    chain = build_chain({"transforms": "t", "transforms.t.type": cls,
                         **{f"transforms.t.{k}": v for k, v in props.items()},
                         **(extra or {})})
    return chain.apply(rec if rec is not None else record())


def test_regex_router_uses_java_group_references_and_full_match() -> None:
    props = {"regex": r"([^.]+)\.([^.]+)\.([^.]+)", "replacement": "$3_from_$1"}
    out = apply(K + "RegexRouter", props)
    assert out is not None and out.topic == "t_from_inv"
    out = apply(K + "RegexRouter", props, record(topic="no-dots"))
    assert out is not None and out.topic == "no-dots"


def test_replace_field_include_exclude_renames_and_legacy_names() -> None:
    out = apply(K + "ReplaceField$Value", {"exclude": "secret", "renames": "name:full_name"})
    assert out is not None and out.value == {"id": 5, "full_name": "n", "ts": 1700000000123}
    assert out.value_schema is not None and out.value_schema.name == "x.Value"
    assert [f.name for f in out.value_schema.fields] == ["id", "full_name", "ts"]
    out = apply(K + "ReplaceField$Value", {"whitelist": "id,ts"})
    assert out is not None and out.value == {"id": 5, "ts": 1700000000123}
    out = apply(K + "ReplaceField$Value", {"blacklist": "ts"}, record({"id": 1, "ts": 2}, None))
    assert out is not None and out.value == {"id": 1}
    with pytest.raises(PluginConfigError, match="both set"):
        apply(K + "ReplaceField$Value", {"include": "id", "whitelist": "id"})


def test_replace_field_replaces_nulls_with_schema_defaults_unless_told_not_to() -> None:
    rec = record({**VALUE, "secret": None})
    out = apply(K + "ReplaceField$Value", {"exclude": "ts"}, rec)
    assert out is not None and out.value["secret"] == "d"
    out = apply(K + "ReplaceField$Value", {"exclude": "ts", "replace.null.with.default": "false"},
                rec)
    assert out is not None and out.value["secret"] is None


def test_mask_field_with_type_zeros_and_replacement() -> None:
    out = apply(K + "MaskField$Value", {"fields": "id,name"})
    assert out is not None and out.value["id"] == 0 and out.value["name"] == ""
    out = apply(K + "MaskField$Value", {"fields": "name", "replacement": "***"})
    assert out is not None and out.value["name"] == "***"
    out = apply(K + "MaskField$Value", {"fields": "id", "replacement": "42"})
    assert out is not None and out.value["id"] == 42


def test_insert_field_topic_timestamp_static_with_schema_and_schemaless() -> None:
    props = {"topic.field": "t!", "timestamp.field": "at", "static.field": "src",
             "static.value": "hw", "partition.field": "p"}
    out = apply(K + "InsertField$Value", props)
    assert out is not None
    assert out.value["t"] == "inv.public.t" and out.value["src"] == "hw"
    assert out.value["p"] is None
    assert out.value["at"] == dt.datetime(2023, 11, 14, 22, 13, 20, 999000, tzinfo=dt.UTC)
    fields = {f.name: f.schema for f in out.value_schema.fields}  # type: ignore[union-attr]
    assert fields["t"].optional is False and fields["at"].name == (
        "org.apache.kafka.connect.data.Timestamp")
    payload = orjson.loads(JsonConverter().from_connect("x", out.value_schema, out.value) or b"")
    assert payload["payload"]["at"] == 1700000000999
    out = apply(K + "InsertField$Value", props, record({"a": 1}, None))
    assert out is not None and out.value == {"a": 1, "t": "inv.public.t", "p": None,
                                             "at": 1700000000999, "src": "hw"}
    tomb = record(None, None)
    assert apply(K + "InsertField$Value", props, tomb) == tomb
    with pytest.raises(PluginConfigError, match="offset"):
        apply(K + "InsertField$Value", {"offset.field": "o"})


def test_value_to_key() -> None:
    out = apply(K + "ValueToKey", {"fields": "id,name"})
    assert out is not None and out.key == {"id": 5, "name": "n"}
    assert [f.name for f in out.key_schema.fields] == ["id", "name"]  # type: ignore[union-attr]
    out = apply(K + "ValueToKey", {"fields": "id"}, record({"id": 3, "x": 1}, None))
    assert out is not None and out.key == {"id": 3} and out.key_schema is None


@pytest.mark.parametrize(("props", "expected", "schema_name"), [
    ({"target.type": "Timestamp", "field": "ts"},
     dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC),
     "org.apache.kafka.connect.data.Timestamp"),
    ({"target.type": "string", "field": "ts", "format": "yyyy-MM-dd'T'HH:mm:ss.SSS"},
     "2023-11-14T22:13:20.123", None),
    ({"target.type": "Date", "field": "ts"}, dt.date(2023, 11, 14),
     "org.apache.kafka.connect.data.Date"),
    ({"target.type": "Time", "field": "ts"}, dt.time(22, 13, 20, 123000),
     "org.apache.kafka.connect.data.Time"),
])
def test_timestamp_converter(props: dict[str, str], expected: Any, schema_name: str | None
                             ) -> None:
    out = apply(K + "TimestampConverter$Value", props)
    assert out is not None and out.value["ts"] == expected
    fields = {f.name: f.schema for f in out.value_schema.fields}  # type: ignore[union-attr]
    assert fields["ts"].name == schema_name and fields["ts"].optional


def test_timestamp_converter_parses_strings() -> None:
    rec = record({"when": "2024-02-29 13:05:09"}, None)
    out = apply(K + "TimestampConverter$Value",
                {"target.type": "unix", "field": "when", "format": "yyyy-MM-dd HH:mm:ss"}, rec)
    assert out is not None
    assert out.value["when"] == int(dt.datetime(2024, 2, 29, 13, 5, 9, tzinfo=dt.UTC)
                                    .timestamp() * 1000)
    # unix.precision applies to unix input and output alike (Kafka)
    out = apply(K + "TimestampConverter$Value",
                {"target.type": "unix", "field": "when", "format": "yyyy-MM-dd HH:mm:ss",
                 "unix.precision": "microseconds"}, rec)
    assert out is not None and out.value["when"] == 1709211909_000000


def test_header_from_move_and_copy() -> None:
    out = apply(K + "HeaderFrom$Value", {"fields": "name,id", "headers": "h_name,h_id",
                                         "operation": "move"})
    assert out is not None and "name" not in out.value and "id" not in out.value
    assert [(h.key, h.value) for h in out.headers] == [("h_name", "n"), ("h_id", 5)]
    assert out.headers[1].schema == ConnectSchema(INT32, optional=False)
    out = apply(K + "HeaderFrom$Value", {"fields": "name", "headers": "h",
                                         "operation": "copy"})
    assert out is not None and out.value["name"] == "n"


def test_predicates_and_negate() -> None:
    preds = {"predicates": "isT,tomb", "predicates.isT.type":
             K + "predicates.TopicNameMatches", "predicates.isT.pattern": r"inv\..*",
             "predicates.tomb.type": K + "predicates.RecordIsTombstone"}
    router = {"regex": ".*", "replacement": "routed"}
    out = apply(K + "RegexRouter", {**router, "predicate": "isT"}, extra=preds)
    assert out is not None and out.topic == "routed"
    out = apply(K + "RegexRouter", {**router, "predicate": "isT", "negate": "true"}, extra=preds)
    assert out is not None and out.topic == "inv.public.t"
    out = apply(K + "RegexRouter", {**router, "predicate": "tomb"}, extra=preds)
    assert out is not None and out.topic == "inv.public.t"
    hdr = {"predicates": "h", "predicates.h.type": K + "predicates.HasHeaderKey",
           "predicates.h.name": "x"}
    with_header = record(headers=(Header("x", None, 1),))
    out = apply(K + "RegexRouter", {**router, "predicate": "h"}, with_header, extra=hdr)
    assert out is not None and out.topic == "routed"
    with pytest.raises(PluginConfigError, match=r"predicates\.h\.pattern"):
        build_chain({**hdr, "predicates.h.pattern": "x"})
