"""PostgreSQL type mapping: schema, converter and fallback of every mapped type, at the edges.

Inputs are PostgreSQL's text output (``DateStyle=ISO``, ``extra_float_digits=3``,
``bytea_output=hex``) as pgoutput and ``COPY ... TO STDOUT`` send it; expected values come from
Debezium's documentation and tests or from PostgreSQL itself (noted "PG").
"""

from __future__ import annotations

import base64
import math
import random
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from headwater.connectors.postgres import types as pgt
from headwater.connectors.postgres.types import (
    ColumnMapping,
    PgType,
    TypeModes,
    UnrepresentableValueError,
    numeric_precision_scale,
    pg_column_mapping,
    temporal_precision,
)
from headwater.convert.decimal import ConnectDecimal, decimal_to_unscaled_bytes
from headwater.convert.temporal import format_zoned_timestamp
from headwater.model.schema import (
    BOOLEAN,
    BYTES,
    FLOAT32,
    FLOAT64,
    INT16,
    INT32,
    INT64,
    STRING,
    STRUCT,
    ConnectSchema,
)

DEFAULT = TypeModes()
MICRO = TypeModes(time_precision_mode="adaptive_time_microseconds")
CONNECT = TypeModes(time_precision_mode="connect")
DOUBLE = TypeModes(decimal_handling_mode="double")
STRING_DEC = TypeModes(decimal_handling_mode="string")


def numeric_typmod(precision: int, scale: int) -> int:
    return ((precision << 16) | (scale & 0x7FF)) + 4


def mapping(
    oid: int, typmod: int = -1, modes: TypeModes = DEFAULT, optional: bool = True, name: str = ""
) -> ColumnMapping:
    return pg_column_mapping(PgType(oid, name, typmod), optional, modes)


def convert(oid: int, text: str, typmod: int = -1, modes: TypeModes = DEFAULT) -> Any:
    return mapping(oid, typmod, modes).convert(text)


# ---------------------------------------------------------------------------------------------
# Type modifiers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typmod", "expected"),
    [
        (-1, None),
        (numeric_typmod(6, 4), (6, 4)),
        (numeric_typmod(4, 0), (4, 0)),
        (655367, (10, 3)),  # PG: numeric(10,3)
        (329730, (5, -2)),  # PG: numeric(5,-2)
        (numeric_typmod(1000, 1000), (1000, 1000)),
        (numeric_typmod(1000, -1000), (1000, -1000)),
        (numeric_typmod(3, 5), (3, 5)),
    ],
)
def test_numeric_precision_scale(typmod: int, expected: tuple[int, int] | None) -> None:
    assert numeric_precision_scale(typmod) == expected


@pytest.mark.parametrize(("typmod", "precision"), [(-1, 6), *[(p, p) for p in range(7)]])
def test_temporal_precision(typmod: int, precision: int) -> None:
    assert temporal_precision(typmod) == precision


# ---------------------------------------------------------------------------------------------
# Schemas and fallbacks
# ---------------------------------------------------------------------------------------------

T = "io.debezium.time."
K = "org.apache.kafka.connect.data."

SCHEMAS: list[tuple[str, int, int, TypeModes, ConnectSchema, Any]] = [
    ("int2", 21, -1, DEFAULT, ConnectSchema(INT16), 0),
    ("int4", 23, -1, DEFAULT, ConnectSchema(INT32), 0),
    ("int8", 20, -1, DEFAULT, ConnectSchema(INT64), 0),
    ("oid", 26, -1, DEFAULT, ConnectSchema(INT64), 0),
    ("float4", 700, -1, DEFAULT, ConnectSchema(FLOAT32), 0.0),
    ("float8", 701, -1, DEFAULT, ConnectSchema(FLOAT64), 0.0),
    ("bool", 16, -1, DEFAULT, ConnectSchema(BOOLEAN), False),
    ("text", 25, -1, DEFAULT, ConnectSchema(STRING), ""),
    ("varchar(10)", 1043, 14, DEFAULT, ConnectSchema(STRING), ""),
    ("bpchar(4)", 1042, 8, DEFAULT, ConnectSchema(STRING), ""),
    ("name", 19, -1, DEFAULT, ConnectSchema(STRING), ""),
    ('"char"', 18, -1, DEFAULT, ConnectSchema(STRING), ""),
    ("uuid", 2950, -1, DEFAULT, ConnectSchema(STRING, True, "io.debezium.data.Uuid", 1), ""),
    ("json", 114, -1, DEFAULT, ConnectSchema(STRING, True, "io.debezium.data.Json", 1), ""),
    ("jsonb", 3802, -1, DEFAULT, ConnectSchema(STRING, True, "io.debezium.data.Json", 1), ""),
    ("bytea", 17, -1, DEFAULT, ConnectSchema(BYTES), b""),
    ("bytea b64", 17, -1, TypeModes(binary_handling_mode="base64"), ConnectSchema(STRING), ""),
    ("bytea hex", 17, -1, TypeModes(binary_handling_mode="hex"), ConnectSchema(STRING), ""),
    ("date", 1082, -1, DEFAULT, ConnectSchema(INT32, True, T + "Date", 1), 0),
    ("date µ", 1082, -1, MICRO, ConnectSchema(INT32, True, T + "Date", 1), 0),
    ("date connect", 1082, -1, CONNECT, ConnectSchema(INT32, True, K + "Date", 1), 0),
    ("time", 1083, -1, DEFAULT, ConnectSchema(INT64, True, T + "MicroTime", 1), 0),
    ("time(0)", 1083, 0, DEFAULT, ConnectSchema(INT32, True, T + "Time", 1), 0),
    ("time(3)", 1083, 3, DEFAULT, ConnectSchema(INT32, True, T + "Time", 1), 0),
    ("time(4)", 1083, 4, DEFAULT, ConnectSchema(INT64, True, T + "MicroTime", 1), 0),
    ("time(0) µ", 1083, 0, MICRO, ConnectSchema(INT64, True, T + "MicroTime", 1), 0),
    ("time connect", 1083, -1, CONNECT, ConnectSchema(INT32, True, K + "Time", 1), 0),
    ("timestamp", 1114, -1, DEFAULT, ConnectSchema(INT64, True, T + "MicroTimestamp", 1), 0),
    ("timestamp(3)", 1114, 3, DEFAULT, ConnectSchema(INT64, True, T + "Timestamp", 1), 0),
    ("timestamp(4)", 1114, 4, DEFAULT, ConnectSchema(INT64, True, T + "MicroTimestamp", 1), 0),
    ("timestamp(0) µ", 1114, 0, MICRO, ConnectSchema(INT64, True, T + "Timestamp", 1), 0),
    ("timestamp connect", 1114, -1, CONNECT, ConnectSchema(INT64, True, K + "Timestamp", 1), 0),
    (
        "timestamptz",
        1184,
        -1,
        DEFAULT,
        ConnectSchema(STRING, True, T + "ZonedTimestamp", 1),
        "1970-01-01T00:00:00Z",
    ),
    (
        "timestamptz connect",
        1184,
        3,
        CONNECT,
        ConnectSchema(STRING, True, T + "ZonedTimestamp", 1),
        "1970-01-01T00:00:00Z",
    ),
    ("timetz", 1266, -1, DEFAULT, ConnectSchema(STRING, True, T + "ZonedTime", 1), "00:00:00Z"),
    (
        "numeric(6,4)",
        1700,
        numeric_typmod(6, 4),
        DEFAULT,
        ConnectSchema(
            BYTES, True, K + "Decimal", 1, {"scale": "4", "connect.decimal.precision": "6"}
        ),
        Decimal("0.0000"),
    ),
    (
        "numeric(4)",
        1700,
        numeric_typmod(4, 0),
        DEFAULT,
        ConnectSchema(
            BYTES, True, K + "Decimal", 1, {"scale": "0", "connect.decimal.precision": "4"}
        ),
        Decimal("0"),
    ),
    (
        "numeric(5,-2)",
        1700,
        numeric_typmod(5, -2),
        DEFAULT,
        ConnectSchema(
            BYTES, True, K + "Decimal", 1, {"scale": "0", "connect.decimal.precision": "7"}
        ),
        Decimal("0"),
    ),
    ("numeric(6,4) double", 1700, numeric_typmod(6, 4), DOUBLE, ConnectSchema(FLOAT64), 0.0),
    ("numeric double", 1700, -1, DOUBLE, ConnectSchema(FLOAT64), 0.0),
    (
        "numeric(6,4) string",
        1700,
        numeric_typmod(6, 4),
        STRING_DEC,
        ConnectSchema(STRING),
        "0.0000",
    ),
    ("numeric string", 1700, -1, STRING_DEC, ConnectSchema(STRING), "0"),
]


@pytest.mark.parametrize("case", SCHEMAS, ids=[case[0] for case in SCHEMAS])
@pytest.mark.parametrize("optional", [True, False])
def test_schema_and_fallback(
    case: tuple[str, int, int, TypeModes, ConnectSchema, Any], optional: bool
) -> None:
    _, oid, typmod, modes, schema, fallback = case
    m = mapping(oid, typmod, modes, optional)
    assert m.schema == schema.with_optional(optional)
    assert m.supported
    got = m.fallback.value if isinstance(m.fallback, ConnectDecimal) else m.fallback
    assert type(got) is type(fallback)
    assert got == fallback
    if isinstance(fallback, Decimal):
        assert got.as_tuple() == fallback.as_tuple()


def test_variable_scale_numeric_schema_and_fallback() -> None:
    m = mapping(1700, -1, DEFAULT, optional=False)
    assert m.schema.type == STRUCT
    assert m.schema.name == "io.debezium.data.VariableScaleDecimal"
    assert m.schema.version == 1
    assert not m.schema.optional
    assert [(f.name, f.schema) for f in m.schema.fields] == [
        ("scale", ConnectSchema(INT32, False)),
        ("value", ConnectSchema(BYTES, False)),
    ]
    assert m.fallback == {"scale": 0, "value": b"\x00"}


@pytest.mark.parametrize(
    ("name", "oid_equivalent", "sample"),
    [
        ("int4", 23, "7"),
        ("integer", 23, "7"),
        ("bigserial", 20, "7"),
        ("timestamp with time zone", 1184, "2016-11-04 11:51:30+00"),
        ("pg_catalog.timestamptz", 1184, "2016-11-04 11:51:30+00"),
        ('"numeric"', 1700, "1.50"),
        ("UUID", 2950, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        ("jsonb", 3802, "{}"),
    ],
)
def test_lookup_by_name_when_the_oid_is_not_built_in(
    name: str, oid_equivalent: int, sample: str
) -> None:
    by_name, by_oid = mapping(0, name=name), mapping(oid_equivalent)
    assert (by_name.schema, by_name.fallback, by_name.supported) == (
        by_oid.schema,
        by_oid.fallback,
        by_oid.supported,
    )
    assert by_name.convert(sample) == by_oid.convert(sample)


def test_oid_wins_over_name() -> None:
    assert mapping(23, name="text").schema == ConnectSchema(INT32)


# ---------------------------------------------------------------------------------------------
# Unknown types
# ---------------------------------------------------------------------------------------------

UNKNOWN = [  # types current Debezium has no converter for (see types.py)
    (27, "tid"),
    (28, "xid"),
    (5069, "xid8"),
    (3220, "pg_lsn"),
    (3615, "tsquery"),
    (4451, "int4multirange"),
    (2205, "regclass"),
    (16500, "mood"),  # a user type the catalog did not describe as an enum
    (16501, "_mood"),  # ... nor its array
    (3221, "_pg_lsn"),  # array of an unknown element type
]


@pytest.mark.parametrize(("oid", "name"), UNKNOWN)
def test_unknown_types_are_unsupported_text(oid: int, name: str) -> None:
    m = mapping(oid, name=name, optional=False)
    assert not m.supported
    assert m.schema == ConnectSchema(STRING, False)
    assert m.convert("1 day") == "1 day"
    assert m.fallback == ""


@pytest.mark.parametrize(
    ("mode", "schema", "value", "fallback"),
    [
        ("bytes", ConnectSchema(BYTES), "{1,2} é".encode(), b""),
        ("base64", ConnectSchema(STRING), "ezEsMn0gw6k=", ""),
        ("base64-url-safe", ConnectSchema(STRING), "ezEsMn0gw6k=", ""),
        ("hex", ConnectSchema(STRING), "7b312c327d20c3a9", ""),
    ],
)
def test_unknown_types_as_opaque_bytes(
    mode: str, schema: ConnectSchema, value: Any, fallback: Any
) -> None:
    modes = TypeModes(include_unknown_datatypes=True, binary_handling_mode=mode)
    m = mapping(3220, modes=modes, name="pg_lsn")
    assert m.supported
    assert m.schema == schema
    assert m.convert("{1,2} é") == value
    assert m.fallback == fallback


# ---------------------------------------------------------------------------------------------
# Integers, floats, booleans, strings
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("oid", "text", "value"),
    [
        (21, "-32768", -32768),
        (21, "32767", 32767),
        (21, "0", 0),
        (23, "-2147483648", -2147483648),
        (23, "2147483647", 2147483647),
        (20, "-9223372036854775808", -9223372036854775808),
        (20, "9223372036854775807", 9223372036854775807),
        (26, "4294967295", 4294967295),
        (26, "0", 0),
    ],
)
def test_integers(oid: int, text: str, value: int) -> None:
    result = convert(oid, text)
    assert result == value
    assert type(result) is int


@pytest.mark.parametrize(
    ("oid", "text", "value"),
    [
        (700, "3.3", 3.3),
        (700, "1e-45", 1e-45),
        (700, "3.4028235e+38", 3.4028235e38),
        (700, "-1.17549435e-38", -1.17549435e-38),
        (700, "0", 0.0),
        (701, "4.44", 4.44),
        (701, "1.7976931348623157e+308", 1.7976931348623157e308),
        (701, "5e-324", 5e-324),
        (701, "-2.2250738585072014e-308", -2.2250738585072014e-308),
        (701, "0.1", 0.1),
        (700, "Infinity", "Infinity"),
        (701, "-Infinity", "-Infinity"),
    ],
)
def test_floats(oid: int, text: str, value: float | str) -> None:
    result = convert(oid, text)
    assert result == value
    assert type(result) is type(value)  # non-finite: Kafka's JsonConverter strings
    assert repr(result) == repr(value)  # the JSON shows the digits PostgreSQL printed


@pytest.mark.parametrize("oid", [700, 701])
def test_float_nan_and_negative_zero(oid: int) -> None:
    assert convert(oid, "NaN") == "NaN"
    negative_zero = convert(oid, "-0")
    assert negative_zero == 0.0
    assert math.copysign(1.0, negative_zero) == -1.0


def test_booleans() -> None:
    assert convert(16, "t") is True
    assert convert(16, "f") is False
    with pytest.raises(ValueError):
        convert(16, "maybe")


@pytest.mark.parametrize(
    ("oid", "typmod", "text"),
    [
        (25, -1, "some text"),
        (25, -1, ""),
        (25, -1, "žš ✓ \t\n\\"),
        (1043, 6, "aa"),
        (1042, 8, "cdef"),
        (1042, 10, "ab    "),  # bpchar keeps its padding
        (1042, 5, "x"),
        (19, -1, "pg_class"),
        (18, -1, "r"),
        (2950, -1, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        (114, -1, '{"bar": "baz"}'),
        (3802, -1, '{"bar": "baz"}'),
        (114, -1, '{ "a" :1,"a":2 }'),  # json keeps its text, duplicates and spaces included
        (3802, -1, "[1, 2.50, null]"),
        (3802, -1, '"scalar"'),
    ],
)
def test_strings_are_passed_as_is(oid: int, typmod: int, text: str) -> None:
    assert convert(oid, text, typmod) == text


# ---------------------------------------------------------------------------------------------
# bytea
# ---------------------------------------------------------------------------------------------

BYTEA = [
    ("\\x", b""),
    ("\\x0102ff", b"\x01\x02\xff"),
    ("\\x00", b"\x00"),
    ("\\xDEADbeef", b"\xde\xad\xbe\xef"),
    ("abc\\000\\\\\\377", b"abc\x00\\\xff"),  # bytea_output=escape is read as well
    ("", b""),
]


@pytest.mark.parametrize(("text", "raw"), BYTEA)
@pytest.mark.parametrize(
    ("mode", "encode"),
    [
        ("bytes", lambda b: b),
        ("base64", lambda b: __import__("base64").b64encode(b).decode()),
        ("base64-url-safe", lambda b: __import__("base64").urlsafe_b64encode(b).decode()),
        ("hex", lambda b: b.hex()),
    ],
)
def test_bytea(text: str, raw: bytes, mode: str, encode: Callable[[bytes], Any]) -> None:
    assert convert(17, text, modes=TypeModes(binary_handling_mode=mode)) == encode(raw)


def test_bytea_rejects_bad_escapes() -> None:
    with pytest.raises(ValueError):
        convert(17, "\\xzz")
    with pytest.raises(ValueError):
        convert(17, "a\\9")


# ---------------------------------------------------------------------------------------------
# numeric
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("precision", "scale", "text", "expected"),
    [
        (3, 2, "1.10", "1.10"),
        (3, 2, "-9.99", "-9.99"),
        (4, 0, "10", "10"),
        (6, 4, "22.2200", "22.2200"),
        (6, 4, "0.0000", "0.0000"),
        (3, 5, "0.00001", "0.00001"),  # PG 15: scale > precision
        (5, -2, "12300", "12300"),  # PG 15: negative scale, carried as scale 0
        (1000, 0, "9" * 1000, "9" * 1000),
        (1000, 999, "-0." + "1" * 999, "-0." + "1" * 999),
    ],
)
def test_numeric_precise_fixed_scale(precision: int, scale: int, text: str, expected: str) -> None:
    encoded = convert(1700, text, numeric_typmod(precision, scale))
    assert isinstance(encoded, ConnectDecimal)
    value = encoded.value
    assert encoded == base64.b64encode(decimal_to_unscaled_bytes(value)).decode()
    assert isinstance(value, Decimal)
    assert str(value) == expected
    assert value.as_tuple().exponent == -max(scale, 0)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("typmod", [-1, numeric_typmod(6, 4)])
def test_numeric_special_values_cannot_be_precise(text: str, typmod: int) -> None:
    with pytest.raises(UnrepresentableValueError, match="string"):
        convert(1700, text, typmod)


@pytest.mark.parametrize(
    ("text", "scale", "value_hex"),
    [
        ("10.1111", 4, "018af7"),
        ("22.2222", 4, "03640e"),
        ("10", 0, "0a"),
        ("22", 0, "16"),
        ("0", 0, "00"),
        ("-1", 0, "ff"),
        ("127", 0, "7f"),
        ("128", 0, "0080"),
        ("-128", 0, "80"),
        ("-129", 0, "ff7f"),
        ("1.50", 1, "0f"),
        ("1000", 0, "03e8"),
        ("0.001", 3, "01"),
        ("-0.000100", 4, "ff"),
    ],
)
def test_numeric_variable_scale(text: str, scale: int, value_hex: str) -> None:
    assert convert(1700, text) == {"scale": scale, "value": bytes.fromhex(value_hex)}


def test_numeric_variable_scale_huge() -> None:
    text = "-" + "123456789" * 1000 + "." + "987654321" * 100
    value = convert(1700, text)
    assert value["scale"] == 900
    assert int.from_bytes(value["value"], "big", signed=True) == -int(
        Decimal(text.replace(".", "")).copy_abs()
    )


@pytest.mark.parametrize(
    ("typmod", "text", "expected"),
    [
        (-1, "10.1111", 10.1111),
        (numeric_typmod(6, 4), "22.2200", 22.22),
        (-1, "NaN", "NaN"),
        (-1, "Infinity", "Infinity"),
        (-1, "-Infinity", "-Infinity"),
        (-1, "1" * 400, "Infinity"),  # overflows a double, as BigDecimal.doubleValue() does
    ],
)
def test_numeric_double(typmod: int, text: str, expected: float | str) -> None:
    value = convert(1700, text, typmod, DOUBLE)
    assert type(value) is type(expected)
    assert value == expected


@pytest.mark.parametrize(
    ("typmod", "text", "expected"),
    [
        (numeric_typmod(3, 2), "1.10", "1.10"),
        (numeric_typmod(4, 0), "10", "10"),
        (-1, "10.1111", "10.1111"),
        (numeric_typmod(6, 4), "22.0000", "22.0000"),
        (-1, "22", "22"),
        (numeric_typmod(3, 2), "NaN", "NAN"),
        (-1, "NaN", "NAN"),
        (-1, "Infinity", "POSITIVE_INFINITY"),
        (-1, "-Infinity", "NEGATIVE_INFINITY"),
        (-1, "0.0000001", "1E-7"),
        (numeric_typmod(12, 10), "0.0000000100", "1.00E-8"),
    ],
)
def test_numeric_string(typmod: int, text: str, expected: str) -> None:
    assert convert(1700, text, typmod, STRING_DEC) == expected


# ---------------------------------------------------------------------------------------------
# date
# ---------------------------------------------------------------------------------------------

DATES = [
    ("1970-01-01", 0),
    ("2016-11-04", 17109),
    ("1969-12-31", -1),
    ("0001-01-01", -719162),
    ("9999-12-31", 2932896),
    ("10000-01-01", 2932897),
    ("5874897-12-31", 2145042905),
    ("2000-02-29", 11016),
    ("2024-02-29", 19782),
    ("1900-03-01", -25508),
    ("0044-03-15 BC", -735160),
    ("4714-11-24 BC", -2440588),
    ("0001-12-31 BC", -719163),
    ("infinity", 2147483647),
    ("-infinity", -2147483648),
]


@pytest.mark.parametrize(("text", "days"), DATES)
@pytest.mark.parametrize("modes", [DEFAULT, MICRO, CONNECT])
def test_date(text: str, days: int, modes: TypeModes) -> None:
    assert convert(1082, text, modes=modes) == days


# ---------------------------------------------------------------------------------------------
# time
# ---------------------------------------------------------------------------------------------

TIMES = [
    # text, micros past midnight
    ("00:00:00", 0),
    ("13:51:30", 49_890_000_000),
    ("13:51:30.1", 49_890_100_000),
    ("13:51:30.12", 49_890_120_000),
    ("13:51:30.123", 49_890_123_000),
    ("13:51:30.1235", 49_890_123_500),
    ("13:51:30.12346", 49_890_123_460),
    ("13:51:30.123457", 49_890_123_457),
    ("23:59:59.999999", 86_399_999_999),
    ("24:00:00", 86_400_000_000),
]


def _fits(text: str, typmod: int) -> bool:
    """Whether a value can come from a column of this precision (PostgreSQL rounds on input)."""
    fraction = text.partition(".")[2].removesuffix(" BC")
    return len(fraction) <= (6 if typmod < 0 else typmod)


@pytest.mark.parametrize(
    ("text", "micros", "typmod"),
    [(t, us, p) for t, us in TIMES for p in range(-1, 7) if _fits(t, p)],
)
@pytest.mark.parametrize("modes", [DEFAULT, MICRO, CONNECT])
def test_time(text: str, micros: int, typmod: int, modes: TypeModes) -> None:
    m = mapping(1083, typmod, modes)
    value = m.convert(text)
    assert type(value) is int
    if m.schema.name == "io.debezium.time.MicroTime":
        assert value == micros
    else:  # Time or Kafka Time: milliseconds
        assert m.schema.type == INT32
        assert value == micros // 1000


def test_time_milliseconds_examples() -> None:
    assert convert(1083, "13:51:30.123", 3) == 49_890_123  # Debezium tip TIME(3)
    assert convert(1083, "13:51:30.123456", -1, CONNECT) == 49_890_123  # connect truncates
    assert convert(1083, "24:00:00", 0) == 86_400_000
    assert convert(1083, "24:00:00", -1, CONNECT) == 86_400_000


# ---------------------------------------------------------------------------------------------
# timestamp
# ---------------------------------------------------------------------------------------------

TIMESTAMPS = [
    ("2018-06-20 15:13:16.945104", 1_529_507_596_945_104),  # Debezium's documented example
    ("2016-11-04 13:51:30.123456", 1_478_267_490_123_456),
    ("1970-01-01 00:00:00", 0),
    ("1969-12-31 23:59:59.999999", -1),
    ("1969-12-31 23:59:59.999", -1_000),
    ("1936-10-25 22:10:12.608", -1_047_174_587_392_000),  # Debezium tsneg
    ("0001-01-01 00:00:00", -62_135_596_800_000_000),
    ("9999-12-31 23:59:59.999999", 253_402_300_799_999_999),
    ("21016-11-04 13:51:30.123456", 601_060_312_290_123_456),  # Debezium ts_large
    ("2000-02-29 23:59:59.5", 951_868_799_500_000),
    ("0044-03-15 12:00:00 BC", -63_517_780_800_000_000),
    ("4713-01-01 00:00:00 BC", -210_863_520_000_000_000),
    ("294247-01-01 23:59:59.999999", 9_223_371_331_200_000_000 - 1),  # Debezium ts_max
    ("294276-12-31 23:59:59.999999", 2**63 - 1),  # beyond INT64 µs: saturated
    ("infinity", 9_223_372_036_825_200_000),  # Debezium: PGStatement.DATE_POSITIVE_INFINITY
    ("-infinity", -9_223_372_036_832_400_000),
]


@pytest.mark.parametrize(
    ("text", "micros", "typmod"),
    [(t, us, p) for t, us in TIMESTAMPS for p in range(-1, 7) if _fits(t, p)],
)
@pytest.mark.parametrize("modes", [DEFAULT, MICRO, CONNECT])
def test_timestamp(text: str, micros: int, typmod: int, modes: TypeModes) -> None:
    m = mapping(1114, typmod, modes)
    value = m.convert(text)
    assert type(value) is int
    if m.schema.name == "io.debezium.time.MicroTimestamp":
        assert value == micros
    elif text == "294276-12-31 23:59:59.999999":
        assert value == 9_224_318_016_000_000 - 1  # milliseconds still fit
    else:
        assert value == micros // 1000  # floored


def test_timestamp_milliseconds_examples() -> None:
    assert convert(1114, "2016-11-04 13:51:30.123", 3) == 1_478_267_490_123  # Debezium ts_ms
    assert convert(1114, "1969-12-31 23:59:59.999", 3) == -1
    assert convert(1114, "2016-11-04 13:51:30.123456", -1, CONNECT) == 1_478_267_490_123
    assert convert(1114, "1969-12-31 23:59:59.999999", -1, CONNECT) == -1
    assert convert(1114, "infinity", 3) == 9_223_372_036_825_200
    assert convert(1114, "-infinity", -1, CONNECT) == -9_223_372_036_832_400


# ---------------------------------------------------------------------------------------------
# timestamptz
# ---------------------------------------------------------------------------------------------

ZONED = [
    # text, typmod, ZonedTimestamp
    ("2018-06-20 13:13:16.945104+00", -1, "2018-06-20T13:13:16.945104Z"),
    ("2016-11-04 11:51:30.123456+00", -1, "2016-11-04T11:51:30.123456Z"),  # Debezium tz
    ("2016-11-04 11:51:30+00", -1, "2016-11-04T11:51:30.000000Z"),
    ("2016-11-04 11:51:30.1+00", -1, "2016-11-04T11:51:30.100000Z"),
    ("2016-11-04 11:51:30+00", 0, "2016-11-04T11:51:30Z"),
    ("2016-11-04 11:51:30.1+00", 1, "2016-11-04T11:51:30.1Z"),
    ("2016-11-04 11:51:30.12+00", 2, "2016-11-04T11:51:30.12Z"),
    ("2016-11-04 11:51:30.1+00", 3, "2016-11-04T11:51:30.100Z"),
    ("2016-11-04 11:51:30+00", 3, "2016-11-04T11:51:30.000Z"),
    ("2016-11-04 11:51:30.1234+00", 4, "2016-11-04T11:51:30.1234Z"),
    ("2016-11-04 11:51:30.12345+00", 5, "2016-11-04T11:51:30.12345Z"),
    ("2016-11-04 11:51:30.000001+00", 6, "2016-11-04T11:51:30.000001Z"),
    ("2016-11-04 13:51:30.123456+02", -1, "2016-11-04T11:51:30.123456Z"),
    ("2016-11-04 17:21:30.123+05:30", -1, "2016-11-04T11:51:30.123000Z"),
    ("2016-11-04 08:51:30-03", -1, "2016-11-04T11:51:30.000000Z"),
    ("2016-11-04 08:51:30-03", 0, "2016-11-04T11:51:30Z"),
    ("1849-12-31 19:03:58-04:56:02", -1, "1850-01-01T00:00:00.000000Z"),  # PG: LMT offset
    ("2016-12-31 23:30:00-01", 0, "2017-01-01T00:30:00Z"),  # crosses the year
    ("2016-01-01 00:30:00+01", 0, "2015-12-31T23:30:00Z"),
    ("2000-03-01 00:30:00+01", 0, "2000-02-29T23:30:00Z"),  # back into a leap day
    ("1970-01-01 00:00:00+00", -1, "1970-01-01T00:00:00.000000Z"),
    ("1969-12-31 23:59:59.999999+00", -1, "1969-12-31T23:59:59.999999Z"),
    ("0001-01-01 00:00:00+00", 0, "0001-01-01T00:00:00Z"),
    ("0001-01-01 00:30:00+01", 0, "0000-12-31T23:30:00Z"),  # into 1 BC: year 0
    ("9999-12-31 23:59:59.999999+00", -1, "9999-12-31T23:59:59.999999Z"),
    ("9999-12-31 23:30:00-01", 0, "+10000-01-01T00:30:00Z"),
    ("21016-11-04 06:51:30.123456+00", -1, "+21016-11-04T06:51:30.123456Z"),  # Debezium
    ("21016-11-04 06:51:30+00", -1, "+21016-11-04T06:51:30.000000Z"),  # Debezium tz_zero
    ("294247-01-01 23:59:59.999999+00", -1, "+294247-01-01T23:59:59.999999Z"),  # tz_max
    ("4714-12-31 23:59:59.999999+00 BC", -1, "-4713-12-31T23:59:59.999999Z"),  # tz_min
    ("0044-03-15 12:00:00+00 BC", 0, "-0043-03-15T12:00:00Z"),
    ("0001-12-31 23:00:00-02 BC", 0, "0001-01-01T01:00:00Z"),
    ("infinity", -1, "infinity"),
    ("-infinity", 3, "-infinity"),
]


def _pg_timestamptz_text(utc_micros: int, offset_seconds: int) -> str:
    """PostgreSQL's ISO output of an instant in a zone with the given offset."""
    local = utc_micros + offset_seconds * 1_000_000
    text = format_zoned_timestamp(local, 0)[:-1].replace("T", " ")
    sign = "-" if offset_seconds < 0 else "+"
    hh, rem = divmod(abs(offset_seconds), 3600)
    mm, ss = divmod(rem, 60)
    offset = f"{sign}{hh:02d}" + (f":{mm:02d}" if mm or ss else "") + (f":{ss:02d}" if ss else "")
    year = text.split("-", 1)[0] if not text.startswith("-") else None
    if year is None:  # astronomical year <= -1: PostgreSQL prints "YYYY ... BC"
        y, rest = text[1:].split("-", 1)
        return f"{1 - -int(y):04d}-{rest}{offset} BC"
    if text.startswith("0000"):
        return f"0001{text[4:]}{offset} BC"
    return text.lstrip("+") + offset


def test_timestamptz_random_instants_and_offsets() -> None:
    rnd = random.Random(17)
    offsets = [0, 3600, -3600, 19_800, -12_600, 49_500, -17_762, 1, -1, 50_400, -43_200]
    for _ in range(3000):
        utc = rnd.randint(-210_000_000_000_000_000, 9_000_000_000_000_000_000)
        utc -= utc % rnd.choice((1, 10, 1000, 1_000_000))
        offset = rnd.choice(offsets)
        text = _pg_timestamptz_text(utc, offset)
        for typmod in (-1, 0, 3, 6):
            width = 6 if typmod < 0 else typmod
            if width < 6 and utc % (10 ** (6 - width)):
                continue
            assert convert(1184, text, typmod) == format_zoned_timestamp(utc, width), text


@pytest.mark.parametrize(("text", "typmod", "zoned"), ZONED)
@pytest.mark.parametrize("modes", [DEFAULT, CONNECT])
def test_timestamptz(text: str, typmod: int, zoned: str, modes: TypeModes) -> None:
    assert convert(1184, text, typmod, modes) == zoned


# ---------------------------------------------------------------------------------------------
# timetz
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "zoned"),
    [
        ("13:51:30.123789+02", "11:51:30.123789Z"),  # Debezium ttz
        ("13:51:30.123+02", "11:51:30.123Z"),  # Debezium tptz TIME(3) WITH TIME ZONE
        ("13:51:30+00", "13:51:30Z"),
        ("13:51:30.5+00", "13:51:30.5Z"),
        ("00:30:00+02", "22:30:00Z"),
        ("23:30:00-01", "00:30:00Z"),
        ("13:51:30+05:30:15", "08:21:15Z"),
        ("13:51:30.12-03", "16:51:30.12Z"),
        ("24:00:00+00", "24:00:00Z"),
        ("24:00:00+02", "22:00:00Z"),
        ("00:00:00+00", "00:00:00Z"),
        ("13:51:30.5+01", "12:51:30.5Z"),
        ("13:51:30.000001-01", "14:51:30.000001Z"),
        ("12:00:00.5-03:30", "15:30:00.5Z"),
    ],
)
def test_timetz(text: str, zoned: str) -> None:
    assert convert(1266, text) == zoned


# ---------------------------------------------------------------------------------------------
# Malformed input fails loudly
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("oid", "text"),
    [
        (23, "x"),
        (20, "1.5"),
        (700, "abc"),
        (1700, "1.2.3"),
        (1082, "2016-02-30"),
        (1083, "25:61:00"),
        (1114, "yesterday"),
        (1184, "2016-11-04 11:51:30"),
        (1266, "13:51:30"),
    ],
)
def test_malformed_text_raises_value_error(oid: int, text: str) -> None:
    with pytest.raises((ValueError, ArithmeticError)):
        convert(oid, text)


# ---------------------------------------------------------------------------------------------
# Speed (a loose guard; the numbers to look at come from scripts/ or the report)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("oid", "typmod", "text"),
    [
        (23, -1, "123456"),
        (25, -1, "some text"),
        (1114, -1, "2016-11-04 13:51:30.123456"),
        (1184, -1, "2016-11-04 11:51:30.123456+00"),
        (1082, -1, "2016-11-04"),
        (1700, numeric_typmod(10, 2), "12345.67"),
    ],
)
def test_hot_path_is_fast(oid: int, typmod: int, text: str) -> None:
    fn = mapping(oid, typmod).convert
    n = 20_000
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn(text)
        best = min(best, (time.perf_counter() - start) / n)
    assert best < 20e-6  # generous: ~1 µs expected, CI machines vary


def test_module_exports() -> None:
    assert pgt.TypeModes is TypeModes
    assert pgt.ColumnMapping is ColumnMapping
