"""Whole DDL statements: table constraints and options, partitions, LIKE / SELECT, ALTER specs,
DROP / RENAME / TRUNCATE, database statements, statements of no interest, and lexing rules."""

from __future__ import annotations

import pytest

from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.schema_catalog import MySqlSchema


def _schema(*sql: str, db: str | None = "db") -> MySqlSchema:
    schema = MySqlSchema()
    schema.apply("CREATE DATABASE db", None)
    for statement in sql:
        schema.apply(statement, db)
    return schema


def _table(schema: MySqlSchema, name: str = "t", db: str = "db") -> MySqlTable:
    table = schema.table(db, name)
    assert table is not None, f"{db}.{name} is missing"
    return table


def _names(table: MySqlTable) -> list[str]:
    return [c.name for c in table.columns]


# -- CREATE TABLE ------------------------------------------------------------------------------

MYSQLDUMP = """
/*!40101 SET @saved_cs_client     = @@character_set_client */;
/*!40101 SET character_set_client = utf8 */;
CREATE TABLE `customers` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `first_name` varchar(255) NOT NULL,
  `last_name` varchar(255) NOT NULL,
  `email` varchar(255) NOT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `email` (`email`)
) ENGINE=InnoDB AUTO_INCREMENT=1005 DEFAULT CHARSET=latin1;
/*!40101 SET character_set_client = @saved_cs_client */;
"""


def test_mysqldump_output() -> None:
    schema = _schema(MYSQLDUMP)
    table = _table(schema, "customers")
    assert _names(table) == ["id", "first_name", "last_name", "email"]
    assert table.primary_key == ("id",)
    assert table.unique_keys == (("email",),)
    assert table.default_charset == "latin1"
    assert table.column("email").charset == "latin1"
    assert table.column("id").auto_increment


def test_inventory_products_with_alter_in_one_event() -> None:
    schema = _schema("CREATE TABLE products ( id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                     "name VARCHAR(255) NOT NULL, description VARCHAR(512), weight FLOAT ); "
                     "ALTER TABLE products AUTO_INCREMENT = 101;")
    table = _table(schema, "products")
    assert table.primary_key == ("id",)
    assert [c.type_name for c in table.columns] == ["INT", "VARCHAR", "VARCHAR", "FLOAT"]
    assert table.column("description").length == 512


def test_table_constraints() -> None:
    schema = _schema("""CREATE TABLE IF NOT EXISTS db.orders (
      order_number INT NOT NULL,
      line INT NOT NULL,
      purchaser INT,
      code VARCHAR(100),
      note TEXT,
      pt POINT NOT NULL,
      CONSTRAINT pk PRIMARY KEY USING BTREE (order_number, line),
      CONSTRAINT uq_code UNIQUE INDEX uq_code (code(10) DESC),
      UNIQUE (purchaser, line),
      KEY idx_p (purchaser) USING HASH COMMENT 'x' KEY_BLOCK_SIZE=8,
      INDEX (line) INVISIBLE,
      FULLTEXT KEY ft (note) WITH PARSER ngram,
      SPATIAL INDEX sp (pt),
      CONSTRAINT fk FOREIGN KEY (purchaser) REFERENCES customers (id) ON DELETE SET NULL,
      FOREIGN KEY (line) REFERENCES lines (id),
      CONSTRAINT ck CHECK (line > 0),
      CHECK (order_number <> 0) NOT ENFORCED
    ) ENGINE = InnoDB, DEFAULT CHARACTER SET = utf8mb3 COLLATE = utf8mb3_unicode_ci
      COMMENT = 'orders table' ROW_FORMAT=DYNAMIC STATS_PERSISTENT=0 KEY_BLOCK_SIZE 8""")
    table = _table(schema, "orders")
    assert table.primary_key == ("order_number", "line")
    assert table.unique_keys == (("code",), ("purchaser", "line"))
    assert table.default_charset == "utf8mb3"
    assert table.comment == "orders table"
    assert table.column("code").charset == "utf8mb3"
    assert table.column("code").collation == "utf8mb3_unicode_ci"
    assert not table.column("line").nullable


def test_primary_key_makes_columns_not_null() -> None:
    table = _table(_schema("CREATE TABLE t (a INT, b INT, PRIMARY KEY (a, b))"))
    assert [c.nullable for c in table.columns] == [False, False]


@pytest.mark.parametrize("partition", [
    "PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), "
    "PARTITION p1 VALUES LESS THAN MAXVALUE)",
    "PARTITION BY LIST (id) (PARTITION p0 VALUES IN (1,2,3), PARTITION p1 VALUES IN (4))",
    "PARTITION BY HASH (id) PARTITIONS 4",
    "PARTITION BY LINEAR KEY (id) PARTITIONS 2",
    "/*!50100 PARTITION BY RANGE COLUMNS(id) SUBPARTITION BY HASH(id) SUBPARTITIONS 2 "
    "(PARTITION p0 VALUES LESS THAN (5) ENGINE = InnoDB, "
    "PARTITION p1 VALUES LESS THAN (MAXVALUE) ENGINE = InnoDB) */",
])
def test_partitions_are_skipped(partition: str) -> None:
    table = _table(_schema(f"CREATE TABLE t (id INT NOT NULL, v VARCHAR(3), PRIMARY KEY (id)) "
                           f"ENGINE=InnoDB {partition}"))
    assert _names(table) == ["id", "v"]
    assert table.primary_key == ("id",)


def test_create_like_copies_the_definition() -> None:
    schema = _schema("CREATE TABLE s (a INT PRIMARY KEY, b CHAR(2)) CHARSET latin1",
                     "CREATE TABLE t LIKE s", "CREATE TABLE other.u (LIKE db.s)")
    t = _table(schema)
    assert (t.database, t.name) == ("db", "t")
    assert t.columns == _table(schema, "s").columns
    assert t.primary_key == ("a",)
    assert _table(schema, "u", "other").default_charset == "latin1"


def test_create_select_keeps_declared_columns() -> None:
    schema = _schema("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB AS SELECT a, b FROM s",
                     "CREATE TABLE u SELECT * FROM s", "CREATE TABLE v (x INT) IGNORE SELECT 1")
    assert _names(_table(schema)) == ["id"]
    assert _names(_table(schema, "u")) == []
    assert _names(_table(schema, "v")) == ["x"]


def test_create_if_not_exists_keeps_the_existing_table() -> None:
    schema = _schema("CREATE TABLE t (a INT)")
    assert schema.apply("CREATE TABLE IF NOT EXISTS t (b INT)", "db") == []
    assert _names(_table(schema)) == ["a"]
    schema.apply("CREATE OR REPLACE TABLE t (c INT)", "db")
    assert _names(_table(schema)) == ["c"]


def test_serial_adds_a_unique_key() -> None:
    table = _table(_schema("CREATE TABLE t (id SERIAL, v INT)"))
    assert table.unique_keys == (("id",),)
    assert table.primary_key == ()


def test_charset_inheritance_chain() -> None:
    schema = MySqlSchema(default_charset="latin2")
    schema.apply("CREATE DATABASE d1 DEFAULT CHARACTER SET = cp1251; "
                 "CREATE SCHEMA IF NOT EXISTS d2 COLLATE utf8mb4_general_ci", None)
    schema.apply("CREATE TABLE d1.a (s VARCHAR(3), n INT); CREATE TABLE d2.b (s VARCHAR(3));"
                 "CREATE TABLE d3.c (s VARCHAR(3)); CREATE TABLE d1.d (s TEXT) "
                 "COLLATE latin1_swedish_ci", None)
    a = schema.table("d1", "a")
    assert a is not None and a.column("s").charset == "cp1251" and a.column("n").charset is None
    b = schema.table("d2", "b")
    assert b is not None and b.column("s").charset == "utf8mb4"
    assert b.column("s").collation == "utf8mb4_general_ci"
    c = schema.table("d3", "c")
    assert c is not None and c.column("s").charset == "latin2"
    d = schema.table("d1", "d")
    assert d is not None and d.default_charset == "latin1"


# -- ALTER TABLE -------------------------------------------------------------------------------

BASE = "CREATE TABLE t (id INT NOT NULL, a INT, b VARCHAR(10), c DATE, PRIMARY KEY (id))"


def test_alter_add_columns_positions() -> None:
    schema = _schema(BASE, "ALTER TABLE t ADD COLUMN x INT FIRST, ADD y INT AFTER a, "
                     "ADD COLUMN IF NOT EXISTS a BIGINT, ADD (p INT, q INT), ADD z INT")
    assert _names(_table(schema)) == ["x", "id", "a", "y", "b", "c", "p", "q", "z"]
    assert _table(schema).column("a").type_name == "INT"


def test_alter_drop_modify_change_rename() -> None:
    schema = _schema(BASE, "ALTER TABLE t DROP COLUMN c, DROP IF EXISTS nope, "
                     "MODIFY COLUMN a BIGINT UNSIGNED NOT NULL AFTER b, "
                     "CHANGE b bb VARCHAR(20) CHARACTER SET latin1 FIRST, "
                     "RENAME COLUMN id TO ident")
    table = _table(schema)
    assert _names(table) == ["bb", "ident", "a"]
    assert table.column("a").unsigned and not table.column("a").nullable
    assert table.column("bb").charset == "latin1" and table.column("bb").length == 20
    assert table.primary_key == ("ident",)


def test_alter_change_keeps_place_without_position() -> None:
    schema = _schema(BASE, "ALTER TABLE t CHANGE COLUMN a a2 SMALLINT")
    assert _names(_table(schema)) == ["id", "a2", "b", "c"]


def test_alter_defaults() -> None:
    schema = _schema("CREATE TABLE t (a INT DEFAULT 1, b INT)",
                     "ALTER TABLE t ALTER COLUMN a DROP DEFAULT, ALTER b SET DEFAULT 5")
    table = _table(schema)
    assert table.column("a").default is None and table.column("b").default == "5"


def test_alter_primary_and_unique_keys() -> None:
    schema = _schema("CREATE TABLE t (a INT NOT NULL, b INT NOT NULL, c INT)")
    schema.apply("ALTER TABLE t ADD CONSTRAINT PRIMARY KEY (a), ADD UNIQUE KEY uk (b), "
                 "ADD UNIQUE INDEX (c), ADD INDEX ix (c)", "db")
    table = _table(schema)
    assert table.primary_key == ("a",)
    assert table.unique_keys == (("b",), ("c",))
    schema.apply("ALTER TABLE t DROP PRIMARY KEY, DROP INDEX uk, ADD PRIMARY KEY (a, b)", "db")
    table = _table(schema)
    assert table.primary_key == ("a", "b") and table.unique_keys == (("c",),)
    schema.apply("ALTER TABLE t DROP KEY c, RENAME INDEX ix TO ix2", "db")
    assert _table(schema).unique_keys == ()
    schema.apply("ALTER TABLE t ADD CONSTRAINT u2 UNIQUE (c)", "db")
    schema.apply("ALTER TABLE t DROP CONSTRAINT u2", "db")
    assert _table(schema).unique_keys == ()


def test_dropping_a_key_column_shrinks_the_key() -> None:
    schema = _schema("CREATE TABLE t (a INT, b INT, c INT, UNIQUE KEY u (a, b), KEY k (c))",
                     "ALTER TABLE t DROP COLUMN a, DROP COLUMN c")
    assert _table(schema).unique_keys == (("b",),)


def test_alter_foreign_keys_checks_and_noops() -> None:
    schema = _schema(BASE, """ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (a) REFERENCES p(id)
        ON UPDATE CASCADE, ADD CHECK (a > 0), DROP FOREIGN KEY fk, DROP CHECK ck,
        ALGORITHM=INPLACE, LOCK=NONE, FORCE, ENGINE=InnoDB, AUTO_INCREMENT = 10,
        ROW_FORMAT=COMPRESSED, DISABLE KEYS, ORDER BY a, b""")
    table = _table(schema)
    assert _names(table) == ["id", "a", "b", "c"]
    assert table.primary_key == ("id",)


def test_alter_charsets() -> None:
    schema = _schema("CREATE TABLE t (a VARCHAR(5), b INT, e ENUM('x')) CHARSET latin1")
    schema.apply("ALTER TABLE t DEFAULT CHARACTER SET = utf8mb4", "db")
    schema.apply("ALTER TABLE t ADD c VARCHAR(5)", "db")
    table = _table(schema)
    assert table.column("a").charset == "latin1" and table.column("c").charset == "utf8mb4"
    schema.apply("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb3 COLLATE utf8mb3_bin", "db")
    table = _table(schema)
    assert [c.charset for c in table.columns] == ["utf8mb3", None, "utf8mb3", "utf8mb3"]
    assert table.column("e").collation == "utf8mb3_bin"
    assert table.default_charset == "utf8mb3"


@pytest.mark.parametrize("spec", [
    "ADD PARTITION (PARTITION p3 VALUES LESS THAN (2000))",
    "DROP PARTITION p0, p1",
    "TRUNCATE PARTITION p0",
    "REORGANIZE PARTITION p0 INTO (PARTITION a VALUES LESS THAN (5), "
    "PARTITION b VALUES LESS THAN (10))",
    "COALESCE PARTITION 2",
    "EXCHANGE PARTITION p0 WITH TABLE t2 WITHOUT VALIDATION",
    "REMOVE PARTITIONING",
    "ANALYZE PARTITION p0, p1",
    "PARTITION BY HASH(id) PARTITIONS 8",
    "ENGINE=InnoDB PARTITION BY KEY(id) PARTITIONS 2",
])
def test_alter_partition_operations(spec: str) -> None:
    schema = _schema(BASE)
    changes = schema.apply(f"ALTER TABLE t {spec}", "db")
    assert [c.kind for c in changes] == ["ALTER"]
    assert _names(_table(schema)) == ["id", "a", "b", "c"]


def test_alter_rename_table() -> None:
    schema = _schema(BASE)
    changes = schema.apply("ALTER TABLE t RENAME TO t2, ADD COLUMN d INT", "db")
    assert schema.table("db", "t") is None
    assert _names(_table(schema, "t2")) == ["id", "a", "b", "c", "d"]
    assert len(changes) == 1 and changes[0].kind == "ALTER" and changes[0].table == "t2"
    assert changes[0].previous is not None and changes[0].previous.name == "t"
    schema.apply("ALTER TABLE t2 RENAME AS other.t3", "db")
    assert _table(schema, "t3", "other").database == "other"


def test_alter_unknown_table_is_ignored() -> None:
    schema = _schema()
    assert schema.apply("ALTER TABLE nope ADD x INT", "db") == []


def test_mariadb_alter_forms() -> None:
    schema = _schema(BASE, "ALTER ONLINE IGNORE TABLE IF EXISTS t WAIT 5 "
                     "ADD COLUMN IF NOT EXISTS v INET6, ADD INDEX IF NOT EXISTS ix (v), "
                     "DROP INDEX IF EXISTS nope, MODIFY COLUMN IF EXISTS nope INT")
    assert _names(_table(schema))[-1] == "v"


# -- other table statements --------------------------------------------------------------------

def test_drop_tables() -> None:
    schema = _schema("CREATE TABLE a (x INT); CREATE TABLE other.b (y INT)")
    changes = schema.apply("DROP TABLE IF EXISTS a, other.b, missing /* generated by server */",
                           "db")
    assert [(c.kind, c.database, c.table) for c in changes] == [
        ("DROP", "db", "a"), ("DROP", "other", "b")]
    assert changes[0].previous is not None and changes[0].table_after is None
    assert schema.tables() == []


def test_rename_tables_chain_and_across_databases() -> None:
    schema = _schema("CREATE TABLE a (x INT); CREATE TABLE b (y INT)")
    changes = schema.apply("RENAME TABLE a TO tmp, b TO a, tmp TO other.b", "db")
    assert [(c.kind, c.database, c.table) for c in changes] == [
        ("ALTER", "db", "tmp"), ("ALTER", "db", "a"), ("ALTER", "other", "b")]
    assert _names(_table(schema, "a")) == ["y"]
    assert _names(_table(schema, "b", "other")) == ["x"]


def test_truncate() -> None:
    schema = _schema("CREATE TABLE a (x INT)")
    changes = schema.apply("TRUNCATE TABLE a; TRUNCATE db.a", "db")
    assert [(c.kind, c.table) for c in changes] == [("TRUNCATE", "a"), ("TRUNCATE", "a")]


def test_create_and_drop_index() -> None:
    schema = _schema("CREATE TABLE t (a INT NOT NULL, b INT)")
    schema.apply("CREATE UNIQUE INDEX ua USING BTREE ON t (a) ALGORITHM=INPLACE LOCK=NONE", "db")
    schema.apply("CREATE INDEX ib ON db.t (b(3) DESC, (b + 1))", "db")
    assert _table(schema).unique_keys == (("a",),)
    changes = schema.apply("DROP INDEX ua ON t", "db")
    assert changes[0].kind == "ALTER" and _table(schema).unique_keys == ()


def test_database_statements() -> None:
    schema = MySqlSchema()
    changes = schema.apply("CREATE DATABASE IF NOT EXISTS shop CHARACTER SET latin1; "
                           "CREATE TABLE shop.t (s VARCHAR(2));"
                           "ALTER DATABASE shop CHARACTER SET utf8mb4;"
                           "CREATE TABLE shop.u (s VARCHAR(2))", None)
    assert [c.kind for c in changes] == ["CREATE_DATABASE", "CREATE", "ALTER_DATABASE",
                                         "CREATE"]
    t, u = schema.table("shop", "t"), schema.table("shop", "u")
    assert t is not None and u is not None
    assert (t.column("s").charset, u.column("s").charset) == ("latin1", "utf8mb4")
    assert schema.databases() == ["shop"]
    changes = schema.apply("DROP DATABASE shop", None)
    assert [c.kind for c in changes] == ["DROP", "DROP", "DROP_DATABASE"]
    assert schema.tables() == [] and schema.databases() == []


# -- statements of no interest, USE, lexing ----------------------------------------------------

@pytest.mark.parametrize("sql", [
    "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT s1", "XA START 'x'", "SET NAMES utf8mb4",
    "SET @a = 'CREATE TABLE x (a INT)'", "GRANT ALL ON *.* TO 'u'@'%'",
    "CREATE USER 'u'@'localhost' IDENTIFIED BY 'p'", "FLUSH PRIVILEGES", "ANALYZE TABLE t",
    "OPTIMIZE TABLE t", "REPAIR TABLE t", "CREATE VIEW v AS SELECT 1",
    "CREATE OR REPLACE ALGORITHM=UNDEFINED DEFINER=`root`@`%` SQL SECURITY DEFINER "
    "VIEW v AS SELECT a FROM t", "DROP VIEW IF EXISTS v",
    "CREATE DEFINER=`root`@`localhost` PROCEDURE p() BEGIN SELECT 1; "
    "CREATE TABLE inside (a INT); END",
    "CREATE FUNCTION f() RETURNS INT DETERMINISTIC RETURN 1", "DROP PROCEDURE IF EXISTS p",
    "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN SET NEW.a = 1; END",
    "DROP TRIGGER tr", "CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO DELETE FROM t",
    "CREATE TEMPORARY TABLE tmp (a INT)", "DROP TEMPORARY TABLE IF EXISTS tmp",
    "INSERT INTO t VALUES (1, 'a;b')", "UPDATE t SET a = 1", "DELETE FROM t",
    "RENAME USER a TO b", "ALTER USER u IDENTIFIED BY 'x'", "CREATE ROLE r",
    "insert into t values ('unterminated)",
])
def test_statements_of_no_interest(sql: str) -> None:
    schema = _schema("CREATE TABLE t (a INT)")
    assert schema.apply(sql, "db") == []
    assert [t.name for t in schema.tables()] == ["t"]


def test_use_switches_database_for_following_statements() -> None:
    schema = MySqlSchema()
    changes = schema.apply("USE `shop`; CREATE TABLE a (x INT); use other; CREATE TABLE b "
                           "(y INT); CREATE TABLE shop.c (z INT)", "start")
    assert [(c.database, c.table) for c in changes] == [
        ("shop", "a"), ("other", "b"), ("shop", "c")]


def test_quoting_and_comments() -> None:
    schema = _schema("""-- leading comment
    /* block ; comment */ CREATE TABLE `we``ird ; name` (
      `col ``x``` INT COMMENT 'semi;colon', # hash comment ;
      `select` VARCHAR(3) DEFAULT 'a''b;'
    ) /*!40101 DEFAULT CHARSET=latin1 */ /*M!100100 COMMENT='maria' */""")
    table = _table(schema, "we`ird ; name")
    assert _names(table) == ["col `x`", "select"]
    assert table.default_charset == "latin1" and table.comment == "maria"
    assert table.column("select").default == "a'b;"


def test_ansi_quotes() -> None:
    schema = MySqlSchema(ansi_quotes=True)
    schema.apply('CREATE TABLE "db"."t" ("a" INT, "b" VARCHAR(3) DEFAULT \'x\')', None)
    table = schema.table("db", "t")
    assert table is not None and _names(table) == ["a", "b"]


def test_lower_case_table_names() -> None:
    sensitive = _schema("CREATE TABLE Orders (a INT)")
    assert sensitive.table("db", "orders") is None
    assert sensitive.table("db", "Orders") is not None
    folded = MySqlSchema(lower_case_table_names=1)
    folded.apply("CREATE TABLE DB.Orders (a INT)", None)
    table = folded.table("db", "ORDERS")
    assert table is not None and (table.database, table.name) == ("db", "orders")
    kept = MySqlSchema(lower_case_table_names=2)
    kept.apply("CREATE TABLE db.Orders (a INT); ALTER TABLE db.ORDERS ADD b INT", None)
    table = kept.table("db", "orders")
    assert table is not None and table.name == "Orders" and _names(table) == ["a", "b"]


def test_copy_is_independent() -> None:
    schema = _schema("CREATE TABLE t (a INT)")
    copy = schema.copy()
    copy.apply("ALTER TABLE t ADD b INT; CREATE TABLE u (x INT)", "db")
    assert _names(_table(schema)) == ["a"] and schema.table("db", "u") is None
    assert _names(_table(copy)) == ["a", "b"]
