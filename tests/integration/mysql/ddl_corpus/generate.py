"""The DDL corpus: statements built from the MySQL 8.0/8.4 and MariaDB 10.11/11.x reference
manuals, clause by clause and in combinations, for a real server to judge.

The corpus is generated rather than stored so that it stays small in the repository and each
clause is combined with the others systematically.  It is a list of groups; a group is a short
script (its statements depend on one another, say a CREATE then an ALTER) whose table names no
other group uses, so that a statement the parser gets wrong spoils only its own group.  Some
statements are meant to be rejected by the server (MySQL-only syntax, invalid combinations):
the test counts them and moves on, the server being the judge of what is valid.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Group:
    family: str
    statements: list[str]
    ansi_quotes: bool = False
    extra_databases: list[str] = field(default_factory=list)
    # the session's sql_mode instead of STRICT_TRANS_TABLES (which makes an unknown engine
    # option an error even under IGNORE_BAD_TABLE_OPTIONS)
    sql_mode: str = ""


_counter = itertools.count()


def _name(prefix: str) -> str:
    return f"{prefix}{next(_counter)}"


# -- column types and attributes -------------------------------------------------------------

# (type as written, family): family picks defaults and which attributes make sense.
TYPES: list[tuple[str, str]] = [
    ("TINYINT", "int"), ("TINYINT(3)", "int"), ("TINYINT(1) UNSIGNED", "int"),
    ("SMALLINT", "int"), ("SMALLINT(4) ZEROFILL", "int"), ("MEDIUMINT", "int"),
    ("MIDDLEINT", "int"), ("INT", "int"), ("INT(11)", "int"), ("INTEGER", "int"),
    ("INTEGER UNSIGNED", "int"), ("INT1", "int"), ("INT2", "int"), ("INT3", "int"),
    ("INT4", "int"), ("INT8", "int"), ("BIGINT", "int"), ("BIGINT(20) UNSIGNED", "int"),
    ("BIGINT UNSIGNED ZEROFILL", "int"), ("INT SIGNED", "int"), ("BOOL", "int"),
    ("BOOLEAN", "int"),
    ("BIT", "bit"), ("BIT(1)", "bit"), ("BIT(8)", "bit"), ("BIT(64)", "bit"),
    ("DECIMAL", "dec"), ("DECIMAL(5)", "dec"), ("DECIMAL(10,2)", "dec"),
    ("DECIMAL(19.5)", "dec"), ("DEC(8,3)", "dec"), ("NUMERIC(30,10)", "dec"),
    ("FIXED(6,1)", "dec"), ("DECIMAL(65,30) UNSIGNED", "dec"), ("NUMERIC", "dec"),
    ("FLOAT", "float"), ("FLOAT(8,3)", "float"), ("FLOAT(10)", "float"),
    ("FLOAT(30)", "float"), ("REAL", "float"), ("REAL(10,2)", "float"), ("DOUBLE", "float"),
    ("DOUBLE(12,4)", "float"), ("DOUBLE PRECISION", "float"), ("FLOAT4", "float"),
    ("FLOAT8", "float"), ("DOUBLE UNSIGNED", "float"), ("FLOAT(7,2) ZEROFILL", "float"),
    ("DATE", "date"), ("TIME", "time"), ("TIME(3)", "time"), ("DATETIME", "datetime"),
    ("DATETIME(6)", "datetime"), ("TIMESTAMP", "datetime"), ("TIMESTAMP(2)", "datetime"),
    ("YEAR", "year"), ("YEAR(4)", "year"),
    ("CHAR", "str"), ("CHAR(10)", "str"), ("CHARACTER(3)", "str"), ("CHAR VARYING(5)", "str"),
    ("CHARACTER VARYING(5)", "str"), ("VARCHAR(20)", "str"), ("VARCHARACTER(7)", "str"),
    ("NCHAR", "str"), ("NCHAR(4)", "str"), ("NCHAR VARYING(5)", "str"),
    ("NCHAR VARCHAR(6)", "str"), ("NVARCHAR(5)", "str"), ("NATIONAL CHAR(2)", "str"),
    ("NATIONAL CHARACTER(2)", "str"), ("NATIONAL VARCHAR(3)", "str"),
    ("NATIONAL CHAR VARYING(4)", "str"), ("NATIONAL CHARACTER VARYING(9)", "str"),
    ("NCHAR(4) BINARY", "str"), ("NVARCHAR(5) BINARY", "str"), ("CHAR(5) BINARY", "str"),
    ("VARCHAR(10) BINARY", "str"), ("CHAR(4) BYTE", "bin"), ("CHAR(3) ASCII", "str"),
    ("VARCHAR(5) UNICODE", "str"), ("CHAR(3) ASCII BINARY", "str"),
    ("VARCHAR(5) BINARY UNICODE", "str"),
    ("VARCHAR(5) CHARACTER SET latin1", "str"), ("VARCHAR(5) CHARSET utf8mb3", "str"),
    ("VARCHAR(5) CHARACTER SET utf8 COLLATE utf8_bin", "str"),
    ("VARCHAR(5) COLLATE latin1_german1_ci", "str"), ("CHAR(5) CHARACTER SET binary", "bin"),
    ("VARCHAR(5) CHARACTER SET ascii BINARY", "str"),
    ("VARCHAR(9) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "str"),
    ("TEXT CHARACTER SET binary", "blob"), ("VARCHAR(8) CHARSET binary", "bin"),
    ("TINYTEXT", "text"), ("TEXT", "text"), ("TEXT(100)", "text"),
    ("TEXT(1000) CHARACTER SET latin1", "text"), ("TEXT(70000)", "text"),
    ("MEDIUMTEXT", "text"), ("LONGTEXT", "text"), ("LONG", "text"), ("LONG VARCHAR", "text"),
    ("LONG CHAR VARYING", "text"), ("TINYBLOB", "blob"), ("BLOB", "blob"),
    ("BLOB(100)", "blob"), ("BLOB(70000)", "blob"), ("MEDIUMBLOB", "blob"),
    ("LONGBLOB", "blob"), ("LONG VARBINARY", "blob"), ("BINARY", "bin"),
    ("BINARY(16)", "bin"), ("VARBINARY(200)", "bin"),
    ("ENUM('a','b''q','c,d')", "enum"), ("SET('x','y')", "set"),
    ("ENUM('A') CHARACTER SET latin1", "enum"), ("enum ( 'x' , \"y\" )", "enum"),
    ("JSON", "json"), ("GEOMETRY", "geo"), ("POINT", "geo"), ("LINESTRING", "geo"),
    ("POLYGON", "geo"), ("MULTIPOINT", "geo"), ("MULTILINESTRING", "geo"),
    ("MULTIPOLYGON", "geo"), ("GEOMETRYCOLLECTION", "geo"), ("UUID", "uuid"),
    ("INET4", "inet4"), ("INET6", "inet6"),
]

DEFAULTS = {
    "int": ["1", "'5'", "-1", "+3", "TRUE", "(1 + 1)"],
    "bit": ["b'1'", "0", "1"],
    "dec": ["1.5", "'2.25'", "-0.5", "0"],
    "float": ["2.5", "-1e3", "'1.25'"],
    "date": ["'2020-01-01'", "DATE '2021-02-03'", "(CURRENT_DATE)"],
    "time": ["'10:00:00'", "'00:00:01.5'"],
    "datetime": ["'2020-01-01 00:00:00'", "CURRENT_TIMESTAMP", "NOW()", "'2020-01-01'"],
    "year": ["2020", "'1999'"],
    "str": ["''", "'x'", "'it''s'", "_latin1'abc'", "N'n'"],
    "bin": ["'ab'", "x'61'"],
    "text": ["'t'"],
    "blob": ["'b'"],
    "enum": ["'a'", "'A'", "'x'"],
    "set": ["'x'", "'x,y'", "''"],
    "json": ["'{}'"],
    "geo": [],
    "uuid": ["'00000000-0000-0000-0000-000000000001'"],
    "inet4": ["'127.0.0.1'"],
    "inet6": ["'::1'"],
}

# Attribute sets every type is tried with ({d} is a default value of the type's family).
ATTRIBUTES = [
    "", "NOT NULL", "NULL", "DEFAULT NULL", "NOT NULL DEFAULT {d}", "DEFAULT {d} NOT NULL",
    "COMMENT 'a comment'", "NULL COMMENT 'c' DEFAULT {d}", "INVISIBLE DEFAULT {d}",
    "UNIQUE", "UNIQUE KEY", "PRIMARY KEY", "KEY", "NOT NULL UNIQUE KEY COMMENT 'u'",
    "CHECK (c IS NOT NULL)", "CONSTRAINT ck{n} CHECK (c IS NULL OR c = c)",
    "/* a comment */ NOT /* another */ NULL", "NOT NULL -- line comment\n",
    "NULL # hash comment\n", "/*!50100 NOT NULL */", "/*M!100100 DEFAULT {d} */",
    "DEFAULT {d} COMMENT 'x' INVISIBLE", "WITHOUT SYSTEM VERSIONING",
    "COMPRESSED", "NOT NULL PRIMARY KEY AUTO_INCREMENT", "AUTO_INCREMENT UNIQUE",
    "SERIAL DEFAULT VALUE", "REFERENCES parent (id)",
    "GENERATED ALWAYS AS (a) VIRTUAL", "AS (a + 1) PERSISTENT", "AS (a) STORED",
    "ON UPDATE CURRENT_TIMESTAMP", "DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP",
    "COLUMN_FORMAT FIXED", "STORAGE DISK", "ENGINE_ATTRIBUTE='x'",
]


_ALWAYS = 6  # the first attribute sets go with every type


def column_groups() -> Iterator[Group]:
    yield Group("columns", ["CREATE TABLE parent (id INT PRIMARY KEY)"])
    for n, (type_text, family) in enumerate(TYPES):
        defaults = DEFAULTS[family] or [""]
        for k, attributes in enumerate(ATTRIBUTES):
            if "{d}" in attributes and not DEFAULTS[family]:
                continue
            if k >= _ALWAYS and (k + n) % 3:
                continue  # each further attribute set with a third of the types, in rotation
            default = defaults[k % len(defaults)]
            attrs = attributes.format(d=default, n=next(_counter))
            table = _name("c")
            yield Group("columns", [f"CREATE TABLE {table} (a INT, c {type_text} {attrs})"])
    # SERIAL alone and with attributes
    for attrs in ("", "COMMENT 's'", "PRIMARY KEY"):
        yield Group("columns", [f"CREATE TABLE {_name('c')} (c SERIAL {attrs}, a INT)"])


# -- keys ------------------------------------------------------------------------------------

KEYS = [
    "PRIMARY KEY (a)", "PRIMARY KEY pk_name (a)", "CONSTRAINT PRIMARY KEY (a)",
    "CONSTRAINT pk PRIMARY KEY (a)", "PRIMARY KEY USING BTREE (a)", "PRIMARY KEY (a, b)",
    "PRIMARY KEY (b DESC, a)", "PRIMARY KEY (s(5))", "PRIMARY KEY (a) COMMENT 'pk'",
    "PRIMARY KEY (`a`) KEY_BLOCK_SIZE=8", "CONSTRAINT `p k` PRIMARY KEY (a)",
    "UNIQUE (a)", "UNIQUE KEY (a)", "UNIQUE INDEX u (a)", "CONSTRAINT u UNIQUE (a)",
    "CONSTRAINT UNIQUE KEY u2 (a, b)", "UNIQUE u USING HASH (s)", "UNIQUE KEY u (s(3))",
    "CONSTRAINT c UNIQUE INDEX idx USING BTREE (b)",
    "KEY (a)", "INDEX i (a, b)", "KEY i USING BTREE (a) COMMENT 'x'", "INDEX i (a) IGNORED",
    "INDEX i (a) NOT IGNORED", "KEY i (a) INVISIBLE", "KEY i ((a + 1))", "INDEX (a DESC)",
    "FULLTEXT (s)", "FULLTEXT KEY ft (s)", "FULLTEXT INDEX ft (s) WITH PARSER ngram",
    "SPATIAL (g)", "SPATIAL INDEX sp (g)",
    "FOREIGN KEY (a) REFERENCES parent (id)",
    "CONSTRAINT fk FOREIGN KEY (s) REFERENCES parent (id) ON DELETE CASCADE "
    "ON UPDATE SET NULL",
    "FOREIGN KEY fk2 (a) REFERENCES parent (id) MATCH FULL ON DELETE NO ACTION",
    "CONSTRAINT FOREIGN KEY (a) REFERENCES parent (id) ON UPDATE RESTRICT",
    "CHECK (a > 0)", "CONSTRAINT c1 CHECK (a > 0)", "CONSTRAINT CHECK (b < 10)",
    "CHECK (a > 0) NOT ENFORCED",
    "PRIMARY KEY (a), UNIQUE (b), KEY (s)", "UNIQUE (b), PRIMARY KEY (a)",
    "UNIQUE KEY (a), UNIQUE KEY (b)", "UNIQUE (s), UNIQUE (a)",
    "PRIMARY KEY (a, b), KEY (b), CONSTRAINT fk3 FOREIGN KEY (a) REFERENCES parent (id)",
]


def key_groups() -> Iterator[Group]:
    yield Group("keys", ["CREATE TABLE parent (id INT PRIMARY KEY)"])
    for key in KEYS:
        yield Group("keys", [f"CREATE TABLE {_name('k')} (a INT NOT NULL, b INT NOT NULL, "
                             f"s VARCHAR(20), g GEOMETRY NOT NULL, {key})"])
        # a key before the columns, and MyISAM (different key rules)
        yield Group("keys", [f"CREATE TABLE {_name('k')} ({key}, a INT NOT NULL, "
                             f"b INT NOT NULL, s VARCHAR(20), g GEOMETRY NOT NULL)"])
        yield Group("keys", [f"CREATE TABLE {_name('k')} (a INT NOT NULL, b INT NOT NULL, "
                             f"s VARCHAR(20), g GEOMETRY NOT NULL, {key}) ENGINE=MyISAM"])
        table = _name("k")
        yield Group("keys", [
            f"CREATE TABLE {table} (a INT NOT NULL, b INT NOT NULL, s VARCHAR(20), "
            "g GEOMETRY NOT NULL)",
            f"ALTER TABLE {table} ADD {', ADD '.join(_top_level_items(key))}"])
    # nullable columns in keys: PRIMARY KEY makes them NOT NULL, UNIQUE does not
    for key in ("PRIMARY KEY (a)", "UNIQUE (a)", "PRIMARY KEY (a, s)", "UNIQUE (a, s)"):
        yield Group("keys", [f"CREATE TABLE {_name('k')} (a INT, s VARCHAR(10), {key})"])


def _top_level_items(text: str) -> list[str]:
    """`text` split at the commas outside parentheses."""
    items, depth, start = [], 0, 0
    for k, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:k].strip())
            start = k + 1
    return [*items, text[start:].strip()]


# -- table options ---------------------------------------------------------------------------

TABLE_OPTIONS = [
    "ENGINE=InnoDB", "ENGINE MyISAM", "ENGINE=Aria TRANSACTIONAL=1 PAGE_CHECKSUM=1",
    "ENGINE=MEMORY", "TYPE=InnoDB", "AUTO_INCREMENT=5", "AVG_ROW_LENGTH=100",
    "DEFAULT CHARSET=latin1", "CHARACTER SET = utf8mb3", "CHARSET latin1 COLLATE latin1_bin",
    "DEFAULT COLLATE=utf8mb4_bin", "COLLATE utf8mb4_unicode_ci", "DEFAULT CHARACTER SET ascii",
    "CHARACTER SET utf8 COLLATE utf8_unicode_ci", "CHARSET=binary", "CHARSET DEFAULT",
    "CHECKSUM=1", "TABLE_CHECKSUM=0", "COMMENT='x'", "COMMENT 'it''s'", "COMMENT = \"dq\"",
    "COMPRESSION='zlib'", "DELAY_KEY_WRITE=1", "ENCRYPTED=NO", "ENCRYPTION='N'",
    "KEY_BLOCK_SIZE=8", "MAX_ROWS=100", "MIN_ROWS=1", "PACK_KEYS=0", "PACK_KEYS=DEFAULT",
    "PAGE_COMPRESSED=1", "PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=3",
    "ROW_FORMAT=COMPRESSED", "ROW_FORMAT=DYNAMIC", "ROW_FORMAT = COMPACT",
    "ROW_FORMAT=REDUNDANT", "ROW_FORMAT=DEFAULT", "STATS_AUTO_RECALC=0",
    "STATS_PERSISTENT=DEFAULT", "STATS_SAMPLE_PAGES=10", "TABLESPACE innodb_system",
    "STATS_AUTO_RECALC=DEFAULT", "WITH SYSTEM VERSIONING", "SECONDARY_ENGINE=rapid",
    "AUTOEXTEND_SIZE=4M", "START TRANSACTION", "IETF_QUOTES=YES", "SEQUENCE=0",
    "ENGINE=InnoDB, DEFAULT CHARSET=latin1, COMMENT='c'",
    "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci ROW_FORMAT=DYNAMIC",
    "/*!40101 DEFAULT CHARSET=latin1 */", "/*M!100100 PAGE_COMPRESSED=1 */",
    "ENGINE=InnoDB /*!50100 COMMENT 'in exec' */ DEFAULT CHARSET=latin1",
    "INSERT_METHOD=LAST", "CONNECTION='mysql://u@h/db/t'", "DATA DIRECTORY='/tmp'",
    "UNKNOWN_OPTION=1", "ENCRYPTION_KEY_ID=1",
]


def option_groups() -> Iterator[Group]:
    for option in TABLE_OPTIONS:
        yield Group("options", [
            f"CREATE TABLE {_name('o')} (a INT, s VARCHAR(10), t TEXT) {option}"])
        table = _name("o")
        yield Group("options", [f"CREATE TABLE {table} (a INT, s VARCHAR(10), t TEXT)",
                                f"ALTER TABLE {table} {option}"])


# -- partitioning ----------------------------------------------------------------------------

PARTITIONS = [
    "PARTITION BY HASH(a)", "PARTITION BY HASH(a) PARTITIONS 4",
    "PARTITION BY LINEAR HASH(a + 1) PARTITIONS 3", "PARTITION BY KEY(a) PARTITIONS 2",
    "PARTITION BY KEY() PARTITIONS 2", "PARTITION BY LINEAR KEY ALGORITHM=2 (a)",
    "PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (100), "
    "PARTITION p1 VALUES LESS THAN MAXVALUE)",
    "PARTITION BY RANGE COLUMNS(a, b) (PARTITION p0 VALUES LESS THAN (10, '2020-01-01'), "
    "PARTITION p1 VALUES LESS THAN (MAXVALUE, MAXVALUE))",
    "PARTITION BY LIST (a) (PARTITION p0 VALUES IN (1, 2), PARTITION p1 VALUES IN (3))",
    "PARTITION BY LIST COLUMNS(a) (PARTITION p0 VALUES IN (1), PARTITION pd DEFAULT)",
    "PARTITION BY RANGE (YEAR(b)) SUBPARTITION BY HASH(a) SUBPARTITIONS 2 "
    "(PARTITION p0 VALUES LESS THAN (2000), PARTITION p1 VALUES LESS THAN MAXVALUE)",
    "PARTITION BY RANGE (a) SUBPARTITION BY KEY(a) (PARTITION p0 VALUES LESS THAN (5) "
    "(SUBPARTITION s0, SUBPARTITION s1), PARTITION p1 VALUES LESS THAN (10) "
    "(SUBPARTITION s2, SUBPARTITION s3))",
    "PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (5) ENGINE=InnoDB "
    "COMMENT='first' MAX_ROWS=10, PARTITION p1 VALUES LESS THAN MAXVALUE)",
    "/*!50100 PARTITION BY HASH (a) PARTITIONS 2 */",
]
SYSTEM_TIME_PARTITIONS = [
    "PARTITION BY SYSTEM_TIME", "PARTITION BY SYSTEM_TIME LIMIT 100",
    "PARTITION BY SYSTEM_TIME INTERVAL 1 DAY",
    "PARTITION BY SYSTEM_TIME INTERVAL 1 HOUR STARTS '2024-01-01 00:00:00' AUTO",
    "PARTITION BY SYSTEM_TIME LIMIT 10 (PARTITION p0 HISTORY, PARTITION pn CURRENT)",
    "PARTITION BY SYSTEM_TIME INTERVAL 1 MONTH PARTITIONS 3",
    "PARTITION BY SYSTEM_TIME INTERVAL 1 WEEK STARTS TIMESTAMP'2024-01-01 00:00:00' "
    "PARTITIONS 3 AUTO",
]
PARTITION_ALTERS = [
    "ADD PARTITION (PARTITION p2 VALUES LESS THAN (300))",
    "ADD PARTITION IF NOT EXISTS (PARTITION p1 VALUES LESS THAN (200))",
    "DROP PARTITION p0", "DROP PARTITION IF EXISTS zz", "DROP PARTITION p0, p1",
    "TRUNCATE PARTITION p0", "TRUNCATE PARTITION ALL", "ANALYZE PARTITION p0",
    "CHECK PARTITION ALL", "OPTIMIZE PARTITION p0, p1", "REBUILD PARTITION p0",
    "REPAIR PARTITION p1", "REMOVE PARTITIONING",
    "REORGANIZE PARTITION p0 INTO (PARTITION n0 VALUES LESS THAN (50), "
    "PARTITION n1 VALUES LESS THAN (100))",
    "PARTITION BY HASH(a) PARTITIONS 2", "ADD COLUMN z INT, ALGORITHM=COPY",
    "CONVERT PARTITION p0 TO TABLE {t}_conv",
    "COALESCE PARTITION 1", "ADD PARTITION PARTITIONS 2", "DISCARD PARTITION p0 TABLESPACE",
    "ENGINE=InnoDB PARTITION BY KEY(a) PARTITIONS 2", "UPGRADE PARTITIONING",
    "EXCHANGE PARTITION p0 WITH TABLE {t}_x WITHOUT VALIDATION",
]


def partition_groups() -> Iterator[Group]:
    columns = "(a INT NOT NULL, b DATE NOT NULL, s VARCHAR(10), PRIMARY KEY (a, b))"
    for partition in PARTITIONS:
        yield Group("partitions", [f"CREATE TABLE {_name('p')} {columns} {partition}"])
        yield Group("partitions", [
            f"CREATE TABLE {_name('p')} {columns} ENGINE=InnoDB, DEFAULT CHARSET=latin1 "
            f"{partition}"])
        table = _name("p")
        yield Group("partitions", [f"CREATE TABLE {table} {columns}",
                                   f"ALTER TABLE {table} {partition}"])
    for partition in SYSTEM_TIME_PARTITIONS:
        yield Group("partitions", [
            f"CREATE TABLE {_name('p')} (a INT, s VARCHAR(5)) WITH SYSTEM VERSIONING "
            f"{partition}"])
    ranged = ("PARTITION BY RANGE (a) (PARTITION p0 VALUES LESS THAN (100), "
              "PARTITION p1 VALUES LESS THAN (200))")
    for alter in PARTITION_ALTERS:
        table = _name("p")
        statements = [f"CREATE TABLE {table} (a INT NOT NULL, s VARCHAR(10)) {ranged}"]
        if "{t}_x" in alter:
            statements.append(f"CREATE TABLE {table}_x (a INT NOT NULL, s VARCHAR(10))")
        statements.append(f"ALTER TABLE {table} {alter.format(t=table)}")
        if "CONVERT PARTITION" in alter:
            statements.append(f"ALTER TABLE {table} CONVERT TABLE {table}_conv TO PARTITION "
                              "p0 VALUES LESS THAN (100)")
        yield Group("partitions", statements)
        hashed = _name("p")
        yield Group("partitions", [
            f"CREATE TABLE {hashed} (a INT NOT NULL, s VARCHAR(10)) PARTITION BY HASH(a) "
            "PARTITIONS 4",
            f"ALTER TABLE {hashed} {alter.format(t=hashed)}"])


# -- ALTER TABLE -----------------------------------------------------------------------------

ALTERS = [
    "ADD COLUMN x INT", "ADD x INT FIRST", "ADD COLUMN x INT AFTER a",
    "ADD COLUMN IF NOT EXISTS a INT", "ADD IF NOT EXISTS x INT", "ADD (x INT, y INT)",
    "ADD COLUMN (x INT, y VARCHAR(3))", "ADD x INT NOT NULL DEFAULT 0", "ADD x INT, ADD y INT",
    "ADD x INT FIRST, ADD y INT AFTER x", "ADD COLUMN x SERIAL", "ADD x NVARCHAR(5)",
    "ADD x TIMESTAMP(6) GENERATED ALWAYS AS ROW START",
    "ADD x INT AUTO_INCREMENT PRIMARY KEY FIRST", "ADD x INT UNIQUE", "ADD x INT KEY",
    "ADD PRIMARY KEY (a)", "ADD PRIMARY KEY pk (a)", "ADD CONSTRAINT PRIMARY KEY (a)",
    "ADD CONSTRAINT pk PRIMARY KEY (a, b)", "ADD PRIMARY KEY IF NOT EXISTS (a)",
    "ADD PRIMARY KEY USING BTREE (a)", "ADD UNIQUE (b)", "ADD UNIQUE KEY IF NOT EXISTS u (b)",
    "ADD UNIQUE INDEX u (s(3))", "ADD INDEX i (b)", "ADD KEY IF NOT EXISTS i (b)",
    "ADD FULLTEXT (s)", "ADD FULLTEXT INDEX ft (s)", "ADD CONSTRAINT c CHECK (a > 0)",
    "ADD CHECK (a > 0)", "ADD CONSTRAINT IF NOT EXISTS c CHECK (a > 0)",
    "ADD FOREIGN KEY (a) REFERENCES parent (id)",
    "ADD CONSTRAINT fk FOREIGN KEY IF NOT EXISTS (a) REFERENCES parent (id)",
    "ADD CONSTRAINT IF NOT EXISTS fk FOREIGN KEY (a) REFERENCES parent (id)",
    "DROP COLUMN s", "DROP s", "DROP COLUMN IF EXISTS zz", "DROP COLUMN s RESTRICT",
    "DROP s CASCADE", "DROP PRIMARY KEY", "DROP INDEX i", "DROP KEY IF EXISTS zz",
    "DROP INDEX IF EXISTS i", "DROP CONSTRAINT IF EXISTS zz", "DROP CONSTRAINT u",
    "DROP FOREIGN KEY fk0", "DROP FOREIGN KEY IF EXISTS zz", "DROP CHECK ck0",
    "DROP CONSTRAINT ck0", "DROP COLUMN s, DROP COLUMN t",
    "MODIFY s VARCHAR(50)", "MODIFY COLUMN s TEXT FIRST", "MODIFY IF EXISTS zz INT",
    "MODIFY COLUMN IF EXISTS s INT AFTER b", "MODIFY a BIGINT NOT NULL AUTO_INCREMENT",
    "MODIFY a INT NULL", "MODIFY s VARCHAR(20) CHARACTER SET latin1 NOT NULL DEFAULT 'q'",
    "MODIFY s NCHAR(3)", "MODIFY b INT INVISIBLE",
    "CHANGE s s2 VARCHAR(5)", "CHANGE COLUMN s s2 INT AFTER a", "CHANGE IF EXISTS zz z INT",
    "CHANGE COLUMN IF EXISTS s s VARCHAR(9) FIRST", "CHANGE a a2 BIGINT UNSIGNED NOT NULL",
    "CHANGE b b INT PRIMARY KEY",
    "ALTER s SET DEFAULT 'x'", "ALTER COLUMN b SET DEFAULT 5", "ALTER b DROP DEFAULT",
    "ALTER COLUMN b SET DEFAULT (b + 1)", "ALTER COLUMN b SET INVISIBLE",
    "ALTER COLUMN IF EXISTS zz SET DEFAULT 1", "ALTER COLUMN s SET DEFAULT NULL",
    "ALTER INDEX i IGNORED", "ALTER INDEX i NOT IGNORED", "ALTER KEY i NOT IGNORED",
    "ALTER INDEX i INVISIBLE", "ALTER INDEX i VISIBLE", "ALTER CHECK ck0 NOT ENFORCED",
    "ALTER CONSTRAINT ck0 ENFORCED",
    "RENAME COLUMN s TO s2", "RENAME COLUMN IF EXISTS zz TO z", "RENAME INDEX i TO j",
    "RENAME KEY i TO j", "RENAME KEY IF EXISTS zz TO j", "RENAME TO {t}_new",
    "RENAME AS {t}_new", "RENAME {t}_new", "RENAME COLUMN a TO a2, RENAME COLUMN b TO a",
    "CONVERT TO CHARACTER SET latin1", "CONVERT TO CHARSET utf8mb4 COLLATE utf8mb4_bin",
    "CONVERT TO CHARACTER SET DEFAULT", "CONVERT TO CHARACTER SET utf8mb3",
    "CONVERT TO CHARACTER SET binary", "CHARACTER SET latin1", "DEFAULT CHARSET = latin1",
    "CHARACTER SET utf8mb3 COLLATE utf8mb3_bin", "COLLATE latin1_bin", "COMMENT 'x'",
    "COMMENT = 'x', ENGINE=InnoDB", "ENGINE=InnoDB", "ENGINE = MyISAM", "ROW_FORMAT=DYNAMIC",
    "AUTO_INCREMENT=10", "PAGE_COMPRESSED=1", "STATS_PERSISTENT=0", "KEY_BLOCK_SIZE=8",
    "FORCE", "ENABLE KEYS", "DISABLE KEYS", "ORDER BY a", "ORDER BY a, b DESC",
    "ALGORITHM=INPLACE", "ALGORITHM COPY", "ALGORITHM=INSTANT, ADD x INT", "LOCK=NONE",
    "LOCK SHARED", "LOCK = EXCLUSIVE", "ADD x INT, ALGORITHM=INPLACE, LOCK=NONE",
    "ADD SYSTEM VERSIONING", "DROP SYSTEM VERSIONING",
    "ADD x INT, DROP s", "MODIFY b BIGINT, ADD INDEX (b)", "DROP INDEX i, ADD INDEX i (a, b)",
    "DROP PRIMARY KEY, ADD PRIMARY KEY (b)", "ADD COLUMN c1 INT, ADD UNIQUE (c1)",
    "DISCARD TABLESPACE", "WITH VALIDATION", "SECONDARY_LOAD", "NOT SECONDARY",
    "ADD PERIOD FOR p (d1, d2)", "ADD COLUMN x INT /* why */ AFTER `a`",
    "ADD (x INT, y INT, UNIQUE KEY (x), PRIMARY KEY (y))", "ADD (x INT NOT NULL, KEY (x))",
    "ADD PERIOD IF NOT EXISTS FOR p (d1, d2)",
]


def alter_groups() -> Iterator[Group]:
    yield Group("alters", ["CREATE TABLE parent (id INT PRIMARY KEY)"])
    base = ("(a INT NOT NULL, b INT NOT NULL, s VARCHAR(10), t TEXT, d1 DATE, d2 DATE, "
            "UNIQUE KEY u (a), KEY i (b), CONSTRAINT ck0 CHECK (b >= 0), "
            "CONSTRAINT fk0 FOREIGN KEY (b) REFERENCES parent (id))")
    prefixes = ["ALTER TABLE {t}", "ALTER TABLE IF EXISTS {t}", "ALTER ONLINE TABLE {t}",
                "ALTER TABLE {t} WAIT 1", "ALTER TABLE {t} NOWAIT", "ALTER IGNORE TABLE {t}"]
    for k, alter in enumerate(ALTERS):
        table = _name("a")
        prefix = prefixes[k % len(prefixes)].format(t=table)
        yield Group("alters", [f"CREATE TABLE {table} {base}",
                               f"{prefix} {alter.format(t=table)}"])
        table = _name("a")
        yield Group("alters", [
            f"CREATE TABLE {table} (a INT NOT NULL, b INT NOT NULL, s VARCHAR(10), t TEXT, "
            "d1 DATE, d2 DATE, PRIMARY KEY (a), KEY i (b)) DEFAULT CHARSET=latin1",
            f"ALTER TABLE {table} {alter.format(t=table)}"])
    table = _name("a")
    yield Group("alters", [
        f"CREATE TABLE {table} (a INT, v INT, s TIMESTAMP(6) GENERATED ALWAYS AS ROW START, "
        "e TIMESTAMP(6) GENERATED ALWAYS AS ROW END, PERIOD FOR SYSTEM_TIME(s, e)) "
        "WITH SYSTEM VERSIONING",
        f"ALTER TABLE {table} DROP SYSTEM VERSIONING, DROP PERIOD FOR SYSTEM_TIME, DROP s, "
        "DROP e"])
    table = _name("a")
    yield Group("alters", [
        f"CREATE TABLE {table} (a INT, s BIGINT UNSIGNED AS ROW START INVISIBLE, "
        "e BIGINT UNSIGNED AS ROW END INVISIBLE, PERIOD FOR SYSTEM_TIME(s, e)) "
        "WITH SYSTEM VERSIONING ENGINE=InnoDB",
        f"ALTER TABLE {table} ADD COLUMN x INT WITHOUT SYSTEM VERSIONING"])
    for key in ("PRIMARY KEY (a)", "UNIQUE (a)", "UNIQUE (a, e)", "PRIMARY KEY (a, p WITHOUT "
                "OVERLAPS)", "UNIQUE (a, p WITHOUT OVERLAPS)"):
        table = _name("a")
        yield Group("alters", [
            f"CREATE TABLE {table} (a INT NOT NULL, d1 DATE, d2 DATE, PERIOD FOR p (d1, d2), "
            f"s TIMESTAMP(6) AS ROW START, e TIMESTAMP(6) AS ROW END, "
            f"PERIOD FOR SYSTEM_TIME (s, e), {key}) WITH SYSTEM VERSIONING",
            f"ALTER TABLE {table} RENAME COLUMN e TO e2",
            f"ALTER TABLE {table} CHANGE a a2 INT NOT NULL, ADD UNIQUE (a2)",
            f"ALTER TABLE {table} ADD b INT, ADD UNIQUE (b, p WITHOUT OVERLAPS)"])
        table = _name("a")
        yield Group("alters", [
            f"CREATE TABLE {table} (a INT NOT NULL, d1 DATE, d2 DATE, PERIOD FOR p (d1, d2), "
            f"{key.replace(', e)', ')')})"])
    table = _name("a")
    yield Group("alters", [
        f"CREATE TABLE {table} (a INT, b INT WITH SYSTEM VERSIONING)",
        f"ALTER TABLE {table} MODIFY b INT WITHOUT SYSTEM VERSIONING"])


# -- statements other than CREATE/ALTER TABLE ------------------------------------------------

def statement_groups() -> Iterator[Group]:
    t = _name("s")
    yield Group("statements", [
        f"CREATE TABLE {t} (a INT)", f"RENAME TABLE {t} TO {t}b",
        f"RENAME TABLE {t}b TO {t}c, {t}c TO {t}d", f"RENAME TABLES {t}d WAIT 1 TO {t}e",
        f"RENAME TABLE {t}e NOWAIT TO {t}f", f"RENAME TABLE IF EXISTS {t}zz TO {t}yy",
        f"RENAME TABLE IF EXISTS {t}f TO {t}g", f"TRUNCATE TABLE {t}g", f"TRUNCATE {t}g",
        f"TRUNCATE TABLE {t}g WAIT 5", f"TRUNCATE {t}g NOWAIT", f"DROP TABLE {t}g"])
    t = _name("s")
    yield Group("statements", [
        f"CREATE TABLE {t}1 (a INT)", f"CREATE TABLE {t}2 (a INT)",
        f"CREATE TABLE {t}3 (a INT)", f"CREATE TABLE {t}4 (a INT)",
        f"CREATE TABLE {t}5 (a INT)", f"CREATE TABLE {t}6 (a INT)",
        f"DROP TABLE IF EXISTS {t}1, {t}zz", f"DROP TABLES {t}2, {t}3",
        f"DROP TABLE {t}4 WAIT 1", f"DROP TABLE {t}5 NOWAIT RESTRICT",
        f"DROP TABLE /* generated by server */ {t}6 CASCADE",
        f"DROP TEMPORARY TABLE IF EXISTS {t}6"])
    t = _name("s")
    yield Group("statements", [
        f"CREATE TABLE {t} (a INT NOT NULL, b INT, s VARCHAR(30), g GEOMETRY NOT NULL)",
        f"CREATE INDEX i ON {t} (a)", f"CREATE UNIQUE INDEX IF NOT EXISTS u ON {t} (a) "
        "USING BTREE", f"CREATE UNIQUE INDEX IF NOT EXISTS u ON {t} (b)",
        f"CREATE OR REPLACE UNIQUE INDEX u ON {t} (b)", f"CREATE INDEX j ON {t} (b) WAIT 1",
        f"CREATE INDEX j2 ON {t} (b) NOWAIT ALGORITHM=INPLACE",
        f"CREATE INDEX IF NOT EXISTS j2 ON {t} (a)", f"DROP INDEX j2 ON {t} WAIT 2",
        f"CREATE INDEX k USING BTREE ON {t} (a, b DESC) ALGORITHM=INPLACE LOCK=NONE",
        f"CREATE ONLINE INDEX l ON {t} (s(4)) COMMENT 'x'",
        f"CREATE FULLTEXT INDEX ft ON {t} (s)", f"CREATE SPATIAL INDEX sp ON {t} (g)",
        f"DROP INDEX i ON {t}", f"DROP INDEX IF EXISTS i ON {t}",
        f"DROP INDEX j ON {t} WAIT 1 ALGORITHM = COPY", f"DROP INDEX u ON {t} NOWAIT",
        f"DROP ONLINE INDEX k ON {t} LOCK=DEFAULT"])
    t = _name("s")
    yield Group("statements", [
        f"CREATE TABLE {t} (a INT PRIMARY KEY, b VARCHAR(5))",
        f"CREATE VIEW {t}v AS SELECT a FROM {t}",
        f"CREATE OR REPLACE ALGORITHM=MERGE DEFINER=CURRENT_USER SQL SECURITY INVOKER VIEW "
        f"{t}v2 (x) AS SELECT a FROM {t} WITH CHECK OPTION",
        f"CREATE DEFINER=`headwater`@`%` VIEW {t}v3 AS SELECT 1 AS one",
        f"ALTER VIEW {t}v AS SELECT b FROM {t}",
        f"ALTER ALGORITHM=TEMPTABLE VIEW {t}v AS SELECT a, b FROM {t}",
        f"DROP VIEW IF EXISTS {t}v, {t}v2", f"DROP VIEW {t}v3 RESTRICT",
        f"CREATE SEQUENCE {t}s START WITH 1 INCREMENT BY 1",
        f"CREATE SEQUENCE IF NOT EXISTS {t}s2 MINVALUE 1 MAXVALUE 100 CACHE 10 CYCLE",
        f"ALTER SEQUENCE {t}s RESTART 5", f"CREATE TABLE {t}n (a INT DEFAULT NEXT VALUE FOR "
        f"{t}s, b INT DEFAULT NEXTVAL({t}s2))", f"DROP SEQUENCE {t}s2",
        f"CREATE TRIGGER {t}tr BEFORE INSERT ON {t} FOR EACH ROW SET NEW.a = NEW.a + 1",
        f"CREATE DEFINER=CURRENT_USER TRIGGER {t}tr2 AFTER UPDATE ON {t} FOR EACH ROW "
        f"BEGIN DECLARE x INT; SET x = 1; END",
        f"DROP TRIGGER IF EXISTS {t}tr", f"DROP TRIGGER {t}tr2",
        f"CREATE PROCEDURE {t}p() BEGIN SELECT 1; SELECT 2; END",
        f"CREATE OR REPLACE DEFINER=CURRENT_USER() PROCEDURE {t}p(IN x INT) SELECT x",
        f"CREATE FUNCTION {t}f(x INT) RETURNS INT DETERMINISTIC RETURN x + 1",
        f"CREATE AGGREGATE FUNCTION IF NOT EXISTS {t}ag(x INT) RETURNS INT DETERMINISTIC "
        "BEGIN "
        "DECLARE s INT DEFAULT 0; DECLARE CONTINUE HANDLER FOR NOT FOUND RETURN s; "
        "LOOP FETCH GROUP NEXT ROW; SET s = s + x; END LOOP; END",
        f"ALTER PROCEDURE {t}p COMMENT 'c'", f"DROP PROCEDURE {t}p",
        f"DROP FUNCTION IF EXISTS {t}f", f"DROP FUNCTION IF EXISTS {t}ag",
        f"CREATE EVENT {t}e ON SCHEDULE EVERY 1 DAY DO DELETE FROM {t} WHERE a < 0",
        f"ALTER EVENT {t}e DISABLE", f"DROP EVENT IF EXISTS {t}e",
        f"CREATE TABLE {t}l LIKE {t}", f"CREATE TABLE IF NOT EXISTS {t}l2 (LIKE {t})",
        f"CREATE TABLE IF NOT EXISTS {t}l (x INT)", f"CREATE OR REPLACE TABLE {t}l (x INT)",
        f"CREATE TABLE {t}cs (a INT PRIMARY KEY, b VARCHAR(5)) SELECT a, b FROM {t}",
        f"CREATE TABLE {t}cs2 (a INT, b VARCHAR(5)) IGNORE SELECT a, b FROM {t}",
        f"CREATE TABLE {t}cs3 (a INT, b VARCHAR(5)) ENGINE=InnoDB AS SELECT a, b FROM {t}",
        f"CREATE TEMPORARY TABLE {t}tmp (a INT)", f"ALTER TABLE {t}tmp ADD b INT",
        f"DROP TEMPORARY TABLE {t}tmp"])
    db = _name("hw_corpus_db")
    yield Group("statements", [
        f"CREATE DATABASE {db} CHARACTER SET latin1",
        f"CREATE TABLE {db}.t (s VARCHAR(5), u VARCHAR(5) CHARACTER SET utf8mb4)",
        f"CREATE SCHEMA IF NOT EXISTS {db}", f"ALTER DATABASE {db} CHARACTER SET utf8mb4",
        f"CREATE TABLE {db}.t2 (s VARCHAR(5))", f"ALTER SCHEMA {db} COLLATE latin1_bin",
        f"CREATE TABLE {db}.t3 (s VARCHAR(5))",
        f"ALTER DATABASE {db} DEFAULT CHARACTER SET = utf8mb3 DEFAULT COLLATE = "
        "utf8mb3_bin", f"CREATE TABLE {db}.t4 (s VARCHAR(5)) COLLATE utf8mb3_unicode_ci",
        f"ALTER DATABASE {db} COMMENT 'c'", f"CREATE TABLE {db}.t5 (s TEXT)",
        f"RENAME TABLE {db}.t5 TO t5_here", f"DROP SCHEMA IF EXISTS {db}",
        f"CREATE DATABASE IF NOT EXISTS {db} CHARSET = ascii COMMENT = 'x'",
        f"CREATE TABLE {db}.t (a CHAR(2))", f"DROP DATABASE {db}",
        f"DROP DATABASE IF EXISTS {db}"], extra_databases=[db])


# -- identifiers, quoting and comments -------------------------------------------------------

def quoting_groups() -> Iterator[Group]:
    yield Group("quoting", [
        "CREATE TABLE `we``ird` (`col``1` INT, `select` VARCHAR(3), `a b` INT, "
        "PRIMARY KEY (`col``1`))",
        "ALTER TABLE `we``ird` CHANGE `a b` `c d` BIGINT, RENAME COLUMN `select` TO `from`",
        "ALTER TABLE `we``ird` ADD `é` INT, ADD `$x` INT, ADD _y INT, ADD `1e5` INT",
        "RENAME TABLE `we``ird` TO `we``ird 2`", "DROP TABLE `we``ird 2`"])
    yield Group("quoting", [
        'CREATE TABLE "ansi" ("x" INT, "y""z" VARCHAR(3) DEFAULT \'d\', PRIMARY KEY ("x"))',
        'ALTER TABLE "ansi" ADD "w" INT AFTER "x"', 'RENAME TABLE "ansi" TO "ansi2"',
    ], ansi_quotes=True)
    t = _name("q")
    yield Group("quoting", [
        f"CREATE /* c */ TABLE /* c */ {t} /* c */ (a /* c */ INT /* c */ -- c\n"
        ", b INT # c\n, /* c */ PRIMARY KEY /* c */ (a)) /* c */ ENGINE /* c */ = InnoDB",
        f"/* leading */ ALTER TABLE {t} /* c */ ADD /* c */ COLUMN c INT -- trailing",
        f"ALTER TABLE {t} ADD d INT /*!50100 NOT NULL */, ADD e INT /*M!100500 NOT NULL */",
        f"/*!40000 ALTER TABLE {t} DISABLE KEYS */",
        f"ALTER TABLE {t} /*!50100 ADD f VARCHAR(3) */",
        f"/*M!100100 CREATE TABLE {t}x (a INT) */",
        f"CREATE TABLE {t}y (a INT)/*!50100 PARTITION BY HASH (a) PARTITIONS 2 */",
        f"CREATE TABLE\n{t}z\n(\n a\tINT\n,\n b\r\nINT\n)\n",
        f"create table {t}lc (a int not null auto_increment primary key, b varchar(5) "
        "character set LATIN1 collate LATIN1_BIN)",
        f"CREATE TABLE {t}.{t}w (a INT)",
    ])


# -- storage engine options, index visibility, quote runs (MariaDB) ---------------------------

# Options a storage engine defines (InnoDB's, CSV's) rather than the server: MariaDB takes them
# as `name = value` with the name quoted or not, and SHOW CREATE TABLE prints them quoted with
# a string value (`PAGE_COMPRESSED`='ON'), which is how dumps and replicas repeat them.
ENGINE_OPTIONS: list[tuple[str, list[str]]] = [
    ("PAGE_COMPRESSED", ["`ON`", "'ON'", "ON", "1", "0", "`yes`", "'OFF'", "DEFAULT"]),
    ("PAGE_COMPRESSION_LEVEL", ["9", "'1'", "`3`", "DEFAULT"]),
    ("ENCRYPTED", ["NO", "`NO`", "'YES'", "YES", "DEFAULT"]),
    ("ENCRYPTION_KEY_ID", ["1", "'1'", "DEFAULT"]),
]


def _spellings(name: str) -> list[str]:
    return [name, f"`{name}`", f"`{name.lower()}`", name.lower()]


def engine_option_groups() -> Iterator[Group]:
    family = "engine_options"
    combos = [(spelling, value) for name, values in ENGINE_OPTIONS
              for spelling in _spellings(name) for value in values]
    for k, (spelling, value) in enumerate(combos):
        option = f"{spelling}={value}" if k % 3 else f"{spelling} = {value}"
        around = ["{o}", "ENGINE=InnoDB {o} COMMENT 'c{k}'", "{o}, DEFAULT CHARSET=latin1",
                  "COMMENT = 'x', {o}, COLLATE latin1_bin"][k % 4]
        options = around.format(o=option, k=k)
        yield Group(family, [f"CREATE TABLE {_name('e')} (a INT, s VARCHAR(10)) {options}"])
        table = _name("e")
        yield Group(family, [f"CREATE TABLE {table} (a INT, s VARCHAR(10))",
                             f"ALTER TABLE {table} {options}",
                             f"ALTER TABLE {table} {option}, ADD b INT, COMMENT 'after'"])
    # two engine options, and ones after WITH SYSTEM VERSIONING and partitioning
    for first, second in itertools.product(_spellings("PAGE_COMPRESSED")[:2],
                                           _spellings("PAGE_COMPRESSION_LEVEL")[:2]):
        yield Group(family, [f"CREATE TABLE {_name('e')} (a INT) {first}=1 {second}=9"])
        yield Group(family, [f"CREATE TABLE {_name('e')} (a INT) {first}=`ON`, {second}=1"])
    yield Group(family, [f"CREATE TABLE {_name('e')} (a INT) WITH SYSTEM VERSIONING "
                         "`PAGE_COMPRESSED`=1 COMMENT 'v'"])
    yield Group(family, [f"CREATE TABLE {_name('e')} (a INT NOT NULL) `PAGE_COMPRESSED`=1 "
                         "PARTITION BY HASH(a) PARTITIONS 2"])
    # CSV's option; only NOT NULL columns are allowed there
    for spelling in _spellings("IETF_QUOTES"):
        for value in ("YES", "NO", "'YES'", "`no`"):
            yield Group(family, [f"CREATE TABLE {_name('e')} (a INT NOT NULL, s VARCHAR(5) "
                                 f"NOT NULL) ENGINE=CSV {spelling}={value}"])
    # the server's own options cannot be quoted (it rejects them as unknown engine options)
    for option in ("`ENGINE`=InnoDB", "`COMMENT`='x'", "`ROW_FORMAT`=DYNAMIC",
                   "`DEFAULT` CHARSET=latin1"):
        yield Group(family, [f"CREATE TABLE {_name('e')} (a INT) {option}"])
    # options no engine defines, on tables, columns and keys: kept by the server only under
    # IGNORE_BAD_TABLE_OPTIONS (SHOW CREATE TABLE then prints them quoted)
    ignore = "IGNORE_BAD_TABLE_OPTIONS"
    for n, (column, key, table) in enumerate(itertools.product(
            ["`FOO`=1", "`foo`='x' COMMENT 'c'", "COMMENT 'c' `BAR`=`y`", "BAZ=2"],
            ["`CLUSTERING`='YES'", "CLUSTERING=YES", "`X`=1 COMMENT 'k'", "COMMENT 'k' Y='z'"],
            ["`UNKNOWN`='x'", "UNKNOWN_OPTION=1", "`COMMENT`='not the comment'", ""])):
        unique = "UNIQUE" if n % 2 else "KEY"
        yield Group(family, [f"CREATE TABLE {_name('e')} (a INT NOT NULL {column}, b INT, "
                             f"{unique} k (a) {key}, KEY (b)) {table}"], sql_mode=ignore)
        if n % 4 == 0:
            t = _name("e")
            yield Group(family, [f"CREATE TABLE {t} (a INT, b INT)",
                                 f"ALTER TABLE {t} ADD c INT {column}, ADD {unique} k (a) {key}",
                                 f"CREATE INDEX j ON {t} (b) {key}",
                                 f"ALTER TABLE {t} {table or 'COMMENT ' + chr(39) + chr(39)}"],
                        sql_mode=ignore)


# ALTER {INDEX|KEY} [IF EXISTS] name [NOT] IGNORED (MariaDB 10.6), and MySQL's VISIBLE /
# INVISIBLE (which MariaDB rejects in ALTER INDEX) for the server to judge.
_KEY_DEFINITIONS = ["KEY i (a)", "INDEX i (a) IGNORED", "KEY i (a) NOT IGNORED",
                    "KEY i (a) VISIBLE", "UNIQUE KEY i (a)",
                    "UNIQUE i (a) IGNORED", "KEY `i x` (a) COMMENT 'c' IGNORED",
                    "KEY i (a) IGNORED COMMENT 'c'", "FULLTEXT KEY i (s) IGNORED",
                    "KEY i (a) USING BTREE NOT IGNORED"]
_VISIBILITIES = ["IGNORED", "NOT IGNORED", "VISIBLE", "INVISIBLE"]


def visibility_groups() -> Iterator[Group]:
    family = "visibility"
    for k, definition in enumerate(_KEY_DEFINITIONS):
        index = "`i x`" if "`i x`" in definition else "i"
        statements = [f"CREATE TABLE {{t}} (a INT NOT NULL, b INT, s VARCHAR(10), "
                      f"{definition}, PRIMARY KEY (b))"]
        for n, (word, if_exists, visibility) in enumerate(itertools.product(
                ("INDEX", "KEY"), ("", "IF EXISTS "), _VISIBILITIES)):
            if (n + k) % 2:
                continue  # half of the combinations per definition, in rotation
            statements.append(f"ALTER TABLE {{t}} ALTER {word} {if_exists}{index} {visibility}")
        statements += [
            "ALTER TABLE {t} ALTER INDEX IF EXISTS missing IGNORED, ADD c INT",
            f"ALTER TABLE {{t}} ADD d INT, ALTER KEY IF EXISTS {index} NOT IGNORED, "
            "ALTER INDEX IF EXISTS zz IGNORED, MODIFY s VARCHAR(20)",
            "ALTER TABLE {t} ALTER INDEX `PRIMARY` IGNORED",
            f"ALTER TABLE {{t}} RENAME INDEX {index} TO j, ALTER INDEX IF EXISTS j IGNORED"]
        table = _name("v")
        yield Group(family, [statement.format(t=table) for statement in statements])
    # a key that is the table's only unique key over NOT NULL columns acts as its primary key,
    # which the server refuses to ignore
    table = _name("v")
    yield Group(family, [f"CREATE TABLE {table} (a INT NOT NULL, UNIQUE KEY u (a))",
                         f"ALTER TABLE {table} ALTER INDEX u IGNORED",
                         f"ALTER TABLE {table} ADD b INT, ADD KEY k (b) IGNORED",
                         f"CREATE INDEX k2 ON {table} (b) IGNORED",
                         f"CREATE OR REPLACE INDEX k2 ON {table} (a, b) NOT IGNORED"])


_QUOTE_ALPHABET = "ab'\"\\\n\t%_ "
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\\": "\\\\"}


def _written(value: str, quote: str, choose: random.Random) -> str:
    """`value` as a string literal in `quote`: each quote doubled or escaped, the other quote
    as is or escaped, newlines and tabs as they are or escaped."""
    pieces = []
    for char in value:
        if char == quote:
            pieces.append(choose.choice([quote * 2, "\\" + quote]))
        elif char in "'\"":
            pieces.append(choose.choice([char, "\\" + char]))
        elif char == "\\":
            pieces.append("\\\\")
        elif char in _ESCAPES and choose.random() < 0.5:
            pieces.append(_ESCAPES[char])
        else:
            pieces.append(char)
    return quote + "".join(pieces) + quote


def quote_run_values() -> list[str]:
    """Comments with runs of quotes (of each kind and mixed), then random ones."""
    values = []
    for n in range(1, 6):
        values += [f"a{chr(39) * n}b", f'x{chr(34) * n}y', chr(39) * n, chr(34) * n,
                   f"{chr(39) * n}{chr(34) * n}", f"\\{chr(39) * n}"]
    choose = random.Random(30)  # fixed: the corpus is the same on every run
    values += ["".join(choose.choice(_QUOTE_ALPHABET) for _ in range(choose.randint(1, 12)))
               for _ in range(40)]
    return values


def quote_run_groups() -> Iterator[Group]:
    family = "quote_runs"
    choose = random.Random(31)
    for k, value in enumerate(quote_run_values()):
        single, double = _written(value, "'", choose), _written(value, '"', choose)
        table = _name("r")
        yield Group(family, [
            f"CREATE TABLE {table} (a INT COMMENT {single}, b INT COMMENT {double}, "
            f"KEY i (a) COMMENT {single}) COMMENT {double}",
            f"ALTER TABLE {table} MODIFY a INT COMMENT {double}, ADD c INT COMMENT "
            f"{single}, COMMENT = {single}",
            f"ALTER TABLE {table} CHANGE b b2 INT COMMENT {single} FIRST, "
            f"ALTER INDEX IF EXISTS i IGNORED"])
        if k % 3 == 0:  # under ANSI_QUOTES only '...' is a string
            table = _name("r")
            yield Group(family, [f'CREATE TABLE "{table}" ("a" INT COMMENT {single}) '
                                 f"COMMENT={single}"], ansi_quotes=True)


def groups() -> list[Group]:
    """The whole corpus, in a fixed order."""
    return [*column_groups(), *key_groups(), *option_groups(), *partition_groups(),
            *alter_groups(), *statement_groups(), *quoting_groups(), *engine_option_groups(),
            *visibility_groups(), *quote_run_groups()]
