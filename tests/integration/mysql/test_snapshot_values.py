"""Snapshot decoding and type mapping against a real MariaDB: edge values of every type are read
with `snapshot_conversions()` (checked against the natural value contract), then converted with
`mysql_column_mapping` (checked against Debezium's values, written out by hand).

Rows are written under ``sql_mode=''`` so zero and partly zero dates and invalid ENUM values
are stored; TIMESTAMPs are written in a -07:00 session and must come back in UTC.
"""

from __future__ import annotations

import itertools
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

import pytest

from headwater.connectors.mysql.columns import ZERO_TEMPORAL, JdbcTimestamp, MySqlColumn
from headwater.connectors.mysql.connection import SESSION_STATEMENTS
from headwater.connectors.mysql.text_values import snapshot_conversions
from headwater.connectors.mysql.types import MySqlTypeModes, mysql_column_mapping
from headwater.testing.localmariadb import LocalMariaDB

pytestmark = pytest.mark.integration

_counter = itertools.count()

MAX_TIME = timedelta(hours=838, minutes=59, seconds=59)
DEC_MAX = "99999999999999999999999999999999999.999999999999999999999999999999"
POINT_1_2 = bytes.fromhex("0101000000000000000000f03f0000000000000040")
LINE = bytes.fromhex("010200000002000000" + "00" * 16 + "000000000000f03f" * 2)
SRID_4326 = bytes.fromhex("e6100000")


class Case(NamedTuple):
    ddl: str  # column type as written in CREATE TABLE
    column: MySqlColumn  # what the DDL parser makes of it
    literal: str  # SQL expression inserted
    natural: Any  # expected natural value (snapshot_conversions)
    connect: Any  # expected Connect value (default modes)


def c(type_name: str, length: int | None = None, scale: int | None = None,
      **kw: Any) -> MySqlColumn:
    return MySqlColumn("c", type_name, length, scale, **kw)


CASES: dict[str, Case] = {
    "ti": Case("TINYINT", c("TINYINT"), "-128", -128, -128),
    "tiu": Case("TINYINT UNSIGNED", c("TINYINT", unsigned=True), "255", 255, 255),
    "si": Case("SMALLINT", c("SMALLINT"), "32767", 32767, 32767),
    "siu": Case("SMALLINT UNSIGNED", c("SMALLINT", unsigned=True), "65535", 65535, 65535),
    "mi": Case("MEDIUMINT", c("MEDIUMINT"), "-8388608", -8388608, -8388608),
    "miu": Case("MEDIUMINT UNSIGNED", c("MEDIUMINT", unsigned=True), "16777215", 16777215,
                16777215),
    "i": Case("INT", c("INT"), "-2147483648", -2147483648, -2147483648),
    "iu": Case("INT UNSIGNED", c("INT", unsigned=True), "4294967295", 4294967295, 4294967295),
    "bi": Case("BIGINT", c("BIGINT"), "9223372036854775807", 9223372036854775807,
               9223372036854775807),
    "biu": Case("BIGINT UNSIGNED", c("BIGINT", unsigned=True), "18446744073709551615",
                18446744073709551615, -1),
    "bo": Case("BOOLEAN", c("BOOLEAN"), "TRUE", 1, True),
    "f": Case("FLOAT", c("FLOAT"), "1.1", 1.1, 1.1),
    "d": Case("DOUBLE", c("DOUBLE"), "1.7976931348623157e308", 1.7976931348623157e308,
              1.7976931348623157e308),
    "dec": Case("DECIMAL(65,30)", c("DECIMAL", 65, 30), DEC_MAX, Decimal(DEC_MAX),
                "APMWJxx/w5CKi+9GTjlF73olNgn//////////w=="),
    "dec2": Case("DECIMAL(10,2)", c("DECIMAL", 10, 2), "-1.29", Decimal("-1.29"), "/38="),
    "b1": Case("BIT(1)", c("BIT", 1), "b'1'", b"\x01", True),
    "b10": Case("BIT(10)", c("BIT", 10), "b'1000000001'", b"\x02\x01", b"\x01\x02"),
    "b64": Case("BIT(64)", c("BIT", 64), "b'1" + "0" * 62 + "1'",
                b"\x80" + b"\x00" * 6 + b"\x01", b"\x01" + b"\x00" * 6 + b"\x80"),
    "ch": Case("CHAR(5)", c("CHAR", 5), "'héllo'", "héllo", "héllo"),
    "lat": Case("VARCHAR(10) CHARACTER SET latin1", c("VARCHAR", 10, charset="latin1"),
                "'Ünïcödé'", "Ünïcödé", "Ünïcödé"),
    "tx": Case("TEXT", c("TEXT"), "'a\\nb'", "a\nb", "a\nb"),
    "en": Case("ENUM('a','b')", c("ENUM", members=("a", "b")), "'b'", "b", "b"),
    "en0": Case("ENUM('a','b')", c("ENUM", members=("a", "b")), "'zzz'", "", ""),
    "st": Case("SET('a','b','c')", c("SET", members=("a", "b", "c")), "'c,a'", "a,c", "a,c"),
    "js": Case("JSON", c("JSON"), "'{\"k\": [1, null]}'", '{"k": [1, null]}',
               '{"k": [1, null]}'),
    "bn": Case("BINARY(4)", c("BINARY", 4), "'ab'", b"ab\x00\x00", b"ab\x00\x00"),
    "vb": Case("VARBINARY(4)", c("VARBINARY", 4), "x'fbff'", b"\xfb\xff", b"\xfb\xff"),
    "bl": Case("BLOB", c("BLOB"), "x'000102'", b"\x00\x01\x02", b"\x00\x01\x02"),
    "y": Case("YEAR", c("YEAR", 4), "2155", 2155, 2155),
    "y1": Case("YEAR", c("YEAR", 4), "1901", 1901, 1901),
    "y0": Case("YEAR", c("YEAR", 4), "0", 0, 1900),
    "dt": Case("DATE", c("DATE"), "'9999-12-31'", date(9999, 12, 31), 2932896),
    "dt1": Case("DATE", c("DATE"), "'1000-01-01'", date(1000, 1, 1), -354285),
    "dt2": Case("DATE", c("DATE"), "'0015-03-04'", date(15, 3, 4), 16498),  # adjuster: 2015
    "dtz": Case("DATE", c("DATE"), "'0000-00-00'", ZERO_TEMPORAL, None),
    "dtp": Case("DATE", c("DATE"), "'2020-00-15'", ZERO_TEMPORAL, None),
    "dtn": Case("DATE NOT NULL", c("DATE", nullable=False), "'0000-00-00'", ZERO_TEMPORAL, 0),
    "dm6": Case("DATETIME(6)", c("DATETIME", 6), "'9999-12-31 23:59:59.999999'",
                datetime(9999, 12, 31, 23, 59, 59, 999999), 253402300799999999),
    "dm6b": Case("DATETIME(6)", c("DATETIME", 6), "'1000-01-01 00:00:00.000000'",
                 datetime(1000, 1, 1), -30610224000000000),
    "dm0": Case("DATETIME", c("DATETIME"), "'2018-06-20 06:37:03'",
                datetime(2018, 6, 20, 6, 37, 3), 1529476623000),
    "dm3": Case("DATETIME(3)", c("DATETIME", 3), "'2018-06-20 06:37:03.5'",
                datetime(2018, 6, 20, 6, 37, 3, 500000), 1529476623500),
    "dmz": Case("DATETIME NOT NULL", c("DATETIME", nullable=False),
                "'0000-00-00 00:00:00'", ZERO_TEMPORAL, 0),
    "dmp": Case("DATETIME(2)", c("DATETIME", 2), "'2020-01-00 10:00:00.25'", ZERO_TEMPORAL,
                None),
    "tm6": Case("TIME(6)", c("TIME", 6), "'-838:59:59.000000'", -MAX_TIME, -3020399000000),
    "tm0": Case("TIME", c("TIME"), "'838:59:59'", MAX_TIME, 3020399000000),
    "tm1": Case("TIME(1)", c("TIME", 1), "'-00:00:00.5'", timedelta(microseconds=-500000),
                -500000),
    "tm3": Case("TIME(3)", c("TIME", 3), "'25:00:00.001'", timedelta(hours=25, milliseconds=1),
                90000001000),
    "ts6": Case("TIMESTAMP(6) NULL", c("TIMESTAMP", 6), "'2038-01-18 20:14:07.999999'",
                JdbcTimestamp(2038, 1, 19, 3, 14, 7, 999999), "2038-01-19T03:14:07.999999Z"),
    "ts0": Case("TIMESTAMP NULL", c("TIMESTAMP"), "'1969-12-31 17:00:01'",
                JdbcTimestamp(1970, 1, 1, 0, 0, 1), "1970-01-01T00:00:01Z"),
    "ts3": Case("TIMESTAMP(3) NULL", c("TIMESTAMP", 3), "'2018-06-20 06:37:03'",
                # read by a SELECT: as few fraction digits as needed (Debezium's JDBC
                # java.sql.Timestamp), where the binlog's value has the column's 3
                JdbcTimestamp(2018, 6, 20, 13, 37, 3), "2018-06-20T13:37:03Z"),
    "tsz": Case("TIMESTAMP NULL", c("TIMESTAMP"), "'0000-00-00 00:00:00'", ZERO_TEMPORAL, None),
    "tsn": Case("TIMESTAMP NOT NULL DEFAULT '2000-01-01 00:00:00'",
                c("TIMESTAMP", nullable=False), "'0000-00-00 00:00:00'", ZERO_TEMPORAL,
                "1970-01-01T00:00:00Z"),
    "pt": Case("POINT", c("POINT"), "ST_GeomFromText('POINT(1 2)', 4326)",
               SRID_4326 + POINT_1_2, {"x": 1.0, "y": 2.0, "wkb": POINT_1_2, "srid": 4326}),
    "pt0": Case("POINT", c("POINT"), "ST_GeomFromText('POINT(1 2)')",
                b"\x00" * 4 + POINT_1_2, {"x": 1.0, "y": 2.0, "wkb": POINT_1_2, "srid": None}),
    "ls": Case("LINESTRING", c("LINESTRING"), "ST_GeomFromText('LINESTRING(0 0, 1 1)', 4326)",
               SRID_4326 + LINE, {"wkb": LINE, "srid": 4326, "extensions": None}),
    "gm": Case("GEOMETRY", c("GEOMETRY"), "ST_GeomFromText('LINESTRING(0 0, 1 1)')",
               b"\x00" * 4 + LINE, {"wkb": LINE, "srid": None, "extensions": None}),
    "uu": Case("UUID", c("UUID"), "'123e4567-e89b-12d3-a456-426614174000'",
               "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"),
    "i6": Case("INET6", c("INET6"), "'2001:db8::1'", "2001:db8::1", "2001:db8::1"),
}


def _snapshot_connection(server: LocalMariaDB, database: str) -> Any:
    import pymysql  # type: ignore[import-untyped]

    conn = pymysql.connect(host="127.0.0.1", port=server.port, user=server.user,
                           password=server.password, database=database, charset="utf8mb4",
                           conv=snapshot_conversions())
    with conn.cursor() as cur:
        for statement in SESSION_STATEMENTS:
            cur.execute(statement)
    return conn


@pytest.fixture()
def rows(maria: LocalMariaDB) -> dict[str, tuple[Any, Any]]:
    """(value row, NULL row) per column name, read the way the snapshot reads them."""
    db = f"hw_types_{next(_counter)}"
    maria.create_database(db)
    writer = maria.connect(db)
    try:
        with writer.cursor() as cur:
            cur.execute("SET SESSION sql_mode = ''")
            cur.execute("SET SESSION time_zone = '-07:00'")
            columns = ", ".join(f"`{name}` {case.ddl}" for name, case in CASES.items())
            cur.execute(f"CREATE TABLE t (id INT PRIMARY KEY, {columns})")
            names = ", ".join(f"`{name}`" for name in CASES)
            values = ", ".join(case.literal for case in CASES.values())
            cur.execute(f"INSERT INTO t (id, {names}) VALUES (1, {values})")
            nullable = [n for n, case in CASES.items() if case.column.nullable]
            cur.execute(f"INSERT INTO t (id, {', '.join(f'`{n}`' for n in nullable)}) "
                        f"VALUES (2, {', '.join('NULL' for _ in nullable)})")
        reader = _snapshot_connection(maria, db)
        try:
            with reader.cursor() as cur:
                cur.execute(f"SELECT {names} FROM t ORDER BY id")
                first, second = cur.fetchall()
        finally:
            reader.close()
        return {name: (first[i], second[i]) for i, name in enumerate(CASES)}
    finally:
        with writer.cursor() as cur:
            cur.execute(f"DROP DATABASE `{db}`")
        writer.close()


def test_snapshot_values_follow_the_natural_value_contract(
        rows: dict[str, tuple[Any, Any]]) -> None:
    mismatches = {
        name: (rows[name][0], case.natural)
        for name, case in CASES.items()
        if rows[name][0] != case.natural or type(rows[name][0]) is not type(case.natural)
    }
    assert mismatches == {}
    assert {n: rows[n][1] for n, case in CASES.items() if case.column.nullable} == {
        n: None for n, case in CASES.items() if case.column.nullable}


def test_snapshot_values_map_to_debezium_values(rows: dict[str, tuple[Any, Any]]) -> None:
    modes = MySqlTypeModes()
    got = {}
    for name, case in CASES.items():
        mapping = mysql_column_mapping(case.column, modes)
        got[name] = mapping.convert(rows[name][0])
    assert got == {name: case.connect for name, case in CASES.items()}


def test_snapshot_values_in_other_modes(rows: dict[str, tuple[Any, Any]]) -> None:
    def convert(name: str, modes: MySqlTypeModes) -> Any:
        return mysql_column_mapping(CASES[name].column, modes).convert(rows[name][0])

    connect = MySqlTypeModes(time_precision_mode="connect")
    assert convert("dm6", connect) == 253402300799999
    assert convert("tm3", connect) == 90000001
    assert convert("dt", connect) == 2932896
    adaptive = MySqlTypeModes(time_precision_mode="adaptive")
    assert convert("tm3", adaptive) == 90000001
    assert convert("tm6", adaptive) == -3020399000000
    assert convert("biu", MySqlTypeModes(bigint_unsigned_handling_mode="precise")) \
        == "AP//////////"
    assert convert("dec2", MySqlTypeModes(decimal_handling_mode="string")) == "-1.29"
    assert convert("dec2", MySqlTypeModes(decimal_handling_mode="double")) == -1.29
    assert convert("vb", MySqlTypeModes(binary_handling_mode="base64")) == "+/8="
    assert convert("dt2", MySqlTypeModes(enable_time_adjuster=False)) == -713987
