"""`?` placeholders in each DB-API driver's style: pymssql (pyformat) formats the whole
statement with `%`, so literal `%` must be doubled and quoted `?` left alone; the SQL Server
emulation behaves as pymssql does, so a raw `?` sent to it fails as it would on a live server."""

from __future__ import annotations

import types
from typing import Any

import psycopg2
import pytest

from headwater.relational.changetables.paramstyle import connect_qmark, to_paramstyle
from headwater.testing.sqlserver_emulation.dbapi import from_pyformat


@pytest.mark.parametrize(("sql", "want"), [
    ("SELECT a FROM t WHERE x = ? AND y > ?", "SELECT a FROM t WHERE x = %s AND y > %s"),
    ("SELECT '?', [a?b], \"c?\" FROM t WHERE x = ?",
     "SELECT '?', [a?b], \"c?\" FROM t WHERE x = %s"),
    ("SELECT 'it''s ?' WHERE v LIKE 'a%' AND w = ?",
     "SELECT 'it''s ?' WHERE v LIKE 'a%%' AND w = %s"),
    ("SELECT [we]]ird?] FROM [100%] WHERE k = ?", "SELECT [we]]ird?] FROM [100%%] WHERE k = %s"),
])
def test_qmark_to_pyformat(sql: str, want: str) -> None:
    assert to_paramstyle(sql, "pyformat") == want
    assert to_paramstyle(sql, "qmark") == sql
    assert from_pyformat(want) == sql  # the emulation reads back what pymssql would send


def test_unsupported_style_is_refused() -> None:
    with pytest.raises(ValueError, match="named"):
        to_paramstyle("SELECT ?", "named")


def test_a_pyformat_driver_gets_its_own_placeholders() -> None:
    sent: list[tuple[str, Any]] = []

    class Cursor:
        def execute(self, sql: str, params: Any = None) -> None:
            sent.append((sql, params))

        def fetchone(self) -> tuple[int]:
            return (1,)

    class Connection:
        def cursor(self) -> Cursor:
            return Cursor()

    driver = types.SimpleNamespace(paramstyle="pyformat", connect=lambda **kw: Connection())
    cur = connect_qmark(driver).cursor()
    cur.execute("SELECT ? WHERE v LIKE '5%'", (1,))
    cur.execute("SET TRANSACTION ISOLATION LEVEL SNAPSHOT")
    assert sent == [("SELECT %s WHERE v LIKE '5%%'", (1,)),
                    ("SET TRANSACTION ISOLATION LEVEL SNAPSHOT", None)]
    assert cur.fetchone() == (1,)


def test_the_emulation_refuses_a_raw_question_mark_like_sql_server() -> None:
    with pytest.raises(psycopg2.ProgrammingError, match="placeholder"):
        from_pyformat("SELECT ? WHERE a = %s")
    with pytest.raises(psycopg2.ProgrammingError, match="unescaped"):
        from_pyformat("SELECT 1 WHERE v LIKE 'a%' AND a = %s")
