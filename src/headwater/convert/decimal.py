"""Debezium's decimal representations (``decimal.handling.mode``), independent of any database.

=======  ===================  ==================================================================
mode     column               Connect value (Python)
=======  ===================  ==================================================================
precise  ``NUMERIC(p, s)``    BYTES ``org.apache.kafka.connect.data.Decimal`` with parameters
                              ``scale`` and ``connect.decimal.precision``: a ``decimal.Decimal``
                              with exponent ``-s``
precise  ``NUMERIC``          STRUCT ``io.debezium.data.VariableScaleDecimal``:
                              ``{"scale": int, "value": bytes}``
double   any                  FLOAT64: ``float``
string   any                  STRING: Java ``BigDecimal.toString()``
=======  ===================  ==================================================================

Decisions taken from current Debezium (``PostgresValueConverter.convertDecimal``,
``SpecialValueDecimal``, ``VariableScaleDecimal``; 3.x main):

* A variable-scale value has its trailing zeros stripped before encoding, and a negative scale
  is reset to 0: ``10.1000`` → scale 1, unscaled 101; ``100`` → scale 0, unscaled 100;
  ``0.000`` → scale 0, unscaled 0.
* The unscaled value is Java ``BigInteger.toByteArray()``: minimal big-endian two's
  complement, at least one byte (0 → ``00``, -1 → ``ff``, 128 → ``00 80``, -129 → ``ff 7f``).
* NaN and ±Infinity: ``double`` gives ``nan``/``inf``/``-inf``; ``string`` gives Debezium's
  ``SpecialValueDecimal`` names ``"NAN"``, ``"POSITIVE_INFINITY"``, ``"NEGATIVE_INFINITY"``
  (not PostgreSQL's spelling); ``precise`` cannot carry them and Debezium fails the connector
  with a ``ConnectException`` ("...set decimal handling mode to 'string'").  We raise
  `UnrepresentableValueError` (a ``ValueError``) with the same advice; an older guide said
  Debezium emits null here, current Debezium does not.
* ``string`` mode is ``BigDecimal.toString()``, which switches to scientific notation when the
  exponent is positive or the adjusted exponent is below -6 (``0.0000001`` → ``1E-7``).
  Python's ``str(Decimal)`` implements the same rule (both follow the General Decimal
  Arithmetic "to-scientific-string"), so it is used as is.

Values are never rounded through binary floating point except in ``double`` mode, and digit
strings longer than CPython's 4300-digit ``int()`` limit go through ``Decimal`` instead.
"""

from __future__ import annotations

import math
from base64 import b64decode as _b64decode
from binascii import b2a_base64 as _b2a_base64
from collections.abc import Callable
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_HALF_UP, Context, Decimal
from typing import Any

from headwater.model.schema import (
    BYTES,
    FLOAT64,
    INT32,
    STRING,
    STRUCT,
    ConnectField,
    ConnectSchema,
)

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
SCALE_PARAMETER = "scale"
PRECISION_PARAMETER = "connect.decimal.precision"

PRECISE = "precise"
DOUBLE = "double"
STRING_MODE = "string"
DECIMAL_HANDLING_MODES = frozenset({PRECISE, DOUBLE, STRING_MODE})

# Debezium's SpecialValueDecimal.toString() of the special values, keyed by PostgreSQL's text.
SPECIAL_VALUE_STRINGS = {
    "NaN": "NAN",
    "Infinity": "POSITIVE_INFINITY",
    "-Infinity": "NEGATIVE_INFINITY",
}

# Exact arithmetic for any numeric PostgreSQL can store (131072 + 16383 digits).
EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, rounding=ROUND_HALF_UP)


def parse_decimal(text: str) -> Decimal:
    """``Decimal(text)``, raising ``ValueError`` (not ``decimal.InvalidOperation``) on bad text."""
    try:
        return Decimal(text)
    except ArithmeticError:
        raise ValueError(f"invalid decimal {text!r}") from None


class UnrepresentableValueError(ValueError):
    """A source value the configured representation cannot carry (e.g. NaN as a Connect Decimal).

    Debezium fails the connector in these cases; the caller decides whether to fail or to
    substitute null.
    """


# ---------------------------------------------------------------------------------------------
# Unscaled two's-complement bytes
# ---------------------------------------------------------------------------------------------


def int_to_twos_complement(value: int) -> bytes:
    """Java ``BigInteger.toByteArray()``: minimal big-endian two's complement, >= 1 byte."""
    magnitude = value if value >= 0 else ~value
    return value.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def twos_complement_to_int(data: bytes) -> int:
    """Inverse of `int_to_twos_complement` (Java ``new BigInteger(byte[])``)."""
    return int.from_bytes(data, "big", signed=True)


def unscaled_value(d: Decimal) -> int:
    """The unscaled integer of a finite decimal: ``Decimal('-1.50')`` → -150 (scale 2)."""
    exponent = d.as_tuple().exponent
    if not isinstance(exponent, int):
        raise UnrepresentableValueError(f"{d} has no unscaled value")
    return int(d.scaleb(-exponent, context=EXACT))


_INF = float("inf")


def connect_float(text: str) -> float | str:
    """A FLOAT32/FLOAT64 value as Kafka's JsonConverter writes it.

    Jackson (QUOTE_NON_NUMERIC_NUMBERS) writes non-finite doubles as the strings "NaN",
    "Infinity" and "-Infinity"; orjson would write null, so those stay strings (the record
    holds the Connect JSON form, as for decimals), as do values too large for a double.
    """
    v = float(text)
    if v - v == 0.0:  # finite (inf - inf and nan - nan are nan)
        return v
    if math.isnan(v):
        return "NaN"
    return "Infinity" if v == _INF else "-Infinity"


class ConnectDecimal(str):
    """A Connect `Decimal` in its JsonConverter encoding, carrying its numeric value.

    The string is the base64 of the unscaled two's-complement value, which is what Debezium's
    JSON holds; `.value` is the `Decimal` for formats that want the number.  Being a `str`,
    orjson writes it natively: decimals then cost the JSON hot path no Python callback (an
    orjson `default=` call per decimal cost more than the rest of the event).
    """

    __slots__ = ("scale",)
    scale: int

    @classmethod
    def of(cls, unscaled: int, scale: int) -> ConnectDecimal:
        magnitude = unscaled if unscaled >= 0 else ~unscaled
        raw = unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)
        obj = cls(_b2a_base64(raw, newline=False).decode("ascii"))
        obj.scale = scale
        return obj

    @property
    def value(self) -> Decimal:
        """The number (computed on demand: the JSON hot path never needs it)."""
        unscaled = int.from_bytes(_b64decode(self), "big", signed=True)
        return Decimal(unscaled).scaleb(-self.scale, context=EXACT)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_connect_decimal, (str(self), self.scale))


def _connect_decimal(text: str, scale: int) -> ConnectDecimal:
    obj = ConnectDecimal(text)
    obj.scale = scale
    return obj


def decimal_to_unscaled_bytes(d: Decimal) -> bytes:
    """The Connect ``Decimal`` encoding of `d`: its unscaled value as two's-complement bytes.

    The scale travels in the schema: ``Decimal("1.10")`` (scale 2) encodes 110 as ``6e``, and
    ``Decimal("-1.29")`` encodes -129 as ``ff 7f``.
    """
    return int_to_twos_complement(unscaled_value(d))


# ---------------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------------


def decimal_schema(precision: int, scale: int, optional: bool) -> ConnectSchema:
    """Kafka Connect ``Decimal`` as Debezium declares it (``SpecialValueDecimal.builder``)."""
    return ConnectSchema(
        BYTES,
        optional,
        DECIMAL,
        1,
        {SCALE_PARAMETER: str(scale), PRECISION_PARAMETER: str(precision)},
    )


_VSD_FIELDS = (
    ConnectField("scale", ConnectSchema(INT32, False)),
    ConnectField("value", ConnectSchema(BYTES, False)),
)


def variable_scale_decimal_schema(optional: bool) -> ConnectSchema:
    """``io.debezium.data.VariableScaleDecimal``: struct {scale INT32, value BYTES}, version 1,
    with Debezium's doc "Variable scaled decimal"."""
    return ConnectSchema(STRUCT, optional, VARIABLE_SCALE_DECIMAL, 1, fields=_VSD_FIELDS,
                         doc="Variable scaled decimal")


# ---------------------------------------------------------------------------------------------
# Value conversions from decimal text ("-123.4500", "NaN", "Infinity", "-Infinity")
# ---------------------------------------------------------------------------------------------


def _unrepresentable(text: str, column: str) -> UnrepresentableValueError:
    where = "" if column == "?" else f" in column {column}"
    return UnrepresentableValueError(
        f"got the special value {text}{where}, which decimal.handling.mode 'precise' cannot "
        "represent (Debezium fails here too); set decimal.handling.mode to 'string' or 'double'"
    )


def variable_scale_decimal(text: str, column: str = "?") -> dict[str, Any]:
    """``VariableScaleDecimal`` value of plain decimal text, trailing zeros stripped."""
    last = text[-1]
    if last in {"N", "y"}:  # NaN, Infinity, -Infinity; numbers end with a digit
        raise _unrepresentable(text, column)
    dot = text.find(".")
    try:
        if dot < 0:
            unscaled, scale = int(text), 0
        else:
            fraction = text[dot + 1 :].rstrip("0")
            unscaled, scale = int(text[:dot] + fraction), len(fraction)  # "-0" + "5" is -5
    except ValueError:  # beyond int()'s 4300 digits, or not PostgreSQL's plain notation
        return variable_scale_decimal_from_decimal(parse_decimal(text))
    magnitude = unscaled if unscaled >= 0 else ~unscaled
    return {
        "scale": scale,
        "value": unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True),
    }


def variable_scale_decimal_from_decimal(d: Decimal) -> dict[str, Any]:
    """``VariableScaleDecimal`` value of a finite decimal (stripTrailingZeros, scale >= 0)."""
    if not d.is_finite():
        raise UnrepresentableValueError(f"{d} cannot be a VariableScaleDecimal")
    if d.is_zero():
        return {"scale": 0, "value": b"\x00"}
    d = d.normalize(EXACT)
    exponent = d.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent > 0:
        d = d.quantize(Decimal(1), context=EXACT)
        exponent = 0
    return {"scale": -exponent, "value": int_to_twos_complement(unscaled_value(d))}


def fixed_scale_decimal(text: str, scale: int) -> Decimal:
    """A ``Decimal`` with exponent exactly ``-scale`` (``BigDecimal.setScale``, half-up)."""
    d = parse_decimal(text)
    dot = text.find(".")
    if (len(text) - dot - 1 if dot >= 0 else 0) != scale or "e" in text or "E" in text:
        d = d.quantize(Decimal(1).scaleb(-scale), context=EXACT)
    return d


def java_decimal_string(d: Decimal) -> str:
    """Java ``BigDecimal.toString()`` of a finite decimal.

    ``str(Decimal)`` follows the same to-scientific-string rule; only the sign of zero differs
    (``BigDecimal`` has no negative zero).
    """
    text = str(d)
    if text[0] == "-" and d.is_zero():
        return text[1:]
    return text


def decimal_mapping(
    mode: str, precision: int | None, scale: int | None, optional: bool, column: str = "?"
) -> tuple[ConnectSchema, Callable[[str], Any], Any]:
    """(schema, convert, NOT NULL fallback) for a decimal column in `mode`.

    ``precision``/``scale`` None means an unconstrained (variable scale) column.  A negative
    scale (PostgreSQL 15 ``NUMERIC(p, -s)``) must be resolved by the caller.
    """
    if mode == DOUBLE:
        return ConnectSchema(FLOAT64, optional), connect_float, 0.0
    if mode == STRING_MODE:
        specials = SPECIAL_VALUE_STRINGS
        if scale is None:

            def to_string(text: str) -> str:
                special = specials.get(text)
                return special if special is not None else java_decimal_string(parse_decimal(text))

            return ConnectSchema(STRING, optional), to_string, "0"

        fixed = scale

        def to_fixed_string(text: str) -> str:
            special = specials.get(text)
            return (
                special
                if special is not None
                else java_decimal_string(fixed_scale_decimal(text, fixed))
            )

        return ConnectSchema(STRING, optional), to_fixed_string, str(Decimal(0).scaleb(-fixed))
    if mode != PRECISE:
        raise ValueError(f"unknown decimal.handling.mode {mode!r}")
    if scale is None or precision is None:
        fallback = {"scale": 0, "value": b"\x00"}
        if column == "?":
            return variable_scale_decimal_schema(optional), variable_scale_decimal, fallback

        def to_vsd(text: str) -> dict[str, Any]:
            return variable_scale_decimal(text, column)

        return variable_scale_decimal_schema(optional), to_vsd, fallback

    fixed_scale = scale
    quantum = Decimal(1).scaleb(-scale)
    decimal_ = Decimal
    find = str.find
    encode = ConnectDecimal.of

    def to_decimal(text: str) -> ConnectDecimal:
        last = text[-1]
        if last in {"N", "y"}:
            raise _unrepresentable(text, column)
        dot = find(text, ".")
        if (len(text) - dot - 1 if dot >= 0 else 0) == fixed_scale:
            # PostgreSQL prints a numeric(p,s) with exactly s decimals: its unscaled value is
            # the digits without the dot, no Decimal arithmetic needed.
            try:
                return encode(int(text[:dot] + text[dot + 1:] if dot >= 0 else text), fixed_scale)
            except ValueError:
                pass  # not plain digits: let Decimal parse or reject it
        try:
            d = decimal_(text)
        except ArithmeticError:
            raise ValueError(f"invalid decimal {text!r}") from None
        d = d.quantize(quantum, context=EXACT)
        return encode(unscaled_value(d), fixed_scale)

    zero = ConnectDecimal.of(0, scale)
    return decimal_schema(precision, scale, optional), to_decimal, zero
