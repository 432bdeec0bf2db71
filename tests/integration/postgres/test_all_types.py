"""Every supported PostgreSQL type, end to end, in every mode.

One table holds a column of every type Headwater maps (plus unknown types), filled with edge
values.  The real connector snapshots it (op ``r``), then the same rows are inserted again and
streamed through pgoutput (op ``c``); both kinds of event must carry, in the Debezium JSON on
the topic, the schema and the value current Debezium would produce for the configured
``time.precision.mode``, ``decimal.handling.mode``, ``hstore.handling.mode``,
``interval.handling.mode``, ``binary.handling.mode`` and ``include.unknown.datatypes``.

The expected values are written out by hand from Debezium's semantics and PostgreSQL's own
arithmetic (epoch days and microseconds computed with ``extract``/date subtraction), not derived
from Headwater's converters.  PostGIS columns are added when the extension is installed.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from headwater.testing.replay import events
from headwater.topics import reader

from .conftest import Env, wait_for

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Modes:
    time: str = "adaptive"
    decimal: str = "precise"
    hstore: str = "json"
    interval: str = "numeric"
    binary: str = "bytes"
    unknown: bool = False

    def props(self) -> dict[str, str]:
        return {
            "time.precision.mode": self.time,
            "decimal.handling.mode": self.decimal,
            "hstore.handling.mode": self.hstore,
            "interval.handling.mode": self.interval,
            "binary.handling.mode": self.binary,
            "include.unknown.datatypes": str(self.unknown).lower(),
        }


# Every value of every option appears at least once, in varied combinations.
MODES = [
    Modes(),
    Modes("adaptive_time_microseconds", "double", "map", "string", "base64", True),
    Modes("connect", "string", "json", "string", "hex", True),
    Modes("adaptive", "precise", "map", "numeric", "base64-url-safe", False),
    Modes("connect", "double", "map", "numeric", "bytes", True),
    Modes("adaptive_time_microseconds", "string", "json", "numeric", "hex", False),
]

ROWS = ["typical", "low", "high", "special", "nulls"]


# ---------------------------------------------------------------------------------------------
# Encodings a Kafka Connect JsonConverter applies (written independently of Headwater's code)
# ---------------------------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unscaled(value: int) -> str:
    """A Connect Decimal in JSON: base64 of the minimal big-endian two's complement."""
    length = (value + (value < 0)).bit_length() // 8 + 1
    return b64(value.to_bytes(length, "big", signed=True))


def binary(modes: Modes, data: bytes) -> str:
    """A bytea value under binary.handling.mode, as it appears in the JSON."""
    if modes.binary == "hex":
        return data.hex()
    if modes.binary == "base64-url-safe":
        return base64.urlsafe_b64encode(data).decode()
    return b64(data)  # bytes (JsonConverter base64-encodes BYTES) and base64


def unknown(modes: Modes, text: str) -> Any:
    """An unknown type: Debezium's opaque bytes of the text, else (Headwater) the text."""
    return binary(modes, text.encode()) if modes.unknown else text


def point(x: float, y: float) -> dict[str, Any]:
    return {"x": x, "y": y, "wkb": b64(b"\x01\x01\x00\x00\x00" + struct.pack("<dd", x, y)),
            "srid": None}


NAN = float("nan")
INF = float("inf")


def line_wkb(points: list[tuple[float, float]]) -> bytes:
    """WKB LineString, little-endian (Debezium's WkbWriter)."""
    return struct.pack("<BII", 1, 2, len(points)) + b"".join(
        struct.pack("<dd", x, y) for x, y in points)


def poly_wkb(ring: list[tuple[float, float]]) -> bytes:
    """WKB Polygon of one ring, little-endian (Debezium's WkbWriter)."""
    return struct.pack("<BIII", 1, 3, 1, len(ring)) + b"".join(
        struct.pack("<dd", x, y) for x, y in ring)


def geo(wkb: bytes, **extensions: str) -> dict[str, Any]:
    return {"wkb": b64(wkb), "srid": None, "extensions": extensions}


def box(x1: float, y1: float, x2: float, y2: float) -> dict[str, Any]:
    """A box as PostgreSQL prints it, (x1,y1),(x2,y2): the ring convertBox builds."""
    return geo(poly_wkb([(x1, y1), (x1, y2), (x2, y2), (x2, y1), (x1, y1)]), type="box")


def micros_or_millis(modes: Modes, micros: int, precision: int = 6) -> int:
    """timestamp/time without a time zone: µs when the schema is Micro*, else ms (floored)."""
    if modes.time != "connect" and precision > 3:
        return micros
    return micros // 1000


# ---------------------------------------------------------------------------------------------
# The columns: SQL type, a literal per row, the expected JSON value per row, expected schema
# ---------------------------------------------------------------------------------------------

Expect = Any  # a value, or a function of Modes returning the value


@dataclass(frozen=True)
class Col:
    name: str
    sql_type: str
    literals: tuple[str, str, str, str]  # typical, low, high, special (the 5th row is NULLs)
    values: tuple[Expect, Expect, Expect, Expect]
    schema: Any  # function of Modes → dict of expected schema keys (subset match)


def sch(type_: str, name: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_}
    if name is not None:
        out["name"] = name
    out.update(extra)
    return out


DEC = "org.apache.kafka.connect.data.Decimal"
DBZ = "io.debezium.data."
TM = "io.debezium.time."
KT = "org.apache.kafka.connect.data."
MOOD = "sad,ok,happy"


def decimal_schema(scale: int, precision: int | None) -> Any:
    def schema(m: Modes) -> dict[str, Any]:
        if m.decimal == "double":
            return sch("float64")
        if m.decimal == "string":
            return sch("string")
        params = {"scale": str(scale)}
        if precision is not None:
            params["connect.decimal.precision"] = str(precision)
        return sch("bytes", DEC, parameters=params)

    return schema


def by_decimal(precise: Any, double: Any, string: Any) -> Any:
    return lambda m: {"precise": precise, "double": double, "string": string}[m.decimal]


def by_time(adaptive: Any, micro: Any, connect: Any) -> Any:
    return lambda m: {"adaptive": adaptive, "adaptive_time_microseconds": micro,
                      "connect": connect}[m.time]


def by_interval(numeric: Any, string: Any) -> Any:
    return lambda m: numeric if m.interval == "numeric" else string


def by_hstore(json: Any, map_: Any) -> Any:
    return lambda m: json if m.hstore == "json" else map_


def vsd(scale: int, value: int) -> dict[str, Any]:
    return {"scale": scale, "value": unscaled(value)}


def array_of(item: Any) -> Any:
    return lambda m: sch("array", items=item(m) if callable(item) else item)


def const(schema: dict[str, Any]) -> Any:
    return lambda m: schema


# Debezium 3.7's Geometry: version 2, an optional extensions map, the schema always optional
GEOMETRY_V2 = {"type": "struct", "name": "io.debezium.data.geometry.Geometry", "version": 2,
               "optional": True,
               "fields": [{"field": "wkb", "type": "bytes", "optional": False},
                          {"field": "srid", "type": "int32", "optional": True},
                          {"field": "extensions", "type": "map", "optional": True,
                           "keys": {"type": "string", "optional": False},
                           "values": {"type": "string", "optional": False}}]}


TS_US = 1_478_267_490_123_456  # PG: extract(epoch from '2016-11-04 13:51:30.123456') * 1e6
TS_LOW = -62_135_596_800_000_000  # 0001-01-01 00:00:00
TS_HIGH = 253_402_300_799_999_999  # 9999-12-31 23:59:59.999999
T_US = ((13 * 60 + 51) * 60 + 30) * 1_000_000 + 123_456
DAY_US = 86_400_000_000

COLUMNS: list[Col] = [
    Col("i2", "smallint", ("1", "-32768", "32767", "0"), (1, -32768, 32767, 0),
        const(sch("int16"))),
    Col("i4", "integer", ("1", "-2147483648", "2147483647", "0"),
        (1, -(2**31), 2**31 - 1, 0), const(sch("int32"))),
    Col("i8", "bigint", ("1", "-9223372036854775808", "9223372036854775807", "0"),
        (1, -(2**63), 2**63 - 1, 0), const(sch("int64"))),
    Col("o", "oid", ("1", "0", "4294967295", "0"), (1, 0, 4294967295, 0), const(sch("int64"))),
    Col("f4", "real", ("3.3", "1e-45", "3.4028235e38", "-0"),
        (3.3, 1e-45, 3.4028235e38, -0.0), const(sch("float32"))),
    Col("f8", "double precision", ("4.44", "5e-324", "1.7976931348623157e308", "-0"),
        (4.44, 5e-324, 1.7976931348623157e308, -0.0), const(sch("float64"))),
    Col("n", "numeric", ("10.1000", "-0.0000001",
                         "'123456789012345678901234567890.123456789'", "0"),
        (by_decimal(vsd(1, 101), 10.1, "10.1000"),
         by_decimal(vsd(7, -1), -1e-7, "-1E-7"),
         by_decimal(vsd(9, 123456789012345678901234567890123456789),
                    1.2345678901234568e29, "123456789012345678901234567890.123456789"),
         by_decimal(vsd(0, 0), 0.0, "0")),
        lambda m: (sch("struct", DBZ + "VariableScaleDecimal") if m.decimal == "precise"
                   else decimal_schema(0, None)(m))),
    Col("n102", "numeric(10,2)", ("12345678.91", "-0.01", "99999999.99", "0"),
        (by_decimal(unscaled(1234567891), 12345678.91, "12345678.91"),
         by_decimal(unscaled(-1), -0.01, "-0.01"),
         by_decimal(unscaled(9999999999), 99999999.99, "99999999.99"),
         by_decimal(unscaled(0), 0.0, "0.00")),
        decimal_schema(2, 10)),
    Col("mn", "money", ("1234.56", "-92233720368547758.08", "92233720368547758.07", "0"),
        (by_decimal(unscaled(123456), 1234.56, "1234.56"),
         by_decimal(unscaled(-9223372036854775808), -9.223372036854776e16,
                    "-92233720368547758.08"),
         by_decimal(unscaled(9223372036854775807), 9.223372036854776e16,
                    "92233720368547758.07"),
         by_decimal(unscaled(0), 0.0, "0.00")),
        decimal_schema(2, None)),
    Col("bo", "boolean", ("true", "false", "true", "false"), (True, False, True, False),
        const(sch("boolean"))),
    Col("b1", "bit(1)", ("B'1'", "B'0'", "B'1'", "B'0'"), (True, False, True, False),
        const(sch("boolean"))),
    Col("b10", "bit(10)", ("B'1000000001'", "B'0000000000'", "B'1111111111'",
                           "B'0000000001'"),
        (b64(b"\x01\x02"), "", b64(b"\xff\x03"), b64(b"\x01")),
        const(sch("bytes", DBZ + "Bits", parameters={"length": "10"}))),
    Col("vb", "varbit", ("B'101'", "B''", "B'1'", "B'00000000'"),
        (b64(b"\x05"), "", b64(b"\x01"), ""),
        const(sch("bytes", DBZ + "Bits", parameters={"length": "2147483647"}))),
    Col("tx", "text", (r"E'tab\there\nnew'", "''", "'žš ✓ 😀'", "'NULL'"),
        ("tab\there\nnew", "", "žš ✓ 😀", "NULL"), const(sch("string"))),
    Col("vc", "varchar(5)", ("'xyzzy'", "''", "'é'", "' '"), ("xyzzy", "", "é", " "),
        const(sch("string"))),
    Col("bp", "char(6)", ("'ab'", "''", "'  x'", "'abcdef'"),
        ("ab    ", "      ", "  x   ", "abcdef"), const(sch("string"))),
    Col("nm", "name", ("'ab'", "''", "'Ünï'", "'x'"), ("ab", "", "Ünï", "x"),
        const(sch("string"))),
    Col("ci", "citext", ("'MiXeD'", "''", "'É'", "'a'"), ("MiXeD", "", "É", "a"),
        const(sch("string"))),
    Col("by", "bytea", (r"'\x0001ff'", r"'\x'", r"'\xfbff'", r"'\x00'"),
        (lambda m: binary(m, b"\x00\x01\xff"), lambda m: binary(m, b""),
         lambda m: binary(m, b"\xfb\xff"), lambda m: binary(m, b"\x00")),
        lambda m: sch("bytes") if m.binary == "bytes" else sch("string")),
    Col("u", "uuid", ("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
                      "'00000000-0000-0000-0000-000000000000'",
                      "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
                      "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'"),
        ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000000",
         "ffffffff-ffff-ffff-ffff-ffffffffffff", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        const(sch("string", DBZ + "Uuid"))),
    Col("j", "json", ("'{ \"a\" : 1 }'", "'[]'", "'\"é\"'", "'null'"),
        ('{ "a" : 1 }', "[]", '"é"', "null"), const(sch("string", DBZ + "Json"))),
    Col("jb", "jsonb", ("'{\"b\": [1, 2.50, null], \"a\": \"x\"}'", "'{}'", "'1e400'",
                        "'\"\\u00e9x\"'"),
        ('{"a": "x", "b": [1, 2.50, null]}', "{}", "1" + "0" * 400, '"éx"'),
        const(sch("string", DBZ + "Json"))),
    Col("x", "xml", ("'<a>x</a>'", "'<b/>'", "'<c>é &amp; ✓</c>'", "'text only'"),
        ("<a>x</a>", "<b/>", "<c>é &amp; ✓</c>", "text only"),
        const(sch("string", DBZ + "Xml"))),
    Col("tsv", "tsvector", ("to_tsvector('english', 'The quick brown fox')", "''",
                            "'a:1A b:2'", "'x'"),
        ("'brown':3 'fox':4 'quick':2", "", "'a':1A 'b':2", "'x'"),
        const(sch("string", DBZ + "Tsvector"))),
    Col("lt", "ltree", ("'a.b.c'", "''", "'Top.Science'", "'x'"),
        ("a.b.c", "", "Top.Science", "x"), const(sch("string", DBZ + "Ltree"))),
    Col("ip", "inet", ("'192.168.0.1/24'", "'::1'", "'255.255.255.255'", "'::/0'"),
        ("192.168.0.1/24", "::1", "255.255.255.255", "::/0"), const(sch("string"))),
    Col("cr", "cidr", ("'10.0.0.0/8'", "'::/0'", "'192.168.100.128/25'", "'0.0.0.0/0'"),
        ("10.0.0.0/8", "::/0", "192.168.100.128/25", "0.0.0.0/0"), const(sch("string"))),
    Col("mac", "macaddr", ("'08:00:2b:01:02:03'", "'00:00:00:00:00:00'", "'FF-FF-FF-FF-FF-FF'",
                           "'0800.2b01.0203'"),
        ("08:00:2b:01:02:03", "00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff", "08:00:2b:01:02:03"),
        const(sch("string"))),
    Col("mac8", "macaddr8", ("'08:00:2b:01:02:03:04:05'", "'08:00:2b:01:02:03'",
                             "'ff:ff:ff:ff:ff:ff:ff:ff'", "'00:00:00:00:00:00:00:00'"),
        ("08:00:2b:01:02:03:04:05", "08:00:2b:ff:fe:01:02:03", "ff:ff:ff:ff:ff:ff:ff:ff",
         "00:00:00:00:00:00:00:00"), const(sch("string"))),
    Col("r4", "int4range", ("'[1,5)'", "'empty'", "'(,)'", "'[1,1]'"),
        ("[1,5)", "empty", "(,)", "[1,2)"), const(sch("string"))),
    Col("r8", "int8range", ("'(,10]'", "'empty'", "'[-9223372036854775808,0)'", "'[0,)'"),
        ("(,11)", "empty", "[-9223372036854775808,0)", "[0,)"), const(sch("string"))),
    Col("rn", "numrange", ("'[1.5,2.5]'", "'empty'", "'(,)'", "'(0,1e-10)'"),
        ("[1.5,2.5]", "empty", "(,)", "(0,0.0000000001)"), const(sch("string"))),
    Col("rts", "tsrange", ("'[2020-01-01 00:00,2020-02-01 00:00)'", "'empty'",
                           "'[0044-03-15 BC,)'", "'(,infinity]'"),
        ('["2020-01-01 00:00:00","2020-02-01 00:00:00")', "empty",
         '["0044-03-15 00:00:00 BC",)', "(,infinity]"), const(sch("string"))),
    Col("rtz", "tstzrange", ("'[2020-01-01 00:00+02,)'", "'empty'", "'(,)'",
                             "'[2020-01-01 00:00+00,2020-01-01 00:00+00]'"),
        ('["2019-12-31 22:00:00+00",)', "empty", "(,)",
         '["2020-01-01 00:00:00+00","2020-01-01 00:00:00+00"]'), const(sch("string"))),
    Col("rd", "daterange", ("'[2020-01-01,2020-02-01]'", "'empty'", "'(,)'",
                            "'[9999-12-31,infinity)'"),
        ("[2020-01-01,2020-02-02)", "empty", "(,)", "[9999-12-31,infinity)"),
        const(sch("string"))),
    Col("d", "date", ("'2016-11-04'", "'0044-03-15 BC'", "'9999-12-31'", "'infinity'"),
        (17109, -735160, 2932896, 2147483647),
        lambda m: sch("int32", KT + "Date" if m.time == "connect" else TM + "Date")),
    Col("t", "time", ("'13:51:30.123456'", "'00:00:00'", "'24:00:00'", "'23:59:59.999999'"),
        (lambda m: micros_or_millis(m, T_US), 0, lambda m: micros_or_millis(m, DAY_US),
         lambda m: micros_or_millis(m, DAY_US - 1)),
        by_time(sch("int64", TM + "MicroTime"), sch("int64", TM + "MicroTime"),
                sch("int32", KT + "Time"))),
    Col("t3", "time(3)", ("'13:51:30.123'", "'00:00:00'", "'23:59:59.999'", "'12:00:00.0005'"),
        (by_time(49_890_123, 49_890_123_000, 49_890_123), 0,
         by_time(86_399_999, 86_399_999_000, 86_399_999),
         by_time(43_200_001, 43_200_001_000, 43_200_001)),  # PG rounds .0005 up to .001
        by_time(sch("int32", TM + "Time"), sch("int64", TM + "MicroTime"),
                sch("int32", KT + "Time"))),
    Col("ts", "timestamp", ("'2016-11-04 13:51:30.123456'", "'0001-01-01 00:00:00'",
                            "'9999-12-31 23:59:59.999999'", "'infinity'"),
        (lambda m: micros_or_millis(m, TS_US), lambda m: micros_or_millis(m, TS_LOW),
         lambda m: micros_or_millis(m, TS_HIGH),
         lambda m: micros_or_millis(m, 9_223_372_036_825_200_000)),
        lambda m: sch("int64", KT + "Timestamp" if m.time == "connect"
                    else TM + "MicroTimestamp")),
    Col("ts3", "timestamp(3)", ("'2016-11-04 13:51:30.123'", "'1969-12-31 23:59:59.9995'",
                                "'0044-03-15 12:00:00 BC'", "'-infinity'"),
        (1_478_267_490_123, -1, -63_517_780_800_000, -9_223_372_036_832_400),
        lambda m: sch("int64", KT + "Timestamp" if m.time == "connect" else TM + "Timestamp")),
    Col("tz", "timestamptz", ("'2016-11-04 13:51:30.123456+02'", "'0044-03-15 12:00:00+00 BC'",
                              "'9999-12-31 23:59:59.999999+00'", "'-infinity'"),
        ("2016-11-04T11:51:30.123456Z", "-0043-03-15T12:00:00.000000Z",
         "9999-12-31T23:59:59.999999Z", "-infinity"),
        const(sch("string", TM + "ZonedTimestamp"))),
    Col("tz0", "timestamptz(0)", ("'2016-11-04 13:51:30+02'", "'1970-01-01 00:00:00+00'",
                                  "'21016-11-04 06:51:30+00'", "'infinity'"),
        ("2016-11-04T11:51:30Z", "1970-01-01T00:00:00Z", "+21016-11-04T06:51:30Z", "infinity"),
        const(sch("string", TM + "ZonedTimestamp"))),
    Col("ttz", "timetz", ("'13:51:30.123789+02'", "'00:00:00+00'", "'24:00:00+00'",
                          "'12:00:00.5-03:30'"),
        ("11:51:30.123789Z", "00:00:00Z", "24:00:00Z", "15:30:00.5Z"),
        const(sch("string", TM + "ZonedTime"))),
    Col("iv", "interval", ("'1 year 2 months 3 days 4 hours 5 minutes 6.78 seconds'",
                           "'-1 years -2 mons +3 days -04:05:06.78'", "'00:00:00.000249'",
                           "'0'"),
        (by_interval(37_091_106_780_000, "P1Y2M3DT4H5M6.78S"),
         by_interval(-36_572_706_780_000, "P-1Y-2M3DT-4H-5M-6.78S"),
         by_interval(248, "P0Y0M0DT0H0M0.000249S"),  # 248: Debezium's double arithmetic
         by_interval(0, "P0Y0M0DT0H0M0S")),
        lambda m: (sch("int64", TM + "MicroDuration") if m.interval == "numeric"
                   else sch("string", TM + "Interval"))),
    Col("hs", "hstore", ("'a=>1, \"b c\"=>NULL'", "''", "'\"q\\\"x\"=>\"é\\\\\"'",
                         "'NULL=>NULL'"),
        (by_hstore('{"a":"1","b c":null}', {"a": "1", "b c": None}), by_hstore("{}", {}),
         by_hstore('{"q\\"x":"é\\\\"}', {'q"x': "é\\"}),
         by_hstore('{"NULL":null}', {"NULL": None})),
        lambda m: (sch("string", DBZ + "Json") if m.hstore == "json"
                   else sch("map", keys=sch("string", optional=False),
                          values=sch("string", optional=True)))),
    Col("m", "mood", ("'ok'", "'sad'", "'happy'", "'ok'"), ("ok", "sad", "happy", "ok"),
        const(sch("string", DBZ + "Enum", parameters={"allowed": MOOD}))),
    Col("pp", "positive_price", ("12.5", "0.01", "99999999.99", "1"),
        (by_decimal(unscaled(1250), 12.5, "12.50"), by_decimal(unscaled(1), 0.01, "0.01"),
         by_decimal(unscaled(9999999999), 99999999.99, "99999999.99"),
         by_decimal(unscaled(100), 1.0, "1.00")),
        decimal_schema(2, 10)),  # a domain over a domain over numeric(10,2)
    Col("pt", "point", ("point(1.5,-2.25)", "point(0,0)", "point(1e300,-1e-300)",
                        "point(-0.5,3)"),
        (point(1.5, -2.25), point(0.0, 0.0), point(1e300, -1e-300), point(-0.5, 3.0)),
        const(sch("struct", "io.debezium.data.geometry.Point"))),
    # arrays
    Col("ia", "int[]", ("'{1,NULL,3}'", "'{}'", "'{{1,2},{3,4}}'", "'[0:1]={7,8}'"),
        ([1, None, 3], [], [1, 2, 3, 4], [7, 8]), array_of(sch("int32", optional=True))),
    Col("ta", "text[]", ("ARRAY['a b', '\"q\"', 'back\\slash', 'NULL', NULL, '', ',', '{}', 'é']",
                         "'{}'", "'{{a,b},{c,d}}'", "ARRAY['😀']"),
        (["a b", '"q"', "back\\slash", "NULL", None, "", ",", "{}", "é"], [],
         ["a", "b", "c", "d"], ["😀"]), array_of(sch("string", optional=True))),
    Col("na", "numeric(6,2)[]", ("'{1.5,NULL}'", "'{}'", "'{9999.99,-9999.99}'", "'{0}'"),
        (by_decimal([unscaled(150), None], [1.5, None], ["1.50", None]), [],
         by_decimal([unscaled(999999), unscaled(-999999)], [9999.99, -9999.99],
                    ["9999.99", "-9999.99"]),
         by_decimal([unscaled(0)], [0.0], ["0.00"])),
        array_of(lambda m: {**decimal_schema(2, 6)(m), "optional": True})),
    Col("tza", "timestamptz[]", ("ARRAY['2020-04-01 11:51:02+00'::timestamptz, NULL]", "'{}'",
                                 "ARRAY['1970-01-01 00:00:00.5+02'::timestamptz]",
                                 "ARRAY['infinity'::timestamptz]"),
        (["2020-04-01T11:51:02.000000Z", None], [], ["1969-12-31T22:00:00.500000Z"],
         ["infinity"]),
        array_of(sch("string", TM + "ZonedTimestamp", optional=True))),
    Col("da", "date[]", ("'{2024-02-29,NULL}'", "'{}'", "'{0044-03-15 BC}'", "'{infinity}'"),
        ([19782, None], [], [-735160], [2147483647]),
        array_of(lambda m: sch("int32", KT + "Date" if m.time == "connect" else TM + "Date"))),
    Col("ba", "bytea[]", (r"ARRAY['\x01ff'::bytea, NULL]", "'{}'", r"ARRAY['\x'::bytea]",
                          r"ARRAY['\x00'::bytea]"),
        (lambda m: [binary(m, b"\x01\xff"), None], [], lambda m: [binary(m, b"")],
         lambda m: [binary(m, b"\x00")]),
        array_of(lambda m: sch("bytes" if m.binary == "bytes" else "string", optional=True))),
    Col("ma", "mood[]", ("'{sad,happy,NULL}'", "'{}'", "'{ok}'", "'{happy,happy}'"),
        (["sad", "happy", None], [], ["ok"], ["happy", "happy"]),
        array_of(sch("string", DBZ + "Enum", parameters={"allowed": MOOD}))),
    Col("mna", "money[]", ("ARRAY['1234.56'::money, '-0.01']", "'{}'", "ARRAY[NULL::money]",
                           "ARRAY['0'::money]"),
        (by_decimal([unscaled(123456), unscaled(-1)], [1234.56, -0.01], ["1234.56", "-0.01"]),
         [], [None], by_decimal([unscaled(0)], [0.0], ["0.00"])),
        array_of(lambda m: {**decimal_schema(2, None)(m), "optional": True})),
    Col("iva", "interval[]", ("ARRAY['1 day'::interval, '-00:00:01']", "'{}'",
                              "ARRAY['1 mon'::interval]", "ARRAY[NULL::interval]"),
        (by_interval([86_400_000_000, -1_000_000], ["P0Y0M1DT0H0M0S", "P0Y0M0DT0H0M-1S"]), [],
         by_interval([2_629_800_000_000], ["P0Y1M0DT0H0M0S"]), [None]),
        array_of(lambda m: sch("int64", TM + "MicroDuration") if m.interval == "numeric"
                 else sch("string", TM + "Interval"))),
    Col("ha", "hstore[]", ("ARRAY['a=>1'::hstore, NULL]", "'{}'", "ARRAY[''::hstore]",
                           "ARRAY['k=>NULL'::hstore]"),
        (by_hstore(['{"a":"1"}', None], [{"a": "1"}, None]), [], by_hstore(["{}"], [{}]),
         by_hstore(['{"k":null}'], [{"k": None}])),
        array_of(lambda m: sch("string", DBZ + "Json") if m.hstore == "json" else sch("map"))),
    Col("pa", "point[]", ("ARRAY[point(1,2), NULL]", "'{}'", "ARRAY[point(-0.5,1e300)]",
                          "ARRAY[point(0,0)]"),
        ([point(1.0, 2.0), None], [], [point(-0.5, 1e300)], [point(0.0, 0.0)]),
        array_of(sch("struct", "io.debezium.data.geometry.Point", optional=True))),
    Col("ua", "uuid[]", ("'{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}'", "'{}'", "'{NULL}'",
                         "'{00000000-0000-0000-0000-000000000000}'"),
        (["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"], [], [None],
         ["00000000-0000-0000-0000-000000000000"]),
        array_of(sch("string", DBZ + "Uuid", optional=True))),
    Col("jba", "jsonb[]", ("ARRAY['{\"a\": [1, 2.50]}'::jsonb]", "'{}'", "ARRAY['null'::jsonb]",
                           "ARRAY[NULL::jsonb]"),
        (['{"a": [1, 2.50]}'], [], ["null"], [None]),
        array_of(sch("string", DBZ + "Json", optional=True))),
    Col("fa", "float8[]", ("'{1.5,-0,NULL}'", "'{}'", "'{5e-324}'", "'{1.7976931348623157e308}'"),
        ([1.5, -0.0, None], [], [5e-324], [1.7976931348623157e308]),
        array_of(sch("float64", optional=True))),
    Col("vba", "varbit(5)[]", ("ARRAY[B'101', NULL]", "'{}'", "ARRAY[B'11111']",
                               "ARRAY[B'0']"),
        ([b64(b"\x05"), None], [], [b64(b"\x1f")], [""]),
        array_of(sch("bytes", DBZ + "Bits", parameters={"length": "5"}))),
    Col("ila", "int_list", ("'{1,2}'", "'{}'", "'{NULL}'", "'{-1}'"),
        ([1, 2], [], [None], [-1]), array_of(sch("int32", optional=True))),
    # unknown types: opaque bytes with include.unknown.datatypes, else passed through as text
    Col("lsn", "pg_lsn", ("'0/16B3748'", "'0/0'", "'FFFFFFFF/FFFFFFFF'", "'1/1'"),
        (lambda m: unknown(m, "0/16B3748"), lambda m: unknown(m, "0/0"),
         lambda m: unknown(m, "FFFFFFFF/FFFFFFFF"), lambda m: unknown(m, "1/1")),
        lambda m: (sch("bytes" if m.binary == "bytes" else "string") if m.unknown
                   else sch("string"))),
    # geometric types: Debezium 3.7's Geometry v2 / Circle / Line (always optional schemas)
    Col("bx", "box", ("'((1,2),(3,4))'", "'((0,0),(0,0))'", "'((-1,-1),(1e300,1))'",
                      "'((1,1),(0,0))'"),
        (box(3, 4, 1, 2), box(0, 0, 0, 0), box(1e300, 1, -1, -1), box(1, 1, 0, 0)),
        const(GEOMETRY_V2)),
    Col("ls", "lseg", ("'[(1,2),(3,4)]'", "'[(0,0),(0,0)]'", "'[(-1e300,5e-324),(1,-0)]'",
                       "'[(NaN,1),(2,Infinity)]'"),
        (geo(line_wkb([(1, 2), (3, 4)]), type="lseg"), geo(line_wkb([(0, 0), (0, 0)]), type="lseg"),
         geo(line_wkb([(-1e300, 5e-324), (1, -0.0)]), type="lseg"),
         geo(line_wkb([(NAN, 1), (2, INF)]), type="lseg")),
        const(GEOMETRY_V2)),
    Col("pth", "path", ("'[(0,0),(1,1),(2,0)]'", "'((0,0),(1,1),(2,0))'", "'[(5,5)]'",
                        "'((1.5,2.5),(-3,4))'"),
        (geo(line_wkb([(0, 0), (1, 1), (2, 0)]), type="path", closed="false"),
         geo(line_wkb([(0, 0), (1, 1), (2, 0)]), type="path", closed="true"),
         geo(line_wkb([(5, 5)]), type="path", closed="false"),
         geo(line_wkb([(1.5, 2.5), (-3, 4)]), type="path", closed="true")),
        const(GEOMETRY_V2)),
    Col("pgn", "polygon", ("'((0,0),(1,1),(1,0))'", "'((0,0),(1,1),(0,0))'", "'((7,8))'",
                          "'((0,0),(2,0),(2,2),(-0,0))'"),
        (geo(poly_wkb([(0, 0), (1, 1), (1, 0), (0, 0)]), type="polygon"),
         geo(poly_wkb([(0, 0), (1, 1), (0, 0)]), type="polygon"),
         geo(poly_wkb([(7, 8)]), type="polygon"),
         geo(poly_wkb([(0, 0), (2, 0), (2, 2), (-0.0, 0)]), type="polygon")),
        const(GEOMETRY_V2)),
    Col("cir", "circle", ("'<(1,2),3>'", "'<(0,0),0>'", "'<(-1e300,1e-300),1e300>'",
                         "'<(1.5,-2.5),0.25>'"),
        ({"center": point(1.0, 2.0), "radius": 3.0}, {"center": point(0.0, 0.0), "radius": 0.0},
         {"center": point(-1e300, 1e-300), "radius": 1e300},
         {"center": point(1.5, -2.5), "radius": 0.25}),
        const(sch("struct", "io.debezium.data.geometry.Circle", version=1,
                  fields=[{"field": "center", "type": "struct", "optional": False,
                           "name": "io.debezium.data.geometry.Point"},
                          {"field": "radius", "type": "double", "optional": False}]))),
    Col("li", "line", ("'{1,-1,0}'", "'{0,1,0}'", "'{1e300,-1e-300,5e-324}'",
                       "'((0,0),(1,1))'"),
        ({"a": 1.0, "b": -1.0, "c": 0.0}, {"a": 0.0, "b": 1.0, "c": 0.0},
         {"a": 1e300, "b": -1e-300, "c": 5e-324}, {"a": 1.0, "b": -1.0, "c": 0.0}),
        const(sch("struct", "io.debezium.data.geometry.Line", version=1))),
    # Debezium has no converter for geometric arrays (it omits them); Headwater maps them
    Col("bxa", "box[]", ("ARRAY[box '((1,2),(3,4))', box '((0,0),(1,1))']", "'{}'",
                         "ARRAY[NULL::box]", "ARRAY[box '((0,0),(0,0))']"),
        ([box(3, 4, 1, 2), box(1, 1, 0, 0)], [], [None], [box(0, 0, 0, 0)]),
        array_of(GEOMETRY_V2)),
    Col("pga", "polygon[]", ("ARRAY[polygon '((0,0),(1,1),(1,0))', NULL]", "'{}'",
                             "ARRAY[polygon '((7,8))']", "ARRAY[NULL::polygon]"),
        ([geo(poly_wkb([(0, 0), (1, 1), (1, 0), (0, 0)]), type="polygon"), None], [],
         [geo(poly_wkb([(7, 8)]), type="polygon")], [None]),
        array_of(GEOMETRY_V2)),
    Col("lia", "line[]", ("ARRAY[line '{1,-1,0}', line '{0,1,2.5}']", "'{}'",
                          "ARRAY[NULL::line]", "ARRAY[line '{1,2,3}']"),
        ([{"a": 1.0, "b": -1.0, "c": 0.0}, {"a": 0.0, "b": 1.0, "c": 2.5}], [], [None],
         [{"a": 1.0, "b": 2.0, "c": 3.0}]),
        array_of(sch("struct", "io.debezium.data.geometry.Line"))),
]

POSTGIS_COLUMNS: list[Col] = [
    Col("g", "geometry", ("'SRID=4326;POINT(1 2)'", "'POINT(1 2)'",
                          "'SRID=3857;POINT Z(1 2 3)'", "'GEOMETRYCOLLECTION EMPTY'"),
        ({"wkb": b64(bytes.fromhex("0101000020E6100000000000000000F03F0000000000000040")),
          "srid": 4326, "extensions": None},
         {"wkb": b64(bytes.fromhex("0101000000000000000000F03F0000000000000040")),
          "srid": None, "extensions": None},
         {"wkb": b64(bytes.fromhex(
             "01010000A0110F0000000000000000F03F00000000000000400000000000000840")),
          "srid": 3857, "extensions": None},
         {"wkb": b64(bytes.fromhex("010700000000000000")), "srid": None, "extensions": None}),
        const(GEOMETRY_V2)),
    Col("gg", "geography", ("'SRID=4326;POINT(13.4 52.5)'", "'POINT(0 0)'",
                            "'SRID=4326;POINT(-180 -90)'", "'SRID=4326;POINT(1 2)'"),
        ({"wkb": b64(bytes.fromhex("0101000020E6100000CDCCCCCCCCCC2A400000000000404A40")),
          "srid": 4326},
         {"wkb": b64(bytes.fromhex("0101000020E610000000000000000000000000000000000000")),
          "srid": 4326},
         {"wkb": b64(bytes.fromhex("0101000020E610000000000000008066C000000000008056C0")),
          "srid": 4326},
         {"wkb": b64(bytes.fromhex("0101000020E6100000000000000000F03F0000000000000040")),
          "srid": 4326}),
        const(sch("struct", "io.debezium.data.geometry.Geography"))),
]


def numeric_specials(m: Modes) -> Col:
    """numeric NaN/±Infinity: only string mode carries them (precise fails the connector, and
    double mode's NaN is a float the JSON format cannot write yet: see the xfail below)."""
    if m.decimal == "string":
        literals = ("'NaN'", "'Infinity'", "'-Infinity'", "1e-130")
        values: tuple[Expect, ...] = ("NAN", "POSITIVE_INFINITY", "NEGATIVE_INFINITY", "1E-130")
    else:
        literals = ("NULL", "NULL", "NULL", "1e-130")
        values = (None, None, None, by_decimal(vsd(130, 1), 1e-130, "1E-130"))
    return Col("nsp", "numeric", literals, values,
               lambda mm: (sch("struct", DBZ + "VariableScaleDecimal")
                           if mm.decimal == "precise" else decimal_schema(0, None)(mm)))


def value_of(expect: Expect, m: Modes) -> Any:
    return expect(m) if callable(expect) else expect


# ---------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------


def create_table(env: Env, columns: list[Col], postgis: bool) -> None:
    env.sql("CREATE EXTENSION hstore; CREATE EXTENSION ltree; CREATE EXTENSION citext")
    if postgis:
        env.sql("CREATE EXTENSION postgis")
    env.sql("CREATE TYPE mood AS ENUM ('sad', 'happy')")
    env.sql("ALTER TYPE mood ADD VALUE 'ok' BEFORE 'happy'")  # labels in sort order
    env.sql("CREATE DOMAIN price AS numeric(10,2); "
            "CREATE DOMAIN positive_price AS price CHECK (VALUE > 0); "
            "CREATE DOMAIN int_list AS int[]")
    env.sql("CREATE TABLE all_types (id int PRIMARY KEY, "
            + ", ".join(f"{c.name} {c.sql_type}" for c in columns) + ")")


def insert_rows(env: Env, columns: list[Col], id_base: int) -> None:
    for i, _ in enumerate(ROWS[:4]):
        literals = ", ".join(c.literals[i] for c in columns)
        env.sql(f"INSERT INTO all_types (id, {', '.join(c.name for c in columns)}) "
                f"VALUES ({id_base + i}, {literals})")
    env.sql(f"INSERT INTO all_types (id) VALUES ({id_base + 4})")


def has_postgis(env: Env) -> bool:
    return bool(env.sql("SELECT 1 FROM pg_available_extensions WHERE name = 'postgis'"))


def topic_records(env: Env) -> list[dict[str, Any]]:
    topic = f"{env.prefix}.public.all_types"
    return [orjson.loads(r.value) for r in reader.read(env.topics, topic, from_offset=0)
            if r.value is not None]


def count(env: Env) -> int:
    topic = f"{env.prefix}.public.all_types"
    return sum(t.record_count for t in reader.list_topics(env.topics) if t.name == topic)


# Kafka's JsonConverter writes FLOAT32 and FLOAT64 schemas as "float" and "double".
JSON_TYPE_NAMES = {"float32": "float", "float64": "double"}


def schema_matches(actual: dict[str, Any], expected: dict[str, Any]) -> bool:
    for key, spec in expected.items():
        got = actual.get(key)
        want = (JSON_TYPE_NAMES.get(spec, spec)
                if key == "type" and isinstance(spec, str) else spec)
        if isinstance(want, dict):
            if not isinstance(got, dict) or not schema_matches(got, want):
                return False
        elif isinstance(want, list) and want and isinstance(want[0], dict):
            if not isinstance(got, list) or len(got) != len(want) or not all(
                    isinstance(g, dict) and schema_matches(g, w)
                    for g, w in zip(got, want, strict=True)):
                return False
        elif got != want:
            return False
    return True


@pytest.mark.parametrize("modes", MODES, ids=lambda m: "-".join(
    [m.time, m.decimal, m.hstore, m.interval, m.binary, "unknown" if m.unknown else "known"]))
def test_every_type_snapshot_and_stream(env: Env, modes: Modes) -> None:
    postgis = has_postgis(env)
    columns = [*COLUMNS, numeric_specials(modes), *(POSTGIS_COLUMNS if postgis else [])]
    create_table(env, columns, postgis)
    insert_rows(env, columns, 0)
    cap = env.capture(modes.props())
    try:
        wait_for(lambda: count(env) >= 5, what="5 snapshot events", timeout=60)
        insert_rows(env, columns, 100)
        wait_for(lambda: count(env) >= 10, what="5 streamed events", timeout=60)
    finally:
        cap.stop()
    docs = topic_records(env)
    assert [d["payload"]["op"] for d in docs] == ["r"] * 5 + ["c"] * 5

    after_schema = next(f for f in docs[0]["schema"]["fields"] if f["field"] == "after")
    fields = {f["field"]: f for f in after_schema["fields"]}
    assert list(fields) == ["id", *(c.name for c in columns)]
    problems: list[str] = []
    for c in columns:
        want = c.schema(modes)
        if not schema_matches(fields[c.name], {**want, "optional": True}):
            problems.append(f"schema of {c.name} ({c.sql_type}): {fields[c.name]} !~ {want}")
    # the streamed events' schema is the same as the snapshot's
    stream_schema = next(f for f in docs[5]["schema"]["fields"] if f["field"] == "after")
    assert stream_schema == after_schema

    for doc in docs:
        after = doc["payload"]["after"]
        row = after["id"] % 100
        op = doc["payload"]["op"]
        for c in columns:
            want = None if row == 4 else value_of(c.values[row], modes)
            got = after[c.name]
            if got != want or type(got) is not type(want):
                problems.append(f"{op} {ROWS[row]} {c.name} ({c.sql_type}): {got!r} != {want!r}")
    assert not problems, "\n".join(problems)


def test_non_finite_floats_are_written_as_kafka_does(env: Env) -> None:
    env.sql("CREATE TABLE floats (id int PRIMARY KEY, f4 real, f8 float8, p point, "
            "fa float8[])")
    env.sql("INSERT INTO floats VALUES (1, 'NaN', 'Infinity', point('-Infinity', 'NaN'), "
            "'{NaN,-Infinity}')")
    cap = env.capture({"decimal.handling.mode": "double"})
    try:
        wait_for(lambda: any(True for _ in events(env.topics, f"{env.prefix}.public.floats")),
                 what="the snapshot event")
    finally:
        cap.stop()
    (_, _, value), = list(events(env.topics, f"{env.prefix}.public.floats"))
    after = value["after"]
    assert (after["f4"], after["f8"]) == ("NaN", "Infinity")
    assert (after["p"]["x"], after["p"]["y"]) == ("-Infinity", "NaN")
    assert after["fa"] == ["NaN", "-Infinity"]
