"""The DDL parser reads what a real MariaDB prints: SHOW CREATE TABLE output, parsed, matches
information_schema.COLUMNS column by column; so does the catalog built from the DDL we sent."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest

from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.table_changes import key_columns
from headwater.testing.localmariadb import LocalMariaDB

pytestmark = pytest.mark.integration

_counter = itertools.count()

TABLES = {
    "numbers": """CREATE TABLE numbers (
        id INTEGER NOT NULL AUTO_INCREMENT,
        t1 TINYINT, t2 TINYINT(3) UNSIGNED ZEROFILL, b1 BOOL, b2 BOOLEAN NOT NULL DEFAULT TRUE,
        s SMALLINT UNSIGNED DEFAULT 7, m MEDIUMINT, mi MIDDLEINT, i INT4 UNSIGNED,
        bi BIGINT NOT NULL DEFAULT -5, i8 INT8,
        d1 DECIMAL, d2 DEC(7,3) UNSIGNED, d3 NUMERIC(30,10), d4 FIXED(5),
        f1 FLOAT, f2 FLOAT(8,3), f3 FLOAT(40), r REAL, dp DOUBLE PRECISION, dd DOUBLE(12,4),
        bt BIT, b64 BIT(64) DEFAULT b'101',
        PRIMARY KEY (id)
    ) ENGINE=InnoDB""",
    "strings": """CREATE TABLE strings (
        c CHAR, c10 CHAR(10) NOT NULL DEFAULT 'it''s', ch CHARACTER(3),
        nc NCHAR(4), nat NATIONAL CHARACTER VARYING(9), nv NVARCHAR(5),
        v VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
        vl VARCHAR(20) COLLATE latin1_german1_ci, cv CHARACTER VARYING(11),
        bin BINARY(16), vb VARBINARY(200), cb CHAR(5) CHARACTER SET binary,
        tt TINYTEXT, tx TEXT, t100 TEXT(100), mt MEDIUMTEXT CHARACTER SET utf8mb3, lt LONGTEXT,
        lg LONG, lgv LONG VARCHAR, tb TINYBLOB, bl BLOB, b100 BLOB(100), mb MEDIUMBLOB,
        lb LONGBLOB, lvb LONG VARBINARY,
        e ENUM('a', 'b''q', 'c,d') NOT NULL DEFAULT 'a', st SET('x','y','z') DEFAULT 'x,z',
        cmt VARCHAR(2) COMMENT 'a comment; with ''quotes'''
    ) DEFAULT CHARSET=latin1""",
    "temporal": """CREATE TABLE temporal (
        d DATE, dz DATE NOT NULL DEFAULT '2000-01-01', tm TIME, tm3 TIME(3),
        dt DATETIME, dt6 DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
            ON UPDATE CURRENT_TIMESTAMP(6),
        ts TIMESTAMP NULL DEFAULT NULL, ts2 TIMESTAMP(2) NOT NULL DEFAULT CURRENT_TIMESTAMP(2),
        y YEAR, y4 YEAR(4)
    )""",
    "others": """CREATE TABLE `other s` (
        `id``x` BIGINT UNSIGNED NOT NULL, j JSON, g GEOMETRY, p POINT NOT NULL,
        ls LINESTRING, pg POLYGON, mp MULTIPOINT, ml MULTILINESTRING, mpg MULTIPOLYGON,
        gc GEOMETRYCOLLECTION, u UUID DEFAULT uuid(), i4 INET4, i6 INET6,
        gen INT AS (`id``x` + 1) VIRTUAL, gs VARCHAR(30) AS (concat(j, 'x')) PERSISTENT,
        k INT INVISIBLE DEFAULT 3,
        PRIMARY KEY (`id``x`), SPATIAL KEY sp (p)
    ) COMMENT='others'""",
    "serials": "CREATE TABLE serials (sr SERIAL, v INT)",
    "serial_default": "CREATE TABLE serial_default (v INT SERIAL DEFAULT VALUE)",
    "keys": """CREATE TABLE keys_t (
        a INT NOT NULL, b VARCHAR(10), c INT,
        UNIQUE KEY uq (b(5)), KEY (c), CONSTRAINT chk CHECK (a > 0)
    )""",
}
ALTERS = [
    "ALTER TABLE numbers ADD COLUMN added DECIMAL(4,1) NOT NULL DEFAULT 1.5 AFTER id, "
    "MODIFY t1 SMALLINT UNSIGNED, CHANGE m m2 INT NOT NULL, DROP COLUMN mi",
    "ALTER TABLE strings CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
    "ALTER TABLE strings ADD later VARCHAR(3) CHARACTER SET latin1 FIRST",
    "ALTER TABLE temporal RENAME COLUMN d TO d_renamed, ALTER COLUMN tm SET DEFAULT '10:00:00'",
    "ALTER TABLE keys_t ADD PRIMARY KEY (a), DROP INDEX uq, ADD UNIQUE INDEX uq2 (b)",
    "RENAME TABLE keys_t TO keys_renamed",
]


@pytest.fixture
def db(maria: LocalMariaDB) -> Iterator[tuple[Any, str]]:
    name = f"ddl_{next(_counter)}"
    maria.create_database(name)
    conn = maria.connect(name)
    try:
        yield conn, name
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE `{name}`")
        conn.close()


def _query(conn: Any, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def _info_columns(conn: Any, database: str, table: str) -> list[dict[str, Any]]:
    rows = _query(conn, """SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE,
        CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION,
        CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_DEFAULT, EXTRA, COLUMN_COMMENT, COLUMN_KEY
        FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s
        ORDER BY ORDINAL_POSITION""", database, table)
    keys = ["name", "data_type", "column_type", "nullable", "char_len", "precision", "scale",
            "dt_precision", "charset", "collation", "default", "extra", "comment", "key"]
    return [dict(zip(keys, row, strict=True)) for row in rows]


def _members(column_type: str) -> tuple[str, ...]:
    body = column_type[column_type.index("(") + 1:column_type.rindex(")")]
    return tuple(m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", body))


def _unquote_default(value: str | None) -> str | None:
    if value is None or value == "NULL":
        return None
    if value.startswith("'") and value.endswith("'"):
        return value[1:-1].replace("''", "'").replace("\\\\", "\\")
    return value


def _compare(table: MySqlTable, info: list[dict[str, Any]], exact_types: bool) -> None:
    """Asserts `table` says what the information schema says, column by column."""
    assert [c.name for c in table.columns] == [i["name"] for i in info]
    # information_schema shows the first UNIQUE NOT NULL key as PRI when there is no primary key
    primary = [i["name"] for i in info if i["key"] == "PRI"]
    assert sorted(key_columns(table)) == sorted(primary)
    for column, row in zip(table.columns, info, strict=True):
        where = f"{table.name}.{column.name} ({row['column_type']})"
        _compare_column(column, row, exact_types, where)


def _compare_column(column: MySqlColumn, row: dict[str, Any], exact_types: bool,
                    where: str) -> None:
    data_type = row["data_type"].upper()
    if exact_types:
        assert column.type_name == data_type, where
    assert column.nullable == (row["nullable"] == "YES"), where
    assert column.unsigned == ("unsigned" in row["column_type"]), where
    if column.type_name != "JSON":  # MariaDB's JSON is LONGTEXT utf8mb4; the model keeps JSON
        assert column.charset == row["charset"], where
    if column.collation is not None:
        assert column.collation == row["collation"], where
    if data_type in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        assert column.length == row["char_len"], where
    if data_type == "DECIMAL":
        assert (column.length, column.scale) == (row["precision"], row["scale"]), where
    if data_type == "BIT":
        assert column.length == row["precision"], where
    if data_type in ("TIME", "DATETIME", "TIMESTAMP"):
        assert (column.length or 0) == row["dt_precision"], where
    if data_type in ("ENUM", "SET"):
        assert column.members == _members(row["column_type"]), where
    assert column.auto_increment == ("auto_increment" in row["extra"]), where
    assert column.generated == column.auto_increment, where  # as Debezium marks them
    assert column.comment == (row["comment"] or None), where
    if exact_types and "GENERATED" not in row["extra"]:
        assert column.default == _unquote_default(row["default"]), where


def test_show_create_table_matches_information_schema(db: tuple[Any, str]) -> None:
    conn, name = db
    with conn.cursor() as cur:
        for ddl in TABLES.values():
            cur.execute(ddl)
    schema = MySqlSchema()
    tables = [row[0] for row in _query(conn, "SHOW TABLES")]
    assert len(tables) == len(TABLES)
    for table_name in tables:
        [(_, create)] = _query(conn, f"SHOW CREATE TABLE `{table_name.replace('`', '``')}`")
        changes = schema.apply(create, name)
        assert [c.kind for c in changes] == ["CREATE"]
        table = schema.table(name, table_name)
        assert table is not None
        _compare(table, _info_columns(conn, name, table_name), exact_types=True)


def test_catalog_from_sent_ddl_matches_information_schema(db: tuple[Any, str]) -> None:
    conn, name = db
    schema = MySqlSchema()
    schema.apply(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4", None)
    with conn.cursor() as cur:
        for ddl in [*TABLES.values(), *ALTERS]:
            cur.execute(ddl)
            schema.apply(ddl, name)
    tables = sorted(row[0] for row in _query(conn, "SHOW TABLES"))
    assert sorted(t.name for t in schema.tables()) == tables
    for table_name in tables:
        table = schema.table(name, table_name)
        assert table is not None
        # type names differ by design (synonyms, BOOLEAN, MariaDB's JSON as LONGTEXT)
        _compare(table, _info_columns(conn, name, table_name), exact_types=False)
    renamed = schema.table(name, "keys_renamed")
    assert renamed is not None and renamed.unique_keys == (("b",),)
