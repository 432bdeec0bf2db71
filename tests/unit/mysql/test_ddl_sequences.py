"""A table's life through many statements, and what a failing statement leaves behind."""

from __future__ import annotations

import pytest

from headwater.connectors.mysql.ddl import DdlParseError
from headwater.connectors.mysql.schema_catalog import MySqlSchema


def _shape(schema: MySqlSchema, db: str, name: str) -> list[tuple[str, str, bool]] | None:
    table = schema.table(db, name)
    if table is None:
        return None
    return [(c.name, c.qualified_type, c.nullable) for c in table.columns]


def test_life_of_a_table() -> None:
    schema = MySqlSchema()
    steps: list[tuple[str, str, list[tuple[str, str, bool]] | None]] = [
        ("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "t",
         [("id", "INT", False), ("v", "VARCHAR(10)", True)]),
        ("ALTER TABLE t ADD n DECIMAL(5,2) UNSIGNED NOT NULL", "t",
         [("id", "INT", False), ("v", "VARCHAR(10)", True), ("n", "DECIMAL(5,2) UNSIGNED", False)]),
        ("ALTER TABLE t MODIFY v VARCHAR(20) NOT NULL FIRST", "t",
         [("v", "VARCHAR(20)", False), ("id", "INT", False),
          ("n", "DECIMAL(5,2) UNSIGNED", False)]),
        ("ALTER TABLE t DROP n, ADD e ENUM('a','b') AFTER v", "t",
         [("v", "VARCHAR(20)", False), ("e", "ENUM('a','b')", True), ("id", "INT", False)]),
        ("ALTER TABLE t CHANGE id id BIGINT NOT NULL AUTO_INCREMENT", "t",
         [("v", "VARCHAR(20)", False), ("e", "ENUM('a','b')", True), ("id", "BIGINT", False)]),
        ("RENAME TABLE t TO t_old", "t", None),
        ("CREATE TABLE t (x INT)", "t", [("x", "INT", True)]),
        ("DROP TABLE t_old", "t_old", None),
        ("ALTER TABLE t RENAME COLUMN x TO y, ADD PRIMARY KEY (y)", "t", [("y", "INT", False)]),
        ("DROP TABLE t", "t", None),
        ("CREATE TABLE t (z TEXT)", "t", [("z", "TEXT", True)]),
    ]
    for sql, name, expected in steps:
        schema.apply(sql, "db")
        assert _shape(schema, "db", name) == expected, sql
    old = schema.table("db", "t")
    assert old is not None and old.primary_key == ()


def test_rename_then_alter_old_name_is_ignored_and_new_name_works() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE a (x INT); RENAME TABLE a TO b", "db")
    assert schema.apply("ALTER TABLE a ADD y INT", "db") == []
    schema.apply("ALTER TABLE b ADD y INT", "db")
    assert _shape(schema, "db", "b") == [("x", "INT", True), ("y", "INT", True)]


@pytest.mark.parametrize(("sql", "token"), [
    ("CREATE TABLE t (a INTEGRAL)", "INTEGRAL"),
    ("CREATE TABLE t (a INT NOT NUL)", "NUL"),
    ("CREATE TABLE t (a VARCHAR(x))", "x"),
    ("CREATE TABLE t (a INT,, b INT)", ","),
    ("ALTER TABLE t FROBNICATE a", "FROBNICATE"),
    ("ALTER TABLE t ADD COLUMN", None),
    ("CREATE TABLE t (a ENUM(1, 2))", "1"),
    ("CREATE TABLE t (a INT) ENGINE=InnoDB BOGUS", "BOGUS"),
])
def test_errors_name_statement_and_token(sql: str, token: str | None) -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE t (a INT)", "db")
    before = schema.tables()
    with pytest.raises(DdlParseError) as info:
        schema.apply(sql, "db")
    message = str(info.value)
    assert sql[:40] in message
    assert info.value.token == token
    if token is not None:
        assert repr(token) in message
        assert info.value.position == sql.rindex(token)
    else:
        assert "end of statement" in message
    assert schema.tables() == before


def test_failed_statement_rolls_back_the_whole_call() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE t (a INT); CREATE TABLE u (b INT)", "db")
    before = schema.tables()
    with pytest.raises(DdlParseError):
        schema.apply("ALTER TABLE t ADD c INT; DROP TABLE u; CREATE DATABASE x; "
                     "CREATE TABLE v (a INT); ALTER TABLE t ADD d BADTYPE", "db")
    assert schema.tables() == before
    assert schema.databases() == ["db"]


def test_unknown_column_in_alter_is_an_error_naming_the_column() -> None:
    schema = MySqlSchema()
    schema.apply("CREATE TABLE t (a INT)", "db")
    with pytest.raises(DdlParseError, match="no column 'zz'"):
        schema.apply("ALTER TABLE t ADD b INT, MODIFY zz INT", "db")
    assert _shape(schema, "db", "t") == [("a", "INT", True)]


def test_no_database_selected() -> None:
    with pytest.raises(DdlParseError, match="no database selected"):
        MySqlSchema().apply("CREATE TABLE t (a INT)", None)


def test_unterminated_string_in_ddl_is_an_error() -> None:
    with pytest.raises(DdlParseError, match="unterminated"):
        MySqlSchema().apply("CREATE TABLE t (a INT COMMENT 'oops)", "db")


def test_a_thousand_tables_created_and_altered_in_one_history() -> None:
    """Many tables in one schema (a history replay at start): each keeps its own columns.
    Speed is not asserted here (a timed test fails on a loaded machine, not on a slow parser)."""
    statement = ("CREATE TABLE t{n} (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, "
                 "name VARCHAR(255) CHARACTER SET utf8mb4 NOT NULL DEFAULT '', "
                 "price DECIMAL(10,2), created TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, "
                 "PRIMARY KEY (id), KEY name (name)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
    schema = MySqlSchema()
    for n in range(1000):
        schema.apply(statement.format(n=n), "db")
        schema.apply(f"ALTER TABLE t{n} ADD COLUMN extra INT AFTER name", "db")
    assert len(schema.tables()) == 1000
    for n in (0, 500, 999):
        table = schema.table("db", f"t{n}")
        assert table is not None
        assert [c.name for c in table.columns] == ["id", "name", "extra", "price", "created"]
