"""The snapshot's binlog position on servers we cannot run here (MySQL 5.7 / 8.0 / 8.4):
which statement is asked and how its row is read, with a scripted cursor."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.connectors.mysql.snapshot import consistent_point


class ScriptedCursor:
    def __init__(self, answers: dict[str, list[tuple[Any, ...]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []
        self._rows: list[tuple[Any, ...]] = []

    def execute(self, sql: str, params: Any = None) -> None:
        self.asked.append(sql)
        self._rows = list(self.answers.get(sql, []))

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows


@pytest.mark.parametrize(("version", "statement"), [
    ("8.0.36", "SHOW MASTER STATUS"),
    ("8.4.3", "SHOW BINARY LOG STATUS"),
])
def test_mysql_position_and_gtid_set(version: str, statement: str) -> None:
    gtids = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,\n4a1b-uuid:1-3"
    cur = ScriptedCursor({
        "SELECT VERSION(), @@server_id": [(version, 223344)],
        statement: [("mysql-bin.000003", 154, "", "", gtids)],
    })
    point = consistent_point(cur, locked=True)
    assert cur.asked == ["SELECT VERSION(), @@server_id", statement]
    assert (point.file, point.pos, point.server_id) == ("mysql-bin.000003", 154, 223344)
    assert point.gtids == "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5,4a1b-uuid:1-3"
    assert point.offset()["gtids"] == point.gtids and point.offset()["snapshot_completed"]


def test_mysql_without_gtids_and_without_binlog() -> None:
    cur = ScriptedCursor({"SELECT VERSION(), @@server_id": [("5.7.44-log", 1)],
                          "SHOW MASTER STATUS": [("mysql-bin.000001", 4, "", "", "")]})
    point = consistent_point(cur, locked=True)
    assert point.gtids is None and "gtids" not in point.offset()
    cur = ScriptedCursor({"SELECT VERSION(), @@server_id": [("8.0.36", 1)]})
    with pytest.raises(RuntimeError, match="no binary log"):
        consistent_point(cur, locked=True)


def test_mariadb_takes_the_snapshot_transactions_own_position() -> None:
    cur = ScriptedCursor({
        "SELECT VERSION(), @@server_id": [("10.11.19-MariaDB-log", 1)],
        "SHOW STATUS LIKE 'binlog_snapshot_%'": [("Binlog_snapshot_file", "mariadb-bin.000007"),
                                                 ("Binlog_snapshot_position", "991")],
        "SELECT @@gtid_binlog_pos": [("0-1-42",)],
    })
    point = consistent_point(cur, locked=False)
    assert (point.file, point.pos, point.gtids) == ("mariadb-bin.000007", 991, None)
    assert "SELECT @@gtid_binlog_pos" not in cur.asked  # not consistent without the lock
    point = consistent_point(cur, locked=True)
    assert (point.file, point.pos, point.gtids) == ("mariadb-bin.000007", 991, "0-1-42")
