"""Db2 configuration: Debezium's property names and defaults, the registry entry, the refusal
of Datastream events."""

from __future__ import annotations

import pytest

from headwater.config.definition import ConfigError
from headwater.connectors.db2.config import validate_db2_config
from headwater.connectors.registry import registration_for_class

BASE = {"topic.prefix": "db2server", "database.hostname": "db2", "database.user": "db2inst1",
        "database.dbname": "TESTDB"}


def test_defaults_are_debeziums() -> None:
    cfg = validate_db2_config(dict(BASE))[0]
    assert (cfg.database_port, cfg.db2_platform, cfg.cdc_control_schema,
            cfg.cdc_change_tables_schema, cfg.snapshot_isolation_mode, cfg.snapshot_mode,
            cfg.time_precision_mode, cfg.decimal_handling_mode) == (
        50000, "luw", "ASNCDC", "ASNCDC", "repeatable_read", "initial", "adaptive", "precise")
    assert cfg.headwater_db2_driver == "ibm_db_dbi"


def test_platform_z_and_asn_tables_never_captured() -> None:
    cfg = validate_db2_config({**BASE, "db2.platform": "Z"})[0]
    assert cfg.db2_platform == "zos"
    assert not cfg.table_filter("ASNCDC", "IBMSNAP_REGISTER")
    assert cfg.table_filter("DB2INST1", "CUSTOMERS")


def test_registered_under_debeziums_class() -> None:
    registration = registration_for_class("io.debezium.connector.db2.Db2Connector")
    assert registration.name == "Db2" and registration.source_connectors == ("db2",)


def test_datastream_events_are_refused_naming_the_property() -> None:
    """Datastream has no Db2 source: `headwater.event.format=datastream` stops the connector
    at start instead of rendering events of some other source's shape; the files
    destination, which needs Datastream events, is refused too."""
    with pytest.raises(ConfigError) as err:
        validate_db2_config({**BASE, "headwater.event.format": "datastream"})
    assert "headwater.event.format=datastream" in str(err.value)
    assert "the Db2 connector does not write Datastream events" in str(err.value)
    with pytest.raises(ConfigError) as err:
        validate_db2_config({**BASE, "headwater.destination": "files"})
    assert "needs headwater.event.format=datastream" in str(err.value)
    cfg = validate_db2_config({**BASE, "headwater.event.format": "debezium"})[0]
    assert cfg.output.event_format == "debezium"

