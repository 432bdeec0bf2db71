"""The per-type tests the SQL Server and Db2 connectors share: a connector's `column_mapping`
(type name, size, scale, optional, modes) against tables of expected Connect schemas and
values, in every `time.precision.mode`, `decimal.handling.mode` and `binary.handling.mode`.
Each connector's test module subclasses `TypeTableContract` with only its type tables."""

from __future__ import annotations

from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, ClassVar

import pytest

from headwater.relational.changetables.catalog import ColumnMapping

TIME_MODES = ("adaptive", "adaptive_time_microseconds", "connect")
DECIMAL_MODES = ("precise", "double", "string")
BINARY_MODES = ("bytes", "base64", "base64-url-safe", "hex")

DAY = (date(2016, 11, 4) - date(1970, 1, 1)).days
T = time(13, 51, 30, 123456)
T_MS, T_US = 49_890_123, 49_890_123_456
DT = datetime(2016, 11, 4, 13, 51, 30, 123456)
DT_MS, DT_US = 1_478_267_490_123, 1_478_267_490_123_456

DATE, TIME, MICRO_TIME, NANO_TIME = ("io.debezium.time.Date", "io.debezium.time.Time",
                                     "io.debezium.time.MicroTime", "io.debezium.time.NanoTime")
TS, MICRO_TS, NANO_TS = ("io.debezium.time.Timestamp", "io.debezium.time.MicroTimestamp",
                         "io.debezium.time.NanoTimestamp")
K_DATE, K_TIME, K_TS = ("org.apache.kafka.connect.data.Date", "org.apache.kafka.connect.data.Time",
                        "org.apache.kafka.connect.data.Timestamp")
DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE = "io.debezium.data.VariableScaleDecimal"

# A binary value in each binary.handling.mode: (schema type, converted value).
BINARY_VALUE = b"\x00\x01\xff"
BINARY_BY_MODE: dict[str, tuple[str, Any]] = {
    "bytes": ("bytes", BINARY_VALUE), "base64": ("string", "AAH/"),
    "base64-url-safe": ("string", "AAH_"), "hex": ("string", "0001ff")}


def check_modeless(column_mapping: ColumnMapping, type_name: str, size: int | None,
                   scale: int | None, value: Any, schema_type: str, name: str | None,
                   expected: Any, time_mode: str, decimal_mode: str) -> None:
    """A type the time and decimal modes do not change."""
    mapping = column_mapping(type_name, size, scale, True, time_mode=time_mode,
                             decimal_mode=decimal_mode)
    assert mapping is not None
    schema, convert, _ = mapping
    assert (schema.type, schema.name) == (schema_type, name)
    assert convert(value) == expected


def check_temporal(column_mapping: ColumnMapping, type_name: str, size: int | None,
                   scale: int | None, value: Any, by_mode: dict[str, tuple[str, str, int]],
                   time_mode: str) -> None:
    """A temporal type in `time_mode`: schema, an int value, fallback 0 (NOT NULL)."""
    mapping = column_mapping(type_name, size, scale, False, time_mode=time_mode)
    assert mapping is not None
    schema, convert, fallback = mapping
    schema_type, name, expected = by_mode[time_mode]
    assert (schema.type, schema.name, schema.optional) == (schema_type, name, False)
    got = convert(value)
    assert got == expected and type(got) is int
    assert fallback == 0


def check_decimal(column_mapping: ColumnMapping, type_name: str, size: int | None,
                  scale: int | None, value: Decimal, expected: tuple[str, Any],
                  parameters: dict[str, str] | None, decimal_mode: str) -> None:
    """A decimal type in `decimal_mode`; `parameters`: a precise Decimal's schema parameters
    (None: a VariableScaleDecimal in precise mode)."""
    mapping = column_mapping(type_name, size, scale, True, decimal_mode=decimal_mode)
    assert mapping is not None
    schema, convert, _ = mapping
    schema_type, want = expected
    assert schema.type == schema_type
    if decimal_mode != "precise":
        assert schema.name is None
    elif parameters is None:
        assert schema.name == VARIABLE_SCALE
    else:
        assert schema.name == DECIMAL and schema.parameters == parameters
    got = convert(value)
    assert got == want and isinstance(got, type(want))  # precise: a str subclass


def check_binary(column_mapping: ColumnMapping, type_name: str, size: int | None,
                 binary_mode: str) -> None:
    """A binary type in `binary_mode`; NOT NULL's fallback is the mode's empty value."""
    mapping = column_mapping(type_name, size, None, False, binary_mode=binary_mode)
    assert mapping is not None
    schema, convert, fallback = mapping
    schema_type, want = BINARY_BY_MODE[binary_mode]
    assert (schema.type, schema.name, schema.optional) == (schema_type, None, False)
    assert convert(BINARY_VALUE) == want
    assert convert(bytearray(BINARY_VALUE)) == want  # drivers may hand over a bytearray
    assert fallback == (b"" if binary_mode == "bytes" else "")


# (type name, size, scale, value, schema type, schema name, converted value)
Modeless = tuple[str, int | None, int | None, Any, str, str | None, Any]
# (type name, size, scale, value, {time.precision.mode: (schema type, name, value)})
Temporal = tuple[str, int | None, int | None, Any, dict[str, tuple[str, str, int]]]
# (type name, size, scale, value, {decimal.handling.mode: (schema type, value)}, precise
#  Decimal's schema parameters or None for a VariableScaleDecimal)
Decimals = tuple[str, int | None, int | None, Decimal, dict[str, tuple[str, Any]],
                 dict[str, str] | None]


class TypeTableContract:
    """The tests every change-table connector's type table passes; a subclass (`Test...`)
    sets `column_mapping` (a staticmethod) and its tables, one test case per row."""

    column_mapping: ClassVar[ColumnMapping]
    MODELESS: ClassVar[list[Modeless]] = []
    TEMPORAL: ClassVar[list[Temporal]] = []
    DECIMALS: ClassVar[list[Decimals]] = []
    BINARIES: ClassVar[tuple[str, ...]] = ()

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """Parametrizes the tests by the subclass's tables (pytest calls this per test)."""
        tables: dict[str, tuple[list[Any], Any]] = {
            "modeless": (self.MODELESS, lambda c: c[0]),
            "temporal": (self.TEMPORAL, lambda c: f"{c[0]}({c[1]},{c[2]})"),
            "decimal": (self.DECIMALS, lambda c: f"{c[0]}({c[1]},{c[2]})={c[3]}"),
            "binary_type": (list(self.BINARIES), str),
        }
        for name, (rows, ident) in tables.items():
            if name in metafunc.fixturenames:
                metafunc.parametrize(name, rows, ids=[ident(r) for r in rows])

    @pytest.mark.parametrize("time_mode", TIME_MODES)
    @pytest.mark.parametrize("decimal_mode", DECIMAL_MODES)
    def test_types_the_modes_do_not_change(self, modeless: Modeless, time_mode: str,
                                           decimal_mode: str) -> None:
        check_modeless(self.column_mapping, *modeless, time_mode, decimal_mode)

    @pytest.mark.parametrize("time_mode", TIME_MODES)
    def test_temporal_types_in_every_time_precision_mode(self, temporal: Temporal,
                                                         time_mode: str) -> None:
        check_temporal(self.column_mapping, *temporal, time_mode)

    @pytest.mark.parametrize("decimal_mode", DECIMAL_MODES)
    def test_decimal_types_in_every_decimal_handling_mode(self, decimal: Decimals,
                                                          decimal_mode: str) -> None:
        type_name, size, scale, value, by_mode, parameters = decimal
        check_decimal(self.column_mapping, type_name, size, scale, value,
                      by_mode[decimal_mode], parameters, decimal_mode)

    @pytest.mark.parametrize("binary_mode", BINARY_MODES)
    def test_binary_types_in_every_binary_handling_mode(self, binary_type: str,
                                                        binary_mode: str) -> None:
        check_binary(self.column_mapping, binary_type, 8, binary_mode)
