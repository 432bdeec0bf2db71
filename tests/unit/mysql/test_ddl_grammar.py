"""Statements MariaDB/MySQL accept that the parser once refused or recorded differently from
the server; each was checked against a real MariaDB 10.11 (the integration corpus,
tests/integration/mysql/test_ddl_corpus.py, runs the same kinds of statements there)."""

from __future__ import annotations

import pytest

from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.ddl import (
    NATIONAL_TYPES,
    AlterTable,
    CreateTable,
    RenameTables,
    TruncateTable,
    parse,
)
from headwater.connectors.mysql.ddl_types import NATIONAL_JDBC_TYPES
from headwater.connectors.mysql.schema_catalog import MySqlSchema


def _schema(*statements: str) -> MySqlSchema:
    schema = MySqlSchema()
    schema.apply("CREATE DATABASE db CHARACTER SET utf8mb4", None)
    schema.apply("CREATE TABLE parent (id INT PRIMARY KEY)", "db")
    for statement in statements:
        schema.apply(statement, "db")
    return schema


def _table(schema: MySqlSchema, name: str = "t") -> MySqlTable:
    table = schema.table("db", name)
    assert table is not None
    return table


@pytest.mark.parametrize("sql", [
    "CREATE TABLE t (id INT, PRIMARY KEY pk_name (id))",
    "CREATE TABLE t (id INT, CONSTRAINT pk PRIMARY KEY (id))",
    "CREATE TABLE t (id INT, CONSTRAINT PRIMARY KEY USING BTREE (id) COMMENT 'x')",
    "CREATE TABLE t (id INT); ALTER TABLE t ADD PRIMARY KEY name (id)",
    "CREATE TABLE t (id INT); ALTER TABLE t ADD PRIMARY KEY IF NOT EXISTS (id)",
    "CREATE TABLE t (id INT); ALTER TABLE t ADD CONSTRAINT c PRIMARY KEY (id)",
    "CREATE TABLE t (PRIMARY KEY (id), id INT)",
])
def test_named_and_placed_primary_keys(sql: str) -> None:
    table = _table(_schema(sql))
    assert table.primary_key == ("id",)
    assert not table.column("id").nullable


def test_add_primary_key_if_not_exists_keeps_the_existing_key() -> None:
    table = _table(_schema("CREATE TABLE t (a INT PRIMARY KEY, b INT NOT NULL)",
                           "ALTER TABLE t ADD PRIMARY KEY IF NOT EXISTS (b)"))
    assert table.primary_key == ("a",)


@pytest.mark.parametrize("sql", [
    "CREATE TABLE t (a INT) PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=3",
    "CREATE TABLE t (a INT) ENGINE=Aria TRANSACTIONAL=1 PAGE_CHECKSUM=1",
    "CREATE TABLE t (a INT) ENGINE=InnoDB, DEFAULT CHARSET=latin1, COMMENT='c'",
    "CREATE TABLE t (a INT) /*M!100100 PAGE_COMPRESSED=1 */ /*!40101 DEFAULT CHARSET=latin1 */",
    "CREATE TABLE t (a INT) ENCRYPTED=NO ENCRYPTION_KEY_ID=2 IETF_QUOTES=YES",
    "CREATE TABLE t (a INT) WITH SYSTEM VERSIONING",
    "CREATE TABLE t (a INT) UNION=(x, y) INSERT_METHOD=LAST",
])
def test_table_options(sql: str) -> None:
    assert [c.name for c in _table(_schema(sql)).columns] == ["a"]


def test_decimal_with_a_decimal_precision_is_its_whole_part() -> None:
    column = _table(_schema("CREATE TABLE t (d decimal(19.5))")).column("d")
    assert (column.type_name, column.length, column.scale) == ("DECIMAL", 19, 0)


@pytest.mark.parametrize("sql", [
    "ALTER TABLE t ALTER KEY i NOT IGNORED", "ALTER TABLE t ALTER INDEX i IGNORED",
    "ALTER TABLE t MODIFY COLUMN IF EXISTS zz INT", "ALTER TABLE t MODIFY COLUMN b BIGINT",
    "ALTER TABLE t ADD KEY IF NOT EXISTS i (b)", "ALTER TABLE t DROP INDEX IF EXISTS zz",
    "ALTER TABLE t DROP FOREIGN KEY db.fk", "ALTER TABLE t DROP FOREIGN KEY IF EXISTS fk",
    "ALTER TABLE t WAIT 5 ADD c INT", "ALTER TABLE t NOWAIT ADD c INT",
    "ALTER ONLINE IGNORE TABLE IF EXISTS t ADD c INT, ALGORITHM=INPLACE, LOCK=NONE",
    "ALTER TABLE t RENAME COLUMN IF EXISTS zz TO z", "ALTER TABLE t ALTER COLUMN IF EXISTS zz "
    "SET DEFAULT 1", "ALTER TABLE t DROP CONSTRAINT IF EXISTS zz",
    "ALTER TABLE t ADD PERIOD FOR p (d1, d2)", "ALTER TABLE t ADD SYSTEM VERSIONING",
    "ALTER TABLE t CHECK PARTITION ALL FOR UPGRADE", "ALTER TABLE t REMOVE PARTITIONING",
    "ALTER TABLE t PARTITION BY SYSTEM_TIME INTERVAL 1 HOUR STARTS '2024-01-01 00:00:00' AUTO",
    "ALTER TABLE t REORGANIZE PARTITION p0 INTO (PARTITION n0 VALUES LESS THAN (5))",
    "ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE u WITHOUT VALIDATION",
    "ALTER TABLE t ORDER BY t.a, b DESC", "ALTER TABLE t CONVERT TO CHARACTER SET DEFAULT",
])
def test_alter_actions_parse(sql: str) -> None:
    [(_, statement)] = parse(sql)
    assert isinstance(statement, AlterTable)


@pytest.mark.parametrize(("sql", "kind"), [
    ("TRUNCATE TABLE t WAIT 3", TruncateTable), ("TRUNCATE t NOWAIT", TruncateTable),
    ("RENAME TABLE a WAIT 2 TO b, c NOWAIT TO d", RenameTables),
    ("RENAME TABLE IF EXISTS a TO b", RenameTables),
    ("CREATE INDEX i ON t (a) WAIT 1 ALGORITHM=INPLACE LOCK=NONE", AlterTable),
    ("DROP INDEX IF EXISTS i ON t NOWAIT", AlterTable),
    ("CREATE OR REPLACE UNIQUE INDEX IF NOT EXISTS u USING BTREE ON t (a DESC)", AlterTable),
])
def test_wait_and_nowait(sql: str, kind: type) -> None:
    [(_, statement)] = parse(sql)
    assert isinstance(statement, kind)


def test_system_versioned_columns_and_keys() -> None:
    schema = _schema(
        "CREATE TABLE t (id INT PRIMARY KEY, s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, "
        "e TIMESTAMP(6) GENERATED ALWAYS AS ROW END INVISIBLE, PERIOD FOR SYSTEM_TIME (s, e), "
        "v INT WITHOUT SYSTEM VERSIONING) WITH SYSTEM VERSIONING")
    table = _table(schema)
    assert [c.name for c in table.columns] == ["id", "s", "e", "v"]
    assert not table.column("s").nullable and not table.column("e").nullable
    assert table.primary_key == ("id", "e")  # the server appends ROW END to unique keys
    schema.apply("ALTER TABLE t DROP SYSTEM VERSIONING, DROP PERIOD FOR SYSTEM_TIME, DROP s, "
                 "DROP e", "db")
    assert _table(schema).primary_key == ("id",)


def test_application_periods() -> None:
    table = _table(_schema(
        "CREATE TABLE t (id INT, d1 DATE, d2 DATE, PERIOD FOR p (d1, d2), "
        "UNIQUE (id, p WITHOUT OVERLAPS))"))
    assert table.unique_keys == (("id", "d2", "d1"),)
    assert not table.column("d1").nullable and not table.column("d2").nullable


@pytest.mark.parametrize(("spelling", "name", "jdbc"), [
    ("NCHAR(3)", "NCHAR", -15), ("NATIONAL CHAR(3)", "NATIONAL CHAR", -15),
    ("NATIONAL CHARACTER(3)", "NATIONAL CHARACTER", -15), ("NVARCHAR(3)", "NVARCHAR", -9),
    ("NCHAR VARYING(3)", "NCHAR VARYING", -9), ("NCHAR VARCHAR(3)", "NCHAR VARCHAR", -9),
    ("NATIONAL VARCHAR(3)", "NATIONAL VARCHAR", -9),
    ("NATIONAL CHAR VARYING(3)", "NATIONAL CHAR VARYING", -9),
    ("NATIONAL CHARACTER VARYING(3)", "NATIONAL CHARACTER VARYING", -9),
    ("NCHAR(3) BINARY", "NCHAR BINARY", -15), ("NVARCHAR(3) BINARY", "NVARCHAR BINARY", -9),
])
def test_national_types_keep_debeziums_names(spelling: str, name: str, jdbc: int) -> None:
    column = _table(_schema(f"CREATE TABLE t (c {spelling})")).column("c")
    assert (column.type_name, column.length, column.charset) == (name, 3, "utf8mb3")
    assert NATIONAL_JDBC_TYPES[name] == jdbc and name in NATIONAL_TYPES
    if name.endswith("BINARY"):
        assert column.collation == "utf8mb3_bin"


def test_auto_increment_is_generated_and_not_null() -> None:
    table = _table(_schema("CREATE TABLE t (a INT AUTO_INCREMENT UNIQUE, b INT AS (a) VIRTUAL, "
                           "c SERIAL)"))
    a, b, c = table.columns
    assert (a.auto_increment, a.generated, a.nullable) == (True, True, False)
    assert (b.auto_increment, b.generated) == (False, False)
    assert (c.auto_increment, c.generated, c.nullable) == (True, True, False)


def test_alter_resolves_columns_against_the_table_as_it_was() -> None:
    schema = _schema("CREATE TABLE t (a INT, b VARCHAR(3), PRIMARY KEY (a))",
                     "ALTER TABLE t CHANGE a b BIGINT, CHANGE b a VARCHAR(3)")
    table = _table(schema)
    assert [(c.name, c.type_name) for c in table.columns] == [("b", "BIGINT"),
                                                              ("a", "VARCHAR")]
    assert table.primary_key == ("b",)
    schema.apply("ALTER TABLE t ADD PRIMARY KEY (a), DROP PRIMARY KEY", "db")
    assert _table(schema).primary_key == ("a",)  # drops come first


def test_convert_partition_to_table_and_back() -> None:
    schema = _schema("CREATE TABLE t (a INT NOT NULL) PARTITION BY RANGE (a) "
                     "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20))",
                     "ALTER TABLE t CONVERT PARTITION p0 TO TABLE t0")
    assert [c.name for c in _table(schema, "t0").columns] == ["a"]
    schema.apply("ALTER TABLE t CONVERT TABLE t0 TO PARTITION p0 VALUES LESS THAN (10)", "db")
    assert schema.table("db", "t0") is None


def test_convert_to_character_set_widens_text_and_makes_binary_types() -> None:
    schema = _schema("CREATE TABLE t (a TEXT, b VARCHAR(5)) CHARSET latin1",
                     "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4")
    assert [c.type_name for c in _table(schema).columns] == ["MEDIUMTEXT", "VARCHAR"]
    schema.apply("ALTER TABLE t CONVERT TO CHARACTER SET binary", "db")
    assert [c.type_name for c in _table(schema).columns] == ["MEDIUMBLOB", "VARBINARY"]


@pytest.mark.parametrize("sql", [
    "CREATE TABLE t (t.a INT, db.t.b INT)",
    "CREATE TABLE t (a mariadb_schema.date, e ENUM(0x61, x'62', 'c  '))",
    "CREATE TABLE t (a INT DEFAULT CASE WHEN 1 THEN 2 ELSE 3 END, b CHAR(1) DEFAULT _latin1 0x61)",
    "CREATE TABLE t (a INT /* c */ NOT /* c */ NULL -- c\n, b INT # c\n)",
    'CREATE TABLE t (a INT DEFAULT NEXT VALUE FOR s, b DATE DEFAULT DATE \'2020-01-01\')',
    "CREATE TABLE t (a INT COMPRESSED, b BLOB COMPRESSED=zlib, c INT NOT SECONDARY)",
    "CREATE TABLE t (a INT CHECK (a > 0), b INT CONSTRAINT c CHECK (b > 0) REFERENCES parent (id))",
    "CREATE TABLE t (a VARCHAR(5) COLLATE DEFAULT, b CHAR(2) ASCII BINARY, c BIT(0))",
    "CREATE TABLE t (a INT) PARTITION BY LINEAR KEY ALGORITHM=2 (a) PARTITIONS 3",
    "CREATE TABLE t (a INT) PARTITION BY RANGE (a) SUBPARTITION BY HASH (a) SUBPARTITIONS 2 "
    "(PARTITION p0 VALUES LESS THAN (5), PARTITION p1 VALUES LESS THAN MAXVALUE)",
])
def test_create_table_forms(sql: str) -> None:
    [(_, statement)] = parse(sql)
    assert isinstance(statement, CreateTable)


@pytest.mark.parametrize("sql", [
    "CREATE DEFINER=`u`@`%` TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET @x = 1; END",
    "CREATE DEFINER=CURRENT_USER() PROCEDURE p() BEGIN SELECT 1; SELECT 2; END",
    "CREATE OR REPLACE ALGORITHM=MERGE DEFINER=CURRENT_USER SQL SECURITY INVOKER VIEW v AS "
    "SELECT 1", "CREATE SEQUENCE s START WITH 1", "ALTER SEQUENCE s RESTART 5",
    "DROP SEQUENCE IF EXISTS s", "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO SELECT 1",
    "DROP VIEW IF EXISTS v, w", "DROP TRIGGER IF EXISTS tr", "ALTER VIEW v AS SELECT 2",
])
def test_other_objects_are_recognised_and_ignored(sql: str) -> None:
    assert [statement for _, statement in parse(sql)] == [None]


# MySQL 8.0/8.4 syntax MariaDB rejects (no MySQL server here to judge it): it must still parse.
MYSQL_ONLY = [
    "CREATE TABLE t (a INT) SECONDARY_ENGINE=rapid AUTOEXTEND_SIZE=4M START TRANSACTION",
    "CREATE TABLE t (a INT) ENCRYPTION='N' ENGINE_ATTRIBUTE='{}' SECONDARY_ENGINE_ATTRIBUTE='{}'",
    "CREATE TABLE t (a INT, KEY i ((a + 1)), INDEX j (a) INVISIBLE, CHECK (a > 0) NOT ENFORCED)",
    "CREATE TABLE t (a INT, b JSON, KEY k ((CAST(b->'$.x' AS UNSIGNED ARRAY))))",
    "CREATE TABLE t (a INT DEFAULT (uuid()), g POINT NOT NULL SRID 4326, c INT COLUMN_FORMAT "
    "DYNAMIC STORAGE MEMORY)",
    "CREATE TABLE t (a INT ENGINE_ATTRIBUTE='{}' SECONDARY_ENGINE_ATTRIBUTE '{}' NOT "
    "SECONDARY VISIBLE)",
    "ALTER TABLE t ALTER INDEX i VISIBLE, ALTER COLUMN b SET INVISIBLE, ALTER CHECK c NOT ENFORCED",
    "ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE u WITHOUT VALIDATION",
    "ALTER TABLE t DISCARD PARTITION p0, p1 TABLESPACE",
    "ALTER TABLE t IMPORT PARTITION ALL TABLESPACE",
    "ALTER TABLE t UPGRADE PARTITIONING",
    "ALTER TABLE t SECONDARY_ENGINE = NULL",
    "ALTER TABLE t SECONDARY_LOAD",
    "DROP INDEX i ON t ALGORITHM=INPLACE LOCK=NONE",
    "CREATE DATABASE d DEFAULT ENCRYPTION='N'",
    "ALTER DATABASE d READ ONLY = 1",
    "ALTER SCHEMA d DEFAULT CHARACTER SET = utf8mb4 DEFAULT COLLATE = utf8mb4_0900_ai_ci "
    "DEFAULT ENCRYPTION = 'Y'",
    "CREATE TABLE t2 AS TABLE t",
    "CREATE TABLE t2 (a INT) IGNORE AS SELECT 1",
    "CREATE TABLE t (a INT) PARTITION BY KEY ALGORITHM=2 (a) PARTITIONS 2",
    "CREATE TABLE t (id INT AUTO_INCREMENT, PRIMARY KEY (id)) AUTO_INCREMENT=5 DEFAULT "
    "CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci",
    "CREATE TABLE t (a INT) TABLESPACE ts1 STORAGE DISK",
    "CREATE TABLE t (a INT) TABLESPACE = innodb_file_per_table",
    "ALTER TABLE t ADD COLUMN b INT, ALGORITHM=INSTANT",
    "ALTER TABLE t RENAME INDEX i TO j, RENAME KEY j TO k",
    "ALTER TABLE t FORCE, ALGORITHM=INPLACE",
    "ALTER TABLE t ADD CONSTRAINT c CHECK (a > 0) NOT ENFORCED",
    "ALTER TABLE t DROP CHECK c, DROP CONSTRAINT d",
    "ALTER TABLE t ALTER CONSTRAINT c ENFORCED",
    "CREATE TABLE t (a INT) COMMENT 'x' COMPRESSION 'LZ4' STATS_AUTO_RECALC DEFAULT",
    "CREATE TABLE t (a VARCHAR(3) CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_as_cs)",
    "CREATE TABLE t (a INT) PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (5) "
    "TABLESPACE ts DATA DIRECTORY = '/d')",
    "CREATE TABLE t (`select` INT, `from` VARCHAR(2))",
    "CREATE TABLE t (a INT GENERATED ALWAYS AS (1) VIRTUAL NOT NULL INVISIBLE COMMENT 'c')",
    "ALTER TABLE t ADD COLUMN (a INT, b INT), ADD INDEX (a)",
    "CREATE TABLE t (a DOUBLE PRECISION(10,2) UNSIGNED ZEROFILL)",
    "CREATE TABLE t (a FLOAT(10,2) UNSIGNED, b REAL UNSIGNED)",
    "CREATE TABLE t (a BIGINT SIGNED, b YEAR(4) DEFAULT '2020', c TINYTEXT CHARSET latin1, d "
    "SET('a') BINARY)",
]


@pytest.mark.parametrize("sql", MYSQL_ONLY)
def test_mysql_8_forms_parse(sql: str) -> None:
    [(_, statement)] = parse(sql)
    assert statement is not None
