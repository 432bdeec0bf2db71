"""End to end on the SQL Server EMULATION (not a live server): a random workload, the capture
(`headwater run`, a subprocess) killed with SIGKILL and restarted, then the Spark pipeline
(`headwater pipeline --once`, SCD1 into Delta): the Delta table equals the emulated source
table row by row, in the types the pipeline gives SQL Server's columns (the scenario is the
change-table connectors' shared one, tests/changetables/kill9.py).

The pipeline orders the events by the order SQL Server's connector registers for
`source.connector=sqlserver` (connectors/sqlserver/ordering.py): commit LSN, snapshot before
stream, change LSN, event serial number.  The short form (2 kills) runs in CI; more kills are
`slow`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.registry import event_order
from headwater.connectors.sqlserver.ordering import SQLSERVER_ORDER
from tests.changetables.kill9 import COLUMNS, Orders, kill9_then_pipeline, seed
from tests.sqlserver.conftest import enable_cdc, tsql

pytestmark = pytest.mark.integration

TABLE = ("CREATE TABLE dbo.orders (id INT NOT NULL PRIMARY KEY, ver BIGINT NOT NULL, "
         "name NVARCHAR(40) NULL, amount DECIMAL(10,2) NULL, placed DATETIME2(3) NULL, "
         "paid BIT NULL)")


def test_pipeline_registers_sqlserver_ordering() -> None:
    assert event_order("sqlserver") is SQLSERVER_ORDER


@pytest.mark.parametrize("kills", [2, pytest.param(6, marks=[pytest.mark.slow, pytest.mark.long])],
                         ids=["2-kills", "6-kills"])
def test_kill9_capture_then_pipeline_equals_the_source_table(
        sqlserver_db: dict[str, Any], tmp_path: Path, kills: int) -> None:
    db = sqlserver_db
    tsql(db, TABLE)
    orders = Orders({"host": db["server"], "port": db["port"], "user": db["user"],
                     "dbname": db["database"]}, "dbo.orders", COLUMNS, "ss.dbo.orders",
                    ("dbo", "orders"))
    seed(orders)
    enable_cdc(db, "dbo", "orders")
    transactions = kill9_then_pipeline(orders, {
        "name": "sqlserver-e2e", "connector.class": "sqlserver",
        "database.hostname": db["server"], "database.port": str(db["port"]),
        "database.user": db["user"], "database.names": db["database"],
        "database.encrypt": "false",
        "headwater.sqlserver.driver": "headwater.testing.sqlserver_emulation.dbapi",
        "topic.prefix": "ss"}, tmp_path, kills)
    assert transactions > 50
