"""Debezium's TimezoneConverter: the expectations of Debezium 3.x's
`debezium-connect-plugins/src/test/java/io/debezium/transforms/TimezoneConverterTest.java`
(each test names the Java test it follows), plus Headwater's one-line config errors."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from headwater.connect.props import PluginConfigError
from headwater.connect.record import ConnectRecord
from headwater.model.schema import INT8, INT32, INT64, STRING, ConnectSchema
from headwater.transforms.chain import build_chain

from .smt_envelopes import envelope_record, envelope_schema, struct

CLS = "io.debezium.transforms.TimezoneConverter"


def _named(name: str, type_: str = INT64) -> ConnectSchema:
    return ConnectSchema(type_, optional=True, name=name, version=1)


SOURCE = struct(None, ("table", ConnectSchema(STRING, optional=False)),
                ("lsn", ConnectSchema(INT32, optional=False)), ("ts_ms", ConnectSchema(INT64)),
                ("ts_us", ConnectSchema(INT64)), ("ts_ns", ConnectSchema(INT64)),
                ("random", ConnectSchema(INT64)))
ROW = struct(None, ("id", ConnectSchema(INT8, optional=False)),
             ("name", ConnectSchema(STRING, optional=False)),
             ("order_date", _named("io.debezium.time.Date", INT32)),
             ("ship_date", _named("io.debezium.time.Date", INT32)),
             ("order_date_micros", _named("io.debezium.time.MicroTimestamp")),
             ("order_date_nanos", _named("io.debezium.time.NanoTimestamp")),
             ("order_date_timestamp", _named("io.debezium.time.Timestamp")),
             ("order_date_zoned_timestamp", _named("io.debezium.time.ZonedTimestamp", STRING)),
             ("shipping_date_zoned_timestamp",
              _named("io.debezium.time.ZonedTimestamp", STRING)),
             ("order_date_zoned_time", _named("io.debezium.time.ZonedTime", STRING)),
             ("order_date_kc_timestamp", _named("org.apache.kafka.connect.data.Timestamp")))
SCHEMA = envelope_schema(ROW, SOURCE)


def convert(props: dict[str, str], row: dict[str, Any], source: dict[str, Any] | None = None,
            topic: str = "db.server1.table1") -> ConnectRecord:
    chain = build_chain({"transforms": "tz", "transforms.tz.type": CLS,
                         **{f"transforms.tz.{k}": v for k, v in props.items()}})
    src = {"table": "orders", "lsn": 1, "ts_ms": 123456789, **(source or {})}
    full = {"id": 1, "name": "x", **row}
    out = chain.apply(envelope_record(SCHEMA, "c", full, src, topic))
    assert out is not None
    return out


def test_multiple_debezium_timestamps() -> None:
    """testMultipleDebeziumTimestamps: +05:30; wall-clock types lose the offset, zoned ones are
    re-expressed, source.ts_ms untouched without a `source.` rule."""
    out = convert({"converted.timezone": "+05:30"}, {
        "order_date_micros": 1529507596945104, "order_date_nanos": 1531481025340000104,
        "order_date_timestamp": 1514908810123,
        "order_date_zoned_timestamp": "2018-01-02T11:15:30.123456789+00:00",
        "order_date_zoned_time": "11:15:30.123456789+00:00"})
    after = out.value["after"]
    assert after["order_date_micros"] == 1529487796945104
    assert after["order_date_nanos"] == 1531461225340000104
    assert after["order_date_timestamp"] == 1514889010123
    assert after["order_date_zoned_timestamp"] == "2018-01-02T16:45:30.123456789+05:30"
    assert after["order_date_zoned_time"] == "16:45:30.123456789+05:30"
    assert out.value["source"]["ts_ms"] == 123456789
    assert out.value["source"]["table"] == "orders"


def test_single_debezium_timestamp_region() -> None:
    """testSingleDebeziumTimestamp: Pacific/Easter in January is -05:00."""
    after = convert({"converted.timezone": "Pacific/Easter"}, {
        "order_date_zoned_timestamp": "2011-01-11T16:40:30.123456789+00:00",
        "shipping_date_zoned_timestamp": "2011-02-02T11:04:30.123456789+00:00"}).value["after"]
    assert after["order_date_zoned_timestamp"] == "2011-01-11T11:40:30.123456789-05:00"
    assert after["shipping_date_zoned_timestamp"] == "2011-02-02T06:04:30.123456789-05:00"


def test_kafka_connect_timestamp() -> None:
    """testKafkaConnectTimestamp: Africa/Cairo, 2018-03-27 02:00 becomes 00:00 (a datetime
    stays a datetime, Java's Date)."""
    after = convert({"converted.timezone": "Africa/Cairo"}, {
        "order_date_kc_timestamp": dt.datetime(2018, 3, 27, 2, tzinfo=dt.UTC)}).value["after"]
    assert after["order_date_kc_timestamp"] == dt.datetime(2018, 3, 27, 0, tzinfo=dt.UTC)


def test_include_list_with_table_prefix() -> None:
    """testIncludeListWithTablePrefix: only the named field of the named table converts."""
    after = convert({"converted.timezone": "Atlantic/Azores",
                     "include.list": "source:customers:after.order_date_zoned_timestamp"},
                    {"order_date_zoned_timestamp": "2020-01-01T11:55:30+00:00",
                     "shipping_date_zoned_timestamp": "2020-05-01T11:55:30+00:00"},
                    {"table": "customers"}).value["after"]
    assert after["order_date_zoned_timestamp"] == "2020-01-01T10:55:30-01:00"
    assert after["shipping_date_zoned_timestamp"] == "2020-05-01T11:55:30+00:00"


def test_include_list_topic_and_unprefixed() -> None:
    """testIncludeListWithTopicPrefix / testIncludeListWithNoPrefix."""
    for props in ({"converted.timezone": "+05:30",
                   "include.list": "topic:db.server1.table1:order_date_zoned_time"},
                  {"converted.timezone": "Asia/Kolkata",
                   "include.list": "db.server1.table1:order_date_zoned_time"}):
        after = convert(props, {"order_date_zoned_time": "11:55:30+00:00"},
                        {"table": "customers"}).value["after"]
        assert after["order_date_zoned_time"] == "17:25:30+05:30"


def test_exclude_lists() -> None:
    """testExcludeListWithTablePrefix / WithTopicPrefix / WithNoPrefix: the excluded field and
    dates stay, the others convert (`+08:00:00` is an offset with seconds)."""
    after = convert({"converted.timezone": "+05:30",
                     "exclude.list": "source:customers:order_date_zoned_timestamp"},
                    {"order_date_zoned_time": "11:55:30+00:00"},
                    {"table": "customers"}).value["after"]
    assert after["order_date_zoned_time"] == "17:25:30+05:30"
    after = convert({"converted.timezone": "America/Chicago",
                     "exclude.list": "topic:db.server1.table1:order_date_zoned_time"},
                    {"order_date_zoned_time": "11:55:30+00:00", "order_date": 17109}).value[
        "after"]
    assert after["order_date_zoned_time"] == "11:55:30+00:00"
    assert after["order_date"] == 17109
    after = convert({"converted.timezone": "+08:00:00",
                     "exclude.list": "db.server1.table1:ship_date"},
                    {"order_date_zoned_time": "11:55:30+00:00"}).value["after"]
    assert after["order_date_zoned_time"] == "19:55:30+08:00"


def test_include_list_multiple_tables_carries_the_prefix() -> None:
    """testIncludeListMultipleTables: `source:customers1,orders1,public1` names three tables;
    another table is untouched."""
    props = {"converted.timezone": "+03:00", "include.list": "source:customers1,orders1,public1"}
    row = {"order_date_zoned_timestamp": "2023-08-01T11:50:45+00:00"}
    assert convert(props, row, {"table": "orders1"}, "db.server1.orders").value["after"][
        "order_date_zoned_timestamp"] == "2023-08-01T14:50:45+03:00"
    assert convert(props, row, {"table": "other1"}, "db.server1.other").value["after"][
        "order_date_zoned_timestamp"] == "2023-08-01T11:50:45+00:00"


def test_exclude_list_multiple_tables() -> None:
    """testExcludeListMultipleTables / testExcludeListWithMultipleFields."""
    props = {"converted.timezone": "-06:00",
             "exclude.list": "topic:db.server1.customers,db.server1.public"}
    row = {"order_date_zoned_timestamp": "2023-08-01T11:50:45+00:00"}
    assert convert(props, row, {"table": "customers1"}, "db.server1.customers").value["after"][
        "order_date_zoned_timestamp"] == "2023-08-01T11:50:45+00:00"
    assert convert(props, row, {"table": "orders1"}, "db.server1.orders").value["after"][
        "order_date_zoned_timestamp"] == "2023-08-01T05:50:45-06:00"
    props = {"converted.timezone": "Europe/Moscow", "exclude.list":
             "topic:db.server1.customers:order_date_zoned_time,db.server1.inventory:order_date"}
    assert convert(props, {"order_date_zoned_time": "10:19:25+00:00"}, {"table": "customers"},
                   "db.server1.customers").value["after"]["order_date_zoned_time"] == \
        "10:19:25+00:00"
    assert convert(props, {"order_date_zoned_time": "19:19:25+00:00"}, {"table": "inventory"},
                   "db.server1.inventory").value["after"]["order_date_zoned_time"] == \
        "22:19:25+03:00"


def test_daylight_savings() -> None:
    """testDayLightSavings: Europe/Paris is +02:00 in June, +01:00 in December."""
    after = convert({"converted.timezone": "Europe/Paris"}, {
        "order_date_zoned_timestamp": "2014-06-22T10:15:30Z",
        "shipping_date_zoned_timestamp": "2014-12-22T10:15:30Z"}).value["after"]
    assert after["order_date_zoned_timestamp"] == "2014-06-22T12:15:30+02:00"
    assert after["shipping_date_zoned_timestamp"] == "2014-12-22T11:15:30+01:00"


def test_unsupported_logical_types_unchanged() -> None:
    """testUnsupportedLogicalTypes: io.debezium.time.Date is never converted."""
    after = convert({"converted.timezone": "Europe/Moscow",
                     "include.list": "source:customers:order_date"},
                    {"order_date": 17109, "ship_date": 17111}, {"table": "customers"}).value[
        "after"]
    assert (after["order_date"], after["ship_date"]) == (17109, 17111)


def test_source_block_epochs() -> None:
    """testSourceBlockTimestamp / testEpochTimezoneConversion: source.ts_* gain the offset;
    `random` (no epoch name) and an unnamed ZonedTime stay."""
    out = convert({"converted.timezone": "Europe/Moscow",
                   "include.list": "source:customers:source.ts_ms"},
                  {"order_date_zoned_time": "11:15:30.123456789+00:00"},
                  {"table": "customers", "ts_ms": 1234567890})
    assert out.value["source"]["ts_ms"] == 1245367890
    assert out.value["after"]["order_date_zoned_time"] == "11:15:30.123456789+00:00"
    out = convert({"converted.timezone": "Asia/Kolkata", "include.list":
                   "source:customers:source.ts_ms,customers:source.ts_ns,customers:source.ts_us,"
                   "customers:source.random,customers:order_date_zoned_time"},
                  {"order_date_zoned_time": "11:00:00.123456789+00:00"},
                  {"table": "customers", "ts_ms": 1762652621071, "ts_ns": 1762652621071088000,
                   "ts_us": 1762652621071088, "random": 125})
    source = out.value["source"]
    assert out.value["after"]["order_date_zoned_time"] == "16:30:00.123456789+05:30"
    assert (source["ts_ms"], source["ts_ns"], source["ts_us"], source["random"]) == (
        1762672421071, 1762672421071088000, 1762672421071088, 125)


def test_input_record_is_not_mutated() -> None:
    row = {"id": 1, "name": "x", "order_date_timestamp": 1514908810123}
    record = envelope_record(SCHEMA, "c", row, {"table": "t", "lsn": 1})
    chain = build_chain({"transforms": "tz", "transforms.tz.type": CLS,
                         "transforms.tz.converted.timezone": "+01:00"})
    out = chain.apply(record)
    assert out is not None and out.value["after"]["order_date_timestamp"] == 1514905210123
    assert row["order_date_timestamp"] == 1514908810123


@pytest.mark.parametrize(("props", "message"), [
    ({}, "transforms.tz.converted.timezone: missing"),
    ({"converted.timezone": "Asia"}, "transforms.tz.converted.timezone: 'Asia' is not a "
     "geographic timezone"),
    ({"converted.timezone": "+05:30", "include.list": "topic:a", "exclude.list": "topic:a"},
     "transforms.tz.include.list: set together with transforms.tz.exclude.list"),
    ({"converted.timezone": "+05:30", "include.list": "customers"},
     "transforms.tz.include.list: 'customers' is not a list of"),
    ({"converted.timezone": "+05:30", "exclude.lists": "a:b"},
     "unknown or unsupported property transforms.tz.exclude.lists"),
])
def test_config_errors(props: dict[str, str], message: str) -> None:
    """testWithNoConfig / testWithInvalidConfig / testBothIncludeExcludeList."""
    with pytest.raises(PluginConfigError, match=message.replace(".", r"\.").replace("+", r"\+")):
        build_chain({"transforms": "tz", "transforms.tz.type": CLS,
                     **{f"transforms.tz.{k}": v for k, v in props.items()}})
