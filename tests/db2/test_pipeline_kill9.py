"""End to end on the Db2 ASN EMULATION (not a live Db2): a random workload, the capture
(`headwater run`, a subprocess) killed with SIGKILL and restarted, then the Spark pipeline
(`headwater pipeline --once`, SCD1 into Delta): the Delta table equals the emulated source
table row by row, in the types the pipeline gives Db2's columns (the scenario is the
change-table connectors' shared one, tests/changetables/kill9.py).

The table is created unquoted, as Db2 users mostly do, so its names are upper case
(DB2INST1.ORDERS, column ID, ...), in the events and in Delta too.  The pipeline orders the
events by the order Db2's connector registers for `source.connector=db2`
(connectors/db2/ordering.py): commit LSN, snapshot before stream, change LSN; an update is one
event at its after row's INTENTSEQ.  The short form (2 kills) runs in CI; more kills are
`slow`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.db2.ordering import DB2_ORDER
from headwater.connectors.registry import event_order
from tests.changetables.kill9 import COLUMNS, Orders, kill9_then_pipeline, seed
from tests.db2.conftest import add_table, sql

pytestmark = pytest.mark.integration

TABLE = ("CREATE TABLE db2inst1.orders (id INTEGER NOT NULL PRIMARY KEY, ver BIGINT NOT NULL, "
         "name VARCHAR(40), amount DECIMAL(10,2), placed TIMESTAMP(3), paid BOOLEAN)")


def test_pipeline_registers_db2_ordering() -> None:
    assert event_order("db2") is DB2_ORDER


@pytest.mark.parametrize("kills", [2, pytest.param(6, marks=[pytest.mark.slow, pytest.mark.long])],
                         ids=["2-kills", "6-kills"])
def test_kill9_capture_then_pipeline_equals_the_source_table(
        db2_db: dict[str, Any], tmp_path: Path, kills: int) -> None:
    db = db2_db
    sql(db, "CREATE SCHEMA db2inst1", TABLE)
    orders = Orders({"host": db["host"], "port": db["port"], "user": db["user"],
                     "dbname": db["database"]}, '"DB2INST1"."ORDERS"',
                    tuple(c.upper() for c in COLUMNS), "db2.DB2INST1.ORDERS",
                    ("DB2INST1", "ORDERS"))
    seed(orders)
    add_table(db, "DB2INST1", "ORDERS")
    transactions = kill9_then_pipeline(orders, {
        "name": "db2-e2e", "connector.class": "db2",
        "database.hostname": db["host"], "database.port": str(db["port"]),
        "database.user": db["user"], "database.dbname": db["database"],
        "headwater.db2.driver": "headwater.testing.db2_emulation.dbapi",
        "topic.prefix": "db2"}, tmp_path, kills)
    assert transactions > 50
