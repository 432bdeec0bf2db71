"""The type mapping against a real PostgreSQL 15: its text output of edge values converts to what
PostgreSQL itself computes (epoch days and microseconds, scales, hex, array elements, hstore as
JSON, PostGIS's WKB and SRID), in several time zones.

Values are read with ``COPY (SELECT ...) TO STDOUT``: the same output functions pgoutput uses in
text mode.  Column types come from `headwater.connectors.postgres.catalog.describe_tables`, so
the catalog's domain/array/enum resolution is exercised too.  The server is this module's own
(on a free port), started and stopped here; PostGIS tests skip when the extension is not installed.
"""

from __future__ import annotations

import io
import math
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.postgres.catalog import describe_tables
from headwater.connectors.postgres.types import PgType, TypeModes, pg_column_mapping
from headwater.convert.decimal import EXACT, ConnectDecimal
from headwater.convert.temporal import format_zoned_timestamp
from headwater.testing.localpg import free_port

pytestmark = pytest.mark.integration

PG_BIN = Path("/usr/lib/postgresql/15/bin")

psycopg2 = pytest.importorskip("psycopg2")


def _as_postgres(*args: str) -> list[str]:
    if os.geteuid() == 0:  # initdb refuses to run as root
        return ["runuser", "-u", "postgres", "--", *args]
    return list(args)


@pytest.fixture(scope="module")
def server() -> Iterator[dict[str, Any]]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip("PostgreSQL 15 binaries not installed")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser")
    port = free_port()
    base = Path(tempfile.mkdtemp(prefix="hw-pgtypes-"))
    data = base / "data"
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    subprocess.run(
        _as_postgres(
            str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"
        ),
        check=True,
        capture_output=True,
    )
    opts = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        _as_postgres(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            opts,
            "-l",
            str(base / "log"),
            "-w",
            "start",
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield {"host": str(base), "port": port, "user": "postgres", "dbname": "postgres"}
    finally:
        subprocess.run(
            _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)


SESSION = (
    "SET DateStyle=ISO; SET extra_float_digits=3; SET IntervalStyle=postgres; "
    "SET bytea_output=hex; SET TimeZone=%s"
)

_COPY_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _copy_field(field: str) -> str | None:
    if field == "\\N":
        return None
    return re.sub(r"\\(.)", lambda m: _COPY_ESCAPES.get(m[1], m[1]), field)


def copy_rows(conn: Any, query: str) -> list[list[str | None]]:
    """Rows of ``COPY (query) TO STDOUT`` in text format: PostgreSQL's output functions."""
    buf = io.StringIO()
    with conn.cursor() as cur:
        cur.copy_expert(f"COPY ({query}) TO STDOUT", buf)
    lines = buf.getvalue().split("\n")[:-1]
    return [[_copy_field(f) for f in line.split("\t")] for line in lines]


def column_types(conn: Any, table: str) -> dict[str, tuple[int, int]]:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT attname, atttypid, atttypmod FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 ORDER BY attnum",
            (table,),
        )
        return {name: (oid, typmod) for name, oid, typmod in cur.fetchall()}


@pytest.fixture(scope="module")
def conn(server: dict[str, Any]) -> Iterator[Any]:
    c = psycopg2.connect(**server)
    c.autocommit = True
    with c.cursor() as cur:
        cur.execute(SESSION, ("UTC",))
        cur.execute(
            """
            CREATE TABLE edge (
                id serial PRIMARY KEY,
                d date, t time, t0 time(0), t3 time(3), t6 time(6),
                ts timestamp, ts0 timestamp(0), ts3 timestamp(3), ts5 timestamp(5),
                tz timestamptz, tz0 timestamptz(0), tz3 timestamptz(3),
                ttz timetz
            );
            INSERT INTO edge (d, t, t0, t3, t6, ts, ts0, ts3, ts5, tz, tz0, tz3, ttz) VALUES
              ('1970-01-01', '00:00:00', '00:00:00', '00:00:00', '00:00:00',
               '1970-01-01 00:00:00', '1970-01-01', '1970-01-01', '1970-01-01',
               '1970-01-01 00:00:00+00', '1970-01-01 00:00:00+00', '1970-01-01 00:00:00+00',
               '00:00:00+00'),
              ('2016-11-04', '13:51:30.123456', '13:51:30.6', '13:51:30.1235', '13:51:30.1',
               '2016-11-04 13:51:30.123456', '2016-11-04 13:51:30.5', '2016-11-04 13:51:30.1234',
               '2016-11-04 13:51:30.123456', '2016-11-04 13:51:30.123456+02',
               '2016-11-04 13:51:30.5+02', '2016-11-04 13:51:30.1+05:30', '13:51:30.123789+02'),
              ('0001-01-01', '24:00:00', '23:59:59.9', '24:00:00', '23:59:59.999999',
               '0001-01-01 00:00:00', '1969-12-31 23:59:59.4', '1969-12-31 23:59:59.9995',
               '1969-12-31 23:59:59.999999', '0001-01-01 00:00:00+00',
               '0001-01-01 00:30:00+01', '1969-12-31 23:59:59.999+00', '24:00:00+00'),
              ('0044-03-15 BC', '12:00:00', '12:00:00', '12:00:00.001', '12:00:00.000001',
               '0044-03-15 12:00:00 BC', '4713-01-01 00:00:00 BC', '0044-03-15 12:00:00.123 BC',
               '0001-12-31 23:59:59.99999 BC', '4714-11-24 00:00:00+00 BC',
               '0044-03-15 12:00:00 BC', '0001-12-31 23:59:59.999 BC', '00:30:00+02'),
              ('9999-12-31', '23:59:59', '23:59:59', '23:59:59.999', '23:59:59.999999',
               '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.999',
               '10000-01-01 00:00:00', '9999-12-31 23:59:59.999999+00',
               '9999-12-31 23:30:00-01', '21016-11-04 06:51:30.123+00', '23:30:00-01'),
              ('5874897-12-31', '01:02:03', '01:02:03', '01:02:03', '01:02:03',
               '294247-01-01 23:59:59.999999', '2000-02-29 12:00:00', '2000-02-29 12:00:00.5',
               '2000-02-29 12:00:00.5', '294247-01-01 23:59:59.999999+00',
               '1850-01-01 00:00:00+00', '2000-03-01 00:30:00+01', '13:51:30+05:30:15'),
              ('2024-02-29', '00:00:00.000001', '00:00:00', '00:00:00.001', '00:00:00.000001',
               '1936-10-25 22:10:12.608', '1900-03-01', '1900-02-28 23:59:59.999',
               '1900-02-28 23:59:59.99999', '1883-11-18 12:00:00+00', '1883-11-18 12:00:00+00',
               '1883-11-18 12:00:00.001+00', '12:00:00.5-03:30');
            CREATE TABLE inf (id serial PRIMARY KEY, d date, ts timestamp, ts3 timestamp(3),
                              tz timestamptz);
            INSERT INTO inf (d, ts, ts3, tz) VALUES
              ('infinity', 'infinity', 'infinity', 'infinity'),
              ('-infinity', '-infinity', '-infinity', '-infinity');
            CREATE TABLE num (
                id serial PRIMARY KEY, n numeric, n64 numeric(6,4), n0 numeric(4,0),
                nneg numeric(5,-2), nbig numeric(1000,500), f4 real, f8 double precision
            );
            INSERT INTO num (n, n64, n0, nneg, nbig, f4, f8) VALUES
              (10.1111, 22.2222, 22, 12345, 0, 3.3, 4.44),
              (10.1000, 22.22, 9999, 99999, repeat('9', 500)::numeric + 0.5, 1e-45, 5e-324),
              (100, -0.0001, -9999, -12350, -(repeat('1', 500) || '.' || repeat('2', 500))::numeric,
               3.4028235e38, 1.7976931348623157e308),
              (0.000, 0, 0, 0, 0.0000001, 'NaN', 'NaN'),
              (-0.0000001, 1.5, 1, 49, 1, 'Infinity', '-Infinity'),
              ((repeat('7', 5000) || '.' || repeat('3', 3000))::numeric, 0, 0, 0, 0, '-0', '-0'),
              ('NaN', 'NaN', 'NaN', 'NaN', 'NaN', 0, 0);
            CREATE TABLE misc (
                id serial PRIMARY KEY, b bool, i2 int2, i4 int4, i8 int8, o oid, tx text,
                vc varchar(5), ch char(6), ba bytea, u uuid, j json, jb jsonb
            );
            INSERT INTO misc (b, i2, i4, i8, o, tx, vc, ch, ba, u, j, jb) VALUES
              (true, -32768, -2147483648, -9223372036854775808, 0, E'tab\\there\\nnew\\\\line',
               'ab', 'ab', '\\x0001ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
               '{ "a" : 1, "a": 2 }', '{"b": [1, 2.50, null], "a": "x"}'),
              (false, 32767, 2147483647, 9223372036854775807, 4294967295, 'žš ✓', 'xyzzy',
               '  x', '\\x', '00000000-0000-0000-0000-000000000000', '"s"', '[]');
            """
        )
    try:
        yield c
    finally:
        c.close()


def _set_zone(conn: Any, zone: str) -> None:
    with conn.cursor() as cur:
        cur.execute(SESSION, (zone,))


def _mapping(types: dict[str, tuple[int, int]], col: str, modes: TypeModes) -> Any:
    oid, typmod = types[col]
    return pg_column_mapping(PgType(oid, "", typmod), True, modes)


ZONES = ["UTC", "America/New_York", "Asia/Kolkata", "Pacific/Chatham"]
TEMPORAL_COLS = ["d", "t", "t0", "t3", "t6", "ts", "ts0", "ts3", "ts5", "tz", "tz0", "tz3", "ttz"]


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("mode", ["adaptive", "adaptive_time_microseconds", "connect"])
def test_temporal_values_match_postgres_arithmetic(conn: Any, zone: str, mode: str) -> None:
    _set_zone(conn, zone)
    modes = TypeModes(time_precision_mode=mode)
    types = column_types(conn, "edge")
    texts = copy_rows(conn, f"SELECT {', '.join(TEMPORAL_COLS)} FROM edge ORDER BY id")
    oracle_sql = ", ".join(
        "(d - DATE '1970-01-01')::text"
        if c == "d"
        else f"((extract(epoch from {c}) * 1000000)::numeric(40,0))::text"
        for c in TEMPORAL_COLS
    )
    oracles = copy_rows(conn, f"SELECT {oracle_sql} FROM edge ORDER BY id")
    assert len(texts) == 7
    for row, oracle in zip(texts, oracles, strict=True):
        for col, text, expected in zip(TEMPORAL_COLS, row, oracle, strict=True):
            assert text is not None and expected is not None
            m = _mapping(types, col, modes)
            value = m.convert(text)
            exact = int(expected)
            name = m.schema.name or ""
            where = f"{col}={text!r} ({name}, {zone})"
            if col == "d":
                assert value == exact, where
            elif col == "ttz":
                micros = exact % 86_400_000_000
                if text.startswith("24:00:00") and exact == 86_400_000_000:
                    assert value == "24:00:00Z", where
                else:
                    assert value == format_zoned_timestamp(micros, 0)[11:], where
            elif col.startswith("tz"):
                typmod = types[col][1]
                width = 6 if typmod < 0 else typmod
                assert value == format_zoned_timestamp(exact, width), where
            elif name.startswith("io.debezium.time.Micro"):
                assert value == min(exact, 2**63 - 1), where
            else:  # milliseconds, floored
                assert value == exact // 1000, where


def test_zoned_timestamp_literals(conn: Any) -> None:
    _set_zone(conn, "Asia/Kolkata")
    types = column_types(conn, "edge")
    rows = copy_rows(conn, "SELECT tz, tz0, tz3 FROM edge ORDER BY id")
    got = [
        [
            _mapping(types, c, TypeModes()).convert(v)
            for c, v in zip(("tz", "tz0", "tz3"), r, strict=True)
        ]
        for r in rows
    ]
    assert got[1] == [
        "2016-11-04T11:51:30.123456Z",
        "2016-11-04T11:51:31Z",  # (0) rounds
        "2016-11-04T08:21:30.100Z",
    ]
    assert got[3][0] == "-4713-11-24T00:00:00.000000Z"
    assert got[4][2] == "+21016-11-04T06:51:30.123Z"


@pytest.mark.parametrize("mode", ["adaptive", "connect"])
def test_infinity(conn: Any, mode: str) -> None:
    _set_zone(conn, "UTC")
    modes = TypeModes(time_precision_mode=mode)
    types = column_types(conn, "inf")
    rows = copy_rows(conn, "SELECT d, ts, ts3, tz FROM inf ORDER BY id")
    assert rows == [["infinity"] * 4, ["-infinity"] * 4]
    pos = [
        _mapping(types, c, modes).convert(v)
        for c, v in zip(("d", "ts", "ts3", "tz"), rows[0], strict=True)
    ]
    neg = [
        _mapping(types, c, modes).convert(v)
        for c, v in zip(("d", "ts", "ts3", "tz"), rows[1], strict=True)
    ]
    micros = mode != "connect"
    assert pos == [
        2147483647,
        9223372036825200000 if micros else 9223372036825200,
        9223372036825200,
        "infinity",
    ]
    assert neg == [
        -2147483648,
        -9223372036832400000 if micros else -9223372036832400,
        -9223372036832400,
        "-infinity",
    ]


NUM_COLS = ["n", "n64", "n0", "nneg", "nbig"]


def test_numeric_precise_matches_postgres(conn: Any) -> None:
    types = column_types(conn, "num")
    texts = copy_rows(conn, f"SELECT {', '.join(NUM_COLS)} FROM num ORDER BY id")
    scales = copy_rows(
        conn,
        "SELECT CASE WHEN n = 'NaN' THEN NULL ELSE scale(trim_scale(n))::text END "
        "FROM num ORDER BY id",
    )
    modes = TypeModes()
    for row, (scale,) in zip(texts, scales, strict=True):
        for col, text in zip(NUM_COLS, row, strict=True):
            assert text is not None
            m = _mapping(types, col, modes)
            if text == "NaN":
                with pytest.raises(ValueError, match="string"):
                    m.convert(text)
                continue
            value = m.convert(text)
            if col == "n":
                assert value["scale"] == int(scale or 0)
                unscaled = int.from_bytes(value["value"], "big", signed=True)
                assert Decimal(unscaled).scaleb(-value["scale"], EXACT) == Decimal(text)
            else:
                assert isinstance(value, ConnectDecimal)  # the JSON encoding + .value
                value = value.value
                assert isinstance(value, Decimal)
                assert value == Decimal(text)
                declared = int((m.schema.parameters or {})["scale"])
                assert value.as_tuple().exponent == -declared


def test_numeric_double_and_string(conn: Any) -> None:
    types = column_types(conn, "num")
    rows = copy_rows(conn, "SELECT n, n64 FROM num ORDER BY id")
    double = TypeModes(decimal_handling_mode="double")
    string = TypeModes(decimal_handling_mode="string")
    for n, n64 in rows:
        assert n is not None and n64 is not None
        for col, text in (("n", n), ("n64", n64)):
            d = _mapping(types, col, double).convert(text)
            s = _mapping(types, col, string).convert(text)
            if text == "NaN":
                assert d == "NaN"  # JsonConverter's spelling of a non-finite double
                assert s == "NAN"
            else:
                want = float(Decimal(text))
                assert d == (want if math.isfinite(want) else "Infinity" if want > 0
                             else "-Infinity")
                assert Decimal(s) == Decimal(text)


def test_floats(conn: Any) -> None:
    types = column_types(conn, "num")
    rows = copy_rows(conn, "SELECT f4, f8 FROM num ORDER BY id")
    got = [
        [_mapping(types, c, TypeModes()).convert(v) for c, v in zip(("f4", "f8"), r, strict=True)]
        for r in rows
    ]
    assert got[0] == [3.3, 4.44]
    assert got[1] == [1e-45, 5e-324]
    assert got[2] == [3.4028235e38, 1.7976931348623157e308]
    assert got[3] == ["NaN", "NaN"]  # non-finite doubles as JsonConverter writes them
    assert got[4] == ["Infinity", "-Infinity"]
    assert [str(v) for v in got[5]] == ["-0.0", "-0.0"]


def test_misc_types(conn: Any) -> None:
    types = column_types(conn, "misc")
    cols = ["b", "i2", "i4", "i8", "o", "tx", "vc", "ch", "ba", "u", "j", "jb"]
    rows = copy_rows(conn, f"SELECT {', '.join(cols)} FROM misc ORDER BY id")
    hexes = copy_rows(conn, "SELECT encode(ba, 'hex'), encode(ba, 'base64') FROM misc ORDER BY id")
    got = [
        {
            c: _mapping(types, c, TypeModes()).convert(v)
            for c, v in zip(cols, r, strict=True)
            if v is not None
        }
        for r in rows
    ]
    assert got[0]["b"] is True and got[1]["b"] is False
    assert (got[0]["i2"], got[0]["i4"], got[0]["i8"]) == (-32768, -(2**31), -(2**63))
    assert (got[1]["i2"], got[1]["i4"], got[1]["i8"], got[1]["o"]) == (
        32767,
        2**31 - 1,
        2**63 - 1,
        4294967295,
    )
    assert got[0]["tx"] == "tab\there\nnew\\line"
    assert got[1]["tx"] == "žš ✓"
    assert got[0]["ch"] == "ab    "  # bpchar padding as PostgreSQL outputs it
    assert got[1]["ch"] == "  x   "
    assert got[0]["j"] == '{ "a" : 1, "a": 2 }'  # json text as is
    assert got[0]["jb"] == '{"a": "x", "b": [1, 2.50, null]}'  # jsonb's normalized text
    assert got[0]["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    for r, (hexed, b64) in zip(got, hexes, strict=True):
        assert r["ba"].hex() == hexed
        for mode, expected in (("hex", hexed), ("base64", (b64 or "").replace("\n", ""))):
            m = _mapping(types, "ba", TypeModes(binary_handling_mode=mode))
            assert m.convert(rows[got.index(r)][cols.index("ba")] or "") == expected


# ---------------------------------------------------------------------------------------------
# Types beyond the temporal/numeric core: arrays, interval, money, hstore, geometric, PostGIS,
# enums and domains, with column types read through the catalog.
# ---------------------------------------------------------------------------------------------


def catalog_types(conn: Any, table: str) -> dict[str, PgType]:
    with conn.cursor() as cur:
        cur.execute("SELECT %s::regclass::oid", (table,))
        oid = int(cur.fetchone()[0])
        info = describe_tables(cur, [oid])[oid]
    out = {}
    for c in info.columns:
        assert c.pg_type is not None
        out[c.name] = c.pg_type
    return out


def has_extension(conn: Any, name: str) -> bool:
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", (name,))
        return cur.fetchone() is not None


@pytest.fixture(scope="module")
def rich(conn: Any) -> Any:
    _set_zone(conn, "UTC")
    with conn.cursor() as cur:
        for ext in ("hstore", "ltree", "citext"):
            cur.execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
        cur.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
        cur.execute("ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok'")  # its own transaction
        cur.execute(
            r"""
            CREATE DOMAIN price AS numeric(10,2);
            CREATE DOMAIN positive_price AS price CHECK (VALUE > 0);
            CREATE DOMAIN code AS varchar(7);
            CREATE DOMAIN int_list AS int[];
            CREATE TABLE rich (
                id serial PRIMARY KEY,
                iv interval, mn money, b1 bit(1), b10 bit(10), vb varbit, vb1 varbit(1),
                pt point, hs hstore, lt ltree, ci citext, x xml, tsv tsvector,
                ip inet, cr cidr, mac macaddr, mac8 macaddr8,
                r4 int4range, r8 int8range, rn numrange, rts tsrange, rtz tstzrange,
                rd daterange, m mood, pp positive_price, cd code,
                ia int[], ta text[], na numeric[], n2a numeric(6,2)[], tza timestamptz[],
                da date[], ba bytea[], ma mood[], ppa positive_price[], il int_list,
                ha hstore[], pa point[], mna money[], iva interval[], bxa box[],
                ja jsonb[], ua uuid[], ba2 bool[], fa float8[]
            );
            INSERT INTO rich (iv, mn, b1, b10, vb, vb1, pt, hs, lt, ci, x, tsv, ip, cr, mac, mac8,
                              r4, r8, rn, rts, rtz, rd, m, pp, cd, ia, ta, na, n2a, tza, da, ba,
                              ma, ppa, il, ha, pa, mna, iva, bxa, ja, ua, ba2, fa)
            VALUES
              ('1 year 2 months 3 days 4 hours 5 minutes 6.78 seconds', '1234.56', B'1',
               B'1000000001', B'101', B'0', point(1.5, -2.25),
               'a=>1, "b c"=>NULL, "q\"x"=>"back\\slash", "NULL"=>"NULL", ""=>""',
               'a.b.c', 'MiXeD', '<a>x</a>', to_tsvector('english', 'The quick brown fox'),
               '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
               '[1,5)', '(,10]', '[1.5,2.5]', '[2020-01-01 00:00,2020-02-01 00:00)',
               '[2020-01-01 00:00+00,)', '[2020-01-01,2020-02-01]', 'meh', 12.5, 'abc',
               '{1,NULL,-2147483648}', ARRAY['a b', '"q"', 'back\slash', 'NULL', NULL, '',
               ',', '{}', 'é'], '{1.50,NaN,-0.000001}', '{1.5,NULL}',
               ARRAY['2020-04-01 11:51:02+00'::timestamptz, '1970-01-01 00:00:00.5+02'],
               '{2024-02-29,0044-03-15 BC}', ARRAY['\x01ff'::bytea, ''::bytea, NULL],
               '{sad,happy,NULL}', '{1.25,99999999.99}', '{{1,2},{3,4}}',
               ARRAY['a=>1'::hstore, NULL], ARRAY[point(1,2), point(-0.5,1e300)],
               ARRAY['1234.56'::money, '-0.01'], ARRAY['1 day'::interval, '-00:00:01'],
               ARRAY[box '((1,2),(3,4))', box '((0,0),(1,1))'], ARRAY['{"a": [1, 2.50]}'::jsonb],
               ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid], '{t,f,NULL}',
               '{NaN,-Infinity,-0,1e-310}'),
              ('-1 years -2 months +3 days -4 hours -5 minutes -6.78 seconds',
               '-92233720368547758.08',
               B'0', B'0000000000', B'', B'1', point('NaN', 'Infinity'), '', 'top', '', '<b/>',
               '', '::1', '::/0', '00:00:00:00:00:00', 'ff:ff:ff:ff:ff:ff:ff:ff', 'empty',
               '[-9223372036854775808,9223372036854775807)', 'empty', '(,)', 'empty', '(,)',
               'sad', 0.01, '', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',
               '[0:1]={7,8}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}'),
              ('00:00:00.000249', '92233720368547758.07', NULL, NULL, NULL, NULL, NULL, NULL,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
              ('2562047788 hours 54.775807 seconds', '0', NULL, NULL, NULL, NULL, NULL, NULL,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
            """
        )
    return catalog_types(conn, "rich")


def _rows(conn: Any, cols: list[str], table: str = "rich") -> list[list[str | None]]:
    return copy_rows(conn, f"SELECT {', '.join(cols)} FROM {table} ORDER BY id")


def test_catalog_resolves_domains_enums_and_arrays(rich: dict[str, PgType]) -> None:
    numeric_10_2 = ((10 << 16) | 2) + 4
    # a domain over a domain inherits the inner domain's numeric(10,2) (current Debezium)
    assert rich["pp"] == PgType(1700, "numeric", numeric_10_2)
    assert rich["cd"] == PgType(1043, "varchar", 7 + 4)
    assert rich["il"].oid == 1007 and rich["il"].element == PgType(23, "int4")
    assert rich["m"].kind == "e" and rich["m"].enum_labels == ("sad", "meh", "ok", "happy")
    assert rich["ma"].element == rich["m"]
    assert rich["ppa"].element == PgType(1700, "numeric", numeric_10_2)
    assert rich["bxa"].element is not None and rich["bxa"].element.delimiter == ";"
    assert rich["hs"].name == "hstore" and rich["ha"].element == rich["hs"]
    modes = TypeModes()
    enum = pg_column_mapping(rich["m"], True, modes)
    assert enum.schema.name == "io.debezium.data.Enum"
    assert enum.schema.parameters == {"allowed": "sad,meh,ok,happy"}


ARRAY_COLS = ["ia", "ta", "na", "n2a", "tza", "da", "ba", "ma", "ppa", "il", "ha", "pa",
              "mna", "iva", "ja", "ua", "ba2", "fa"]


@pytest.mark.parametrize("col", ARRAY_COLS)
@pytest.mark.parametrize(
    "modes",
    [TypeModes(), TypeModes(decimal_handling_mode="string", time_precision_mode="connect",
                            hstore_handling_mode="map", binary_handling_mode="hex",
                            interval_handling_mode="string")],
)
def test_arrays_convert_like_their_elements(
    conn: Any, rich: dict[str, PgType], col: str, modes: TypeModes
) -> None:
    """An array value converts to PostgreSQL's unnest() of it, each element converted alone."""
    pg_type = rich[col]
    assert pg_type.element is not None
    array = pg_column_mapping(pg_type, True, modes)
    element = pg_column_mapping(pg_type.element, True, modes)
    assert array.schema.items == element.schema
    texts = _rows(conn, [col])
    elements = copy_rows(
        conn, f"SELECT id, e FROM rich, unnest({col}) WITH ORDINALITY AS u(e, n) ORDER BY id, n"
    )
    # (id is NOT NULL; a null would leave ids short of texts, failing the strict zip)
    ids = [int(r[0]) for r in copy_rows(conn, "SELECT id FROM rich ORDER BY id") if r[0]]
    for row_id, (text,) in zip(ids, texts, strict=True):
        if text is None:
            continue
        try:
            expected = [
                None if e is None else element.convert(e)
                for i, e in elements
                if int(i or 0) == row_id
            ]
        except ValueError as exc:  # e.g. NaN in precise mode: the array fails the same way
            with pytest.raises(type(exc)):
                array.convert(text)
            continue
        got = array.convert(text)
        assert _nan_safe(got) == _nan_safe(expected), (col, text)


def _nan_safe(values: list[Any]) -> list[Any]:
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values]


def test_random_text_arrays_round_trip(conn: Any, rich: dict[str, PgType]) -> None:
    import random

    rng = random.Random(5)
    alphabet = ['a', 'Z', '1', ' ', ',', '"', '\\', '{', '}', 'é', '✓', '\t', '\n', 'N', 'U', 'L']
    arrays = []
    for _ in range(300):
        items: list[str | None] = []
        for _ in range(rng.randint(0, 5)):
            if rng.random() < 0.1:
                items.append(None)
            elif rng.random() < 0.1:
                items.append(rng.choice(["NULL", "null", "", " "]))
            else:
                items.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))))
        arrays.append(items)
    with conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE ta_rt (id int, a text[])")
        cur.executemany("INSERT INTO ta_rt VALUES (%s, %s)", list(enumerate(arrays)))
    texts = copy_rows(conn, "SELECT a FROM ta_rt ORDER BY id")
    convert = pg_column_mapping(PgType(1009), True, TypeModes()).convert
    for (text,), items in zip(texts, arrays, strict=True):
        assert text is not None
        assert convert(text) == items, text


def test_interval_matches_postgres_fields(conn: Any, rich: dict[str, PgType]) -> None:
    numeric = pg_column_mapping(rich["iv"], True, TypeModes())
    string = pg_column_mapping(rich["iv"], True, TypeModes(interval_handling_mode="string"))
    fields = "year", "month", "day", "hour", "minute"
    rows = copy_rows(
        conn,
        "SELECT iv, " + ", ".join(f"extract({f} from iv)::bigint" for f in fields)
        + ", (extract(second from iv) * 1000000)::bigint FROM rich ORDER BY id",
    )
    for text, y, mo, d, h, mi, us in rows:
        assert text is not None
        y_, mo_, d_, h_, mi_, us_ = (int(v or 0) for v in (y, mo, d, h, mi, us))
        exact = (((y_ * 12 + mo_) * 2_629_800 + d_ * 86_400 + h_ * 3600 + mi_ * 60) * 10**6
                 + us_)
        got = numeric.convert(text)
        if abs(exact) < 2**63:
            assert exact - 1 <= got <= exact or exact <= got <= exact + 1, (text, got, exact)
        else:
            assert got == (2**63 - 1 if exact > 0 else -(2**63))
        seconds = f"{'-' if us_ < 0 else ''}{abs(us_) // 10**6}"
        if us_ % 10**6:
            seconds += f".{abs(us_) % 10**6:06d}".rstrip("0")
        assert string.convert(text) == f"P{y_}Y{mo_}M{d_}DT{h_}H{mi_}M{seconds}S"


@pytest.mark.parametrize("digits", [0, 2, 4])
def test_money_matches_postgres_numeric(conn: Any, rich: dict[str, PgType], digits: int) -> None:
    rows = copy_rows(conn, "SELECT mn, mn::numeric FROM rich ORDER BY id")
    precise = pg_column_mapping(rich["mn"], True, TypeModes(money_fraction_digits=digits))
    double = pg_column_mapping(rich["mn"], True, TypeModes(decimal_handling_mode="double"))
    string = pg_column_mapping(rich["mn"], True, TypeModes(decimal_handling_mode="string"))
    for text, number in rows:
        assert text is not None and number is not None
        exact = Decimal(number)
        assert precise.convert(text).value == exact.quantize(
            Decimal(1).scaleb(-digits), rounding="ROUND_HALF_UP"
        )
        assert double.convert(text) == float(exact)
        assert string.convert(text) == number


def test_hstore_matches_hstore_to_json(conn: Any, rich: dict[str, PgType]) -> None:
    import json

    rows = copy_rows(conn, "SELECT hs, hstore_to_json(hs)::text FROM rich ORDER BY id")
    as_json = pg_column_mapping(rich["hs"], True, TypeModes())
    as_map = pg_column_mapping(rich["hs"], True, TypeModes(hstore_handling_mode="map"))
    seen = 0
    for text, expected in rows:
        if text is None:
            continue
        seen += 1
        assert expected is not None
        assert json.loads(as_json.convert(text)) == json.loads(expected)
        assert as_map.convert(text) == json.loads(expected)
    assert seen == 2


def test_bits_point_and_strings(conn: Any, rich: dict[str, PgType]) -> None:
    rows = _rows(conn, ["b1", "b10", "vb", "vb1", "pt", "pt[0]::text", "pt[1]::text",
                        "b10::bigint::text"])
    modes = TypeModes()
    b1, b10, vb, vb1, pt = (pg_column_mapping(rich[c], True, modes)
                            for c in ("b1", "b10", "vb", "vb1", "pt"))
    assert b10.schema.parameters == {"length": "10"}
    assert vb.schema.parameters == {"length": "2147483647"}
    assert b1.schema.type == vb1.schema.type == "boolean"
    first, second = rows[0], rows[1]
    assert b1.convert(first[0] or "") is True and b1.convert(second[0] or "") is False
    assert vb1.convert(first[3] or "") is False and vb1.convert(second[3] or "") is True
    for row in (first, second):
        assert b10.convert(row[1] or "") == int(row[7] or 0).to_bytes(
            (int(row[7] or 0).bit_length() + 7) // 8, "little"
        )
    assert first[2] == "101" and second[2] == ""
    assert vb.convert(first[2]) == b"\x05" and vb.convert(second[2]) == b""
    p = pt.convert(first[4] or "")
    assert (p["x"], p["y"]) == (float(first[5] or ""), float(first[6] or ""))
    p = pt.convert(second[4] or "")
    assert (p["x"], p["y"]) == ("NaN", "Infinity")  # JsonConverter spellings


def test_postgis_wkb_and_srid(server: dict[str, Any]) -> None:
    c = psycopg2.connect(**server)
    c.autocommit = True
    try:
        if not has_extension(c, "postgis"):
            pytest.skip("PostGIS is not installed (apt-get install postgresql-15-postgis-3)")
        from headwater.convert.geometry import ewkb_to_wkb

        with c.cursor() as cur:
            cur.execute(SESSION, ("UTC",))
            cur.execute(
                "CREATE EXTENSION IF NOT EXISTS postgis; "
                "CREATE TABLE geo (id serial PRIMARY KEY, g geometry, gg geography, "
                "ga geometry[]); "
                "INSERT INTO geo (g, gg, ga) VALUES "
                "('SRID=4326;POINT(1 2)', 'SRID=4326;POINT(13.4 52.5)', "
                " ARRAY['POINT(1 2)'::geometry, 'SRID=3857;LINESTRING(0 0,1 1)']), "
                "('POINT(1 2)', 'SRID=4326;LINESTRING(0 0,1 1)', '{}'), "
                "('SRID=3857;POINT Z(1 2 3)', 'POINT(0 0)', NULL), "
                "('SRID=2154;MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))', NULL, NULL),"
                "('GEOMETRYCOLLECTION EMPTY', NULL, NULL), "
                "('SRID=4326;GEOMETRYCOLLECTION Z(POINT Z(1 2 3),LINESTRING Z(0 0 0,1 1 1))', "
                " NULL, NULL)"
            )
        types = catalog_types(c, "geo")
        modes = TypeModes()
        g, gg, ga = (pg_column_mapping(types[n], True, modes) for n in ("g", "gg", "ga"))
        assert g.schema.name == "io.debezium.data.geometry.Geometry"
        assert gg.schema.name == "io.debezium.data.geometry.Geography"
        assert ga.schema.items is not None and ga.schema.items.name == g.schema.name
        rows = copy_rows(
            c,
            "SELECT g, encode(ST_AsBinary(g), 'hex'), ST_SRID(g), gg, "
            "encode(ST_AsBinary(gg), 'hex'), ST_SRID(gg) FROM geo ORDER BY id",
        )
        for gt, g_wkb, g_srid, ggt, gg_wkb, gg_srid in rows:
            assert gt is not None
            value = g.convert(gt)
            assert value["wkb"] == bytes.fromhex(gt)  # EWKB, as Debezium
            assert value["srid"] == (int(g_srid or 0) or None)
            assert ewkb_to_wkb(value["wkb"]) == (bytes.fromhex(g_wkb or ""), value["srid"])
            if ggt is not None:
                gvalue = gg.convert(ggt)
                assert gvalue["srid"] == int(gg_srid or 0)
                assert ewkb_to_wkb(gvalue["wkb"])[0] == bytes.fromhex(gg_wkb or "")
        (ga_text,), (empty,), _, _, _, _ = copy_rows(c, "SELECT ga FROM geo ORDER BY id")
        assert ga_text is not None and ":" in ga_text  # geometry's typdelim
        values = ga.convert(ga_text)
        assert [v["srid"] for v in values] == [None, 3857]
        assert ga.convert(empty or "") == []
    finally:
        c.close()


def test_geometric_wkb_is_what_postgis_reads_and_casts(server: dict[str, Any]) -> None:
    """box / lseg / path / polygon WKB (Debezium 3.7's WkbWriter layout) read back by PostGIS's
    ST_GeomFromWKB gives the shape the value is; for polygon and open path it is byte for byte
    PostGIS's own cast to geometry (``ST_AsBinary(x::geometry, 'NDR')``)."""
    c = psycopg2.connect(**server)
    c.autocommit = True
    try:
        if not has_extension(c, "postgis"):
            pytest.skip("PostGIS is not installed (apt-get install postgresql-15-postgis-3)")
        with c.cursor() as cur:
            cur.execute(SESSION, ("UTC",))
            cur.execute(
                "CREATE EXTENSION IF NOT EXISTS postgis; "
                "CREATE TABLE geom2 (id serial PRIMARY KEY, bx box, ls lseg, op path, cp path, "
                "pg polygon, ci circle, li line); "
                "INSERT INTO geom2 (bx, ls, op, cp, pg, ci, li) VALUES "
                "('((1,2),(3,4))', '[(1,2),(3,4)]', '[(0,0),(1,1),(2,0)]', '((0,0),(1,1),(2,0))',"
                " '((0,0),(1,1),(1,0))', '<(1,2),3>', '{1,-1,0}'), "
                "('((-1.5,-1e300),(1e-300,0.1))', '[(-0.5,0),(0,0.5)]', '[(5,5),(6,6)]', "
                " '((1.5,2.5),(-3,4),(0,0))', '((0,0),(2,0),(2,2),(0,2))', '<(0.1,-0.2),0.3>',"
                " '((0,0),(1,2))')"
            )
        types = catalog_types(c, "geom2")
        maps = {n: pg_column_mapping(types[n], True, TypeModes())
                for n in ("bx", "ls", "op", "cp", "pg", "ci", "li")}
        rows = copy_rows(c, "SELECT bx, ls, op, cp, pg, ci, li, "
                            "encode(ST_AsBinary(op::geometry, 'NDR'), 'hex'), "
                            "encode(ST_AsBinary(pg::geometry, 'NDR'), 'hex'), "
                            "(center(ci))[0], (center(ci))[1], radius(ci) FROM geom2 ORDER BY id")
        for bx, ls, op, cp, pg, ci, li, op_wkb, pg_wkb, cx, cy, r in rows:
            values = {n: maps[n].convert(t or "") for n, t in
                      (("bx", bx), ("ls", ls), ("op", op), ("cp", cp), ("pg", pg), ("ci", ci),
                       ("li", li))}
            assert values["op"]["wkb"].hex() == op_wkb
            assert values["pg"]["wkb"].hex() == pg_wkb
            assert values["op"]["extensions"] == {"type": "path", "closed": "false"}
            assert values["cp"]["extensions"] == {"type": "path", "closed": "true"}
            circle = values["ci"]
            assert (circle["center"]["x"], circle["center"]["y"], circle["radius"]) == (
                float(cx or ""), float(cy or ""), float(r or ""))
            line = values["li"]
            with c.cursor() as cur:
                # PostGIS reads the WKB as the same shape (ST_Equals: ring start aside)
                cur.execute(
                    "SELECT ST_Equals(ST_GeomFromWKB(%s), polygon(%s::box)::geometry), "
                    "ST_Equals(ST_GeomFromWKB(%s), "
                    "          ST_MakeLine((%s::lseg)[0]::geometry, (%s::lseg)[1]::geometry)), "
                    "ST_AsText(ST_GeomFromWKB(%s)) = ST_AsText(popen(%s::path)::geometry), "
                    "%s::line = line(%s)",
                    (values["bx"]["wkb"], bx, values["ls"]["wkb"], ls, ls, values["cp"]["wkb"],
                     cp, li, f"{{{line['a']!r},{line['b']!r},{line['c']!r}}}"))
                assert cur.fetchone() == (True, True, True, True)
    finally:
        c.close()


def test_column_defaults_from_the_real_catalog(server: dict[str, Any]) -> None:
    """Defaults as the catalog prints them (pg_get_expr) resolved as Debezium 3.7.0 does: serial
    and function defaults get the type's placeholder, literals their value, the rest none."""
    from headwater.connectors.postgres.tables import build_codec, incoming_from_catalog
    from headwater.model.schema import NO_DEFAULT

    c = psycopg2.connect(**server)
    c.autocommit = True
    try:
        with c.cursor() as cur:
            cur.execute(SESSION, ("UTC",))
            cur.execute(
                "CREATE TYPE dmood AS ENUM ('sad', 'happy'); "
                "CREATE DOMAIN dprice AS numeric(6,2); "
                "CREATE TABLE defs (id serial PRIMARY KEY, big bigserial, "
                "n int NOT NULL DEFAULT -7, b bool DEFAULT true, p numeric(8,2) DEFAULT 1.5, "
                "vsd numeric DEFAULT 1.5, f float8 DEFAULT 2.5, s varchar(10) DEFAULT 'it''s', "
                "t text DEFAULT 'abc', u uuid DEFAULT gen_random_uuid(), "
                "d date NOT NULL DEFAULT '2020-01-01', ts timestamp DEFAULT now(), "
                "tz timestamptz DEFAULT CURRENT_TIMESTAMP, iv interval DEFAULT '1 day', "
                "m dmood DEFAULT 'happy', dp dprice DEFAULT 3, by bytea DEFAULT '\\x01', "
                "j jsonb DEFAULT '{\"a\": 1}', nn text, nd text DEFAULT NULL)"
            )
            cur.execute("SELECT 'defs'::regclass::oid")
            oid = int(cur.fetchone()[0])
            info = describe_tables(cur, [oid])[oid]
        codec = build_codec("db", info, incoming_from_catalog(info), TypeModes(),
                            lambda *_: True)
        defaults = {col.name: col.schema.default for col in codec.schema.columns}
        fallbacks = {col.name: col.fallback for col in codec.schema.columns}
        assert (defaults["id"], defaults["big"], defaults["n"], defaults["b"]) == (0, 0, -7, True)
        assert str(defaults["p"]) == "AJY="  # 1.50: unscaled 150
        assert defaults["vsd"] is NO_DEFAULT  # VariableScaleDecimal is a STRUCT
        assert (defaults["f"], defaults["s"], defaults["t"]) == (2.5, "it", "abc")
        assert defaults["u"] == "00000000-0000-0000-0000-000000000000"
        assert (defaults["d"], defaults["ts"]) == (18262, 0)
        assert defaults["tz"] == "1970-01-01T00:00:00.000000Z"
        assert defaults["iv"] == 86_400_000_000
        assert defaults["m"] == "happy"
        assert defaults["j"] == '{"a": 1}'
        for name in ("dp", "by", "nn", "nd"):  # domain, bytea, none, NULL
            assert defaults[name] is NO_DEFAULT, name
        assert (fallbacks["n"], fallbacks["d"]) == (-7, 18262)  # NOT NULL: the default
    finally:
        c.close()
