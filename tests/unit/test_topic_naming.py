"""Topic names as Debezium's naming strategies make them: parts, delimiter, sanitizing,
collisions, and the format and configuration using them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from headwater.capture import build_runtime, topic_naming
from headwater.config import ConfigError
from headwater.connectors.mysql.config import validate_mysql_config
from headwater.connectors.postgres.config import validate_postgres_config
from headwater.connectors.postgres.position import PostgresSourceBlock
from headwater.formats.debezium_json import DebeziumJsonFormat
from headwater.model.record import HeartbeatEvent, Op, TransactionEvent
from headwater.model.schema import TableId
from headwater.model.topic_naming import (
    DEFAULT_STRATEGY,
    DEFAULT_UNICODE_STRATEGY,
    SCHEMA_STRATEGY,
    SCHEMA_UNICODE_STRATEGY,
    TopicNaming,
    TopicNamingError,
    parse_strategy,
    sanitize_topic_name,
)
from headwater.topics.segment import validate_topic_name
from tests.unit.test_debezium_format import ANNE, CTX, customers, record

PG = TableId("shop", "public", "orders")  # PostgreSQL: database, schema, table
MY = TableId("shop", None, "orders")  # MySQL: database, no schema

PG_BASE = {"database.hostname": "127.0.0.1", "database.user": "u", "database.dbname": "d",
           "topic.prefix": "inv"}
MY_BASE = {"connector.class": "io.debezium.connector.mysql.MySqlConnector",
           "database.hostname": "127.0.0.1", "database.user": "u", "topic.prefix": "inv",
           "database.server.id": "5501"}


@pytest.mark.parametrize(("strategy", "table", "topic"), [
    (SCHEMA_STRATEGY, PG, "inv.public.orders"),
    (SCHEMA_STRATEGY, MY, "inv.orders"),  # a MySQL table id has no schema part
    (DEFAULT_STRATEGY, MY, "inv.shop.orders"),
    (DEFAULT_STRATEGY, PG, "inv.orders"),  # Debezium's PostgreSQL table ids have no catalog
    (SCHEMA_UNICODE_STRATEGY, PG, "inv.public.orders"),
    (DEFAULT_UNICODE_STRATEGY, MY, "inv.shop.orders"),
])
def test_every_strategy_joins_its_parts(strategy: str, table: TableId, topic: str) -> None:
    assert TopicNaming("inv", strategy).data_change_topic(table) == topic


def test_delimiter_joins_data_transaction_and_heartbeat_topics() -> None:
    naming = TopicNaming("inv", SCHEMA_STRATEGY, delimiter="_", transaction="tx",
                         heartbeat_prefix="hb")
    assert naming.data_change_topic(PG) == "inv_public_orders"
    assert naming.transaction_topic() == "inv_tx"
    assert naming.heartbeat_topic() == "hb_inv"
    assert naming.schema_change_topic() == "inv"
    default = TopicNaming("inv")
    assert (default.transaction_topic(), default.heartbeat_topic()) == (
        "inv.transaction", "__debezium-heartbeat.inv")


@pytest.mark.parametrize(("table", "underscore", "unicode"), [
    ("Order Items", "inv.public.Order_Items", "inv.public.Order_u0020Items"),
    ("tëst_表", "inv.public.t_st__", "inv.public.t_u00ebst_u005f_u8868"),
    ('say "hi"', "inv.public.say__hi_", "inv.public.say_u0020_u0022hi_u0022"),
    ("a\U0001f600", "inv.public.a__", "inv.public.a_ud83d_ude00"),  # two UTF-16 units
])
def test_illegal_characters_are_replaced_as_debezium_does(table: str, underscore: str,
                                                           unicode: str) -> None:
    tid = TableId("shop", "public", table)
    assert TopicNaming("inv", SCHEMA_STRATEGY).data_change_topic(tid) == underscore
    assert TopicNaming("inv", SCHEMA_UNICODE_STRATEGY).data_change_topic(tid) == unicode
    validate_topic_name(underscore)
    validate_topic_name(unicode)


def test_sanitizing_warns_once_naming_the_table(caplog: pytest.LogCaptureFixture) -> None:
    naming = TopicNaming("inv")
    table = TableId("shop", "public", "Order Items")
    with caplog.at_level(logging.WARNING, logger="headwater.topic_naming"):
        for _ in range(3):
            assert naming.data_change_topic(table) == "inv.public.Order_Items"
        naming.data_change_topic(PG)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1
    assert "shop.public.Order Items" in messages[0] and "inv.public.Order_Items" in messages[0]


def test_sanitized_names_are_cut_to_249_and_dots_replaced() -> None:
    long = TopicNaming("inv").data_change_topic(TableId("d", "s", "x" * 300))
    assert len(long) == 249 and long.startswith("inv.s.xxx")
    assert sanitize_topic_name(".") == "_" and sanitize_topic_name("..") == "__"
    assert sanitize_topic_name("..", unicode=True) == "_u002e_u002e"


@pytest.mark.parametrize("name", [
    "Order Items", "tëst_表", 'a"b', "x" * 400, ".", "..", "-", "\n", "a/b", "ünïcödé",
    "\U0001f600" * 200, "",
])
def test_every_sanitized_data_topic_is_a_legal_topic_log_name(name: str) -> None:
    for strategy in (SCHEMA_STRATEGY, DEFAULT_STRATEGY, SCHEMA_UNICODE_STRATEGY,
                     DEFAULT_UNICODE_STRATEGY):
        for table in (TableId("d", name or "s", name or "t"), TableId(name or "d", None, "t")):
            validate_topic_name(TopicNaming("p-1_x", strategy).data_change_topic(table))


def test_two_tables_on_one_topic_are_an_error_naming_both() -> None:
    naming = TopicNaming("inv")
    tables = [TableId("shop", "public", "Order Items"), PG,
              TableId("shop", "public", "Order_Items")]
    with pytest.raises(TopicNamingError, match=r"'shop\.public\.Order Items' and "
                       r"'shop\.public\.Order_Items' would both write to topic "
                       r"'inv\.public\.Order_Items'"):
        naming.check_tables(tables)
    # the delimiter can make two tables collide too
    dashed = TopicNaming("inv", delimiter="-")
    with pytest.raises(TopicNamingError, match=r"a-b.c"):
        dashed.check_tables([TableId("d", "a-b", "c"), TableId("d", "a", "b-c")])
    assert TopicNaming("inv").check_tables([PG, MY]) == {PG: "inv.public.orders",
                                                         MY: "inv.orders"}


def test_strategy_and_name_errors() -> None:
    with pytest.raises(ValueError, match=r"SchemaTopicNamingStrategy"):
        parse_strategy("schema")  # Debezium takes class names only
    with pytest.raises(ValueError, match=r"topic.regex"):
        parse_strategy("io.debezium.schema.DefaultRegexTopicNamingStrategy")
    with pytest.raises(TopicNamingError, match=r"topic.naming.strategy: 'x'"):
        TopicNaming("inv", "x")
    with pytest.raises(TopicNamingError, match=r"topic.delimiter: '/' has invalid format"):
        TopicNaming("inv", delimiter="/")
    with pytest.raises(TopicNamingError, match=r"topic.prefix: '.inv' starts with '.'"):
        TopicNaming(".inv")


def test_properties_are_declared_and_validated_for_both_connectors(tmp_path: Path) -> None:
    pg, _ = validate_postgres_config({**PG_BASE, "topic.delimiter": "_"}, base_dir=tmp_path)
    assert (pg.topic_naming_strategy, pg.topic_delimiter) == (None, "_")
    assert topic_naming(pg).data_change_topic(PG) == "inv_public_orders"  # PostgreSQL default
    pg, _ = validate_postgres_config(
        {**PG_BASE, "topic.transaction": "tx", "topic.heartbeat.prefix": "hb"}, base_dir=tmp_path)
    assert (topic_naming(pg).transaction_topic(), topic_naming(pg).heartbeat_topic()) == (
        "inv.tx", "hb.inv")
    my, _ = validate_mysql_config(MY_BASE, base_dir=tmp_path)
    assert topic_naming(my).data_change_topic(MY) == "inv.shop.orders"  # MySQL default
    my, _ = validate_mysql_config({**MY_BASE, "topic.naming.strategy": SCHEMA_STRATEGY},
                                  base_dir=tmp_path)
    assert topic_naming(my).data_change_topic(MY) == "inv.orders"
    with pytest.raises(ConfigError, match=r"topic.naming.strategy"):
        validate_postgres_config({**PG_BASE, "topic.naming.strategy": "nope"}, base_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"topic.delimiter"):
        validate_mysql_config({**MY_BASE, "topic.delimiter": "a b"}, base_dir=tmp_path)


def test_the_capture_writes_transactions_and_heartbeats_on_the_configured_topics(
        tmp_path: Path) -> None:
    cfg, _ = validate_postgres_config({
        **PG_BASE, "topic.transaction": "tx", "topic.heartbeat.prefix": "hb",
        "provide.transaction.metadata": "true",
        "offset.storage.file.filename": str(tmp_path / "o.json"),
        "headwater.topics.dir": str(tmp_path / "topics")}, base_dir=tmp_path)
    runtime = build_runtime(cfg)
    runtime.writer.close()
    fmt = runtime.renderer
    assert isinstance(fmt, DebeziumJsonFormat)
    tx = fmt.render(TransactionEvent(CTX, "BEGIN", "1", 0, None, None, None))
    hb = fmt.render(HeartbeatEvent(CTX, 0, None))
    assert [t for t, _ in tx + hb] == ["inv.tx", "hb.inv"]


def test_format_takes_every_topic_name_from_the_naming() -> None:
    naming = TopicNaming("inv", delimiter="-", transaction="tx")
    fmt = DebeziumJsonFormat(PostgresSourceBlock(), topic_naming=naming,
                             provide_transaction_metadata=True)
    change = fmt.render(record(Op.CREATE, None, ANNE))
    assert [t for t, _ in change] == ["inv-public-customers"]
    tx = fmt.render(TransactionEvent(CTX, "BEGIN", "1", 0, None, None, None))
    hb = fmt.render(HeartbeatEvent(CTX, 0, None))
    assert [t for t, _ in tx + hb] == ["inv-tx", "__debezium-heartbeat-inv"]
    # without a naming: each connector's Debezium default, from the context's server name
    plain = DebeziumJsonFormat(PostgresSourceBlock(), provide_transaction_metadata=True)
    assert plain.render(record(Op.CREATE, None, ANNE, table=customers()))[0][0] == (
        "PostgreSQL_server.public.customers")
    # ... and the default transaction topic and heartbeat prefix
    tx = plain.render(TransactionEvent(CTX, "BEGIN", "1", 0, None, None, None))
    hb = plain.render(HeartbeatEvent(CTX, 0, None))
    assert [t for t, _ in tx + hb] == [
        "PostgreSQL_server.transaction", "__debezium-heartbeat.PostgreSQL_server"]


@pytest.mark.parametrize("strategy", [SCHEMA_STRATEGY, DEFAULT_STRATEGY, SCHEMA_UNICODE_STRATEGY,
                                      DEFAULT_UNICODE_STRATEGY])
def test_every_data_topic_starts_with_the_data_topic_prefix(strategy: str) -> None:
    """What the Kafka store's snapshot restart asks the ends of (kafka/ranges.py)."""
    naming = TopicNaming("my_db", strategy, "_")
    prefix = naming.data_topic_prefix()
    for table in (PG, MY, TableId("shop", "sales dept", "orders_2024")):
        assert naming.data_change_topic(table).startswith(prefix)
    assert prefix == ("my_u005fdb_u005f" if "Unicode" in strategy else "my_db_")
