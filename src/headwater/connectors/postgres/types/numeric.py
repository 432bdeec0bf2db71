"""Numbers and booleans: int2/int4/int8, oid, float4/float8, numeric, money, bool."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from headwater.connectors.postgres.types.base import (
    Factory,
    PgType,
    numeric_precision_scale,
    simple,
)
from headwater.connectors.postgres.types.oids import (
    BOOL_OID,
    FLOAT4_OID,
    FLOAT8_OID,
    INT2_OID,
    INT4_OID,
    INT8_OID,
    MONEY_OID,
    NUMERIC_OID,
    OID_OID,
)
from headwater.convert import ColumnMapping, TypeModes
from headwater.convert.decimal import (
    DECIMAL,
    DOUBLE,
    EXACT,
    PRECISE,
    SCALE_PARAMETER,
    STRING_MODE,
    ConnectDecimal,
    connect_float,
    decimal_mapping,
    unscaled_value,
)
from headwater.convert.pg_money import money_decimal_text
from headwater.model.schema import (
    BOOLEAN,
    BYTES,
    FLOAT32,
    FLOAT64,
    INT16,
    INT32,
    INT64,
    STRING,
    ConnectSchema,
)

_BOOLEANS = {"t": True, "f": False, "true": True, "false": False}


def _to_bool(text: str) -> bool:
    try:
        return _BOOLEANS[text]
    except KeyError:
        raise ValueError(f"invalid boolean {text!r}") from None


def _numeric(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    ps = numeric_precision_scale(t.typmod)
    if ps is None:
        precision: int | None = None
        scale: int | None = None
    else:
        precision, scale = ps
        if scale < 0:
            precision, scale = precision - scale, 0
    schema, convert, fallback = decimal_mapping(
        modes.decimal_handling_mode, precision, scale, optional
    )
    return ColumnMapping(schema, convert, fallback)


def _money(t: PgType, optional: bool, modes: TypeModes) -> ColumnMapping:
    mode = modes.decimal_handling_mode
    digits = modes.money_fraction_digits
    if mode == DOUBLE:

        def to_double(text: str) -> float:
            return float(money_decimal_text(text))

        return ColumnMapping(ConnectSchema(FLOAT64, optional), to_double, 0.0)
    if mode == STRING_MODE:
        return ColumnMapping(
            ConnectSchema(STRING, optional), money_decimal_text, str(Decimal(0).scaleb(-digits))
        )
    if mode != PRECISE:
        raise ValueError(f"unknown decimal.handling.mode {mode!r}")
    quantum = Decimal(1).scaleb(-digits)
    encode = ConnectDecimal.of

    def to_decimal(text: str) -> ConnectDecimal:
        plain = money_decimal_text(text)
        dot = plain.find(".")
        if (len(plain) - dot - 1 if dot >= 0 else 0) == digits:
            return encode(int(plain[:dot] + plain[dot + 1 :] if dot >= 0 else plain), digits)
        d = Decimal(plain).quantize(quantum, rounding=ROUND_HALF_UP, context=EXACT)
        return encode(unscaled_value(d), digits)

    # Decimal.builder(scale): the Kafka Connect Decimal with no precision parameter.
    schema = ConnectSchema(BYTES, optional, DECIMAL, 1, {SCALE_PARAMETER: str(digits)})
    return ColumnMapping(schema, to_decimal, ConnectDecimal.of(0, digits))


_int16 = simple(INT16, int, 0)
_int32 = simple(INT32, int, 0)
_int64 = simple(INT64, int, 0)
_float32 = simple(FLOAT32, connect_float, 0.0)
_float64 = simple(FLOAT64, connect_float, 0.0)
_bool = simple(BOOLEAN, _to_bool, False)

BY_OID: dict[int, Factory] = {
    BOOL_OID: _bool,
    INT8_OID: _int64,
    INT2_OID: _int16,
    INT4_OID: _int32,
    OID_OID: _int64,
    FLOAT4_OID: _float32,
    FLOAT8_OID: _float64,
    MONEY_OID: _money,
    NUMERIC_OID: _numeric,
}

BY_NAME: dict[str, Factory] = {
    "bool": _bool,
    "boolean": _bool,
    "int8": _int64,
    "bigint": _int64,
    "bigserial": _int64,
    "int2": _int16,
    "smallint": _int16,
    "smallserial": _int16,
    "int4": _int32,
    "int": _int32,
    "integer": _int32,
    "serial": _int32,
    "oid": _int64,
    "money": _money,
    "float4": _float32,
    "real": _float32,
    "float8": _float64,
    "double precision": _float64,
    "numeric": _numeric,
    "decimal": _numeric,
}
