"""The server as the oracle for the DDL parser and the catalog.

Each statement of the generated corpus (ddl_corpus/generate.py) runs on a real MariaDB; the
ones it rejects are counted and skipped.  Each accepted one must parse and apply to our
catalog, and every table it touched must then look in the catalog as information_schema says,
column by column: type, length, precision and scale, nullability, default, auto_increment,
charset and collation, ENUM/SET members, comment, primary and unique keys, table charset and
comment; dropped and renamed tables must be gone.  A statement that fails spoils its group
(the catalog no longer follows the server), so the rest of that group is not run.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

import pytest

from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable
from headwater.connectors.mysql.ddl import STRING_TYPES, DdlParseError, base_type
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.testing.localmariadb import LocalMariaDB
from tests.integration.mysql.ddl_corpus import mysql_test_suite
from tests.integration.mysql.ddl_corpus.generate import Group, groups

pytestmark = pytest.mark.integration

_TYPE_ON_SERVER = {"BOOLEAN": "TINYINT", "JSON": "LONGTEXT"}
_NUMERIC = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "DECIMAL", "FLOAT",
                      "DOUBLE", "YEAR", "BOOLEAN"})
_NOW = re.compile(r"^(current_timestamp|now|localtime|localtimestamp)(\(\s*(\d*)\s*\))?$",
                  re.IGNORECASE)


@dataclass
class Tally:
    tried: int = 0
    rejected: int = 0
    accepted: int = 0
    parsed: int = 0
    equal: int = 0
    blocked: int = 0
    failures: list[str] = field(default_factory=list)
    rejections: list[str] = field(default_factory=list)


def _rows(cur: Any, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    cur.execute(sql, params)
    return list(cur.fetchall())


class Oracle:
    """What the server says about the tables of some databases."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur
        self.default_collation = dict(_rows(
            cur, "SELECT CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLLATIONS "
                 "WHERE IS_DEFAULT = 'Yes'"))

    def tables(self, database: str) -> dict[str, tuple[str, str]]:
        """name -> (table collation, comment) of the base tables (sequences and views are not
        tables to the catalog)."""
        rows = _rows(self.cur, "SELECT TABLE_NAME, TABLE_COLLATION, TABLE_COMMENT FROM "
                               "information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
                               "TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')", database)
        return {name: (collation, comment) for name, collation, comment in rows}

    def columns(self, database: str, table: str) -> list[dict[str, Any]]:
        rows = _rows(self.cur, """SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE,
            CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION,
            CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_DEFAULT, EXTRA, COLUMN_COMMENT
            FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s
            ORDER BY ORDINAL_POSITION""", database, table)
        keys = ["name", "data_type", "column_type", "nullable", "char_len", "precision",
                "scale", "dt_precision", "charset", "collation", "default", "extra", "comment"]
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def keys(self, database: str, table: str) -> tuple[tuple[str, ...], set[tuple[str, ...]]]:
        """(primary key, unique keys) by their columns; a prefix or functional part shows as
        the column (or not at all), as the catalog keeps it."""
        rows = _rows(self.cur, """SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM
            information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s
            ORDER BY INDEX_NAME, SEQ_IN_INDEX""", database, table)
        indexes: dict[str, list[str]] = {}
        unique: set[str] = set()
        for index, non_unique, column in rows:
            if column is not None:
                indexes.setdefault(index, []).append(column)
            if not non_unique:
                unique.add(index)
        primary = tuple(indexes.pop("PRIMARY", ()))
        return primary, {tuple(c) for name, c in indexes.items() if name in unique}


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'").replace("\\\\", "\\")
    return value


def _bits(literal: str) -> int | None:
    """The number a BIT default spells (b'101', 0b101, x'05', 0x05 or 5), if it spells one."""
    text = literal.lower()
    try:
        if text.startswith(("b'", "x'")):
            return int(text[2:-1] or "0", 2 if text[0] == "b" else 16)
        return int(text, 0)
    except ValueError:
        return None


def _default_differs(column: MySqlColumn, server: str | None) -> str | None:
    ours = column.default
    if server is None or server == "NULL":
        return None if ours is None else f"default {ours!r} but the server has none"
    if ours is None:
        return f"no default but the server has {server!r}"
    if ("(" in ours and not _NOW.match(ours)) or ours.upper().startswith(
            ("NEXT", "PREVIOUS", "CASE")):
        return None  # an expression: the server prints it its own way
    type_name = column.type_name
    value = _unquote(server).replace("\\0", "\0")
    if type_name in _NUMERIC:
        ours_value = {"TRUE": "1", "FALSE": "0"}.get(ours.upper(), ours)
        try:
            # the server rounds a default to the column's scale; Debezium keeps it as written
            exponent = Decimal(value).as_tuple().exponent
            with localcontext() as context:
                context.prec = 100
                rounded = Decimal(ours_value).quantize(Decimal(1).scaleb(int(exponent)),
                                                       rounding=ROUND_HALF_UP)
            if rounded == Decimal(value) or float(ours_value) == float(value):
                return None
        except (InvalidOperation, ValueError):
            pass
        return f"default {ours!r} vs server {server!r}"
    now_ours, now_server = _NOW.match(ours), _NOW.match(value)
    if now_ours or now_server:
        # CURRENT_TIMESTAMP in a DATETIME(n) column is CURRENT_TIMESTAMP(n) to the server
        if now_ours and now_server and (now_ours.group(3) or now_server.group(3) or "0") == (
                now_server.group(3) or "0"):
            return None
        return f"default {ours!r} vs server {server!r}"
    if type_name == "BIT":
        same = _bits(ours) is not None and _bits(ours) == _bits(value)
        return None if same or ours.lower() == value.lower() else \
            f"default {ours!r} vs {server!r}"
    if type_name in ("DATETIME", "TIMESTAMP", "TIME", "DATE") and (
            value.startswith(ours) or value == ours.split(".")[0]):
        return None  # the server completes a date and cuts fractions the column lacks
    if ours.lower().startswith(("x'", "0x")):
        return None  # the server prints the bytes
    if type_name in ("BINARY",):
        # the server pads a BINARY(n) default with zero bytes
        value, ours = value.rstrip("\x00"), ours.rstrip("\x00")
    if type_name in ("ENUM", "SET"):
        ours, value = ours.lower(), value.lower()  # members compare case-insensitively
    if value not in (ours, f"`{ours}`"):  # a column name is printed quoted
        return f"default {ours!r} vs server {server!r}"
    return None


def _column_differences(column: MySqlColumn, row: dict[str, Any],
                        default_collation: dict[str, str]) -> Iterator[str]:
    data_type = row["data_type"].upper()
    column_type = row["column_type"].lower()
    attributes = re.sub(r"'(?:[^']|'')*'", "", column_type)  # without ENUM/SET members
    type_name = base_type(column.type_name)
    expected = _TYPE_ON_SERVER.get(type_name, type_name)
    if expected != data_type:
        yield f"type {column.type_name} vs {row['column_type']}"
        return
    if column.nullable != (row["nullable"] == "YES"):
        yield f"nullable {column.nullable} vs IS_NULLABLE {row['nullable']}"
    if column.unsigned != ("unsigned" in attributes):
        yield f"unsigned {column.unsigned} vs {column_type}"
    if column.zerofill != ("zerofill" in attributes):
        yield f"zerofill {column.zerofill} vs {column_type}"
    if data_type in ("CHAR", "VARCHAR", "BINARY", "VARBINARY") and \
            column.length != row["char_len"]:
        yield f"length {column.length} vs {row['char_len']}"
    if data_type == "DECIMAL" and (column.length, column.scale) != (row["precision"],
                                                                    row["scale"]):
        yield f"precision/scale {column.length},{column.scale} vs {column_type}"
    if data_type == "BIT" and column.length != row["precision"]:
        yield f"length {column.length} vs {column_type}"
    if data_type in ("TIME", "DATETIME", "TIMESTAMP") and \
            (column.length or 0) != row["dt_precision"]:
        yield f"fractional precision {column.length} vs {column_type}"
    width = re.match(r"^\w+\((\d+)(?:,(\d+))?\)", column_type)
    if data_type in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT", "YEAR") and \
            column.length is not None and (width is None or int(width.group(1)) !=
                                           column.length):
        yield f"display width {column.length} vs {column_type}"
    if data_type in ("FLOAT", "DOUBLE"):
        server = (int(width.group(1)), int(width.group(2))) if width and width.group(2) \
            else (None, None)
        if (column.length, column.scale) != server:
            yield f"length/scale {column.length},{column.scale} vs {column_type}"
    if data_type in ("ENUM", "SET"):
        body = column_type[column_type.index("(") + 1:column_type.rindex(")")]
        members = tuple(m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", body))
        if tuple(m.lower() for m in column.members) != members:
            yield f"members {column.members} vs {column_type}"
    if column.type_name in STRING_TYPES or type_name in ("ENUM", "SET"):
        if column.charset != row["charset"]:
            yield f"charset {column.charset} vs {row['charset']}"
        collation = column.collation or default_collation.get(column.charset or "")
        if collation != row["collation"]:
            yield f"collation {column.collation} vs {row['collation']}"
    elif type_name != "JSON" and row["charset"] is not None:
        yield f"charset {column.charset} vs {row['charset']}"
    auto = "auto_increment" in row["extra"]
    if column.auto_increment != auto or column.generated != auto:
        yield (f"auto_increment/generated {column.auto_increment}/{column.generated} vs "
               f"EXTRA {row['extra']!r}")
    if (column.comment or "") != row["comment"]:
        yield f"comment {column.comment!r} vs {row['comment']!r}"
    if not auto and "GENERATED" not in row["extra"]:
        difference = _default_differs(column, row["default"])
        if difference:
            yield difference


def _table_differences(table: MySqlTable, oracle: Oracle, table_info: tuple[str, str]
                       ) -> Iterator[str]:
    info = oracle.columns(table.database, table.name)
    ours = [c.name for c in table.columns]
    theirs = [row["name"] for row in info]
    if ours != theirs:
        yield f"columns {ours} vs {theirs}"
        return
    for column, row in zip(table.columns, info, strict=True):
        for difference in _column_differences(column, row, oracle.default_collation):
            yield f"column {column.name!r}: {difference}"
    primary, unique = oracle.keys(table.database, table.name)
    if table.primary_key != primary:
        yield f"primary key {table.primary_key} vs {primary}"
    if set(table.unique_keys) != unique:
        yield f"unique keys {sorted(table.unique_keys)} vs {sorted(unique)}"
    collation, comment = table_info
    charset = collation.split("_", 1)[0] if collation != "binary" else "binary"
    if table.default_charset != charset:
        yield f"table charset {table.default_charset} vs {collation}"
    if (table.comment or "") != comment:
        yield f"table comment {table.comment!r} vs {comment!r}"


def _differences(schema: MySqlSchema, oracle: Oracle, databases: list[str]) -> Iterator[str]:
    for database in databases:
        server = oracle.tables(database)
        ours = {t.name: t for t in schema.tables() if t.database == database}
        if set(ours) != set(server):
            yield (f"tables of {database}: ours {sorted(ours)} vs server {sorted(server)}")
            continue
        for name, table in ours.items():
            for difference in _table_differences(table, oracle, server[name]):
                yield f"{database}.{name}: {difference}"


def _reset(cur: Any, schema: MySqlSchema, database: str) -> None:
    """Drops what a group left (but the `parent` table foreign keys refer to), on the server
    and in the catalog, so that each group starts from the same small database."""
    cur.execute("SET SESSION foreign_key_checks = 0")
    for name, kind in _rows(cur, "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES "
                                 "WHERE TABLE_SCHEMA = %s", database):
        if name != "parent":
            what = {"VIEW": "VIEW", "SEQUENCE": "SEQUENCE"}.get(kind, "TABLE")
            cur.execute(f"DROP {what} IF EXISTS `{database}`.`{name.replace('`', '``')}`")
    cur.execute("SET SESSION foreign_key_checks = 1")
    for table in schema.tables():
        if table.database == database and table.name != "parent":
            schema.apply(f"DROP TABLE `{table.name.replace('`', '``')}`", database)


def run_group(group: Group, cur: Any, oracle: Oracle, schema: MySqlSchema, database: str,
              tally: Tally) -> None:
    modes = ["ANSI_QUOTES" if group.ansi_quotes else "", group.sql_mode]
    cur.execute("SET SESSION sql_mode = %s", (",".join(filter(None, modes))
                                              or "STRICT_TRANS_TABLES",))
    schema.ansi_quotes = group.ansi_quotes
    databases = [database, *group.extra_databases]
    try:
        for k, statement in enumerate(group.statements):
            tally.tried += 1
            try:
                cur.execute(statement)
            except Exception as exc:  # the server is the judge of what is valid
                tally.rejected += 1
                tally.rejections.append(f"{statement[:150]!r}: {exc}")
                continue
            tally.accepted += 1
            try:
                schema.apply(statement, database)
            except DdlParseError as exc:
                tally.failures.append(f"accepted but not parsed: {statement}\n    {exc}")
                tally.blocked += len(group.statements) - k - 1
                return
            tally.parsed += 1
            differences = list(_differences(schema, oracle, databases))
            if differences:
                tally.failures.append(f"unequal after: {statement}\n    "
                                      + "\n    ".join(differences[:5]))
                tally.blocked += len(group.statements) - k - 1
                return
            tally.equal += 1
    finally:
        cur.execute("SET SESSION sql_mode = 'STRICT_TRANS_TABLES'")
        schema.ansi_quotes = False
        for extra in group.extra_databases:
            cur.execute(f"DROP DATABASE IF EXISTS `{extra}`")
            schema.apply(f"DROP DATABASE IF EXISTS `{extra}`", None)
        _reset(cur, schema, database)


GROUPS = groups()
FAMILIES = list(dict.fromkeys(g.family for g in GROUPS))


@pytest.mark.parametrize("family", FAMILIES)
def test_ddl_corpus_matches_the_server(maria: LocalMariaDB, family: str) -> None:
    """One family of the corpus (select one with -k, say -k engine_options: the whole corpus
    takes minutes), in a database of its own."""
    conn = maria.connect()
    tally = Tally()
    try:
        with conn.cursor() as cur:
            oracle = Oracle(cur)
            database = f"hw_corpus_{family}"
            schema = MySqlSchema(default_charset="utf8mb4")
            schema.apply(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4", None)
            cur.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
            cur.execute(f"USE `{database}`")
            try:
                for group in GROUPS:
                    if group.family == family:
                        run_group(group, cur, oracle, schema, database, tally)
            finally:
                cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
    finally:
        conn.close()
    print(f"\nDDL corpus, {family}: {tally.tried} statements tried, {tally.accepted} accepted "
          f"by the server ({tally.rejected} rejected), {tally.parsed} parsed, {tally.equal} "
          f"equal; {tally.blocked} not run after a failure in their group")
    assert not tally.failures, (f"{len(tally.failures)} statements failed:\n"
                                + "\n".join(tally.failures[:200]))




def test_mysql_test_suite_ddl(maria: LocalMariaDB) -> None:
    """MariaDB's own test suite as a corpus: every statement the server accepts parses.

    Tables are compared too, but differences are only reported: the scripts create tables
    with CREATE ... SELECT (whose columns come from the query), shadow tables with temporary
    ones and use several sessions, none of which a DDL parser can follow (in a binlog, CREATE
    ... SELECT arrives with its columns spelled out and temporary tables do not arrive).
    """
    # Deselected unless HEADWATER_DDL_MYSQL_TEST=1 (conftest.py); asked for, it needs the suite.
    assert mysql_test_suite.SUITE.is_dir(), (
        f"{mysql_test_suite.SUITE} is missing: apt-get install mariadb-test")
    pattern = os.environ.get("HEADWATER_DDL_MYSQL_TEST_FILES",
                             r"/(main|suite/(versioning|period|parts|innodb))/")
    conn = maria.connect()
    tried = accepted = parsed = equal = 0
    unparsed: list[str] = []
    unequal: Counter[str] = Counter()
    try:
        with conn.cursor() as cur:
            oracle = Oracle(cur)
            for path, statements in mysql_test_suite.scripts(pattern):
                cur.execute("DROP DATABASE IF EXISTS hw_mtr")
                cur.execute("CREATE DATABASE hw_mtr CHARACTER SET utf8mb4")
                cur.execute("USE hw_mtr")
                cur.execute("SET SESSION sql_mode = DEFAULT")
                schema = MySqlSchema(default_charset="utf8mb4")
                schema.apply("CREATE DATABASE hw_mtr CHARACTER SET utf8mb4", None)
                for statement in statements:
                    if re.match(r"\s*(create|alter|drop)\s+(database|schema)\b", statement,
                                re.IGNORECASE):
                        continue  # the script's database is ours to keep
                    tried += 1
                    try:
                        cur.execute(statement)
                    except Exception:  # rejected (or meant to be: error tests)
                        continue
                    accepted += 1
                    try:
                        changes = schema.apply(statement, "hw_mtr")
                    except DdlParseError as exc:
                        if exc.position is not None:  # a syntax error, not a lost table
                            unparsed.append(f"{path.name}: {statement}\n    {exc}")
                        continue
                    parsed += 1
                    server = oracle.tables("hw_mtr")
                    same = True
                    for change in changes:
                        table = schema.table(change.database, change.table or "")
                        if table is None or change.database != "hw_mtr":
                            continue
                        info = server.get(table.name)
                        differences = ["missing on the server"] if info is None else list(
                            _table_differences(table, oracle, info))
                        for difference in differences[:1]:
                            same = False
                            unequal[re.sub(r"\d+", "", difference)[:80]] += 1
                    equal += same
            cur.execute("DROP DATABASE IF EXISTS hw_mtr")
    finally:
        conn.close()
    print(f"\nmysql-test DDL: {tried} statements tried, {accepted} accepted, {parsed} parsed, "
          f"{equal} with equal tables; most frequent differences:")
    for difference, count in unequal.most_common(15):
        print(f"  {count:5} {difference}")
    assert not unparsed, f"{len(unparsed)} accepted statements not parsed:\n" + "\n".join(
        unparsed[:50])
