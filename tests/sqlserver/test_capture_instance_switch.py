"""The capture-instance switch after a schema change, on the CDC EMULATION (not a live server).

SQL Server's change table keeps the columns it was created with: after `ALTER TABLE ... ADD`
the DBA creates a second capture instance, and both exist for a while.  Debezium reads the old
instance's changes up to the new instance's start LSN and the new instance's from there on;
a running connector notices the new instance on its next iteration.  Here: changes before the
ALTER, between the ALTER and the second instance (old columns only), and after it (with the new
column), each exactly once and in order, without a restart.
"""

from __future__ import annotations

from typing import Any

from headwater.model.record import ChangeRecord
from headwater.testing.localpg import wait_for
from tests.sqlserver.conftest import enable_cdc, tsql
from tests.sqlserver.test_emulated_capture import Capture, config


def _keys(records: list[ChangeRecord]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(r.op.value, (r.after or r.before or ())) for r in records]


def test_second_capture_instance_takes_over_at_its_start_lsn(
        sqlserver_db: dict[str, Any]) -> None:
    db = sqlserver_db
    tsql(db, "CREATE TABLE dbo.items (id INT NOT NULL PRIMARY KEY, a INT NULL)",
         "INSERT INTO dbo.items VALUES (1, 10)")
    enable_cdc(db, "dbo", "items", "dbo_items")
    capture = Capture(config(db))
    capture.run()
    try:
        tsql(db, "INSERT INTO dbo.items VALUES (2, 20)")
        wait_for(lambda: len(capture.records()) >= 2, 20, what="snapshot and first insert")
        tsql(db, "ALTER TABLE dbo.items ADD b NVARCHAR(10) NULL",
             "INSERT INTO dbo.items (id, a, b) VALUES (3, 30, 'lost')",
             "UPDATE dbo.items SET a = 11 WHERE id = 1")
        wait_for(lambda: len(capture.records()) >= 4, 20, what="changes under the old instance")
        enable_cdc(db, "dbo", "items", "dbo_items_v2")
        tsql(db, "INSERT INTO dbo.items (id, a, b) VALUES (4, 40, 'kept')",
             "UPDATE dbo.items SET b = 'new' WHERE id = 3",
             "DELETE FROM dbo.items WHERE id = 2")
        wait_for(lambda: len(capture.records()) >= 7, 20, what="changes under the new instance")
    finally:
        capture.stop()
    records = capture.records()
    assert _keys(records) == [
        ("r", (1, 10)), ("c", (2, 20)),
        # the old instance: the new column is not in its change table
        ("c", (3, 30)), ("u", (1, 11)),
        # the new instance, from its start LSN: the new column
        ("c", (4, 40, "kept")), ("u", (3, 30, "new")), ("d", (2, 20, None)),
    ]
    old, new = records[3], records[4]
    assert [c.name for c in old.table.columns] == ["id", "a"]
    assert [c.name for c in new.table.columns] == ["id", "a", "b"]
    assert records[5].before == (3, 30, "lost")  # the new instance's before image
    commits = [r.position.commit_lsn for r in records[1:]]
    assert commits == sorted(commits)
