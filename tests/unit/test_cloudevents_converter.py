"""Debezium's CloudEventsConverter (JSON/JSON).  The attributes follow Debezium 3.x's
`CloudEventsConverter`/`PostgresCloudEventsMaker` and what
`debezium-connect-plugins/src/test/java/io/debezium/converters/CloudEventsConverterTest.java`
(`shouldConvertToCloudEventsInJson`) checks: id, source, specversion, type ending in
`.DataChangeEvent`, time, datacontenttype, no dataschema/traceparent, `iodebeziumop`,
`iodebeziumtsms`, the `iodebeziumtx*` attributes, and `data` with `schema` (named
`io.debezium.connector.<type>.Data`) and `payload.after`; the example of Debezium's
documentation (integrations/cloudevents.adoc) fixes the order and the INT64-as-string values."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import TransformError
from headwater.converters.base import Converter
from headwater.converters.factory import CLOUDEVENTS, build_converter
from headwater.model.schema import INT32, INT64, STRING, ConnectSchema

from .smt_envelopes import struct

ROW = struct("test_server.s1.a.Value", ("pk", ConnectSchema(INT32, optional=False)),
             ("name", ConnectSchema(STRING)))
SOURCE = struct("io.debezium.connector.postgresql.Source",
                ("version", ConnectSchema(STRING, optional=False)),
                ("connector", ConnectSchema(STRING, optional=False)),
                ("name", ConnectSchema(STRING, optional=False)),
                ("ts_ms", ConnectSchema(INT64, optional=False)),
                ("snapshot", ConnectSchema(STRING, optional=True, default="false",
                                           name="io.debezium.data.Enum", version=1,
                                           parameters={"allowed": "true,last,false,incremental"})),
                ("db", ConnectSchema(STRING, optional=False)),
                ("sequence", ConnectSchema(STRING)),
                ("schema", ConnectSchema(STRING, optional=False)),
                ("table", ConnectSchema(STRING, optional=False)),
                ("txId", ConnectSchema(INT64)), ("lsn", ConnectSchema(INT64)),
                ("xmin", ConnectSchema(INT64)), optional=False)
TX = struct("event.block", ("id", ConnectSchema(STRING, optional=False)),
            ("total_order", ConnectSchema(INT64, optional=False)),
            ("data_collection_order", ConnectSchema(INT64, optional=False)))
ENVELOPE = struct("test_server.s1.a.Envelope", ("before", ROW), ("after", ROW),
                  ("source", SOURCE), ("transaction", TX),
                  ("op", ConnectSchema(STRING, optional=False)), ("ts_ms", ConnectSchema(INT64)),
                  optional=False)


def event(tx: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"before": None, "after": {"pk": 1, "name": "Bob"},
            "source": {"version": "3.4.0.Final", "connector": "postgresql",
                       "name": "test_server", "ts_ms": 1578923739738, "snapshot": None,
                       "db": "postgres", "sequence": '[null,"29274832"]', "schema": "s1",
                       "table": "a", "txId": 565, "lsn": 29274832, "xmin": None},
            "transaction": tx, "op": "r", "ts_ms": 1578923739740}


def converter(**props: str) -> Converter:
    return build_converter(CLOUDEVENTS, {f"value.converter.{k}": v for k, v in props.items()},
                           is_key=False, schemas_enable=True)


def test_postgres_event_without_data_schema() -> None:
    out = converter(**{"json.schemas.enable": "false"}).from_connect(
        "test_server.s1.a", ENVELOPE, event({"id": "565", "total_order": 1,
                                             "data_collection_order": 1}))
    assert out is not None
    assert orjson.loads(out) == {
        "id": 'name:test_server;lsn:29274832;txId:565;sequence:[null,"29274832"]',
        "source": "/debezium/postgresql/test_server",
        "specversion": "1.0",
        "type": "io.debezium.connector.postgresql.DataChangeEvent",
        "time": "2020-01-13T13:55:39.738Z",
        "datacontenttype": "application/json",
        "iodebeziumop": "r",
        "iodebeziumversion": "3.4.0.Final",
        "iodebeziumconnector": "postgresql",
        "iodebeziumname": "test_server",
        "iodebeziumtsms": "1578923739738",
        "iodebeziumsnapshot": "false",  # Struct.get: the field's default
        "iodebeziumdb": "postgres",
        "iodebeziumsequence": '[null,"29274832"]',
        "iodebeziumschema": "s1",
        "iodebeziumtable": "a",
        "iodebeziumtxId": "565",
        "iodebeziumlsn": "29274832",
        "iodebeziumxmin": None,
        "iodebeziumtxid": "565",
        "iodebeziumtxtotalorder": "1",
        "iodebeziumtxdatacollectionorder": "1",
        "data": {"before": None, "after": {"pk": 1, "name": "Bob"}},
    }
    # JsonConverter's bytes: no spaces, attributes in schema order, data last.
    assert out.startswith(b'{"id":"name:test_server;lsn:29274832;txId:565;')
    assert out.endswith(b',"data":{"before":null,"after":{"pk":1,"name":"Bob"}}}')


def test_data_carries_its_schema_by_default() -> None:
    """shouldConvertToCloudEventsInJson: data.schema.name is io.debezium.connector.*.Data."""
    doc = orjson.loads(converter().from_connect("t", ENVELOPE, event()) or b"")
    assert doc["data"]["schema"]["name"] == "io.debezium.connector.postgresql.Data"
    assert [f["field"] for f in doc["data"]["schema"]["fields"]] == ["before", "after"]
    assert doc["data"]["payload"]["after"] == {"pk": 1, "name": "Bob"}
    assert doc["iodebeziumtxid"] is None and doc["iodebeziumtxtotalorder"] is None
    assert "dataschema" not in doc and "traceparent" not in doc


def test_extension_attributes_can_be_left_out() -> None:
    doc = orjson.loads(converter(**{"extension.attributes.enable": "false"}).from_connect(
        "t", ENVELOPE, event()) or b"")
    assert list(doc) == ["id", "source", "specversion", "type", "time", "datacontenttype",
                         "data"]


def test_non_envelopes_and_tombstones_are_null() -> None:
    """As in Debezium: only change-event envelopes become CloudEvents."""
    conv = converter()
    assert conv.from_connect("t", ENVELOPE, None) is None
    assert conv.from_connect("t", ConnectSchema(STRING), "x") is None
    heartbeat = struct("io.debezium.connector.common.Heartbeat",
                       ("ts_ms", ConnectSchema(INT64)))
    assert conv.from_connect("t", heartbeat, {"ts_ms": 1}) is None


def test_mysql_and_unknown_connectors() -> None:
    mysql_source = struct("io.debezium.connector.mysql.Source",
                          ("connector", ConnectSchema(STRING)), ("name", ConnectSchema(STRING)),
                          ("ts_ms", ConnectSchema(INT64)), ("file", ConnectSchema(STRING)),
                          ("pos", ConnectSchema(INT64)), ("row", ConnectSchema(INT32)))
    env = struct("s.d.t.Envelope", ("before", ROW), ("after", ROW), ("source", mysql_source),
                 ("op", ConnectSchema(STRING)), optional=False)
    value: dict[str, Any] = {"before": None, "after": {"pk": 1, "name": "x"}, "op": "c",
                             "source": {"connector": "mysql", "name": "s", "ts_ms": 0,
                                        "file": "bin.000003", "pos": 154, "row": 0}}
    doc = orjson.loads(converter().from_connect("t", env, value) or b"")
    assert doc["id"] == "name:s;file:bin.000003;pos:154"
    assert doc["time"] == "1970-01-01T00:00:00.000Z"
    assert doc["iodebeziumpos"] == "154" and doc["iodebeziumrow"] == 0
    value["source"]["connector"] = "db2"
    with pytest.raises(TransformError, match='No usable CloudEvents converters for connector '
                                             'type "db2"'):
        converter().from_connect("t", env, value)


@pytest.mark.parametrize(("props", "message"), [
    ({"serializer.type": "avro"}, "value.converter.serializer.type=avro: not supported"),
    ({"data.serializer.type": "avro"}, "value.converter.data.serializer.type=avro: not"),
    ({"serializer.type": "xml"}, "value.converter.serializer.type: 'xml' is not one of json"),
    ({"opentelemetry.tracing.attributes.enable": "true"},
     "value.converter.opentelemetry.tracing.attributes.enable=true: not supported"),
    ({"metadata.source": "header"}, "value.converter.metadata.source: the global source must"),
    ({"metadata.source": "value,id:header"}, "'id:header': metadata from headers"),
    ({"metadata.source": "value,id:nowhere"}, "'id:nowhere' is not <field>:header|generate"),
    ({"schema.name.adjustment.mode": "bogus"},
     "value.converter.schema.name.adjustment.mode: 'bogus' is not one of"),
    ({"avro.schema.registry.url": "http://x"},
     "unknown or unsupported property value.converter.avro.schema.registry.url"),
])
def test_config_errors(props: dict[str, str], message: str) -> None:
    with pytest.raises(PluginConfigError) as info:
        converter(**props)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_defaults_spelled_out_are_accepted() -> None:
    conv = converter(**{"serializer.type": "json", "data.serializer.type": "json",
                        "metadata.source": "value,id:generate,type:generate,"
                                           "traceparent:header,dataSchemaName:generate",
                        "schema.cloudevents.name": "x", "json.decimal.format": "BASE64"})
    assert conv.from_connect("t", ENVELOPE, event()) is not None


def test_the_local_topic_log_takes_cloudevents_json() -> None:
    from types import SimpleNamespace

    from headwater.capture import refuse_binary_records_on_the_local_log
    from headwater.config.loader import ConfigError

    ok = SimpleNamespace(value_converter=CLOUDEVENTS)
    refuse_binary_records_on_the_local_log(ok, "local")
    avro = SimpleNamespace(value_converter="io.confluent.connect.avro.AvroConverter")
    with pytest.raises(ConfigError):
        refuse_binary_records_on_the_local_log(avro, "local")


def test_real_postgres_events_through_the_structured_path() -> None:
    """Headwater's own PostgreSQL envelopes (source block, transaction block, headers) through
    a transform and the converter, as a capture configured with them runs them."""
    from headwater.converters.json import JsonConverter
    from headwater.formats.structured import StructuredRenderer
    from headwater.transforms.chain import build_chain

    from .connect_samples import debezium_format, samples

    chain = build_chain({"transforms": "tz", "transforms.tz.type":
                         "io.debezium.transforms.TimezoneConverter",
                         "transforms.tz.converted.timezone": "Europe/Paris"})
    renderer = StructuredRenderer(debezium_format(), chain, JsonConverter(), converter())
    batch = renderer.render_batch(samples())
    docs = [orjson.loads(r.value) for records in batch.values() for r in records
            if r.value is not None]
    assert docs, "no change event was converted"
    assert all(d["specversion"] == "1.0" for d in docs)  # the rest were written as null
    for d in docs:
        assert d["id"].startswith("name:") and ";lsn:" in d["id"] and ";sequence:" in d["id"]
        assert d["type"] == "io.debezium.connector.postgresql.DataChangeEvent"
        assert d["source"] == "/debezium/postgresql/" + d["iodebeziumname"]
        assert d["data"]["schema"]["name"] == "io.debezium.connector.postgresql.Data"
        assert d["time"].endswith("Z") and isinstance(d["iodebeziumtsms"], str)
