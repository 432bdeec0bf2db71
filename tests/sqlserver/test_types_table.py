"""SQL Server's types as Debezium maps them (the reference's SQL Server type table, chapter 4.8,
plus upstream's binary and uniqueidentifier), at the converter: every `time.precision.mode`,
`decimal.handling.mode` and `binary.handling.mode`, table-driven (the checks are the
change-table connectors' shared ones, tests/changetables/type_cases.py).  The end-to-end
counterpart (the types the emulation can represent, snapshot and stream) is the conformance
suite's types table (tests/conformance/drivers/sqlserver.py)."""

from __future__ import annotations

import uuid
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal

from headwater.connectors.sqlserver.types import column_mapping
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
    NANO_TIME,
    NANO_TS,
    T_MS,
    T_US,
    TIME,
    TS,
    Decimals,
    Modeless,
    T,
    Temporal,
    TypeTableContract,
)

# (type, precision, scale, value, expected schema type, schema name, converted value):
# the same in every mode.
MODELESS: list[Modeless] = [
    ("bit", None, None, True, "boolean", None, True),
    ("tinyint", None, None, 255, "int16", None, 255),
    ("smallint", None, None, -32768, "int16", None, -32768),
    ("int", None, None, 2**31 - 1, "int32", None, 2**31 - 1),
    ("bigint", None, None, -(2**63), "int64", None, -(2**63)),
    ("real", 24, None, 3.3, "float32", None, 3.3),
    ("float", 53, None, 4.44, "float64", None, 4.44),
    ("char", 3, None, "ab ", "string", None, "ab "),
    ("varchar", 20, None, "x", "string", None, "x"),
    ("text", None, None, "t", "string", None, "t"),
    ("nchar", 2, None, "žš", "string", None, "žš"),
    ("nvarchar", 20, None, "😀", "string", None, "😀"),
    ("ntext", None, None, "n", "string", None, "n"),
    ("xml", None, None, "<a>1</a>", "string", "io.debezium.data.Xml", "<a>1</a>"),
    ("uniqueidentifier", None, None, uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
     "string", None, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"),
    ("binary", 3, None, b"\x00\x01\xff", "bytes", None, b"\x00\x01\xff"),
    ("varbinary", 8, None, b"\x00\x01\xff", "bytes", None, b"\x00\x01\xff"),
    ("image", None, None, b"\x00\x01\xff", "bytes", None, b"\x00\x01\xff"),
    ("datetimeoffset", 7, None,
     datetime(2016, 11, 4, 13, 51, 30, 123456, tzinfo=timezone(timedelta(hours=2))),
     "string", "io.debezium.time.ZonedTimestamp", "2016-11-04T13:51:30.123456+02:00"),
]

# (type, precision, scale, value, {time.precision.mode: (schema type, name, converted value)})
TEMPORAL: list[Temporal] = [
    ("date", None, None, date(2016, 11, 4), {
        "adaptive": ("int32", DATE, DAY), "adaptive_time_microseconds": ("int32", DATE, DAY),
        "connect": ("int32", K_DATE, DAY)}),
    ("time", 3, None, time(13, 51, 30, 123000), {
        "adaptive": ("int32", TIME, T_MS),
        "adaptive_time_microseconds": ("int64", MICRO_TIME, T_MS * 1000),
        "connect": ("int32", K_TIME, T_MS)}),
    ("time", 6, None, T, {
        "adaptive": ("int64", MICRO_TIME, T_US), "adaptive_time_microseconds": (
            "int64", MICRO_TIME, T_US), "connect": ("int32", K_TIME, T_MS)}),
    ("time", 7, None, T, {
        "adaptive": ("int64", NANO_TIME, T_US * 1000),
        "adaptive_time_microseconds": ("int64", MICRO_TIME, T_US),
        "connect": ("int32", K_TIME, T_MS)}),
    ("datetime", None, None, datetime(2016, 11, 4, 13, 51, 30, 123000), {
        "adaptive": ("int64", TS, DT_MS), "adaptive_time_microseconds": ("int64", TS, DT_MS),
        "connect": ("int64", K_TS, DT_MS)}),
    ("smalldatetime", None, None, datetime(2016, 11, 4, 13, 51), {
        "adaptive": ("int64", TS, DT_MS - 30_123), "adaptive_time_microseconds": (
            "int64", TS, DT_MS - 30_123), "connect": ("int64", K_TS, DT_MS - 30_123)}),
    ("datetime2", 3, None, datetime(2016, 11, 4, 13, 51, 30, 123000), {
        "adaptive": ("int64", TS, DT_MS), "adaptive_time_microseconds": ("int64", TS, DT_MS),
        "connect": ("int64", K_TS, DT_MS)}),
    ("datetime2", 6, None, DT, {
        "adaptive": ("int64", MICRO_TS, DT_US),
        "adaptive_time_microseconds": ("int64", MICRO_TS, DT_US),
        "connect": ("int64", K_TS, DT_MS)}),
    ("datetime2", 7, None, DT, {
        "adaptive": ("int64", NANO_TS, DT_US * 1000),
        "adaptive_time_microseconds": ("int64", NANO_TS, DT_US * 1000),
        "connect": ("int64", K_TS, DT_MS)}),
]


def _decimal_parameters(scale: int, precision: int) -> dict[str, str]:
    return {"scale": str(scale), "connect.decimal.precision": str(precision)}


# (type, precision, scale, value, {decimal.handling.mode: (schema type, converted value)},
#  precise schema parameters); money and smallmoney have fixed ones, (19,4) and (10,4)
DECIMALS: list[Decimals] = [
    ("decimal", 10, 2, Decimal("-12345678.91"), {
        "precise": ("bytes", "tmn9LQ=="), "double": ("float64", -12345678.91),
        "string": ("string", "-12345678.91")}, _decimal_parameters(2, 10)),
    ("numeric", 5, 0, Decimal("12345"), {
        "precise": ("bytes", "MDk="), "double": ("float64", 12345.0),
        "string": ("string", "12345")}, _decimal_parameters(0, 5)),
    ("money", None, None, Decimal("922337203685477.5807"), {
        "precise": ("bytes", "f/////////8="), "double": ("float64", 922337203685477.5807),
        "string": ("string", "922337203685477.5807")}, _decimal_parameters(4, 19)),
    ("smallmoney", None, None, Decimal("1.5"), {
        "precise": ("bytes", "Opg="), "double": ("float64", 1.5),
        "string": ("string", "1.5000")}, _decimal_parameters(4, 10)),
    # JdbcValueConverters writes BigDecimal.toPlainString() in string mode: never "1E-9".
    ("decimal", 18, 9, Decimal("0.000000001"), {
        "precise": ("bytes", "AQ=="), "double": ("float64", 1e-9),
        "string": ("string", "0.000000001")}, _decimal_parameters(9, 18)),
]


class TestSqlServerTypes(TypeTableContract):
    column_mapping = staticmethod(column_mapping)
    MODELESS = MODELESS
    TEMPORAL = TEMPORAL
    DECIMALS = DECIMALS
    BINARIES = ("binary", "varbinary", "image", "timestamp", "rowversion")


def test_unknown_types_are_not_mapped() -> None:
    assert column_mapping("geography", None, None, True) is None
    assert column_mapping("sql_variant", None, None, True) is None
