"""snapshot.mode as Snapshotter objects: the two start-up answers per mode."""

from __future__ import annotations

import pytest

from headwater.relational.snapshotter import SNAPSHOTTERS, snapshotter_for

# mode -> (reads data for (completed, position readable) in the order below, streams)
CASES = [(False, True), (False, False), (True, True), (True, False)]
EXPECTED = {
    "initial": ([True, True, False, False], True),
    "initial_only": ([True, True, False, False], False),
    "when_needed": ([True, True, False, True], True),
    "when_needed_no_data": ([False, False, False, False], True),
    "always": ([True, True, True, True], True),
    "no_data": ([False, False, False, False], True),
    "never": ([False, False, False, False], True),
    "recovery": ([False, False, False, False], True),
}


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_each_mode_answers_as_debezium(mode: str) -> None:
    snapshotter = snapshotter_for(mode)
    reads, streams = EXPECTED[mode]
    assert [snapshotter.reads_data(c, r) for c, r in CASES] == reads
    assert snapshotter.streams is streams


def test_every_mode_either_connector_accepts_has_a_snapshotter() -> None:
    from headwater.connectors.mysql.config import MYSQL_CONFIG_DEF
    from headwater.connectors.postgres.config import POSTGRES_CONFIG_DEF
    from headwater.connectors.sqlserver.config import PROPERTIES as SQLSERVER

    (sqlserver_mode,) = [p for p in SQLSERVER if p.name == "snapshot.mode"]
    for allowed in (MYSQL_CONFIG_DEF["snapshot.mode"].allowed,
                    POSTGRES_CONFIG_DEF["snapshot.mode"].allowed, sqlserver_mode.allowed):
        assert set(allowed) <= set(SNAPSHOTTERS)
    # Debezium 3.x's SQL Server connector alone has when_needed_no_data (3.6.3's jars:
    # SqlServerConnectorConfig.SnapshotMode has WHEN_NEEDED_NO_DATA, PostgresConnectorConfig's
    # and BinlogConnectorConfig's (MySQL, MariaDB) do not)
    assert "when_needed_no_data" in sqlserver_mode.allowed
    assert "when_needed_no_data" not in MYSQL_CONFIG_DEF["snapshot.mode"].allowed
    assert "when_needed_no_data" not in POSTGRES_CONFIG_DEF["snapshot.mode"].allowed
    with pytest.raises(ValueError, match=r"snapshot\.mode=.custom. has no snapshotter"):
        snapshotter_for("custom")
