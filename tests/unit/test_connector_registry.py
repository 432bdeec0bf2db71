"""The connector registry: lookups by connector.class and source.connector, their errors,
discovery through entry points, and the pipeline's order lookups (never defaulted)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest

from headwater.capture import load_connector_config
from headwater.config import ConfigError
from headwater.connectors.mysql.ordering import MYSQL_ORDER
from headwater.connectors.mysql.position import MySqlPosition
from headwater.connectors.postgres.ordering import POSTGRES_ORDER
from headwater.connectors.postgres.position import PostgresPosition, PostgresSourceBlock
from headwater.connectors.registry import (
    REGISTRY,
    ConnectorRegistration,
    ConnectorRegistry,
    EventOrder,
    RegistryError,
    registration_for_class,
)
from headwater.model.position import Position
from headwater.pipeline.columnar import NotColumnar, batch_order
from headwater.pipeline.decode import UnknownSourceConnectorError, decode_topic
from tests.unit.test_debezium_format import ANNE, record

KNOWN = ("io.debezium.connector.postgresql.PostgresConnector, "
         "io.debezium.connector.mysql.MySqlConnector, "
         "io.debezium.connector.mariadb.MariaDbConnector")


def _unused(*_args: Any) -> Any:
    raise AssertionError("not called")


def registration(name: str, classes: tuple[str, ...], sources: tuple[str, ...],
                 order: EventOrder = MYSQL_ORDER) -> ConnectorRegistration:
    return ConnectorRegistration(name, classes, sources, _unused, _unused, order)


def test_builtins_are_found_by_class_alias_and_source_connector() -> None:
    pg = registration_for_class("io.debezium.connector.postgresql.PostgresConnector")
    assert pg.name == "PostgreSQL" and registration_for_class("Postgres") is pg
    mysql = registration_for_class("io.debezium.connector.mariadb.MariaDbConnector")
    assert mysql is registration_for_class("io.debezium.connector.mysql.MySqlConnector")
    assert REGISTRY.order_for("postgresql") is pg.order
    assert REGISTRY.order_for("mysql") is REGISTRY.order_for("mariadb") is mysql.order
    db2 = registration_for_class("io.debezium.connector.db2.Db2Connector")
    assert REGISTRY.order_for("db2") is db2.order and registration_for_class("db2") is db2
    assert REGISTRY.order_for("oracle") is None and REGISTRY.order_for(None) is None


def test_missing_or_unknown_connector_class_names_property_value_and_known_classes(
        tmp_path: Path) -> None:
    with pytest.raises(RegistryError, match=f"connector.class: required; known classes: {KNOWN}"):
        registration_for_class(None)
    with pytest.raises(RegistryError, match=(r"connector.class: unknown value "
                                             r"'io.debezium.connector.oracle.OracleConnector'"
                                             f"; known classes: {KNOWN}")):
        registration_for_class("io.debezium.connector.oracle.OracleConnector")
    config = tmp_path / "c.properties"
    config.write_text("topic.prefix=x\n")
    with pytest.raises(ConfigError, match=r"connector.class: required"):
        load_connector_config(config)
    config.write_text("topic.prefix=x\nconnector.class=oracle\n")
    with pytest.raises(ConfigError, match=r"connector.class: unknown value 'oracle'"):
        load_connector_config(config)


def test_a_name_claimed_twice_is_an_error_naming_both_connectors() -> None:
    registry = ConnectorRegistry(builtins=(), group=None)
    first = registration("First", ("a.A",), ("a",))
    registry.register(first)
    registry.register(first)  # the same object again (entry point + register()): no-op
    with pytest.raises(RegistryError, match=r"connector.class 'a.A' of connector 'Second' is "
                       r"already registered by 'First'"):
        registry.register(registration("Second", ("a.A",), ("b",)))
    with pytest.raises(RegistryError, match=r"source.connector 'a' of connector 'Third'"):
        registry.register(registration("Third", ("c.C",), ("a",)))
    with pytest.raises(RegistryError, match=r"expected a ConnectorRegistration"):
        registry.register("a.A")  # type: ignore[arg-type]


PLUGIN = registration("Toy", ("org.example.ToyConnector",), ("toy",))


def test_entry_points_register_connectors_and_broken_ones_are_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "toy_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[hw.test.connectors]\n"
        "toy = tests.unit.test_connector_registry:PLUGIN\n"
        "broken = tests.unit.no_such_module:REGISTRATION\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = ConnectorRegistry(builtins=(), group="hw.test.connectors")
    assert registry.for_class("org.example.ToyConnector") is PLUGIN
    assert registry.order_for("toy") is PLUGIN.order
    with pytest.raises(RegistryError, match=r"entry points that failed to load: broken = "
                       r"tests\.unit\.no_such_module:REGISTRATION"):
        registry.for_class("x")
    assert "tests.unit.no_such_module" not in sys.modules


def doc(source: dict[str, Any], key: int = 1) -> tuple[bytes, bytes]:
    schema = {"type": "struct", "optional": True,
              "fields": [{"type": "int32", "optional": False, "field": "id"}]}
    value = {"schema": {"type": "struct", "fields": [{**schema, "field": "after"}]},
             "payload": {"after": {"id": key}, "source": source, "op": "u", "ts_ms": 0}}
    return (orjson.dumps({"schema": {**schema, "optional": False}, "payload": {"id": key}}),
            orjson.dumps(value))


@pytest.mark.parametrize("connector", ["oracle", None])
def test_an_event_of_an_unregistered_connector_is_an_error_not_postgres_order(
        connector: str | None) -> None:
    ok = doc({"connector": "postgresql", "lsn": 10, "sequence": '[null,"10"]'})
    bad = doc({"connector": connector, "change_lsn": "00000027:00000758:0003"}
              if connector else {"change_lsn": "x"})
    with pytest.raises(UnknownSourceConnectorError,
                       match=f"topic s.dbo.t offset 8: source.connector {connector!r} has no "
                             "registered event order"):
        decode_topic("s.dbo.t", [(7, *ok), (8, *bad)])


def test_column_wise_path_looks_the_order_up_too() -> None:
    def source(*connectors: str | None) -> pa.StructArray:
        return pa.array([{"connector": c} for c in connectors],
                        pa.struct([("connector", pa.string())]))

    offsets = np.array([40, 41, 42], dtype=np.int64)
    assert batch_order("t", source("mysql", "mariadb", "mysql"), offsets,
                       MYSQL_ORDER) is MYSQL_ORDER
    with pytest.raises(UnknownSourceConnectorError, match=r"topic t offset 41: source.connector "
                       r"'oracle'"):
        batch_order("t", source("postgresql", "oracle", "postgresql"), offsets, POSTGRES_ORDER)
    with pytest.raises(UnknownSourceConnectorError, match=r"topic t offset 42: source.connector "
                       r"None"):
        batch_order("t", source("postgresql", "postgresql", None), offsets, POSTGRES_ORDER)
    with pytest.raises(NotColumnar, match=r"two connectors"):
        batch_order("t", source("postgresql", "mysql", "postgresql"), offsets, POSTGRES_ORDER)
    with pytest.raises(NotColumnar, match=r"two connectors"):  # not the first event's order
        batch_order("t", source("mysql", "mysql", "mysql"), offsets, POSTGRES_ORDER)


def test_positions_implement_the_common_protocol() -> None:
    pg = PostgresPosition(24023128, 24023128, 24023119, 555)
    my = MySqlPosition("mysql-bin.000003", 154, 2, 1, None, 7, None)
    assert isinstance(pg, Position) and isinstance(my, Position)
    assert pg.order_key == (24023128, 24023128) and my.order_key == (3, 154, 2)
    block = PostgresSourceBlock().payload(record_with(pg))
    assert {k: block[k] for k in pg.source_fields()} == pg.source_fields()
    assert my.source_fields()["file"] == "mysql-bin.000003"


def record_with(position: PostgresPosition) -> Any:
    from headwater.model.record import Op

    return record(Op.CREATE, None, ANNE, position=position)


def test_column_wise_reader_takes_the_order_of_the_batchs_first_event() -> None:
    from headwater.connectors.sqlserver.ordering import SQLSERVER_ORDER
    from headwater.pipeline.columnar import Lines, lines_order

    def lines(*sources: dict[str, Any]) -> Lines:
        text = b"".join(orjson.dumps({"op": "c", "source": s}) + b"\n" for s in sources)
        return Lines(offsets=np.arange(9, 9 + len(sources), dtype=np.int64),
                     value_lines=np.frombuffer(text, np.uint8))

    assert lines_order("t", lines({"connector": "sqlserver"}, {"connector": "mysql"})) is (
        SQLSERVER_ORDER)  # (the parsed batch is checked for one order: batch_order)
    with pytest.raises(UnknownSourceConnectorError, match=r"topic t offset 9: source.connector "
                       r"'oracle'"):
        lines_order("t", lines({"connector": "oracle"}))
    with pytest.raises(NotColumnar, match="no column-wise order"):
        lines_order("t", lines({"connector": "mongodb"}))
    with pytest.raises(NotColumnar, match="no source block"):
        lines_order("t", lines(None))  # type: ignore[arg-type]


def test_declared_position_fields_shape_the_source_struct() -> None:
    from headwater.pipeline.columnar import source_struct

    struct = source_struct((("scn", "string"), ("db", "string")))
    assert struct.field("scn").type == pa.string()
    assert [f.name for f in struct] == ["connector", "snapshot", "sequence", "schema", "db",
                                        "table", "scn"]
    with pytest.raises(ValueError, match=r"source field 'db': the connector's EventOrder."
                       r"columnar_position declares int64, the column-wise reader reads it "
                       r"as string"):
        source_struct((("db", "int64"),))
    with pytest.raises(ValueError, match=r"source field 'scn': unknown Arrow type 'number'"):
        source_struct((("scn", "number"),))
