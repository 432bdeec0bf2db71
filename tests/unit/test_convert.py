"""Database-independent Debezium conversions: temporal, decimal and binary representations.

Expected values marked "PG" were computed by PostgreSQL 15 itself (``d - '1970-01-01'`` and
``extract(epoch from t) * 1000000``), the calendar Debezium and java.time share.
"""

from __future__ import annotations

import base64
import random
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from headwater.convert import (
    ColumnMapping,
    TypeModes,
    UnrepresentableValueError,
    binary_encoder,
    binary_fallback,
    binary_schema,
    decimal_to_unscaled_bytes,
)
from headwater.convert import decimal as dec
from headwater.convert import temporal as tm
from headwater.model.schema import BYTES, FLOAT64, INT32, INT64, STRING, STRUCT, ConnectSchema

# ---------------------------------------------------------------------------------------------
# Calendar arithmetic
# ---------------------------------------------------------------------------------------------

CIVIL_DAYS = [
    ((1970, 1, 1), 0),
    ((1969, 12, 31), -1),
    ((1970, 1, 2), 1),
    ((2000, 2, 29), 11016),  # PG
    ((1900, 3, 1), -25508),  # PG (1900 is not a leap year)
    ((1900, 2, 28), -25509),
    ((2024, 2, 29), 19782),
    ((1, 1, 1), -719162),  # PG
    ((0, 12, 31), -719163),  # PG: 0001-12-31 BC
    ((0, 2, 29), -719162 - 307),  # 1 BC is a leap year in the proleptic calendar
    ((-43, 3, 15), -735160),  # PG: 0044-03-15 BC
    ((-4713, 11, 24), -2440588),  # PG: 4714-11-24 BC, PostgreSQL's first day
    ((9999, 12, 31), 2932896),  # PG
    ((10000, 1, 1), 2932897),
    ((5874897, 12, 31), 2145042905),  # PG: PostgreSQL's last date
]


@pytest.mark.parametrize(("ymd", "days"), CIVIL_DAYS)
def test_days_from_civil_and_back(ymd: tuple[int, int, int], days: int) -> None:
    assert tm.days_from_civil(*ymd) == days
    assert tm.civil_from_days(days) == ymd


def test_civil_matches_python_date_for_every_100th_day_of_years_1_to_9999() -> None:
    for ordinal in range(1, date.max.toordinal() + 1, 97):
        d = date.fromordinal(ordinal)
        assert tm.days_from_civil(d.year, d.month, d.day) == ordinal - tm.EPOCH_ORDINAL
        assert tm.civil_from_days(ordinal - tm.EPOCH_ORDINAL) == (d.year, d.month, d.day)


def test_civil_round_trips_far_outside_python_range() -> None:
    rnd = random.Random(7)
    for _ in range(20_000):
        days = rnd.randint(-(2**40), 2**40)
        assert tm.days_from_civil(*tm.civil_from_days(days)) == days
    # consecutive days across the BC/AD boundary and around era (400-year) boundaries
    for start in (-719_163 - 800, -146_097 * 5 - 3, 11_016 - 2):
        prev = tm.civil_from_days(start)
        for days in range(start + 1, start + 1600):
            cur = tm.civil_from_days(days)
            assert cur > prev
            prev = cur


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("1970-01-01", 0),
        ("1969-12-31", -1),
        ("0001-01-01", -719162),
        ("9999-12-31", 2932896),
        ("10000-01-01", 2932897),
        ("5874897-12-31", 2145042905),
        ("2000-02-29", 11016),
        ("2024-02-29", 19782),
        ("1900-03-01", -25508),
        ("0044-03-15 BC", -735160),
        ("0001-12-31 BC", -719163),
        ("4714-11-24 BC", -2440588),
    ],
)
def test_parse_date(text: str, days: int) -> None:
    assert tm.parse_date(text) == days


@pytest.mark.parametrize(
    "text",
    [
        "2023-02-29",
        "1900-02-29",
        "2023-13-01",
        "2023-00-10",
        "2023-04-31",
        "0000-01-01 BC",
        "x",
        "2023-1-1",
        "infinity",
        "",
    ],
)
def test_parse_date_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        tm.parse_date(text)


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("00:00:00", 0),
        ("00:00:00.000001", 1),
        ("13:51:30", 49_890_000_000),
        ("13:51:30.1", 49_890_100_000),
        ("13:51:30.12", 49_890_120_000),
        ("13:51:30.123", 49_890_123_000),
        ("13:51:30.1234", 49_890_123_400),
        ("13:51:30.12345", 49_890_123_450),
        ("13:51:30.123456", 49_890_123_456),
        ("23:59:59.999999", 86_399_999_999),
        ("24:00:00", 86_400_000_000),
        ("100:00:00", 360_000_000_000),  # MySQL TIME range
        ("-838:59:59", -3_020_399_000_000),
        ("-00:00:01.5", -1_500_000),
    ],
)
def test_parse_time(text: str, micros: int) -> None:
    assert tm.parse_time(text) == micros


# (The C fast path also accepts other ISO 8601 spellings such as "12:00"; sources never send them.)
@pytest.mark.parametrize("text", ["12:60:00", "12:00:60", "noon", "1:2:3", ""])
def test_parse_time_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        tm.parse_time(text)


TIMESTAMPS = [
    ("1970-01-01 00:00:00", 0),
    ("2018-06-20 15:13:16.945104", 1_529_507_596_945_104),  # Debezium's documented example
    ("1969-12-31 23:59:59.999999", -1),  # PG
    ("1936-10-25 22:10:12.608", -1_047_174_587_392_000),  # PG
    ("0001-01-01 00:00:00", -62_135_596_800_000_000),  # PG
    ("9999-12-31 23:59:59.999999", 253_402_300_799_999_999),  # PG
    ("0044-03-15 12:00:00 BC", -63_517_780_800_000_000),  # PG
    ("4713-01-01 00:00:00 BC", -210_863_520_000_000_000),  # PG
    ("294247-01-10 04:00:54.775807", 9_223_372_036_854_775_807),  # INT64 max exactly
    ("294276-12-31 23:59:59.999999", 9_224_318_016_000_000_000 - 1),  # PG's last µs (> INT64)
    ("2000-02-29 12:00:00", 951_825_600_000_000),
    ("2016-11-04 13:51:30.1", 1_478_267_490_100_000),
    ("2016-11-04 13:51:30.12", 1_478_267_490_120_000),
    ("2016-11-04 13:51:30.123", 1_478_267_490_123_000),
    ("2016-11-04 13:51:30.1234", 1_478_267_490_123_400),
    ("2016-11-04 13:51:30.12345", 1_478_267_490_123_450),
    ("2016-11-04 13:51:30.123456", 1_478_267_490_123_456),
]


@pytest.mark.parametrize(("text", "micros"), TIMESTAMPS)
def test_parse_timestamp(text: str, micros: int) -> None:
    assert tm.parse_timestamp(text) == micros
    assert tm.parse_timestamp_millis(text) == micros // 1000


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("1969-12-31 23:59:59.9995", -1),  # floored like Instant.toEpochMilli()
        ("1969-12-31 23:59:59.999999", -1),
        ("1970-01-01 00:00:00.0009", 0),
        ("0044-03-15 12:00:00.0001 BC", -63_517_780_800_000),
    ],
)
def test_parse_timestamp_millis_floors(text: str, millis: int) -> None:
    assert tm.parse_timestamp_millis(text) == millis


def test_parse_timestamp_matches_python_datetime() -> None:
    rnd = random.Random(11)
    epoch = datetime(1970, 1, 1)
    for _ in range(5000):
        us = rnd.randint(-62_135_596_800_000_000, 253_402_300_799_999_999)
        dt = epoch + timedelta(microseconds=us)
        text = dt.isoformat(sep=" ")
        if dt.microsecond:
            text = text.rstrip("0")  # PostgreSQL trims trailing fraction zeros
        assert tm.parse_timestamp(text) == us, text


@pytest.mark.parametrize(
    "text", ["2016-11-04 13:51:30+00", "x", "2016-11-04 1:2:3", "2016-11-04 13:51:30 AD", ""]
)
def test_parse_timestamp_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        tm.parse_timestamp(text)


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("2016-11-04 11:51:30.123456+00", 1_478_260_290_123_456),
        ("2016-11-04 13:51:30.123456+02", 1_478_260_290_123_456),
        ("2016-11-04 17:21:30.123456+05:30", 1_478_260_290_123_456),
        ("2016-11-04 08:51:30.123456-03", 1_478_260_290_123_456),
        ("2016-11-04 12:21:45.123456+00:30:15", 1_478_260_290_123_456),
        ("1849-12-31 19:03:58-04:56:02", tm.days_from_civil(1850, 1, 1) * 86_400_000_000),
        ("1970-01-01 00:00:00-00:00:01", 1_000_000),
        ("0044-03-15 12:00:00+00 BC", -63_517_780_800_000_000),
        ("0044-03-15 13:00:00+01 BC", -63_517_780_800_000_000),
        ("294276-12-31 23:59:59.999999+00", 9_224_318_016_000_000_000 - 1),
        ("0001-01-01 00:30:00+01", -62_135_596_800_000_000 - 1_800_000_000),
    ],
)
def test_parse_timestamp_tz(text: str, micros: int) -> None:
    assert tm.parse_timestamp_tz(text) == micros


def test_parse_timestamp_tz_requires_an_offset() -> None:
    with pytest.raises(ValueError):
        tm.parse_timestamp_tz("0044-03-15 12:00:00 BC")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("13:51:30.123789+02", (49_890_123_789, 7200)),
        ("13:51:30-05:30", (49_890_000_000, -19_800)),
        ("13:51:30+05:30:15", (49_890_000_000, 19_815)),
        ("24:00:00+00", (86_400_000_000, 0)),
    ],
)
def test_parse_time_tz(text: str, expected: tuple[int, int]) -> None:
    assert tm.parse_time_tz(text) == expected


def test_saturate_int64() -> None:
    assert tm.saturate_int64(2**63) == 2**63 - 1
    assert tm.saturate_int64(-(2**63) - 1) == -(2**63)
    assert tm.saturate_int64(5) == 5


# ---------------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("year", "text"),
    [
        (0, "0000"),
        (1, "0001"),
        (999, "0999"),
        (9999, "9999"),
        (10000, "+10000"),
        (294247, "+294247"),
        (-1, "-0001"),
        (-43, "-0043"),
        (-4713, "-4713"),
        (-12345, "-12345"),
    ],
)
def test_format_iso_year(year: int, text: str) -> None:
    assert tm.format_iso_year(year) == text


@pytest.mark.parametrize(
    ("micros", "width", "text"),
    [
        (0, 0, ""),
        (0, 6, ".000000"),
        (0, 3, ".000"),
        (100_000, 0, ".1"),
        (100_000, 6, ".100000"),
        (123_400, 0, ".1234"),
        (123_456, 6, ".123456"),
        (123_456, 3, ".123"),  # never happens for PostgreSQL: the value has <= width digits
        (120_000, 3, ".120"),
        (5, 6, ".000005"),
        (5, 0, ".000005"),
        (123_456, 9, ".123456000"),
    ],
)
def test_format_fraction(micros: int, width: int, text: str) -> None:
    assert tm.format_fraction(micros, width) == text


@pytest.mark.parametrize(
    ("micros", "width", "text"),
    [
        (0, 0, "1970-01-01T00:00:00Z"),
        (0, 6, "1970-01-01T00:00:00.000000Z"),
        (1_529_500_396_945_104, 6, "2018-06-20T13:13:16.945104Z"),
        (-1, 6, "1969-12-31T23:59:59.999999Z"),
        (-1, 0, "1969-12-31T23:59:59.999999Z"),
        (-1_000, 3, "1969-12-31T23:59:59.999Z"),
        (-62_135_596_800_000_000, 0, "0001-01-01T00:00:00Z"),
        (-62_135_596_800_000_001, 6, "0000-12-31T23:59:59.999999Z"),
        (-63_517_780_800_000_000, 6, "-0043-03-15T12:00:00.000000Z"),
        (-210_863_520_000_000_001, 6, "-4713-12-31T23:59:59.999999Z"),  # Debezium's tz_min
        (253_402_300_799_999_999, 6, "9999-12-31T23:59:59.999999Z"),
        (253_402_300_800_000_000, 0, "+10000-01-01T00:00:00Z"),
        (9_223_371_331_200_000_000 - 1, 6, "+294247-01-01T23:59:59.999999Z"),  # Debezium tz_max
        (9_223_372_036_825_200_000, 0, "+294247-01-10T04:00:25.2Z"),  # Debezium ISOSTRING pinf
    ],
)
def test_format_zoned_timestamp(micros: int, width: int, text: str) -> None:
    assert tm.format_zoned_timestamp(micros, width) == text


def test_format_zoned_timestamp_matches_python_isoformat() -> None:
    rnd = random.Random(3)
    for _ in range(3000):
        us = rnd.randint(-62_135_596_800_000_000, 253_402_300_799_999_999)
        dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)
        expected = dt.isoformat(timespec="microseconds").replace("+00:00", "Z")
        assert tm.format_zoned_timestamp(us, 6) == expected


@pytest.mark.parametrize(
    ("text", "zoned"),
    [
        ("13:51:30.123789+02", "11:51:30.123789Z"),
        ("13:51:30.123+02", "11:51:30.123Z"),
        ("13:51:30.12+02", "11:51:30.12Z"),
        ("13:51:30+00", "13:51:30Z"),
        ("00:30:00+02", "22:30:00Z"),
        ("23:30:00-01", "00:30:00Z"),
        ("13:51:30+05:30:15", "08:21:15Z"),
        ("24:00:00+00", "24:00:00Z"),  # PostgresTimeBoundary.TIME_WITH_TIMEZONE_BOUNDARY_AT_UTC
        ("24:00:00+01", "23:00:00Z"),
        ("24:00:00-01", "01:00:00Z"),
        ("00:00:00+00", "00:00:00Z"),
    ],
)
def test_zoned_time_from_text(text: str, zoned: str) -> None:
    assert tm.zoned_time_from_text(text) == zoned


# ---------------------------------------------------------------------------------------------
# Temporal schemas
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("precision", "mode", "literal", "name"),
    [
        *[(p, "adaptive", INT32, tm.TIME) for p in (0, 1, 2, 3)],
        *[(p, "adaptive", INT64, tm.MICRO_TIME) for p in (4, 5, 6)],
        *[(p, "adaptive_time_microseconds", INT64, tm.MICRO_TIME) for p in range(7)],
        *[(p, "connect", INT32, tm.CONNECT_TIME) for p in range(7)],
    ],
)
def test_time_schema(precision: int, mode: str, literal: str, name: str) -> None:
    assert tm.time_schema(precision, mode, True) == ConnectSchema(literal, True, name, 1)
    assert tm.time_is_micros(precision, mode) == (name == tm.MICRO_TIME)


@pytest.mark.parametrize(
    ("precision", "mode", "name"),
    [
        *[
            (p, m, tm.TIMESTAMP)
            for p in (0, 1, 2, 3)
            for m in ("adaptive", "adaptive_time_microseconds")
        ],
        *[
            (p, m, tm.MICRO_TIMESTAMP)
            for p in (4, 5, 6)
            for m in ("adaptive", "adaptive_time_microseconds")
        ],
        *[(p, "connect", tm.CONNECT_TIMESTAMP) for p in range(7)],
    ],
)
def test_timestamp_schema(precision: int, mode: str, name: str) -> None:
    assert tm.timestamp_schema(precision, mode, False) == ConnectSchema(INT64, False, name, 1)
    assert tm.timestamp_is_micros(precision, mode) == (name == tm.MICRO_TIMESTAMP)


def test_date_and_zoned_schemas() -> None:
    assert tm.date_schema("adaptive", True) == ConnectSchema(INT32, True, tm.DATE, 1)
    assert tm.date_schema("adaptive_time_microseconds", True).name == tm.DATE
    assert tm.date_schema("connect", False) == ConnectSchema(INT32, False, tm.CONNECT_DATE, 1)
    assert tm.zoned_timestamp_schema(True) == ConnectSchema(STRING, True, tm.ZONED_TIMESTAMP, 1)
    assert tm.zoned_time_schema(False) == ConnectSchema(STRING, False, tm.ZONED_TIME, 1)
    with pytest.raises(ValueError):
        tm.date_schema("nanos", True)


# ---------------------------------------------------------------------------------------------
# Decimal: unscaled two's complement
# ---------------------------------------------------------------------------------------------


def _java_to_byte_array(value: int) -> bytes:
    """BigInteger.toByteArray() spelled out: ceil((bitLength + 1) / 8) bytes."""
    bit_length = value.bit_length() if value >= 0 else (-value - 1).bit_length()
    length = (bit_length + 1 + 7) // 8
    return (value % (1 << (8 * length))).to_bytes(length, "big")


@pytest.mark.parametrize(
    ("value", "hexbytes"),
    [
        (0, "00"),
        (1, "01"),
        (-1, "ff"),
        (127, "7f"),
        (128, "0080"),
        (-128, "80"),
        (-129, "ff7f"),
        (255, "00ff"),
        (256, "0100"),
        (32767, "7fff"),
        (32768, "008000"),
        (-32768, "8000"),
        (-32769, "ff7fff"),
        (2**63 - 1, "7fffffffffffffff"),
        (2**63, "008000000000000000"),
        (-(2**63), "8000000000000000"),
        (-(2**63) - 1, "ff7fffffffffffffff"),
    ],
)
def test_int_to_twos_complement(value: int, hexbytes: str) -> None:
    assert dec.int_to_twos_complement(value).hex() == hexbytes
    assert _java_to_byte_array(value).hex() == hexbytes
    assert dec.twos_complement_to_int(bytes.fromhex(hexbytes)) == value


def test_int_to_twos_complement_random_and_huge() -> None:
    rnd = random.Random(5)
    for bits in [*range(1, 200), 1000, 4000, 70_000]:
        for _ in range(5):
            value = rnd.getrandbits(bits) * rnd.choice((1, -1))
            encoded = dec.int_to_twos_complement(value)
            assert encoded == _java_to_byte_array(value)
            assert dec.twos_complement_to_int(encoded) == value


@pytest.mark.parametrize(
    ("value", "unscaled"),
    [
        (Decimal("1.10"), 110),
        (Decimal("-1.29"), -129),
        (Decimal("0.00"), 0),
        (Decimal("-0.00"), 0),
        (Decimal("22.2200"), 222200),
        (Decimal("12300"), 12300),
        (Decimal("1.23E+4"), 123),  # a negative scale keeps its unscaled value
        (Decimal("9" * 1000 + "." + "9" * 500), int(Decimal("9" * 1500))),
    ],
)
def test_decimal_to_unscaled_bytes(value: Decimal, unscaled: int) -> None:
    assert dec.unscaled_value(value) == unscaled
    assert decimal_to_unscaled_bytes(value) == _java_to_byte_array(unscaled)


def test_decimal_to_unscaled_bytes_rejects_special_values() -> None:
    for special in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(UnrepresentableValueError):
            decimal_to_unscaled_bytes(Decimal(special))


# ---------------------------------------------------------------------------------------------
# Decimal: VariableScaleDecimal
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "scale", "unscaled"),
    [
        ("10.1111", 4, 101111),  # Debezium dvs
        ("22.2222", 4, 222222),
        ("10", 0, 10),  # Debezium dvs_int
        ("10.1000", 1, 101),  # trailing zeros stripped (current Debezium)
        ("100", 0, 100),  # stripTrailingZeros gives 1E+2; a negative scale is reset to 0
        ("100.000", 0, 100),
        ("0", 0, 0),
        ("0.000", 0, 0),
        ("-0.5", 1, -5),
        ("-128", 0, -128),
        ("-129", 0, -129),
        ("0.00000001", 8, 1),
        ("-1.5e3", 0, -1500),  # not PostgreSQL output, handled generally
    ],
)
def test_variable_scale_decimal(text: str, scale: int, unscaled: int) -> None:
    value = dec.variable_scale_decimal(text)
    assert value == {"scale": scale, "value": _java_to_byte_array(unscaled)}
    assert dec.variable_scale_decimal_from_decimal(Decimal(text)) == value


@pytest.mark.parametrize(
    "text",
    [
        "9" * 1000,
        "-" + "9" * 1000 + "." + "1" * 999,
        "1" * 131072 + "." + "5" * 16383,  # PostgreSQL's numeric maximum digits
        "-0." + "0" * 16382 + "1",
    ],
)
def test_variable_scale_decimal_huge(text: str) -> None:
    value = dec.variable_scale_decimal(text)
    back = Decimal(dec.twos_complement_to_int(value["value"])).scaleb(-value["scale"], dec.EXACT)
    assert back == Decimal(text)
    assert value == dec.variable_scale_decimal_from_decimal(Decimal(text))


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_variable_scale_decimal_rejects_special_values(text: str) -> None:
    with pytest.raises(UnrepresentableValueError, match=r"decimal\.handling\.mode"):
        dec.variable_scale_decimal(text, "public.t.c")


def test_variable_scale_decimal_schema() -> None:
    schema = dec.variable_scale_decimal_schema(True)
    assert (schema.type, schema.name, schema.version, schema.optional) == (
        STRUCT,
        dec.VARIABLE_SCALE_DECIMAL,
        1,
        True,
    )
    assert [(f.name, f.schema.type, f.schema.optional) for f in schema.fields] == [
        ("scale", INT32, False),
        ("value", BYTES, False),
    ]


# ---------------------------------------------------------------------------------------------
# Decimal: the three modes
# ---------------------------------------------------------------------------------------------


def _java_big_decimal_to_string(d: Decimal) -> str:
    """java.math.BigDecimal.toString(), written from its Javadoc, as an oracle."""
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    coefficient = "".join(map(str, digits)).lstrip("0") or "0"
    scale = -exponent
    adjusted = -scale + (len(coefficient) - 1)
    prefix = "-" if sign and coefficient != "0" else ""
    if scale >= 0 and adjusted >= -6:
        if scale == 0:
            return prefix + coefficient
        padded = coefficient.rjust(scale + 1, "0")
        return f"{prefix}{padded[:-scale]}.{padded[-scale:]}"
    mantissa = coefficient[0] + ("." + coefficient[1:] if len(coefficient) > 1 else "")
    return f"{prefix}{mantissa}E{'+' if adjusted >= 0 else ''}{adjusted}"


def test_string_mode_is_java_big_decimal_to_string() -> None:
    _, convert, _ = dec.decimal_mapping("string", None, None, False)
    rnd = random.Random(9)
    for _ in range(20_000):
        digits = str(rnd.randint(0, 10 ** rnd.randint(0, 25)))
        value = Decimal(f"{rnd.choice(('', '-'))}{digits}E{rnd.randint(-30, 10)}")
        assert dec.java_decimal_string(value) == _java_big_decimal_to_string(value), value
        text = format(value, "f")  # plain notation, as PostgreSQL prints numerics
        assert convert(text) == _java_big_decimal_to_string(Decimal(text)), text


def test_precise_fixed_scale() -> None:
    schema, convert, fallback = dec.decimal_mapping("precise", 6, 4, True)
    assert schema == ConnectSchema(
        BYTES, True, dec.DECIMAL, 1, {"scale": "4", "connect.decimal.precision": "6"}
    )
    assert list(schema.parameters or {}) == ["scale", "connect.decimal.precision"]
    encoded = convert("22.2200")
    assert encoded == base64.b64encode((222200).to_bytes(3, "big", signed=True)).decode()
    value = encoded.value
    assert value == Decimal("22.2200")
    assert value.as_tuple().exponent == -4
    assert convert("-0.0001").value.as_tuple() == Decimal("-0.0001").as_tuple()
    assert convert("-0.0001") == base64.b64encode(b"\xff").decode()
    assert convert("22.22").value.as_tuple().exponent == -4  # quantized if a value lacks digits
    assert convert("22.22") == encoded
    assert str(fallback.value) == "0.0000" and fallback == "AA=="
    for special in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(UnrepresentableValueError):
            convert(special)


def test_precise_scale_zero_and_max_precision() -> None:
    _, convert, fallback = dec.decimal_mapping("precise", 4, 0, False)
    assert convert("22").value.as_tuple().exponent == 0
    assert fallback.value == Decimal(0)
    text = "1" * 500 + "." + "2" * 500
    _, convert, _ = dec.decimal_mapping("precise", 1000, 500, False)
    encoded = convert(text)
    assert base64.b64decode(encoded) == decimal_to_unscaled_bytes(encoded.value)
    value = encoded.value
    assert str(value) == text
    assert dec.twos_complement_to_int(decimal_to_unscaled_bytes(value)) == int(
        Decimal(text.replace(".", ""))
    )


def test_precise_variable_scale() -> None:
    schema, convert, fallback = dec.decimal_mapping("precise", None, None, True)
    assert schema.name == dec.VARIABLE_SCALE_DECIMAL
    assert convert("10.1111") == {"scale": 4, "value": (101111).to_bytes(3, "big")}
    assert fallback == {"scale": 0, "value": b"\x00"}


@pytest.mark.parametrize(("precision", "scale"), [(6, 4), (None, None)])
def test_double_mode(precision: int | None, scale: int | None) -> None:
    schema, convert, fallback = dec.decimal_mapping("double", precision, scale, True)
    assert schema == ConnectSchema(FLOAT64, True)
    assert convert("22.2200") == 22.22
    assert convert("10.1111") == 10.1111
    assert convert("NaN") == "NaN"  # Kafka's JsonConverter spelling of non-finite doubles
    assert convert("Infinity") == "Infinity"
    assert convert("-Infinity") == "-Infinity"
    assert convert("9" * 1000) == "Infinity"  # BigDecimal.doubleValue() overflows the same way
    assert convert("0." + "0" * 400 + "1") == 0.0
    assert fallback == 0.0


@pytest.mark.parametrize(
    ("precision", "scale", "text", "expected"),
    [
        (None, None, "10.1111", "10.1111"),
        (None, None, "10", "10"),
        (None, None, "10.1000", "10.1000"),  # string mode does not strip
        (None, None, "0.0000001", "1E-7"),  # BigDecimal.toString() goes scientific
        (None, None, "0.000001", "0.000001"),
        (None, None, "-0.00000010", "-1.0E-7"),
        (None, None, "NaN", "NAN"),  # SpecialValueDecimal names (Debezium tests)
        (None, None, "Infinity", "POSITIVE_INFINITY"),
        (None, None, "-Infinity", "NEGATIVE_INFINITY"),
        (6, 4, "22.2200", "22.2200"),
        (4, 0, "22", "22"),
        (3, 2, "1.10", "1.10"),
        (10, 8, "0.00000000", "0E-8"),
        (10, 8, "0.00000001", "1E-8"),
        (6, 4, "NaN", "NAN"),
    ],
)
def test_string_mode(precision: int | None, scale: int | None, text: str, expected: str) -> None:
    schema, convert, _ = dec.decimal_mapping("string", precision, scale, False)
    assert schema == ConnectSchema(STRING, False)
    assert convert(text) == expected


def test_string_mode_fallbacks() -> None:
    assert dec.decimal_mapping("string", None, None, False)[2] == "0"
    assert dec.decimal_mapping("string", 6, 2, False)[2] == "0.00"
    assert dec.decimal_mapping("string", 10, 8, False)[2] == "0E-8"


def test_unknown_decimal_mode() -> None:
    with pytest.raises(ValueError):
        dec.decimal_mapping("float", 1, 1, True)


def test_unrepresentable_is_a_value_error() -> None:
    assert issubclass(UnrepresentableValueError, ValueError)


# ---------------------------------------------------------------------------------------------
# binary.handling.mode and TypeModes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "literal", "encoded", "fallback"),
    [
        ("bytes", BYTES, b"\xfb\xff\x00", b""),
        ("base64", STRING, "+/8A", ""),
        ("base64-url-safe", STRING, "-_8A", ""),
        ("hex", STRING, "fbff00", ""),
    ],
)
def test_binary_modes(mode: str, literal: str, encoded: object, fallback: object) -> None:
    assert binary_schema(mode, True) == ConnectSchema(literal, True)
    assert binary_encoder(mode)(b"\xfb\xff\x00") == encoded
    assert binary_fallback(mode) == fallback


def test_base64_keeps_padding_like_java() -> None:
    assert binary_encoder("base64")(b"\x01") == "AQ=="
    assert binary_encoder("base64-url-safe")(b"\xfb") == "-w=="
    assert base64.b64decode(binary_encoder("base64")(bytes(range(256)))) == bytes(range(256))


def test_unknown_binary_mode() -> None:
    with pytest.raises(ValueError):
        binary_schema("raw", True)
    with pytest.raises(ValueError):
        binary_encoder("raw")


def test_type_modes_defaults_and_validation() -> None:
    modes = TypeModes()
    assert (
        modes.time_precision_mode,
        modes.decimal_handling_mode,
        modes.binary_handling_mode,
        modes.interval_handling_mode,
        modes.hstore_handling_mode,
        modes.include_unknown_datatypes,
        modes.money_fraction_digits,
    ) == ("adaptive", "precise", "bytes", "numeric", "json", False, 2)
    assert TypeModes(money_fraction_digits=0).money_fraction_digits == 0
    for kwargs in (
        {"time_precision_mode": "nanos"},
        {"decimal_handling_mode": "float"},
        {"binary_handling_mode": "raw"},
        {"interval_handling_mode": "iso"},
        {"hstore_handling_mode": "text"},
        {"money_fraction_digits": -1},
    ):
        with pytest.raises(ValueError):
            TypeModes(**kwargs)
    assert hash(TypeModes()) == hash(TypeModes())


def test_column_mapping_defaults_to_supported() -> None:
    mapping = ColumnMapping(ConnectSchema(STRING), str, "")
    assert mapping.supported is True
