"""From the Kafka Connect schema embedded in an event to Arrow types and value decoders.

Table-driven: a Connect field schema (`type`, `name`, `parameters`) maps to an Arrow type that
Delta Lake and Spark can store, and to a pure function from the JSON value (what
JsonConverter wrote) to the Python value for that Arrow type.  The mapping (documented in
docs/pipeline.md):

| Connect                                   | Arrow / Spark                    |
|-------------------------------------------|----------------------------------|
| int8, int16, int32, int64                 | int8/16/32/64 (byte/short/int/long) |
| float32, float64                          | float32/64 (float/double); "NaN" strings accepted |
| boolean                                   | bool                              |
| string (+ Json, Uuid, Xml, Enum, Ltree...)| string                            |
| bytes (+ io.debezium.data.Bits)           | binary (base64-decoded)           |
| org.apache.kafka.connect.data.Decimal     | decimal128(precision or 38, scale)|
| io.debezium.data.VariableScaleDecimal     | decimal128(38, 18) (exactness checked) |
| io.debezium.time.Date, connect Date       | date32 (date)                     |
| io.debezium.time.(Micro|Nano)Time, Time  | string HH:MM:SS[.ffffff] (no TIME in Delta) |
| io.debezium.time.Timestamp, Timestamp    | timestamp[ms] without zone (timestamp_ntz) |
| io.debezium.time.MicroTimestamp           | timestamp[us] without zone (timestamp_ntz) |
| io.debezium.time.NanoTimestamp            | timestamp[us] without zone (nanoseconds truncated) |
| io.debezium.time.ZonedTimestamp           | timestamp[us, UTC] (timestamp); infinity -> null |
| io.debezium.time.ZonedTime                | string                            |
| io.debezium.time.MicroDuration            | int64 (microseconds)              |
| array                                     | list<element>                     |
| map                                       | map<key, value>                   |
| struct (geometry, ...)                    | struct<fields>                    |
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable
from decimal import Decimal, localcontext
from typing import Any, NamedTuple

import pyarrow as pa

Decoder = Callable[[Any], Any]

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class FieldType(NamedTuple):
    arrow: pa.DataType
    decode: Decoder  # JSON value (never None) -> Python value for `arrow`


class UndecodableValueError(ValueError):
    """A value that does not fit the column type its schema announces."""


def _identity(v: Any) -> Any:
    return v


def _float(v: Any) -> Any:
    if isinstance(v, str):  # JsonConverter writes NaN/Infinity as strings
        return float(v)
    return v


def _bytes(v: Any) -> bytes:
    return base64.b64decode(v)


def _unscaled(v: Any) -> int:
    return int.from_bytes(base64.b64decode(v), "big", signed=True)


def _decimal(scale: int) -> Decoder:
    def decode(v: Any) -> Decimal:
        return Decimal(_unscaled(v)).scaleb(-scale)

    return decode


_VSD_SCALE = 18


def _variable_scale_decimal(v: Any) -> Decimal:
    value = Decimal(_unscaled(v["value"])).scaleb(-int(v["scale"]))
    with localcontext() as ctx:
        ctx.prec = 60
        quantized = value.quantize(Decimal(1).scaleb(-_VSD_SCALE))
    if quantized != value or len(quantized.as_tuple().digits) > 38:
        raise UndecodableValueError(
            f"variable-scale decimal {value} does not fit decimal(38,{_VSD_SCALE}); set "
            "decimal.handling.mode=string on the connector to keep it exactly"
        )
    return quantized


def _date(v: Any) -> dt.date:
    return _EPOCH_DATE + dt.timedelta(days=v)


def _time_of_day(unit_per_second: int) -> Decoder:
    """Times as text the way the source prints them: MySQL's TIME is a signed duration up to
    +-838:59:59, so a negative value keeps its sign in front ('-00:00:01', not '-1:59:59')."""

    def decode(v: Any) -> str:
        value = int(v)
        sign = "-" if value < 0 else ""
        seconds, frac = divmod(abs(value), unit_per_second)
        h, rem = divmod(seconds, 3600)
        m, s = divmod(rem, 60)
        if frac:
            micros = frac * 1_000_000 // unit_per_second
            return f"{sign}{h:02d}:{m:02d}:{s:02d}.{micros:06d}"
        return f"{sign}{h:02d}:{m:02d}:{s:02d}"

    return decode


def _timestamp(unit_per_second: int) -> Decoder:
    def decode(v: Any) -> dt.datetime:
        return _EPOCH + dt.timedelta(microseconds=int(v) * 1_000_000 // unit_per_second)

    return decode


def _zoned_timestamp(v: Any) -> dt.datetime | None:
    if v in ("infinity", "-infinity"):
        return None
    text = v[:-1] + "+00:00" if v.endswith("Z") else v
    return dt.datetime.fromisoformat(text)


_LITERAL: dict[str, FieldType] = {
    "int8": FieldType(pa.int8(), _identity),
    "int16": FieldType(pa.int16(), _identity),
    "int32": FieldType(pa.int32(), _identity),
    "int64": FieldType(pa.int64(), _identity),
    "float32": FieldType(pa.float32(), _float),
    "float64": FieldType(pa.float64(), _float),
    # Kafka's JsonConverter (and so Debezium and Headwater) writes FLOAT32/64 as float/double.
    "float": FieldType(pa.float32(), _float),
    "double": FieldType(pa.float64(), _float),
    "boolean": FieldType(pa.bool_(), _identity),
    "string": FieldType(pa.string(), _identity),
    "bytes": FieldType(pa.binary(), _bytes),
}

def decimal_type(schema: dict[str, Any]) -> FieldType:
    params = schema.get("parameters") or {}
    scale = int(params.get("scale", 0))
    precision = int(params.get("connect.decimal.precision", 38))
    precision = max(1, min(38, max(precision, scale)))
    return FieldType(pa.decimal128(precision, scale), _decimal(scale))


# Semantic types whose Arrow form differs from their literal type's.
_NAMED: dict[str, Callable[[dict[str, Any]], FieldType]] = {
    "io.debezium.time.Date": lambda s: FieldType(pa.date32(), _date),
    "org.apache.kafka.connect.data.Date": lambda s: FieldType(pa.date32(), _date),
    "io.debezium.time.Time": lambda s: FieldType(pa.string(), _time_of_day(1000)),
    "org.apache.kafka.connect.data.Time": lambda s: FieldType(pa.string(), _time_of_day(1000)),
    "io.debezium.time.MicroTime": lambda s: FieldType(pa.string(), _time_of_day(1_000_000)),
    "io.debezium.time.NanoTime": lambda s: FieldType(pa.string(), _time_of_day(1_000_000_000)),
    "io.debezium.time.Timestamp": lambda s: FieldType(pa.timestamp("ms"), _timestamp(1000)),
    "org.apache.kafka.connect.data.Timestamp": lambda s: FieldType(
        pa.timestamp("ms"), _timestamp(1000)),
    "io.debezium.time.MicroTimestamp": lambda s: FieldType(
        pa.timestamp("us"), _timestamp(1_000_000)),
    "io.debezium.time.NanoTimestamp": lambda s: FieldType(
        pa.timestamp("us"), _timestamp(1_000_000_000)),
    "io.debezium.time.ZonedTimestamp": lambda s: FieldType(
        pa.timestamp("us", tz="UTC"), _zoned_timestamp),
    "org.apache.kafka.connect.data.Decimal": decimal_type,
    "io.debezium.data.VariableScaleDecimal": lambda s: FieldType(
        pa.decimal128(38, _VSD_SCALE), _variable_scale_decimal),
}


def field_type(schema: dict[str, Any]) -> FieldType:
    """The Arrow type and decoder of one Connect schema (as JsonConverter renders it)."""
    name = schema.get("name")
    if name in _NAMED:
        return _NAMED[name](schema)
    literal = schema["type"]
    if literal in _LITERAL:
        return _LITERAL[literal]
    if literal == "array":
        item = field_type(schema["items"])
        item_decode = item.decode

        def decode_list(v: Any) -> list[Any]:
            return [None if x is None else item_decode(x) for x in v]

        return FieldType(pa.list_(item.arrow), decode_list)
    if literal == "map":
        key, value = field_type(schema["keys"]), field_type(schema["values"])
        kd, vd = key.decode, value.decode

        def decode_map(v: Any) -> list[tuple[Any, Any]]:
            pairs = v.items() if isinstance(v, dict) else v
            return [(kd(k), None if x is None else vd(x)) for k, x in pairs]

        return FieldType(pa.map_(key.arrow, value.arrow), decode_map)
    if literal == "struct":
        fields = [(f["field"], field_type(f)) for f in schema.get("fields", [])]

        def decode_struct(v: Any) -> dict[str, Any]:
            return {
                n: None if v.get(n) is None else t.decode(v[n]) for n, t in fields
            }

        return FieldType(pa.struct([pa.field(n, t.arrow) for n, t in fields]), decode_struct)
    raise UndecodableValueError(f"unknown Kafka Connect type {literal!r} (schema {schema})")
