"""Db2's types as Debezium's Db2ValueConverters (on JdbcValueConverters) maps them, at the
converter: every `time.precision.mode`, `decimal.handling.mode` and `binary.handling.mode`,
table-driven (the checks are the change-table connectors' shared ones,
tests/changetables/type_cases.py).  Sizes and scales are SYSCAT.COLUMNS' LENGTH and SCALE: a
DECIMAL's LENGTH is its precision, a TIMESTAMP's SCALE its fractional digits, and a TIME's
SCALE is 0 (Db2 keeps no fractions of a second; Db2ValueConverters takes TIME's precision
from its scale).  The end-to-end counterpart (the types the emulation can represent,
snapshot and stream) is the conformance suite's types table (tests/conformance/drivers/db2.py).
"""

from __future__ import annotations

from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import pytest

from headwater.connectors.db2.types import column_mapping
from headwater.convert.decimal import UnrepresentableValueError
from tests.changetables.type_cases import (
    DATE,
    DAY,
    DT,
    DT_MS,
    DT_US,
    K_DATE,
    K_TIME,
    K_TS,
    MICRO_TIME,
    MICRO_TS,
    NANO_TS,
    TIME,
    TS,
    Decimals,
    Modeless,
    Temporal,
    TypeTableContract,
)

XML = "io.debezium.data.Xml"
T0_MS = 49_890_000  # 13:51:30, TIME's whole seconds
DT0_MS = DT_MS - 123  # 2016-11-04 13:51:30

# (TYPENAME, LENGTH, SCALE, value, schema type, schema name, converted value): the same in
# every mode.
MODELESS: list[Modeless] = [
    ("BOOLEAN", 1, 0, True, "boolean", None, True),
    ("SMALLINT", 2, 0, -32768, "int16", None, -32768),
    ("INTEGER", 4, 0, 2**31 - 1, "int32", None, 2**31 - 1),
    ("BIGINT", 8, 0, -(2**63), "int64", None, -(2**63)),
    ("REAL", 4, 0, 3.3, "float32", None, 3.3),
    ("DOUBLE", 8, 0, 4.44, "float64", None, 4.44),
    ("CHARACTER", 3, 0, "ab ", "string", None, "ab "),
    ("VARCHAR", 20, 0, "tab\there", "string", None, "tab\there"),
    ("LONG VARCHAR", 32700, 0, "long", "string", None, "long"),
    ("CLOB", 1048576, 0, "clob", "string", None, "clob"),
    ("GRAPHIC", 2, 0, "žš", "string", None, "žš"),
    ("VARGRAPHIC", 20, 0, "✓ 😀", "string", None, "✓ 😀"),
    ("DBCLOB", 1048576, 0, "dbclob", "string", None, "dbclob"),
    ("XML", 0, 0, "<a>1</a>", "string", XML, "<a>1</a>"),
]

# (TYPENAME, LENGTH, SCALE, value, {time.precision.mode: (schema type, name, converted
# value)})
TEMPORAL: list[Temporal] = [
    ("DATE", 10, 0, date(2016, 11, 4), {
        "adaptive": ("int32", DATE, DAY), "adaptive_time_microseconds": ("int32", DATE, DAY),
        "connect": ("int32", K_DATE, DAY)}),
    ("TIME", 10, 0, time(13, 51, 30), {
        "adaptive": ("int32", TIME, T0_MS),
        "adaptive_time_microseconds": ("int64", MICRO_TIME, T0_MS * 1000),
        "connect": ("int32", K_TIME, T0_MS)}),
    ("TIMESTAMP", 10, 0, datetime(2016, 11, 4, 13, 51, 30), {
        "adaptive": ("int64", TS, DT0_MS), "adaptive_time_microseconds": ("int64", TS, DT0_MS),
        "connect": ("int64", K_TS, DT0_MS)}),
    ("TIMESTAMP", 10, 3, datetime(2016, 11, 4, 13, 51, 30, 123000), {
        "adaptive": ("int64", TS, DT_MS), "adaptive_time_microseconds": ("int64", TS, DT_MS),
        "connect": ("int64", K_TS, DT_MS)}),
    ("TIMESTAMP", 10, 6, DT, {
        "adaptive": ("int64", MICRO_TS, DT_US),
        "adaptive_time_microseconds": ("int64", MICRO_TS, DT_US),
        "connect": ("int64", K_TS, DT_MS)}),
    ("TIMESTAMP", 10, None, DT, {  # no SCALE: Db2's default TIMESTAMP(6)
        "adaptive": ("int64", MICRO_TS, DT_US),
        "adaptive_time_microseconds": ("int64", MICRO_TS, DT_US),
        "connect": ("int64", K_TS, DT_MS)}),
    ("TIMESTAMP", 10, 9, DT, {
        "adaptive": ("int64", NANO_TS, DT_US * 1000),
        "adaptive_time_microseconds": ("int64", NANO_TS, DT_US * 1000),
        "connect": ("int64", K_TS, DT_MS)}),
    ("TIMESTAMP", 10, 12, DT, {
        "adaptive": ("int64", NANO_TS, DT_US * 1000),
        "adaptive_time_microseconds": ("int64", NANO_TS, DT_US * 1000),
        "connect": ("int64", K_TS, DT_MS)}),
]


def _vsd(unscaled: int, scale: int) -> dict[str, Any]:
    """A VariableScaleDecimal value: the scale and the unscaled two's-complement bytes."""
    return {"scale": scale,
            "value": unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)}


# (TYPENAME, LENGTH, SCALE, value, {decimal.handling.mode: (schema type, converted value)},
#  precise schema parameters: None for a VariableScaleDecimal)
DECIMALS: list[Decimals] = [
    ("DECIMAL", 10, 2, Decimal("-12345678.91"), {
        "precise": ("bytes", "tmn9LQ=="), "double": ("float64", -12345678.91),
        "string": ("string", "-12345678.91")},
     {"scale": "2", "connect.decimal.precision": "10"}),
    ("NUMERIC", 5, 0, Decimal("12345"), {
        "precise": ("bytes", "MDk="), "double": ("float64", 12345.0),
        "string": ("string", "12345")},
     {"scale": "0", "connect.decimal.precision": "5"}),
    # JdbcValueConverters writes BigDecimal.toPlainString() in string mode: never "1E-10".
    ("DECIMAL", 31, 10, Decimal("0.0000000001"), {
        "precise": ("bytes", "AQ=="), "double": ("float64", 1e-10),
        "string": ("string", "0.0000000001")},
     {"scale": "10", "connect.decimal.precision": "31"}),
    # DECFLOAT: trailing zeros stripped for VariableScaleDecimal only (convertDecfloat).
    ("DECFLOAT", 16, 0, Decimal("12.3450"), {
        "precise": ("struct", _vsd(12345, 3)), "double": ("float64", 12.345),
        "string": ("string", "12.3450")}, None),
    ("DECFLOAT", 16, 0, Decimal("1E+10"), {
        "precise": ("struct", _vsd(10_000_000_000, 0)), "double": ("float64", 1e10),
        "string": ("string", "10000000000")}, None),
    ("DECFLOAT", 8, 0, Decimal("-0.5"), {
        "precise": ("struct", _vsd(-5, 1)), "double": ("float64", -0.5),
        "string": ("string", "-0.5")}, None),
]


class TestDb2Types(TypeTableContract):
    column_mapping = staticmethod(column_mapping)
    MODELESS = MODELESS
    TEMPORAL = TEMPORAL
    DECIMALS = DECIMALS
    BINARIES = ("BINARY", "VARBINARY", "BLOB")


@pytest.mark.parametrize(("value", "double", "string"), [
    (Decimal("NaN"), "NaN", "NAN"),
    (Decimal("Infinity"), "Infinity", "POSITIVE_INFINITY"),
    (Decimal("-Infinity"), "-Infinity", "NEGATIVE_INFINITY"),
])
def test_decfloat_special_values(value: Decimal, double: str, string: str) -> None:
    """DECFLOAT holds NaN and infinities: SpecialValueDecimal's names in string mode, the
    JSON converter's text of a double in double mode, and a failure naming the column and
    the remedy in precise mode (Debezium stops the connector there too)."""
    for mode, want in (("double", double), ("string", string)):
        mapping = column_mapping("DECFLOAT", 16, 0, True, decimal_mode=mode, column="AMOUNT")
        assert mapping is not None and mapping[1](value) == want
    precise = column_mapping("DECFLOAT", 16, 0, True, decimal_mode="precise", column="AMOUNT")
    assert precise is not None
    with pytest.raises(UnrepresentableValueError, match=r"AMOUNT.*string"):
        precise[1](value)


def test_type_names_are_read_as_the_catalog_spells_them() -> None:
    """SYSCAT.COLUMNS' TYPENAME is upper case and may carry extra blanks."""
    spaced = column_mapping(" long  varchar ", 100, 0, True)
    assert spaced is not None and spaced[0].type == "string"
    assert column_mapping("int", 4, 0, True) is not None  # INT, the synonym


def test_unknown_types_are_not_mapped() -> None:
    assert column_mapping("ST_POINT", 0, 0, True) is None
    assert column_mapping("ARRAY", 0, 0, True) is None
