"""snapshot.mode=when_needed_no_data (Debezium 3.x, SQL Server only) and the position check of
the when_needed modes, against the CDC EMULATION (not a live server): no READ events ever; a
restart whose stored LSN the change tables still hold streams on from it; one whose LSN was
cleaned up starts over (a schema snapshot at the current maximum LSN, as Debezium's
shouldProcessPurgedLogsWhenDownAndSnapshotNeededNoData), where when_needed reads the data."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.connectors.db2.config import validate_db2_config
from headwater.connectors.sqlserver.connector import SqlServerConnector
from headwater.testing.localpg import wait_for
from headwater.testing.sqlserver_emulation import dbapi
from tests.sqlserver.conftest import enable_cdc, tsql
from tests.sqlserver.test_emulated_capture import CUSTOMERS, Capture, config


def _insert(db: dict[str, Any], *ids: int) -> None:
    tsql(db, *(f"INSERT INTO dbo.customers (id, first_name, last_name, email) "
               f"VALUES ({i}, 'f', 'l', 'e')" for i in ids))


def _cleanup(db: dict[str, Any]) -> None:
    """What SQL Server's cleanup job does: the change table's start LSN moves past every
    change written so far, and the rows below it are deleted."""
    conn = dbapi.connect(**db)
    try:
        cur = conn._inner.cursor()
        cur.execute("UPDATE cdc.change_tables SET start_lsn = "
                    "sys.fn_cdc_increment_lsn(sys.fn_cdc_get_max_lsn())")
        cur.execute('DELETE FROM cdc."dbo_customers_CT" WHERE "__$start_lsn" < '
                    "(SELECT min(start_lsn) FROM cdc.change_tables)")
        conn.commit()
    finally:
        conn.close()


def _ops(capture: Capture) -> list[tuple[str, int]]:
    return [(r.op.value, (r.after or r.before or (0,))[0]) for r in capture.records()]


def _run(db: dict[str, Any], mode: str, offset: dict[str, Any] | None, insert: int,
         count: int) -> tuple[Capture, dict[str, Any]]:
    capture = Capture(config(db, **{"snapshot.mode": mode}))
    capture.run(offset)
    try:
        _insert(db, insert)
        wait_for(lambda: len(capture.records()) >= count, 20, what=f"{count} records")
    finally:
        capture.stop()
    last = capture.last_offset()
    assert last is not None
    return capture, last


def test_when_needed_no_data_never_reads_and_starts_over_after_cleanup(
        sqlserver_db: dict[str, Any]) -> None:
    db = sqlserver_db
    tsql(db, CUSTOMERS)
    _insert(db, 1)
    enable_cdc(db, "dbo", "customers")
    first, offset = _run(db, "when_needed_no_data", None, 2, 1)
    assert _ops(first) == [("c", 2)]  # no READ of row 1
    _insert(db, 3)  # while stopped, still in the change table
    second, offset = _run(db, "when_needed_no_data", offset, 4, 2)
    assert _ops(second) == [("c", 3), ("c", 4)]
    _insert(db, 5)  # while stopped, then cleaned up: lost, as in Debezium
    _cleanup(db)
    third, _ = _run(db, "when_needed_no_data", offset, 6, 1)
    assert _ops(third) == [("c", 6)]


def test_when_needed_reads_the_data_again_after_cleanup(sqlserver_db: dict[str, Any]) -> None:
    db = sqlserver_db
    tsql(db, CUSTOMERS)
    _insert(db, 1)
    enable_cdc(db, "dbo", "customers")
    first, offset = _run(db, "when_needed", None, 2, 2)
    assert _ops(first) == [("r", 1), ("c", 2)]
    _insert(db, 3)
    _cleanup(db)
    second, _ = _run(db, "when_needed", offset, 4, 4)
    assert _ops(second) == [("r", 1), ("r", 2), ("r", 3), ("c", 4)]


def test_only_sql_server_has_when_needed_no_data(sqlserver_db: dict[str, Any]) -> None:
    assert isinstance(SqlServerConnector(config(sqlserver_db, **{
        "snapshot.mode": "when_needed_no_data"})), SqlServerConnector)
    with pytest.raises(Exception, match="when_needed_no_data"):
        validate_db2_config({"database.hostname": "h", "database.user": "u",
                             "database.dbname": "d", "topic.prefix": "p",
                             "snapshot.mode": "when_needed_no_data"})

