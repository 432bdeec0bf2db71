"""`header.converter`: the configured converter makes every header's bytes, the same on both
render paths; `header_value` reads SimpleHeaderConverter text and JsonConverter envelopes alike.
(The bytes themselves are compared with Kafka Connect's converters in
tests/differential/test_headers_vs_connect.py.)"""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
import pytest

from headwater.capture import header_converter
from headwater.config import ConfigError
from headwater.connectors.postgres.config import validate_postgres_config
from headwater.connectors.postgres.position import PostgresSourceBlock
from headwater.converters.factory import JSON, SIMPLE_HEADER, STRING
from headwater.converters.headers import SimpleHeaderConverter, header_value
from headwater.converters.json import JsonConverter
from headwater.converters.values import java_double, java_float, parse_string
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.formats.structured import StructuredRenderer
from headwater.model.record import Op
from headwater.transforms.chain import build_chain
from tests.unit.test_debezium_format import ANNE, record

BASE = {"connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "topic.prefix": "srv", "database.hostname": "localhost", "database.user": "u",
        "database.dbname": "postgres"}


def converter_of(**props: str) -> Any:
    cfg, _ = validate_postgres_config({**BASE, **props}, env={})
    return header_converter(cfg)


def test_default_is_connects_simple_header_converter() -> None:
    cfg, _ = validate_postgres_config(BASE, env={})
    assert cfg.header_converter == SIMPLE_HEADER
    assert isinstance(header_converter(cfg), SimpleHeaderConverter)


def test_json_converter_with_connects_header_settings() -> None:
    on = converter_of(**{"header.converter": JSON})
    assert isinstance(on, JsonConverter) and on.schemas_enable  # Connect's default: true
    off = converter_of(**{"header.converter": JSON, "header.converter.schemas.enable": "false",
                          "header.converter.converter.type": "header"})
    assert off.from_connect("t", None, "kb") == b'"kb"'
    text = converter_of(**{"header.converter": STRING,
                           "header.converter.converter.encoding": "UTF-16BE"})
    assert text.from_connect("t", None, "é") == "é".encode("utf-16-be")


@pytest.mark.parametrize(("props", "message"), [
    ({"header.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"},
     "header.converter.*one of org.apache.kafka.connect.storage.SimpleHeaderConverter"),
    ({"header.converter.schemas.enable": "false"},
     "header.converter.schemas.enable"),  # SimpleHeaderConverter has no properties
    ({"header.converter": JSON, "header.converter.decimal.format": "NUMERIC"},
     "decimal.format"),
])
def test_header_converter_errors_name_the_property(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        converter_of(**props)


def test_fast_and_structured_paths_write_the_same_header_bytes() -> None:
    new = (2, *ANNE[1:])
    batch = [record(Op.DELETE, ANNE, None, other_key=new),
             record(Op.CREATE, None, new, other_key=ANNE)]
    for conv in (SimpleHeaderConverter(), JsonConverter(True), JsonConverter(False)):
        fmt = DebeziumJsonFormat(PostgresSourceBlock(), run_id="r", header_converter=conv)
        fast = fmt.render_batch(batch)
        structured = StructuredRenderer(fmt, build_chain({}), JsonConverter(True),
                                        JsonConverter(True)).render_batch(batch)
        assert [r.headers for rs in fast.values() for r in rs] == [
            r.headers for rs in structured.values() for r in rs]


def test_header_value_reads_both_forms() -> None:
    # SimpleHeaderConverter text: Values.parseString.
    assert header_value(b"kb") == "kb"
    assert header_value(b'{"id":2}') == {"id": 2}
    assert header_value(b"7") == 7 and header_value(b"true") is True
    assert header_value(None) is None
    # JsonConverter, with and without schemas.
    assert header_value(b'{"schema":{"type":"string","optional":false},"payload":"kb"}') == "kb"
    key = {"schema": {"type": "struct", "fields": [], "optional": False}, "payload": {"id": 2}}
    assert header_value(orjson.dumps(key)) == {"id": 2}
    assert header_value(b'"kb"') == "kb"
    # Neither: bytes that are no UTF-8 stay bytes (SimpleHeaderConverter's BYTES fallback).
    assert header_value(b"\xff\x00") == b"\xff\x00"


def test_parse_string_layouts() -> None:
    assert parse_string("null") is None
    assert parse_string("-12") == -12 and parse_string("1.5E-5") == 1.5e-5
    assert parse_string("2022-01-08") == dt.date(2022, 1, 8)
    assert parse_string("12:34:56.789Z") == dt.time(12, 34, 56, 789000)
    assert parse_string("2023-11-14T22:13:20.123Z") == dt.datetime(
        2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    assert parse_string("{not json") == "{not json"
    assert parse_string("srv") == "srv"


@pytest.mark.parametrize(("value", "text"), [
    (1e10, "1.0E10"), (0.1, "0.1"), (100.0, "100.0"), (1.5e-5, "1.5E-5"), (-0.0, "-0.0"),
    (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (0.0009, "9.0E-4"),
    (float("inf"), "Infinity"), (123456789012.0, "1.23456789012E11"),
])
def test_java_double(value: float, text: str) -> None:
    assert java_double(value) == text


def test_java_float() -> None:
    assert java_float(0.1) == "0.1"
    assert java_float(3.4028235e38) == "3.4028235E38"
    assert java_float(16777217.0) == "1.6777216E7"
