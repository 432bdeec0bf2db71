"""The statement text of schema history records and schema change events (ddl_text.py), and
Debezium's double-quoted table ids in tableChanges."""

from __future__ import annotations

import pytest

from headwater.connectors.mysql.ddl_text import is_single_statement, shorten, statement_text
from headwater.relational.table_changes import quoted_id as double_quoted_id


@pytest.mark.parametrize(("sql", "text"), [
    ("CREATE TABLE t (a INT)", "CREATE TABLE t (a INT)"),
    ("CREATE TABLE t (a INT) -- why", "CREATE TABLE t (a INT)"),
    ("CREATE TABLE t (a INT) # why", "CREATE TABLE t (a INT)"),
    ("CREATE TABLE t (a INT) /* why */", "CREATE TABLE t (a INT)"),
    ("  /* lead */ -- more\n CREATE TABLE t (a INT);  \n", "CREATE TABLE t (a INT)"),
    ("CREATE TABLE t (a INT /* inside */)", "CREATE TABLE t (a INT /* inside */)"),
    ("CREATE TABLE t (a INT) /*!50100 PARTITION BY HASH(a) */",
     "CREATE TABLE t (a INT) /*!50100 PARTITION BY HASH(a) */"),
    ("ALTER TABLE t COMMENT 'x -- y; /* z */' -- c", "ALTER TABLE t COMMENT 'x -- y; /* z */'"),
    ("ALTER TABLE `a``#b` ADD c INT#", "ALTER TABLE `a``#b` ADD c INT"),
    ("ALTER TABLE t COMMENT 'it\\'s' ;;", "ALTER TABLE t COMMENT 'it\\'s'"),
    ("CREATE TABLE t (a INT)--x", "CREATE TABLE t (a INT)--x"),  # '--' needs a space
    ("/* only a comment */", "/* only a comment */"),
])
def test_statement_text_drops_what_debezium_hides_around_it(sql: str, text: str) -> None:
    assert statement_text(sql) == text


def test_single_statement() -> None:
    assert is_single_statement("DROP TABLE a, b;")
    assert is_single_statement("ALTER TABLE t COMMENT 'a;b'")
    assert not is_single_statement("DROP TABLE a; DROP TABLE b")


def test_shorten() -> None:
    assert shorten("CREATE   TABLE\n t (a INT)") == "CREATE TABLE t (a INT)"
    long = "CREATE TABLE t (" + ", ".join(f"c{i} INT" for i in range(200)) + ")"
    cut = shorten(long, 100)
    assert len(cut) == 100 and cut.endswith("...")


@pytest.mark.parametrize(("database", "table", "expected"), [
    ("db", "t", '"db"."t"'),
    ("db", 'a"b', '"db"."a""b"'),
    ('d"b', "t", '"d""b"."t"'),
    ("db", '"quoted"', '"db"."quoted"'),  # Debezium leaves an already quoted part alone
    ("", "t", '"t"'),
])
def test_table_change_ids_are_double_quoted_as_debezium_does(database: str, table: str,
                                                             expected: str) -> None:
    assert double_quoted_id(database, table) == expected
