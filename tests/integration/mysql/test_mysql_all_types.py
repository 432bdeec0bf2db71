"""Every MySQL/MariaDB type, end to end, in several option combinations.

One table holds a column of every type the connector maps, filled with edge values (minimum,
maximum, zero dates, negative and > 24 h TIME, emoji, cp1252 text, empty strings, NULLs).  The
real connector snapshots it (op ``r``, values read over the text protocol), then the same rows
are inserted again and streamed from the binlog (op ``c``, values decoded from row events).
Per column and row, both events must carry the same value, and that value must be the one
written out here by hand from Debezium's rules (the decisions in
`headwater.connectors.mysql.types`), for the configured ``time.precision.mode``,
``decimal.handling.mode``, ``bigint.unsigned.handling.mode`` and ``binary.handling.mode``.
Each field's Connect schema in the event (type, name, version, parameters) is checked too.

Rows are written under ``sql_mode=''`` (zero dates, an invalid ENUM value) in a ``+02:00``
session, so TIMESTAMP values must come out converted to UTC.  Expected epoch values are computed
with `datetime` arithmetic, independently of Headwater's converters.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import orjson
import pytest

from headwater.topics import reader

from .conftest import MariaEnv, wait_for

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Modes:
    time: str = "adaptive_time_microseconds"
    decimal: str = "precise"
    bigint: str = "long"
    binary: str = "bytes"

    def props(self) -> dict[str, str]:
        return {
            "time.precision.mode": self.time,
            "decimal.handling.mode": self.decimal,
            "bigint.unsigned.handling.mode": self.bigint,
            "binary.handling.mode": self.binary,
        }


# Every value of every option appears at least once, in varied combinations.
MODES = [
    Modes(),
    Modes("connect", "double", "precise", "base64"),
    Modes("adaptive", "string", "long", "hex"),
    Modes("connect", "string", "precise", "base64-url-safe"),
]

ROWS = ["typical", "low", "high", "special", "nulls"]

# ---------------------------------------------------------------------------------------------
# Encodings Kafka Connect's JsonConverter applies (written independently of Headwater's code)
# ---------------------------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unscaled(value: int) -> str:
    """A Connect Decimal in JSON: base64 of the minimal big-endian two's complement."""
    length = (value + (value < 0)).bit_length() // 8 + 1
    return b64(value.to_bytes(length, "big", signed=True))


def binary(data: bytes) -> Any:
    """A BINARY/BLOB value under binary.handling.mode, as it appears in the JSON."""

    def value(m: Modes) -> str:
        if m.binary == "hex":
            return data.hex()
        if m.binary == "base64-url-safe":
            return base64.urlsafe_b64encode(data).decode()
        return b64(data)  # bytes (JsonConverter base64-encodes BYTES) and base64

    return value


def java_int(value: int) -> int:
    """Java's ``long.intValue()``: the low 32 bits, signed."""
    return (value + 2**31) % 2**32 - 2**31


EPOCH = datetime(1970, 1, 1)


def days(text: str) -> int:
    return (date.fromisoformat(text) - EPOCH.date()).days


def micros(text: str) -> int:
    """Microseconds since the epoch of a naive ``YYYY-MM-DD HH:MM:SS[.f]``."""
    return (datetime.fromisoformat(text) - EPOCH) // timedelta(microseconds=1)


def time_micros(text: str) -> int:
    """Microseconds of a MySQL TIME text (``[-]HHH:MM:SS[.f]``)."""
    sign = -1 if text.startswith("-") else 1
    h, m, s = text.lstrip("-").split(":")
    whole, _, frac = s.partition(".")
    return sign * (((int(h) * 60 + int(m)) * 60 + int(whole)) * 1_000_000
                   + int(frac.ljust(6, "0")))


def wkb_point(x: float, y: float) -> bytes:
    return b"\x01\x01\x00\x00\x00" + struct.pack("<dd", x, y)


def wkb_line(*xy: float) -> bytes:
    return b"\x01\x02\x00\x00\x00" + struct.pack(f"<I{len(xy)}d", len(xy) // 2, *xy)


def wkb_polygon(*xy: float) -> bytes:
    return b"\x01\x03\x00\x00\x00" + struct.pack(f"<II{len(xy)}d", 1, len(xy) // 2, *xy)


def geometry(wkb: bytes, srid: int | None) -> dict[str, Any]:
    return {"wkb": b64(wkb), "srid": srid, "extensions": None}  # Geometry v2 (Debezium 3.7)


def point(x: float, y: float, srid: int | None = None) -> dict[str, Any]:
    return {"x": x, "y": y, "wkb": b64(wkb_point(x, y)), "srid": srid}


# ---------------------------------------------------------------------------------------------
# Mode-dependent expectations
# ---------------------------------------------------------------------------------------------

Expect = Any  # a value, or a function of Modes returning the value


def by_decimal(precise: Any, double: Any, string: Any) -> Any:
    return lambda m: {"precise": precise, "double": double, "string": string}[m.decimal]


def by_bigint(long: Any, precise: Any) -> Any:
    return lambda m: long if m.bigint == "long" else precise


def time_value(text: str, precision: int) -> Any:
    """TIME: µs (MicroTime) or floored ms narrowed to int32 (Time)."""
    us = time_micros(text)

    def value(m: Modes) -> int:
        if m.time == "adaptive_time_microseconds" or (m.time == "adaptive" and precision > 3):
            return us
        return java_int(us // 1000)

    return value


def datetime_value(text: str, precision: int) -> Any:
    """DATETIME: µs (MicroTimestamp) for precision 4-6 unless connect, else floored ms."""
    us = micros(text)
    return lambda m: us if m.time != "connect" and precision > 3 else us // 1000


def sch(type_: str, name: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_}
    if name is not None:
        out["name"] = name
    out.update(extra)
    return out


def const(schema: dict[str, Any]) -> Any:
    return lambda m: schema


DEC = "org.apache.kafka.connect.data.Decimal"
DBZ = "io.debezium.data."
TM = "io.debezium.time."
KT = "org.apache.kafka.connect.data."


def decimal_schema(precision: int, scale: int) -> Any:
    def schema(m: Modes) -> dict[str, Any]:
        if m.decimal == "double":
            return sch("float64")
        if m.decimal == "string":
            return sch("string")
        return sch("bytes", DEC, parameters={"scale": str(scale),
                                             "connect.decimal.precision": str(precision)})

    return schema


def binary_schema(m: Modes) -> dict[str, Any]:
    return sch("bytes") if m.binary == "bytes" else sch("string")


def date_schema(m: Modes) -> dict[str, Any]:
    return sch("int32", KT + "Date" if m.time == "connect" else TM + "Date")


def time_schema(precision: int) -> Any:
    def schema(m: Modes) -> dict[str, Any]:
        if m.time == "connect":
            return sch("int32", KT + "Time")
        if m.time == "adaptive" and precision <= 3:
            return sch("int32", TM + "Time")
        return sch("int64", TM + "MicroTime")

    return schema


def datetime_schema(precision: int) -> Any:
    def schema(m: Modes) -> dict[str, Any]:
        if m.time == "connect":
            return sch("int64", KT + "Timestamp")
        return sch("int64", TM + ("MicroTimestamp" if precision > 3 else "Timestamp"))

    return schema


ZONED = const(sch("string", TM + "ZonedTimestamp", version=1))


# ---------------------------------------------------------------------------------------------
# The columns: SQL type, a literal per row, the expected JSON value per row, expected schema
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Col:
    name: str
    sql_type: str
    literals: tuple[str, str, str, str]  # typical, low, high, special (the 5th row is NULLs)
    values: tuple[Expect, Expect, Expect, Expect]
    schema: Any  # function of Modes → dict of expected schema keys (subset match)
    # NOT NULL columns: the value of the 5th row, which leaves them to their implicit default
    not_null: bool = False
    default_value: Expect = field(default=None)
    # Where a snapshot's value differs from the binlog's, as in Debezium (TIMESTAMP: JDBC's
    # java.sql.Timestamp has as few fraction digits as needed, the binlog's ZonedDateTime the
    # column's; the binlog's zero TIMESTAMP is the epoch): the five rows' read values
    snapshot: tuple[Expect, Expect, Expect, Expect, Expect] | None = None


def ints(name: str, sql_type: str, low: int, high: int, literal: str) -> Col:
    return Col(name, sql_type, ("1", str(low), str(high), "0"), (1, low, high, 0),
               const(sch(literal)))


DEC_MAX = "99999999999999999999999999999999999.999999999999999999999999999999"
DEC_SMALL_MAX = "9999999999.999999999999999999999999999999"
TS_BASE = "2016-11-04 13:51:30"
FRACTION = "123456"


def datetime_col(p: int) -> Col:
    fraction = f".{FRACTION[:p]}" if p else ""
    nines = f".{'9' * p}" if p else ""
    typical = f"{TS_BASE}{fraction}"
    high = f"9999-12-31 23:59:59{nines}"
    if p == 0:  # the zero date in a nullable column is null
        special, special_value = "0000-00-00 00:00:00", None
    else:
        special = f"1969-12-31 23:59:59{nines}"
        special_value = datetime_value(special, p)
    return Col(f"dt{p}", f"DATETIME({p})" if p else "DATETIME",
               (f"'{typical}'", "'1000-01-01 00:00:00'", f"'{high}'", f"'{special}'"),
               (datetime_value(typical, p), datetime_value("1000-01-01 00:00:00", p),
                datetime_value(high, p), special_value),
               datetime_schema(p))


COLUMNS: list[Col] = [
    ints("ti", "TINYINT", -128, 127, "int16"),
    ints("tiu", "TINYINT UNSIGNED", 0, 255, "int16"),
    ints("si", "SMALLINT", -32768, 32767, "int16"),
    ints("siu", "SMALLINT UNSIGNED", 0, 65535, "int32"),
    ints("mi", "MEDIUMINT", -8388608, 8388607, "int32"),
    ints("miu", "MEDIUMINT UNSIGNED", 0, 16777215, "int32"),
    ints("i", "INT", -(2**31), 2**31 - 1, "int32"),
    ints("iu", "INT UNSIGNED", 0, 2**32 - 1, "int64"),
    ints("bi", "BIGINT", -(2**63), 2**63 - 1, "int64"),
    Col("biu", "BIGINT UNSIGNED", ("1", "0", "18446744073709551615", "9223372036854775808"),
        (by_bigint(1, unscaled(1)), by_bigint(0, unscaled(0)),
         by_bigint(-1, unscaled(2**64 - 1)), by_bigint(-(2**63), unscaled(2**63))),
        lambda m: sch("int64") if m.bigint == "long" else sch(
            "bytes", DEC, parameters={"scale": "0", "connect.decimal.precision": "20"})),
    # SHOW CREATE TABLE prints BOOLEAN as tinyint(1): a snapshot sees a TINYINT (Debezium too)
    Col("bo", "BOOLEAN", ("TRUE", "FALSE", "TRUE", "FALSE"), (1, 0, 1, 0), const(sch("int16"))),
    Col("b1", "BIT(1)", ("b'1'", "b'0'", "b'1'", "b'0'"), (True, False, True, False),
        const(sch("boolean"))),
    # Bits: little-endian bytes, ceil(n/8) long
    Col("b10", "BIT(10)", ("b'1000000001'", "b'0'", "b'1111111111'", "b'0000000001'"),
        (b64(b"\x01\x02"), b64(b"\x00\x00"), b64(b"\xff\x03"), b64(b"\x01\x00")),
        const(sch("bytes", DBZ + "Bits", version=1, parameters={"length": "10"}))),
    Col("b64", "BIT(64)", ("b'1" + "0" * 63 + "'", "b'0'", "b'" + "1" * 64 + "'",
                           "x'0102030405060708'"),
        (b64(b"\x00" * 7 + b"\x80"), b64(b"\x00" * 8), b64(b"\xff" * 8),
         b64(bytes(range(8, 0, -1)))),
        const(sch("bytes", DBZ + "Bits", version=1, parameters={"length": "64"}))),
    Col("d6530", "DECIMAL(65,30)", ("12345.678", f"-{DEC_MAX}", DEC_MAX, "0"),
        (by_decimal(unscaled(12345678 * 10**27), 12345.678,
                    "12345.678000000000000000000000000000"),
         by_decimal(unscaled(-(10**65 - 1)), -1e35, f"-{DEC_MAX}"),
         by_decimal(unscaled(10**65 - 1), 1e35, DEC_MAX),
         by_decimal(unscaled(0), 0.0, "0E-30")),  # BigDecimal.toString of 0 at scale 30
        decimal_schema(65, 30)),
    Col("d4030", "DECIMAL(40,30)", ("1.5", "-0.000000000000000000000000000001", DEC_SMALL_MAX,
                                    "0.000001"),
        (by_decimal(unscaled(15 * 10**29), 1.5, "1.500000000000000000000000000000"),
         by_decimal(unscaled(-1), -1e-30, "-1E-30"),
         by_decimal(unscaled(10**40 - 1), 1e10, DEC_SMALL_MAX),
         by_decimal(unscaled(10**24), 1e-6, "0.000001000000000000000000000000")),
        decimal_schema(40, 30)),
    Col("d102", "DECIMAL(10,2)", ("12345678.91", "-99999999.99", "99999999.99", "-0.01"),
        (by_decimal(unscaled(1234567891), 12345678.91, "12345678.91"),
         by_decimal(unscaled(-9999999999), -99999999.99, "-99999999.99"),
         by_decimal(unscaled(9999999999), 99999999.99, "99999999.99"),
         by_decimal(unscaled(-1), -0.01, "-0.01")),
        decimal_schema(10, 2)),
    Col("dec", "DECIMAL", ("1234567890", "-9999999999", "9999999999", "0"),
        (by_decimal(unscaled(1234567890), 1234567890.0, "1234567890"),
         by_decimal(unscaled(-9999999999), -9999999999.0, "-9999999999"),
         by_decimal(unscaled(9999999999), 9999999999.0, "9999999999"),
         by_decimal(unscaled(0), 0.0, "0")),
        decimal_schema(10, 0)),
    # FLOAT is a 32-bit float: written as the shortest decimal that round-trips (Float.toString)
    Col("f", "FLOAT", ("1.1", "-3.40282e38", "3.40282e38", "1.17549e-38"),
        (1.1, -3.40282e38, 3.40282e38, 1.17549e-38), const(sch("float32"))),
    # FLOAT(M,D) is a 4-byte float in a FLOAT64 field, widened to double as Debezium does
    # (Float.doubleValue(): the stored 99.999 is 99.9990005493164)
    Col("f53", "FLOAT(5,3)", ("1.125", "-99.999", "99.999", "0"),
        (1.125, -99.9990005493164, 99.9990005493164, 0.0), const(sch("float64"))),
    Col("dbl", "DOUBLE", ("4.44", "-1.7976931348623157e308", "1.7976931348623157e308",
                          "2.2250738585072014e-308"),
        (4.44, -1.7976931348623157e308, 1.7976931348623157e308, 2.2250738585072014e-308),
        const(sch("float64"))),
    Col("vc", "VARCHAR(20)", (r"'tab\there\nnew'", "''", "'žš ✓ 😀'", "'trailing  '"),
        ("tab\there\nnew", "", "žš ✓ 😀", "trailing  "), const(sch("string"))),
    # CHAR: trailing spaces are not part of the value (PAD_CHAR_TO_FULL_LENGTH is off)
    Col("ch", "CHAR(5)", ("'ab'", "''", "'😀é'", "'ab  '"), ("ab", "", "😀é", "ab"),
        const(sch("string"))),
    Col("tt", "TINYTEXT", ("'x'", "''", "REPEAT('é', 127)", "'NULL'"),
        ("x", "", "é" * 127, "NULL"), const(sch("string"))),
    Col("tx", "TEXT", ("'Grüße 😀'", "''", "REPEAT('ab', 30000)", "' '"),
        ("Grüße 😀", "", "ab" * 30000, " "), const(sch("string"))),
    Col("mt", "MEDIUMTEXT", ("'m'", "''", "REPEAT('x', 70000)", "'\\\\'"),
        ("m", "", "x" * 70000, "\\"), const(sch("string"))),
    Col("lt", "LONGTEXT", ("'l'", "''", "REPEAT('😀', 20000)", "'\\''"),
        ("l", "", "😀" * 20000, "'"), const(sch("string"))),
    # MySQL's latin1 is cp1252: 0x80 is the euro sign
    Col("l1", "VARCHAR(10) CHARACTER SET latin1", ("'café'", "''", "'€ÿ'", "'¤'"),
        ("café", "", "€ÿ", "¤"), const(sch("string"))),
    Col("l1c", "CHAR(4) CHARACTER SET latin1", ("'ab'", "''", "'Üß'", "'x  '"),
        ("ab", "", "Üß", "x"), const(sch("string"))),
    Col("l1t", "TEXT CHARACTER SET latin1", ("'Grüße'", "''", "'€ƒ„™'", "'x'"),
        ("Grüße", "", "€ƒ„™", "x"), const(sch("string"))),
    Col("en", "ENUM('sad','ok','happy')", ("'ok'", "'sad'", "'happy'", "'bogus'"),
        ("ok", "sad", "happy", ""),  # an invalid value is stored as '' (index 0)
        const(sch("string", DBZ + "Enum", version=1, parameters={"allowed": "sad,ok,happy"}))),
    Col("st", "SET('a','b','c','d')", ("'a,c'", "''", "'a,b,c,d'", "'d,a'"),
        ("a,c", "", "a,b,c,d", "a,d"),
        const(sch("string", DBZ + "EnumSet", version=1, parameters={"allowed": "a,b,c,d"}))),
    # MariaDB's JSON is a LONGTEXT with a json_valid check, and SHOW CREATE TABLE (which the
    # snapshot records) says so: a plain string, as in Debezium, with the text as written
    Col("js", "JSON", ("'{\"a\": 1, \"b\": [true, null]}'", "'[]'", "'\"é😀\"'", "'null'"),
        ('{"a": 1, "b": [true, null]}', "[]", '"é😀"', "null"), const(sch("string"))),
    # BINARY(n) is right-padded with zero bytes
    Col("bn", "BINARY(4)", ("x'0001'", "''", "x'FFFFFFFF'", "x'00000000'"),
        (binary(b"\x00\x01\x00\x00"), binary(b"\x00" * 4), binary(b"\xff" * 4),
         binary(b"\x00" * 4)), binary_schema),
    Col("vb", "VARBINARY(10)", ("x'00FF00'", "''", "x'FFFFFFFFFFFFFFFFFFFF'", "x'00'"),
        (binary(b"\x00\xff\x00"), binary(b""), binary(b"\xff" * 10), binary(b"\x00")),
        binary_schema),
    Col("tb", "TINYBLOB", ("x'01'", "''", "REPEAT(x'FE', 255)", "x'0000'"),
        (binary(b"\x01"), binary(b""), binary(b"\xfe" * 255), binary(b"\x00\x00")),
        binary_schema),
    Col("bl", "BLOB", ("x'CAFEBABE'", "''", "REPEAT(x'00FF', 30000)", "x'20'"),
        (binary(b"\xca\xfe\xba\xbe"), binary(b""), binary(b"\x00\xff" * 30000), binary(b" ")),
        binary_schema),
    Col("mb", "MEDIUMBLOB", ("x'AB'", "''", "REPEAT(x'01', 70000)", "x'00'"),
        (binary(b"\xab"), binary(b""), binary(b"\x01" * 70000), binary(b"\x00")),
        binary_schema),
    Col("lb", "LONGBLOB", ("x'CD'", "''", "REPEAT(x'7F80', 40000)", "x'FF'"),
        (binary(b"\xcd"), binary(b""), binary(b"\x7f\x80" * 40000), binary(b"\xff")),
        binary_schema),
    Col("dt", "DATE", ("'2016-11-04'", "'1000-01-01'", "'9999-12-31'", "'0000-00-00'"),
        (days("2016-11-04"), days("1000-01-01"), days("9999-12-31"), None), date_schema),
    # partly zero dates are zero dates; two-digit years are adjusted (enable.time.adjuster)
    Col("dz", "DATE", ("'2020-00-15'", "'2020-01-00'", "'0069-12-31'", "'0070-01-01'"),
        (None, None, days("2069-12-31"), 0), date_schema),
    Col("dnn", "DATE NOT NULL", ("'2016-11-04'", "'0000-00-00'", "'9999-12-31'", "'2020-00-15'"),
        (days("2016-11-04"), 0, days("9999-12-31"), 0), date_schema, not_null=True,
        default_value=0),
    Col("t0", "TIME", ("'25:00:00'", "'-838:59:59'", "'838:59:59'", "'-00:00:01'"),
        (time_value("25:00:00", 0), time_value("-838:59:59", 0), time_value("838:59:59", 0),
         time_value("-00:00:01", 0)), time_schema(0)),
    Col("t3", "TIME(3)", ("'13:51:30.123'", "'-00:00:00.001'", "'23:59:59.999'",
                          "'-12:00:00.500'"),
        (time_value("13:51:30.123", 3), time_value("-00:00:00.001", 3),
         time_value("23:59:59.999", 3), time_value("-12:00:00.500", 3)), time_schema(3)),
    Col("t6", "TIME(6)", ("'13:51:30.123456'", "'-838:59:59.000000'", "'838:59:59.000000'",
                          "'-00:00:00.000001'"),
        (time_value("13:51:30.123456", 6), time_value("-838:59:59", 6),
         time_value("838:59:59", 6), time_value("-00:00:00.000001", 6)), time_schema(6)),
    *(datetime_col(p) for p in range(7)),
    Col("dtz", "DATETIME(6)", ("'2020-00-15 10:00:00'", "'0000-00-00 00:00:00.000000'",
                               "'0001-02-28 12:00:00'", "'0099-12-31 23:59:59.999999'"),
        (None, None, datetime_value("2001-02-28 12:00:00", 6),
         datetime_value("1999-12-31 23:59:59.999999", 6)), datetime_schema(6)),
    Col("dtnn", "DATETIME(3) NOT NULL", ("'2016-11-04 13:51:30.123'", "'0000-00-00 00:00:00'",
                                         "'9999-12-31 23:59:59.999'", "'1970-01-01 00:00:00'"),
        (datetime_value("2016-11-04 13:51:30.123", 3), 0,
         datetime_value("9999-12-31 23:59:59.999", 3), 0), datetime_schema(3),
        not_null=True, default_value=0),
    # TIMESTAMP literals are in the session's +02:00; events carry UTC
    Col("ts0", "TIMESTAMP NULL", ("'2016-11-04 13:51:30'", "'1970-01-01 02:00:01'",
                                  "'2038-01-19 05:14:07'", "'2000-02-29 01:00:00'"),
        ("2016-11-04T11:51:30Z", "1970-01-01T00:00:01Z", "2038-01-19T03:14:07Z",
         "2000-02-28T23:00:00Z"), ZONED),
    Col("ts3", "TIMESTAMP(3) NULL", ("'2016-11-04 13:51:30.1'", "'1970-01-01 02:00:01'",
                                     "'2038-01-19 05:14:07.999'", "'0000-00-00 00:00:00'"),
        ("2016-11-04T11:51:30.100Z", "1970-01-01T00:00:01.000Z", "2038-01-19T03:14:07.999Z",
         "1970-01-01T00:00:00.000Z"), ZONED,
        snapshot=("2016-11-04T11:51:30.1Z", "1970-01-01T00:00:01Z", "2038-01-19T03:14:07.999Z",
                  None, None)),
    Col("ts6", "TIMESTAMP(6) NULL", ("'2016-11-04 13:51:30.123456'", "'1970-01-01 02:00:01'",
                                     "'2038-01-19 05:14:07.999999'", "'0000-00-00 00:00:00'"),
        ("2016-11-04T11:51:30.123456Z", "1970-01-01T00:00:01.000000Z",
         "2038-01-19T03:14:07.999999Z", "1970-01-01T00:00:00.000000Z"), ZONED,
        snapshot=("2016-11-04T11:51:30.123456Z", "1970-01-01T00:00:01Z",
                  "2038-01-19T03:14:07.999999Z", None, None)),
    Col("tsnn", "TIMESTAMP(3) NOT NULL DEFAULT '0000-00-00 00:00:00'",
        ("'2016-11-04 13:51:30.5'", "'0000-00-00 00:00:00'", "'2038-01-19 05:14:07.999'",
         "'1970-01-01 02:00:00.001'"),
        ("2016-11-04T11:51:30.500Z", "1970-01-01T00:00:00.000Z", "2038-01-19T03:14:07.999Z",
         "1970-01-01T00:00:00.001Z"),
        const(sch("string", TM + "ZonedTimestamp", version=1)), not_null=True,
        default_value="1970-01-01T00:00:00.000Z",
        snapshot=("2016-11-04T11:51:30.5Z", "1970-01-01T00:00:00Z", "2038-01-19T03:14:07.999Z",
                  "1970-01-01T00:00:00.001Z", "1970-01-01T00:00:00Z")),
    Col("yr", "YEAR", ("2016", "1901", "2155", "0"), (2016, 1901, 2155, 1900),
        const(sch("int32", TM + "Year", version=1))),
    Col("g", "GEOMETRY", ("ST_GeomFromText('POINT(1 2)', 4326)",
                          "ST_GeomFromText('GEOMETRYCOLLECTION EMPTY')",
                          "ST_GeomFromText('LINESTRING(0 0, 1 1)', 3857)",
                          "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))')"),
        (geometry(wkb_point(1, 2), 4326), geometry(b"\x01\x07\x00\x00\x00\x00\x00\x00\x00", None),
         geometry(wkb_line(0, 0, 1, 1), 3857), geometry(wkb_polygon(0, 0, 1, 0, 1, 1, 0, 0), None)),
        const(sch("struct", DBZ + "geometry.Geometry", version=2))),
    Col("pt", "POINT", ("ST_GeomFromText('POINT(1.5 -2.25)')", "POINT(0, 0)",
                        "ST_GeomFromText('POINT(1e300 -1e-300)', 4326)", "POINT(-0.5, 3)"),
        (point(1.5, -2.25), point(0.0, 0.0), point(1e300, -1e-300, 4326), point(-0.5, 3.0)),
        const(sch("struct", DBZ + "geometry.Point"))),
    Col("ls", "LINESTRING", ("ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0)', 4326)",
                             "ST_GeomFromText('LINESTRING(-1 -1, 1 1)')",
                             "ST_GeomFromText('LINESTRING(1e308 1e308, -1e308 -1e308)', 3857)",
                             "ST_GeomFromText('LINESTRING(0 0, 0 0)')"),
        (geometry(wkb_line(0, 0, 1, 1, 2, 0), 4326), geometry(wkb_line(-1, -1, 1, 1), None),
         geometry(wkb_line(1e308, 1e308, -1e308, -1e308), 3857),
         geometry(wkb_line(0, 0, 0, 0), None)),
        const(sch("struct", DBZ + "geometry.Geometry", version=2))),
    Col("pg", "POLYGON", ("ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 0))', 4326)",
                          "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))')",
                          "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))', 3857)",
                          "ST_GeomFromText('POLYGON((-1 -1, 1 -1, 1 1, -1 -1))', 4326)"),
        (geometry(wkb_polygon(0, 0, 4, 0, 4, 4, 0, 0), 4326),
         geometry(wkb_polygon(0, 0, 1, 0, 1, 1, 0, 0), None),
         geometry(wkb_polygon(0, 0, 1, 0, 1, 1, 0, 0), 3857),
         geometry(wkb_polygon(-1, -1, 1, -1, 1, 1, -1, -1), 4326)),
        const(sch("struct", DBZ + "geometry.Geometry", version=2))),
]

# MariaDB's own types (UUID since 10.7, INET4 since 10.10, INET6 since 10.5)
MARIADB_COLUMNS: list[tuple[tuple[int, int], Col]] = [
    ((10, 7), Col("u", "UUID",
                  ("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
                   "'00000000-0000-0000-0000-000000000000'",
                   "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
                   # a time-based UUID: MariaDB stores its segments swapped
                   "'6CCD780C-BABA-1026-9564-5B8C656024DB'"),
                  ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "00000000-0000-0000-0000-000000000000",
                   "ffffffff-ffff-ffff-ffff-ffffffffffff", "6ccd780c-baba-1026-9564-5b8c656024db"),
                  const(sch("string", DBZ + "Uuid", version=1)))),
    ((10, 10), Col("ip4", "INET4", ("'192.168.0.1'", "'0.0.0.0'", "'255.255.255.255'",
                                    "'10.0.0.1'"),
                   ("192.168.0.1", "0.0.0.0", "255.255.255.255", "10.0.0.1"),
                   const(sch("string")))),
    ((10, 5), Col("ip6", "INET6", ("'2001:db8::1'", "'::'",
                                   "'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'", "'::1'"),
                  ("2001:db8::1", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::1"),
                  const(sch("string")))),
    # the server's text: a dotted quad for IPv4-mapped and -compatible addresses only
    ((10, 5), Col("ip6m", "INET6", ("'::ffff:1.2.3.4'", "'::1.2.3.4'", "'64:ff9b::1.2.3.4'",
                                    "'fe80::1'"),
                  ("::ffff:1.2.3.4", "::1.2.3.4", "64:ff9b::102:304", "fe80::1"),
                  const(sch("string")))),
]


def value_of(expect: Expect, m: Modes) -> Any:
    return expect(m) if callable(expect) else expect


# ---------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------


def server_version(env: MariaEnv) -> tuple[int, int]:
    text = env.sql("SELECT VERSION()")[0][0]
    major, minor = text.split("-")[0].split(".")[:2]
    return int(major), int(minor)


def columns_for(env: MariaEnv) -> list[Col]:
    version = server_version(env)
    return [*COLUMNS, *(c for since, c in MARIADB_COLUMNS if version >= since)]


def create_table(env: MariaEnv, columns: list[Col]) -> None:
    env.sql("SET SESSION sql_mode = ''")
    env.sql("SET SESSION time_zone = '+02:00'")
    env.sql("CREATE TABLE all_types (id INT PRIMARY KEY, "
            + ", ".join(f"`{c.name}` {c.sql_type}" for c in columns)
            + ") DEFAULT CHARSET=utf8mb4")


def insert_rows(env: MariaEnv, columns: list[Col], id_base: int) -> None:
    names = ", ".join(f"`{c.name}`" for c in columns)
    for i in range(4):
        literals = ", ".join(c.literals[i] for c in columns)
        env.sql(f"INSERT INTO all_types (id, {names}) VALUES ({id_base + i}, {literals})")
    env.sql(f"INSERT INTO all_types (id) VALUES ({id_base + 4})")


def topic_records(env: MariaEnv) -> list[dict[str, Any]]:
    return [orjson.loads(r.value) for r in reader.read(env.topics, env.topic("all_types"),
                                                       from_offset=0) if r.value is not None]


def count(env: MariaEnv) -> int:
    topic = env.topic("all_types")
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
        elif got != want:
            return False
    return True


def expected_value(c: Col, row: int, modes: Modes, op: str = "c") -> Any:
    if op == "r" and c.snapshot is not None:
        return value_of(c.snapshot[row], modes)
    if row == 4:
        return value_of(c.default_value, modes) if c.not_null else None
    return value_of(c.values[row], modes)


def same(got: Any, want: Any) -> bool:
    """Equal, and of the same JSON type (1 is not 1.0, True is not 1)."""
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    return bool(got == want) and type(got) is type(want)


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 120 else text[:100] + f"... ({len(text)} chars)"


@pytest.mark.parametrize("modes", MODES, ids=lambda m: "-".join(
    [m.time, m.decimal, m.bigint, m.binary]))
def test_every_type_snapshot_and_stream(menv: MariaEnv, modes: Modes) -> None:
    columns = columns_for(menv)
    create_table(menv, columns)
    insert_rows(menv, columns, 0)
    cap = menv.capture(modes.props())
    try:
        wait_for(lambda: count(menv) >= 5, what="5 snapshot events", timeout=60)
        insert_rows(menv, columns, 100)
        wait_for(lambda: count(menv) >= 10, what="5 streamed events", timeout=60)
    finally:
        cap.stop()
    docs = topic_records(menv)
    assert [d["payload"]["op"] for d in docs] == ["r"] * 5 + ["c"] * 5

    after_schema = next(f for f in docs[0]["schema"]["fields"] if f["field"] == "after")
    fields = {f["field"]: f for f in after_schema["fields"]}
    assert list(fields) == ["id", *(c.name for c in columns)]
    problems: list[str] = []
    for c in columns:
        want = {**c.schema(modes), "optional": not c.not_null}
        if not schema_matches(fields[c.name], want):
            problems.append(f"schema of {c.name} ({c.sql_type}): {fields[c.name]} !~ {want}")
    # the streamed events' schema is the snapshot's
    stream_schema = next(f for f in docs[5]["schema"]["fields"] if f["field"] == "after")
    assert stream_schema == after_schema

    reads = {d["payload"]["after"]["id"]: d["payload"]["after"] for d in docs[:5]}
    creates = {d["payload"]["after"]["id"] - 100: d["payload"]["after"] for d in docs[5:]}
    assert sorted(reads) == sorted(creates) == list(range(5))
    for row in range(5):
        for c in columns:
            read, created = reads[row][c.name], creates[row][c.name]
            if c.snapshot is None and not same(created, read):
                problems.append(f"{ROWS[row]} {c.name} ({c.sql_type}): snapshot {short(read)} "
                                f"!= stream {short(created)}")
            for op, got in (("r", read), ("c", created)):
                want = expected_value(c, row, modes, op)
                if not same(got, want):
                    problems.append(f"{op} {ROWS[row]} {c.name} ({c.sql_type}): {short(got)} "
                                    f"!= expected {short(want)}")
    assert not problems, "\n".join(problems)


def test_float_snapshot_keeps_every_digit_of_the_stored_float(menv: MariaEnv) -> None:
    menv.sql("CREATE TABLE fl (id INT PRIMARY KEY, f FLOAT)")
    menv.sql("INSERT INTO fl VALUES (1, 123456789), (2, 16777217)")
    cap = menv.capture()
    topic = menv.topic("fl")

    def n() -> int:
        return sum(t.record_count for t in reader.list_topics(menv.topics) if t.name == topic)

    try:
        wait_for(lambda: n() >= 2, what="2 snapshot events")
        menv.sql("INSERT INTO fl VALUES (101, 123456789), (102, 16777217)")
        wait_for(lambda: n() >= 4, what="2 streamed events")
    finally:
        cap.stop()
    afters = [orjson.loads(r.value)["payload"]["after"] for r in reader.read(menv.topics, topic)
              if r.value is not None]
    # float32(123456789) = 123456792, written as the shortest decimal that reads back as that
    # float (Float.toString of JDK 19+: 1.2345679E8); float32(16777217) = 16777216.  Snapshot
    # and stream agree.
    assert [a["f"] for a in afters] == [123456790.0, 16777216.0] * 2
