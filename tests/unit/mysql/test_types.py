"""MySQL type mapping: every type in every mode at its edges, against hand-computed values.

Expected values follow Debezium's rules (``BinlogValueConverters`` / ``JdbcValueConverters``)
and are written out literally; base64 strings are Connect JSON's rendering of Decimal / bytes.
"""

from __future__ import annotations

import base64
import math
import random
import struct
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from headwater.connectors.mysql.columns import ZERO_TEMPORAL, JdbcTimestamp, MySqlColumn
from headwater.connectors.mysql.text_values import parse_timestamp
from headwater.connectors.mysql.types import (
    MySqlTypeModes,
    UnsupportedMySqlTypeError,
    float32_value,
    float32_value_by_search,
    mysql_column_mapping,
)
from headwater.convert.temporal import format_fraction
from headwater.model.schema import ConnectSchema

DEFAULT = MySqlTypeModes()
ADAPTIVE = MySqlTypeModes(time_precision_mode="adaptive")
CONNECT = MySqlTypeModes(time_precision_mode="connect")
NO_ADJUST = MySqlTypeModes(enable_time_adjuster=False)
UNSIGNED_PRECISE = MySqlTypeModes(bigint_unsigned_handling_mode="precise")
DEC_DOUBLE = MySqlTypeModes(decimal_handling_mode="double")
DEC_STRING = MySqlTypeModes(decimal_handling_mode="string")


def col(type_name: str, length: int | None = None, scale: int | None = None, *,
        unsigned: bool = False, nullable: bool = True, members: tuple[str, ...] = (),
        charset: str | None = None) -> MySqlColumn:
    return MySqlColumn("c", type_name, length, scale, unsigned=unsigned, nullable=nullable,
                       members=members, charset=charset)


def convert(column: MySqlColumn, value: Any, modes: MySqlTypeModes = DEFAULT) -> Any:
    return mysql_column_mapping(column, modes).convert(value)


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

INTEGER_CASES = [
    (col("TINYINT"), -128, -128),
    (col("TINYINT"), 127, 127),
    (col("TINYINT", unsigned=True), 255, 255),
    (col("SMALLINT"), -32768, -32768),
    (col("SMALLINT"), 32767, 32767),
    (col("SMALLINT", unsigned=True), 65535, 65535),
    (col("MEDIUMINT"), -8388608, -8388608),
    (col("MEDIUMINT"), 8388607, 8388607),
    (col("MEDIUMINT", unsigned=True), 16777215, 16777215),
    (col("INT"), -2147483648, -2147483648),
    (col("INT"), 2147483647, 2147483647),
    (col("INT", unsigned=True), 4294967295, 4294967295),
    (col("BIGINT"), -9223372036854775808, -9223372036854775808),
    (col("BIGINT"), 9223372036854775807, 9223372036854775807),
    # long mode: Java's longValue() of the unsigned value
    (col("BIGINT", unsigned=True), 18446744073709551615, -1),
    (col("BIGINT", unsigned=True), 9223372036854775808, -9223372036854775808),
    (col("BIGINT", unsigned=True), 9223372036854775807, 9223372036854775807),
    (col("BIGINT", unsigned=True), 0, 0),
]


@pytest.mark.parametrize(("column", "value", "expected"), INTEGER_CASES)
def test_integers(column: MySqlColumn, value: int, expected: int) -> None:
    assert convert(column, value) == expected


@pytest.mark.parametrize(
    ("value", "expected_b64"),
    [
        (18446744073709551615, "AP//////////"),  # 00 ff*8: 2^64-1 needs a sign byte
        (9223372036854775808, "AIAAAAAAAAAA"),  # 00 80 00*7
        (0, "AA=="),
        (255, "AP8="),
    ],
)
def test_bigint_unsigned_precise(value: int, expected_b64: str) -> None:
    assert convert(col("BIGINT", unsigned=True), value, UNSIGNED_PRECISE) == expected_b64


def test_boolean_and_bit1() -> None:
    assert convert(col("BOOLEAN"), 1) is True
    assert convert(col("BOOLEAN"), 0) is False
    assert convert(col("BIT", 1), b"\x01") is True
    assert convert(col("BIT", 1), b"\x00") is False
    assert convert(col("BIT"), b"\x01") is True  # BIT is BIT(1)


@pytest.mark.parametrize(
    ("length", "natural", "expected"),
    [
        (10, b"\x02\x01", b"\x01\x02"),  # b'1000000001' big-endian → little-endian
        (10, b"\x00\x00", b"\x00\x00"),  # sized by the column, not the highest set bit
        (16, b"\x05", b"\x05\x00"),  # a short value is padded at the high end
        (8, b"\xa5", b"\xa5"),
        (64, b"\x80\x00\x00\x00\x00\x00\x00\x01", b"\x01\x00\x00\x00\x00\x00\x00\x80"),
        (64, b"\xff" * 8, b"\xff" * 8),
    ],
)
def test_bits(length: int, natural: bytes, expected: bytes) -> None:
    assert convert(col("BIT", length), natural) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (struct.unpack("<f", struct.pack("<f", 1.1))[0], 1.1),  # 1.100000023841858 → 1.1
        (3.4028234663852886e38, 3.4028235e38),  # FLT_MAX as Java's Float.toString prints it
        (-3.4028234663852886e38, -3.4028235e38),
        (3.40282e38, 3.40282e38),  # a MariaDB snapshot's 6-digit text stays as it was
        (0.1, 0.1),
        (-0.0, -0.0),
        (16777217.0, 16777216.0),  # beyond float32's 24-bit mantissa
    ],
)
def test_float32(value: float, expected: float) -> None:
    got = convert(col("FLOAT"), value)
    assert got == expected
    assert str(got) == str(expected)  # what orjson writes follows the double's repr
    assert float32_value(value) == expected


def _float32_by_definition(value: float) -> float:
    """The fewest %g digits whose double packs to the same float32, tried one by one."""
    packed = struct.pack("<f", value)
    single: float = struct.unpack("<f", packed)[0]
    if single == 0.0 or math.isnan(single):
        return single
    for digits in range(1, 10):
        candidate = float(f"{single:.{digits}g}")
        try:
            if struct.pack("<f", candidate) == packed:
                return candidate
        except OverflowError:
            continue
    return single


def _float32_samples() -> list[float]:
    rnd = random.Random(27)
    unpack = struct.Struct("<f").unpack
    patterns = [rnd.getrandbits(32) for _ in range(60_000)]
    for exponent in range(256):  # binade edges: powers of two, mantissa 1, all ones
        for mantissa in (0, 1, 2, 0x7FFFFE, 0x7FFFFF, 0x400000):
            for sign in (0, 1 << 31):
                patterns.append(sign | exponent << 23 | mantissa)
    values = [unpack(p.to_bytes(4, "little"))[0] for p in patterns]
    # short decimals and their float32 neighbours: the values with few digits
    for _ in range(20_000):
        short = round(rnd.uniform(-1e4, 1e4), rnd.randint(0, 7)) * 10.0 ** rnd.randint(-30, 30)
        bits = int.from_bytes(struct.pack("<f", short), "little")
        values.extend(unpack(b.to_bytes(4, "little"))[0]
                      for b in (bits - 1, bits, bits + 1) if 0 <= b < 1 << 32)
    return [*values, float("inf"), float("-inf"), float("nan"), 16777217.0, 3.4028234663852886e38]


def test_float32_fast_path_is_the_search() -> None:
    """float32_value skips most of the digit search (by the monotonicity its docstring argues);
    every float32 class must still give the search's double, sign of zero and NaN included."""
    for value in _float32_samples():
        want, got = _float32_by_definition(value), float32_value(value)
        assert struct.pack("<d", got) == struct.pack("<d", want), value
        assert struct.pack("<d", float32_value_by_search(value)) == struct.pack("<d", want)


def test_float_with_scale_or_wide_precision_is_double() -> None:
    # FLOAT(M,D) holds a 4-byte float: Debezium writes it widened (Float.doubleValue()), the
    # same from the binlog's float and from the snapshot's text
    assert convert(col("FLOAT", 7, 4), 1.1) == 1.100000023841858
    assert convert(col("FLOAT", 5, 3), -99.999) == -99.9990005493164
    assert convert(col("FLOAT", 5, 3), -99.9990005493164) == -99.9990005493164
    assert convert(col("FLOAT", 30), 0.1) == 0.1
    assert convert(col("DOUBLE"), 1.7976931348623157e308) == 1.7976931348623157e308
    assert convert(col("DOUBLE"), -2.2250738585072014e-308) == -2.2250738585072014e-308


DEC_65_30_MAX = Decimal("99999999999999999999999999999999999.999999999999999999999999999999")
DEC_65_30_MIN = Decimal("-99999999999999999999999999999999999.999999999999999999999999999999")


@pytest.mark.parametrize(
    ("column", "value", "precise", "double", "string"),
    [
        (col("DECIMAL", 65, 30), DEC_65_30_MAX,
         "APMWJxx/w5CKi+9GTjlF73olNgn//////////w==", 1e35, str(DEC_65_30_MAX)),
        (col("DECIMAL", 65, 30), DEC_65_30_MIN,
         "/wzp2OOAPG91dBC5sca6EIXayfYAAAAAAAAAAQ==", -1e35, "-" + str(DEC_65_30_MAX)),
        (col("DECIMAL", 10, 2), Decimal("-1.29"), "/38=", -1.29, "-1.29"),  # ff 7f
        (col("DECIMAL", 10, 2), Decimal("1.10"), "bg==", 1.1, "1.10"),  # 110 = 6e
        (col("DECIMAL", 10, 2), Decimal("-0.00"), "AA==", 0.0, "0.00"),  # no negative zero
        (col("DECIMAL", 20, 10), Decimal("0E-10"), "AA==", 0.0, "0E-10"),  # toString()
        (col("DECIMAL", 20, 10), Decimal("1E-7"), "A+g=", 1e-7, "1.000E-7"),  # 1000 = 03 e8
        (col("DECIMAL"), Decimal("9999999999"), "AlQL4/8=", 9999999999.0, "9999999999"),
        (col("DECIMAL", 5), Decimal("-99999"), "/nlh", -99999.0, "-99999"),
    ],
)
def test_decimal_modes(column: MySqlColumn, value: Decimal, precise: str, double: float,
                       string: str) -> None:
    got = convert(column, value)
    assert got == precise
    assert got.value == value  # the unscaled value round-trips exactly (65 digits)
    got_double = convert(column, value, DEC_DOUBLE)
    assert got_double == double
    assert str(got_double) == str(double)  # -0.00 is 0.0, not -0.0
    assert convert(column, value, DEC_STRING) == string


def test_decimal_with_extra_digits_is_rounded_to_the_scale() -> None:
    # not something MySQL hands out, but the unscaled value must match the declared scale
    assert convert(col("DECIMAL", 10, 2), Decimal("1.005")).value == Decimal("1.01")
    assert convert(col("DECIMAL", 10, 2), Decimal("1.1")) == "bg=="


def test_strings_enum_set_json() -> None:
    assert convert(col("VARCHAR", 10), "héllo") == "héllo"
    assert convert(col("CHAR", 3), "") == ""
    assert convert(col("LONGTEXT"), "x" * 70000) == "x" * 70000
    assert convert(col("ENUM", members=("a", "b")), "") == ""  # the invalid-value index 0
    assert convert(col("ENUM", members=("a", "b")), "b") == "b"
    assert convert(col("SET", members=("a", "b", "c")), "a,c") == "a,c"
    assert convert(col("JSON"), '{"k": [1, null]}') == '{"k": [1, null]}'


@pytest.mark.parametrize(
    ("column", "natural", "bytes_", "b64", "b64url", "hex_"),
    [
        (col("VARBINARY", 10), b"\xfb\xff", b"\xfb\xff", "+/8=", "-_8=", "fbff"),
        (col("BLOB"), b"", b"", "", "", ""),
        (col("LONGBLOB"), b"\x00\x01\x02", b"\x00\x01\x02", "AAEC", "AAEC", "000102"),
        # BINARY(4): right-padded with zero bytes to the column length (DBZ-254)
        (col("BINARY", 4), b"ab", b"ab\x00\x00", "YWIAAA==", "YWIAAA==", "61620000"),
        (col("BINARY", 2), b"ab", b"ab", "YWI=", "YWI=", "6162"),
        # a string column in the binary charset is a binary string
        (col("VARCHAR", 5, charset="binary"), b"\x01", b"\x01", "AQ==", "AQ==", "01"),
    ],
)
def test_binary_modes(column: MySqlColumn, natural: bytes, bytes_: bytes, b64: str,
                      b64url: str, hex_: str) -> None:
    assert convert(column, natural) == bytes_
    assert convert(column, natural, MySqlTypeModes(binary_handling_mode="base64")) == b64
    assert convert(column, natural,
                   MySqlTypeModes(binary_handling_mode="base64-url-safe")) == b64url
    assert convert(column, natural, MySqlTypeModes(binary_handling_mode="hex")) == hex_


@pytest.mark.parametrize(
    ("value", "adjusted", "unadjusted"),
    [
        (0, 1900, 1900),  # the zero year: Debezium's binlog path emits Year.of(1900 + 0)
        (1901, 1901, 1901),
        (2155, 2155, 2155),
        (1, 2001, 1),
        (69, 2069, 69),
        (70, 1970, 70),
        (99, 1999, 99),
        (100, 100, 100),
    ],
)
def test_year(value: int, adjusted: int, unadjusted: int) -> None:
    assert convert(col("YEAR", 4), value) == adjusted
    assert convert(col("YEAR", 4), value, NO_ADJUST) == unadjusted


@pytest.mark.parametrize("modes", [DEFAULT, ADAPTIVE, CONNECT])
def test_date(modes: MySqlTypeModes) -> None:
    c = col("DATE")
    assert convert(c, date(1970, 1, 1), modes) == 0
    assert convert(c, date(1000, 1, 1), modes) == -354285
    assert convert(c, date(9999, 12, 31), modes) == 2932896
    assert convert(c, date(1969, 12, 31), modes) == -1
    assert convert(c, ZERO_TEMPORAL, modes) is None
    assert convert(col("DATE", nullable=False), ZERO_TEMPORAL, modes) == 0


def test_date_time_adjuster() -> None:
    assert convert(col("DATE"), date(15, 3, 4)) == 16498  # 2015-03-04
    assert convert(col("DATE"), date(15, 3, 4), NO_ADJUST) == -713987  # 0015-03-04
    assert convert(col("DATE"), date(69, 1, 1)) == 36160  # 2069-01-01
    assert convert(col("DATE"), date(4, 2, 29)) == 12477  # 2004-02-29
    assert convert(col("DATETIME"), datetime(15, 3, 4)) == 16498 * 86_400_000


@pytest.mark.parametrize(
    ("length", "value", "modes", "expected"),
    [
        (None, datetime(2018, 6, 20, 6, 37, 3), DEFAULT, 1529476623000),  # the guide's example
        (0, datetime(1970, 1, 1), DEFAULT, 0),
        (3, datetime(2018, 6, 20, 6, 37, 3, 999000), DEFAULT, 1529476623999),
        (6, datetime(1000, 1, 1), DEFAULT, -30610224000000000),
        (6, datetime(9999, 12, 31, 23, 59, 59, 999999), DEFAULT, 253402300799999999),
        (4, datetime(1969, 12, 31, 23, 59, 59, 999500), DEFAULT, -500),
        (6, datetime(9999, 12, 31, 23, 59, 59, 999999), ADAPTIVE, 253402300799999999),
        (6, datetime(9999, 12, 31, 23, 59, 59, 999999), CONNECT, 253402300799999),
        (6, datetime(1969, 12, 31, 23, 59, 59, 999500), CONNECT, -1),  # floored
        (0, datetime(2018, 6, 20, 6, 37, 3), CONNECT, 1529476623000),
    ],
)
def test_datetime(length: int | None, value: datetime, modes: MySqlTypeModes,
                  expected: int) -> None:
    assert convert(col("DATETIME", length), value, modes) == expected


def test_datetime_zero() -> None:
    assert convert(col("DATETIME", 6), ZERO_TEMPORAL) is None
    assert convert(col("DATETIME", 6, nullable=False), ZERO_TEMPORAL) == 0
    assert convert(col("DATETIME", nullable=False), ZERO_TEMPORAL, CONNECT) == 0


MAX_TIME = timedelta(hours=838, minutes=59, seconds=59)


@pytest.mark.parametrize(
    ("length", "value", "modes", "expected"),
    [
        (6, -MAX_TIME, DEFAULT, -3020399000000),
        (6, MAX_TIME, DEFAULT, 3020399000000),
        (0, MAX_TIME, DEFAULT, 3020399000000),  # MicroTime whatever the precision
        (6, timedelta(microseconds=-1), DEFAULT, -1),
        (6, -timedelta(hours=1, microseconds=500000), DEFAULT, -3600500000),
        (6, timedelta(hours=25), DEFAULT, 90000000000),
        (3, timedelta(hours=12, minutes=34, seconds=56, milliseconds=789), ADAPTIVE, 45296789),
        (6, timedelta(hours=12, minutes=34, seconds=56, microseconds=789012), ADAPTIVE,
         45296789012),
        # milliseconds beyond INT32 wrap as Java's intValue(): 3020399000 - 2^32
        (0, MAX_TIME, ADAPTIVE, -1274568296),
        (0, -MAX_TIME, ADAPTIVE, 1274568296),
        (6, timedelta(hours=12, minutes=34, seconds=56, microseconds=789999), CONNECT,
         45296789),
        (4, -timedelta(microseconds=500), CONNECT, -1),  # floored
    ],
)
def test_time(length: int, value: timedelta, modes: MySqlTypeModes, expected: int) -> None:
    assert convert(col("TIME", length), value, modes) == expected


@pytest.mark.parametrize(
    ("length", "value", "expected"),
    [
        (None, datetime(1970, 1, 1, 0, 0, 1), "1970-01-01T00:00:01Z"),
        (0, datetime(2018, 6, 20, 13, 37, 3), "2018-06-20T13:37:03Z"),
        (6, datetime(2038, 1, 19, 3, 14, 7, 999999), "2038-01-19T03:14:07.999999Z"),
        (6, datetime(1970, 1, 1, 0, 0, 1), "1970-01-01T00:00:01.000000Z"),
        (3, datetime(2038, 1, 19, 3, 14, 7), "2038-01-19T03:14:07.000Z"),
        (3, datetime(2038, 1, 19, 3, 14, 7, 120000), "2038-01-19T03:14:07.120Z"),
        (2, datetime(2000, 2, 29, 23, 59, 59, 500000), "2000-02-29T23:59:59.50Z"),
        (1, datetime(2000, 1, 1), "2000-01-01T00:00:00.0Z"),
    ],
)
@pytest.mark.parametrize("modes", [DEFAULT, CONNECT])
def test_timestamp(length: int | None, value: datetime, expected: str,
                   modes: MySqlTypeModes) -> None:
    assert convert(col("TIMESTAMP", length), value, modes) == expected


@pytest.mark.parametrize(
    ("length", "text", "expected"),
    [  # what Debezium's MariaDB connector 3.5.0 wrote in the differential test's snapshot
        (3, "2016-11-04 11:51:30.100", "2016-11-04T11:51:30.1Z"),
        (3, "1970-01-01 00:00:01.000", "1970-01-01T00:00:01Z"),
        (6, "1970-01-01 00:00:01.000000", "1970-01-01T00:00:01Z"),
        (6, "2016-11-04 11:51:30.123456", "2016-11-04T11:51:30.123456Z"),
        (3, "2038-01-19 03:14:07.999", "2038-01-19T03:14:07.999Z"),
        (6, "2000-01-01 00:00:00.000010", "2000-01-01T00:00:00.00001Z"),
        (None, "2016-11-04 11:51:30", "2016-11-04T11:51:30Z"),
    ],
)
def test_timestamp_read_by_a_select(length: int | None, text: str, expected: str) -> None:
    value = parse_timestamp(text)
    assert type(value) is JdbcTimestamp
    assert convert(col("TIMESTAMP", length), value) == expected
    assert parse_timestamp("0000-00-00 00:00:00") is ZERO_TEMPORAL


def test_timestamp_zero() -> None:
    assert convert(col("TIMESTAMP", 6), ZERO_TEMPORAL) is None
    assert convert(col("TIMESTAMP", nullable=False), ZERO_TEMPORAL) == "1970-01-01T00:00:00Z"
    # the binlog's zero TIMESTAMP is the epoch (Debezium's RowDeserializers): exactly p digits
    epoch = datetime(1970, 1, 1)
    assert convert(col("TIMESTAMP", 3, nullable=False), epoch) == "1970-01-01T00:00:00.000Z"
    assert convert(col("TIMESTAMP", 6), epoch) == "1970-01-01T00:00:00.000000Z"


POINT_WKB = bytes.fromhex("0101000000000000000000f03f0000000000000040")  # POINT(1 2)
LINE_WKB = bytes.fromhex(
    "010200000002000000" "0000000000000000" "0000000000000000"
    "000000000000f03f" "000000000000f03f")  # LINESTRING(0 0, 1 1)
SRID_4326 = bytes.fromhex("e6100000")
SRID_0 = b"\x00\x00\x00\x00"


def test_point() -> None:
    assert convert(col("POINT"), SRID_0 + POINT_WKB) == {
        "x": 1.0, "y": 2.0, "wkb": POINT_WKB, "srid": None}
    assert convert(col("POINT"), SRID_4326 + POINT_WKB) == {
        "x": 1.0, "y": 2.0, "wkb": POINT_WKB, "srid": 4326}
    big_endian = bytes.fromhex("0000000001bff00000000000004000000000000000")  # POINT(-1 2)
    assert convert(col("POINT"), SRID_0 + big_endian)["x"] == -1.0
    with pytest.raises(ValueError, match="non-point"):
        convert(col("POINT"), SRID_0 + LINE_WKB)


@pytest.mark.parametrize("type_name", ["GEOMETRY", "LINESTRING", "POLYGON", "MULTIPOINT",
                                       "MULTILINESTRING", "MULTIPOLYGON",
                                       "GEOMETRYCOLLECTION"])
def test_geometry(type_name: str) -> None:
    assert convert(col(type_name), SRID_4326 + LINE_WKB) == {"wkb": LINE_WKB, "srid": 4326,
                                                             "extensions": None}
    assert convert(col(type_name), SRID_0 + POINT_WKB) == {"wkb": POINT_WKB, "srid": None,
                                                           "extensions": None}


def test_mariadb_uuid_and_inet() -> None:
    text = "123e4567-e89b-12d3-a456-426614174000"
    assert convert(col("UUID"), text) == text
    assert convert(col("UUID"), bytes.fromhex(text.replace("-", ""))) == text
    assert convert(col("INET4"), "10.0.0.1") == "10.0.0.1"
    assert convert(col("INET4"), b"\x0a\x00\x00\x01") == "10.0.0.1"
    assert convert(col("INET6"), b"\x20\x01\x0d\xb8" + b"\x00" * 11 + b"\x01") == "2001:db8::1"


# ---------------------------------------------------------------------------------------------
# Schemas and fallbacks
# ---------------------------------------------------------------------------------------------

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"


def schema_of(type_: str, name: str | None = None, parameters: dict[str, str] | None = None,
      optional: bool = True) -> ConnectSchema:
    return ConnectSchema(type_, optional, name, 1 if name else None, parameters)


SCHEMA_CASES = [
    (col("BOOLEAN"), DEFAULT, schema_of("boolean"), False),
    (col("BIT", 1), DEFAULT, schema_of("boolean"), False),
    (col("BIT", 10), DEFAULT, schema_of("bytes", "io.debezium.data.Bits", {"length": "10"}), b""),
    (col("TINYINT"), DEFAULT, schema_of("int16"), 0),
    (col("TINYINT", unsigned=True), DEFAULT, schema_of("int16"), 0),
    (col("SMALLINT"), DEFAULT, schema_of("int16"), 0),
    (col("SMALLINT", unsigned=True), DEFAULT, schema_of("int32"), 0),
    (col("MEDIUMINT"), DEFAULT, schema_of("int32"), 0),
    (col("MEDIUMINT", unsigned=True), DEFAULT, schema_of("int32"), 0),
    (col("INT"), DEFAULT, schema_of("int32"), 0),
    (col("INT", unsigned=True), DEFAULT, schema_of("int64"), 0),
    (col("BIGINT"), DEFAULT, schema_of("int64"), 0),
    (col("BIGINT", unsigned=True), DEFAULT, schema_of("int64"), 0),
    (col("BIGINT", unsigned=True), UNSIGNED_PRECISE,
     schema_of("bytes", DECIMAL_NAME, {"scale": "0", "connect.decimal.precision": "20"}), "AA=="),
    (col("FLOAT"), DEFAULT, schema_of("float32"), 0.0),
    (col("FLOAT", 24), DEFAULT, schema_of("float32"), 0.0),
    (col("FLOAT", 25), DEFAULT, schema_of("float64"), 0.0),
    (col("FLOAT", 7, 4), DEFAULT, schema_of("float64"), 0.0),
    (col("DOUBLE"), DEFAULT, schema_of("float64"), 0.0),
    (col("DECIMAL", 65, 30), DEFAULT,
     schema_of("bytes", DECIMAL_NAME, {"scale": "30", "connect.decimal.precision": "65"}), "AA=="),
    (col("DECIMAL"), DEFAULT,
     schema_of("bytes", DECIMAL_NAME, {"scale": "0", "connect.decimal.precision": "10"}), "AA=="),
    (col("DECIMAL", 10, 2), DEC_DOUBLE, schema_of("float64"), 0.0),
    (col("DECIMAL", 10, 2), DEC_STRING, schema_of("string"), "0.00"),
    (col("VARCHAR", 10), DEFAULT, schema_of("string"), ""),
    (col("TEXT"), DEFAULT, schema_of("string"), ""),
    (col("ENUM", members=("a", "b")), DEFAULT,
     schema_of("string", "io.debezium.data.Enum", {"allowed": "a,b"}), ""),
    (col("SET", members=("x", "y", "z")), DEFAULT,
     schema_of("string", "io.debezium.data.EnumSet", {"allowed": "x,y,z"}), ""),
    (col("JSON"), DEFAULT, schema_of("string", "io.debezium.data.Json"), "{}"),
    (col("BLOB"), DEFAULT, schema_of("bytes"), b""),
    (col("VARBINARY", 3), MySqlTypeModes(binary_handling_mode="hex"), schema_of("string"), ""),
    (col("YEAR"), DEFAULT, schema_of("int32", "io.debezium.time.Year"), 0),
    (col("DATE"), DEFAULT, schema_of("int32", "io.debezium.time.Date"), 0),
    (col("DATE"), ADAPTIVE, schema_of("int32", "io.debezium.time.Date"), 0),
    (col("DATE"), CONNECT, schema_of("int32", "org.apache.kafka.connect.data.Date"), 0),
    (col("TIME"), DEFAULT, schema_of("int64", "io.debezium.time.MicroTime"), 0),
    (col("TIME", 3), ADAPTIVE, schema_of("int32", "io.debezium.time.Time"), 0),
    (col("TIME", 4), ADAPTIVE, schema_of("int64", "io.debezium.time.MicroTime"), 0),
    (col("TIME", 6), CONNECT, schema_of("int32", "org.apache.kafka.connect.data.Time"), 0),
    (col("DATETIME"), DEFAULT, schema_of("int64", "io.debezium.time.Timestamp"), 0),
    (col("DATETIME", 3), ADAPTIVE, schema_of("int64", "io.debezium.time.Timestamp"), 0),
    (col("DATETIME", 4), DEFAULT, schema_of("int64", "io.debezium.time.MicroTimestamp"), 0),
    (col("DATETIME", 6), CONNECT, schema_of("int64", "org.apache.kafka.connect.data.Timestamp"), 0),
    (col("TIMESTAMP", 6), DEFAULT, schema_of("string", "io.debezium.time.ZonedTimestamp"),
     "1970-01-01T00:00:00Z"),
    (col("TIMESTAMP"), CONNECT, schema_of("string", "io.debezium.time.ZonedTimestamp"),
     "1970-01-01T00:00:00Z"),
    (col("UUID"), DEFAULT, schema_of("string", "io.debezium.data.Uuid"), ""),
    (col("INET6"), DEFAULT, schema_of("string"), ""),
]


@pytest.mark.parametrize(("column", "modes", "schema", "fallback"), SCHEMA_CASES)
def test_schema_and_fallback(column: MySqlColumn, modes: MySqlTypeModes, schema: ConnectSchema,
                             fallback: Any) -> None:
    mapping = mysql_column_mapping(column, modes)
    assert mapping.schema == schema
    assert mapping.fallback == fallback
    required = mysql_column_mapping(col(column.type_name, column.length, column.scale,
                                        unsigned=column.unsigned, nullable=False,
                                        members=column.members), modes)
    assert required.schema.optional is False
    assert required.schema == ConnectSchema(schema.type, False, schema.name, schema.version,
                                            schema.parameters)


def test_geometry_schemas() -> None:
    point = mysql_column_mapping(col("POINT", nullable=False), DEFAULT)
    assert point.schema.type == "struct"
    assert point.schema.name == "io.debezium.data.geometry.Point"
    assert point.schema.version == 1
    assert point.schema.optional is False
    assert [(f.name, f.schema.type, f.schema.optional) for f in point.schema.fields] == [
        ("x", "float64", False), ("y", "float64", False), ("wkb", "bytes", True),
        ("srid", "int32", True)]
    assert point.fallback["x"] == 0.0 and point.fallback["y"] == 0.0
    geometry = mysql_column_mapping(col("MULTIPOLYGON"), DEFAULT)
    assert geometry.schema.name == "io.debezium.data.geometry.Geometry"
    assert geometry.schema.optional is True
    # Debezium 3.7: Geometry version 2, an optional extensions map, always optional
    assert geometry.schema.version == 2
    assert [(f.name, f.schema.type, f.schema.optional) for f in geometry.schema.fields] == [
        ("wkb", "bytes", False), ("srid", "int32", True), ("extensions", "map", True)]
    not_null = mysql_column_mapping(col("MULTIPOLYGON", nullable=False), DEFAULT)
    assert not_null.schema.optional is True
    # GEOMETRYCOLLECTION EMPTY, no SRID (BinlogGeometry.createEmpty)
    assert geometry.fallback == {"wkb": bytes.fromhex("010700000000000000"), "srid": None,
                                 "extensions": None}


def test_unknown_type_names_column_and_type() -> None:
    with pytest.raises(UnsupportedMySqlTypeError, match=r"'embedding'.*VECTOR\(3\)"):
        mysql_column_mapping(MySqlColumn("embedding", "VECTOR", 3), DEFAULT)


@pytest.mark.parametrize(
    ("option", "value"),
    [("time_precision_mode", "nano"), ("decimal_handling_mode", "exact"),
     ("bigint_unsigned_handling_mode", "string"), ("binary_handling_mode", "base32")],
)
def test_invalid_modes_are_rejected(option: str, value: str) -> None:
    with pytest.raises(ValueError, match=value):
        bad: dict[str, Any] = {option: value}
        MySqlTypeModes(**bad)


def test_decimal_json_rendering_matches_debezium() -> None:
    # Connect JSON holds the base64 of the unscaled two's complement
    got = convert(col("DECIMAL", 10, 2), Decimal("-1.29"))
    assert base64.b64decode(got) == b"\xff\x7f"


@pytest.mark.parametrize("width", [0, 1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("value", [
    datetime(1, 1, 1), datetime(1970, 1, 1, 0, 0, 0, 1), datetime(2024, 2, 29, 23, 59, 59, 999999),
    datetime(9999, 12, 31, 23, 59, 59, 500000), datetime(999, 5, 6, 7, 8, 9, 120000),
])
def test_timestamp_text_of_every_width(width: int, value: datetime) -> None:
    """TIMESTAMP(1-6) text is cut from isoformat's six digits: the same as format_fraction's."""
    want = f"{value.isoformat(timespec='seconds')}{format_fraction(value.microsecond, width)}Z"
    assert convert(col("TIMESTAMP", width or None), value) == want
