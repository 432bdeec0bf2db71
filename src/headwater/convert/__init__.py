"""Database-independent conversion of source values to Debezium's Kafka Connect representation.

Connectors map each captured column once to a `ColumnMapping` (its Connect schema, a converter
from the source's text form, and the value Debezium uses for a missing NOT NULL value) and then
call only the converter per value on the capture hot path.  Converters never see None: the
caller handles nulls.

* `headwater.convert.temporal`: Date/Time/MicroTime/Timestamp/MicroTimestamp/ZonedTimestamp/
  ZonedTime semantics and fast ISO text parsing.
* `headwater.convert.decimal`: Connect Decimal, VariableScaleDecimal, double and string modes.
* `headwater.convert.geometry`: Point, Geometry and Geography structs; EWKB handling.
* PostgreSQL text formats: `headwater.convert.pg_arrays` (arrays), `headwater.convert.pg_interval`
  (MicroDuration / Interval), `headwater.convert.pg_hstore` (hstore as JSON or MAP),
  `headwater.convert.pg_money` (money).
* this module: the shared configuration (`TypeModes`), `ColumnMapping` and the
  ``binary.handling.mode`` representations.

Python values of Connect types: INT8-64 `int`, FLOAT32/64 `float`, BOOLEAN `bool`, STRING
`str`, BYTES `bytes` (formats base64-encode them), Connect Decimal `decimal.Decimal` (formats
encode the unscaled value from its exponent), STRUCT `dict` keyed by field name (in field
order), ARRAY `list`, MAP `dict`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from headwater.convert.decimal import (
    DECIMAL_HANDLING_MODES,
    UnrepresentableValueError,
    decimal_to_unscaled_bytes,
)
from headwater.convert.temporal import TIME_PRECISION_MODES
from headwater.model.schema import BYTES, STRING, ConnectSchema

__all__ = [
    "BINARY_HANDLING_MODES",
    "ColumnMapping",
    "TypeModes",
    "UnrepresentableValueError",
    "binary_encoder",
    "binary_fallback",
    "binary_schema",
    "decimal_to_unscaled_bytes",
]

BINARY_HANDLING_MODES = frozenset({"bytes", "base64", "base64-url-safe", "hex"})
INTERVAL_HANDLING_MODES = frozenset({"numeric", "string"})
HSTORE_HANDLING_MODES = frozenset({"json", "map"})


@dataclass(frozen=True, slots=True)
class TypeModes:
    """The connector options that decide how values are represented (Debezium's defaults)."""

    time_precision_mode: str = "adaptive"  # 'adaptive' | 'adaptive_time_microseconds' | 'connect'
    decimal_handling_mode: str = "precise"  # 'precise' | 'double' | 'string'
    binary_handling_mode: str = "bytes"  # 'bytes' | 'base64' | 'base64-url-safe' | 'hex'
    interval_handling_mode: str = "numeric"  # 'numeric' | 'string'
    hstore_handling_mode: str = "json"  # 'json' | 'map'
    include_unknown_datatypes: bool = False
    money_fraction_digits: int = 2  # scale of money in decimal.handling.mode 'precise'

    def __post_init__(self) -> None:
        for value, allowed, option in (
            (self.time_precision_mode, TIME_PRECISION_MODES, "time.precision.mode"),
            (self.decimal_handling_mode, DECIMAL_HANDLING_MODES, "decimal.handling.mode"),
            (self.binary_handling_mode, BINARY_HANDLING_MODES, "binary.handling.mode"),
            (self.interval_handling_mode, INTERVAL_HANDLING_MODES, "interval.handling.mode"),
            (self.hstore_handling_mode, HSTORE_HANDLING_MODES, "hstore.handling.mode"),
        ):
            if value not in allowed:
                raise ValueError(
                    f"invalid {option} {value!r}; expected one of {', '.join(sorted(allowed))}"
                )
        if self.money_fraction_digits < 0:
            raise ValueError(
                f"invalid money.fraction.digits {self.money_fraction_digits}; expected >= 0"
            )


class ColumnMapping(NamedTuple):
    """How one column's values are represented.

    schema: the Connect schema, with the column's optionality.
    convert: source value (PostgreSQL: its text form; MySQL: the natural value, see
        connectors/mysql/columns.py) → Connect value; never called with None.
    fallback: the value Debezium emits for a NOT NULL column whose value is missing.
    supported: False when the type is not mapped (the caller warns, then omits or passes the
        text through); True otherwise, including unknown types carried as opaque bytes under
        ``include.unknown.datatypes``.
    """

    schema: ConnectSchema
    convert: Callable[[Any], Any]
    fallback: Any
    supported: bool = True


# ---------------------------------------------------------------------------------------------
# binary.handling.mode
# ---------------------------------------------------------------------------------------------


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _base64_url_safe(data: bytes) -> str:
    # Java's Base64.getUrlEncoder() keeps the '=' padding.
    return base64.urlsafe_b64encode(data).decode("ascii")


def _hex(data: bytes) -> str:
    return binascii.hexlify(data).decode("ascii")  # lower case, as Debezium's HexConverter


def _bytes(data: bytes) -> bytes:
    return data


_BINARY_ENCODERS: dict[str, Callable[[bytes], Any]] = {
    "bytes": _bytes,
    "base64": _base64,
    "base64-url-safe": _base64_url_safe,
    "hex": _hex,
}


def binary_schema(mode: str, optional: bool) -> ConnectSchema:
    """BYTES in ``bytes`` mode, STRING in the ``base64``, ``base64-url-safe`` and ``hex`` modes."""
    if mode not in _BINARY_ENCODERS:
        raise ValueError(f"unknown binary.handling.mode {mode!r}")
    return ConnectSchema(BYTES if mode == "bytes" else STRING, optional)


def binary_encoder(mode: str) -> Callable[[bytes], Any]:
    """bytes → the Connect value of `mode` (the bytes themselves, base64, url-safe base64, hex)."""
    try:
        return _BINARY_ENCODERS[mode]
    except KeyError:
        raise ValueError(f"unknown binary.handling.mode {mode!r}") from None


def binary_fallback(mode: str) -> Any:
    """Debezium's missing NOT NULL binary value: empty bytes, or the empty string."""
    return b"" if mode == "bytes" else ""
