"""The type mapping against a real PostgreSQL 15: its text output of edge values converts to what
PostgreSQL itself computes (epoch days and microseconds, scales, hex), in several time zones.

Values are read with ``COPY (SELECT ...) TO STDOUT``: the same output functions pgoutput uses in
text mode.  The server is this module's own (port 55433), started and stopped here.
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

from headwater.connectors.postgres.types import TypeModes, pg_column_mapping
from headwater.convert.decimal import EXACT
from headwater.convert.temporal import format_zoned_timestamp

pytestmark = pytest.mark.integration

PG_BIN = Path("/usr/lib/postgresql/15/bin")
PORT = 55433

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
    opts = f"-p {PORT} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
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
        yield {"host": str(base), "port": PORT, "user": "postgres", "dbname": "postgres"}
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
    return pg_column_mapping(oid, "", typmod, True, modes)


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
                assert isinstance(value, str)  # ConnectDecimal: the JSON encoding + .value
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
                assert math.isnan(d)
                assert s == "NAN"
            else:
                assert d == float(Decimal(text))
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
    assert all(math.isnan(v) for v in got[3])
    assert got[4] == [float("inf"), float("-inf")]
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
