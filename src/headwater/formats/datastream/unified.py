"""Datastream's unified types: what a captured column becomes in Datastream's Avro and JSON.

Connectors already convert every value to its Kafka Connect representation (Debezium's logical
types), so the unified type is derived from the column's Connect schema (its logical name)
plus, where Connect alone is ambiguous, the source type name: MySQL `TIME` is a signed duration
up to 838 hours, so it is Datastream's TIME_INTERVAL, while PostgreSQL `time` is a TIME.
Deriving from Connect keeps one table for every connector, present or to come.

Each mapping carries converters only where the Connect value differs from what the format
needs; most columns (integers, strings, floats, booleans) have none, so the per-row cost is a
loop over the few columns that do.  Bytes and decimals need no JSON converter either: the
JSON encoder's default hook writes them (base64; a decimal as a JSON number with its exact
digits).  docs/datastream.md has the table per source.
"""

from __future__ import annotations

import base64
import datetime as _dt
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

import orjson

from headwater.convert.decimal import ConnectDecimal
from headwater.formats.datastream import typemap
from headwater.model.schema import (
    ARRAY,
    BOOLEAN,
    BYTES,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    MAP,
    STRING,
    STRUCT,
    Column,
    ConnectSchema,
)

Converter = Callable[[Any], Any]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_DAY_US = 86_400_000_000
_HOUR_US = 3_600_000_000

# Avro definitions of the unified types that are records; a schema defines each once and
# refers to it by name afterwards (AvroSchema.named).
DATETIME_RECORD = {
    "type": "record", "name": "datetime",
    "fields": [{"name": "date", "type": {"type": "int", "logicalType": "date"}},
               {"name": "time", "type": {"type": "long", "logicalType": "time-micros"}}],
}
# Google's own unified-type code (datastream-types.md §C) for the zoned types, and the
# GEOMETRY record of the unified-types page (§A).
TIMESTAMP_TZ_RECORD = {
    "type": "record", "name": "timestampTz",
    "fields": [{"name": "timestamp", "type": {"type": "long", "logicalType": "timestamp-micros"}},
               {"name": "offset", "type": {"type": "int", "logicalType": "time-millis"}}],
}
TIME_TZ_RECORD = {
    "type": "record", "name": "timeTz",
    "fields": [{"name": "time", "type": {"type": "long", "logicalType": "time-micros"}},
               {"name": "offset", "type": {"type": "int", "logicalType": "time-millis"}}],
}
GEOMETRY_RECORD = {
    "type": "record", "name": "geometry",
    "fields": [{"name": "value", "type": "bytes"}, {"name": "srid", "type": ["null", "int"]},
               {"name": "type", "type": "string"}],
}
INTERVAL_RECORD = {
    "type": "record", "name": "interval",
    "fields": [{"name": "months", "type": "int"}, {"name": "hours", "type": "int"},
               {"name": "micros", "type": "long"}],
}


class Unified(NamedTuple):
    """A column's unified type: its name, Avro type and the value converters (None: as is)."""

    name: str
    avro: Any
    to_json: Converter | None = None
    to_avro: Converter | None = None


def json_default(value: Any) -> Any:
    """JSON encoder hook: bytes as base64, decimals as JSON numbers with their exact digits."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Decimal):
        return orjson.Fragment(format(value, "f"))
    raise TypeError(f"cannot encode {type(value).__name__} as Datastream JSON")


# -- temporal converters (module-level functions: the renderer is pickled to snapshot workers)

def _date_json(days: int) -> str:
    return (_EPOCH_DATE + _dt.timedelta(days=days)).isoformat()


def _datetime_us(micros: int) -> str:
    return (_EPOCH + _dt.timedelta(microseconds=micros)).replace(tzinfo=None).isoformat()


def _datetime_avro_us(micros: int) -> dict[str, int]:
    days, time_us = divmod(micros, _DAY_US)
    return {"date": days, "time": time_us}


def _scaled(factor: int, divisor: int, fn: Converter) -> Converter:
    if factor == 1 and divisor == 1:
        return fn
    return _Scaled(factor, divisor, fn)


class _Scaled:
    """`fn(value * factor // divisor)`: ms and ns timestamps through the µs converters."""

    __slots__ = ("divisor", "factor", "fn")

    def __init__(self, factor: int, divisor: int, fn: Converter) -> None:
        self.factor, self.divisor, self.fn = factor, divisor, fn

    def __call__(self, value: int) -> Any:
        return self.fn(value * self.factor // self.divisor)


def _zoned_timestamp_us(text: str) -> int:
    moment = _dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _timestamp_tz_avro(text: str) -> dict[str, int]:
    """A ZonedTimestamp (ISO text with its offset) as the timestampTz record: UTC µs and the
    offset in milliseconds."""
    moment = _dt.datetime.fromisoformat(text)
    offset = moment.utcoffset() or _dt.timedelta(0)
    return {"timestamp": _zoned_timestamp_us(text),
            "offset": (offset.days * 86_400 + offset.seconds) * 1000}


def _time_tz_avro(text: str) -> dict[str, int]:
    """A ZonedTime (`03:04:05.123Z`) as the timeTz record: µs since midnight and the offset
    in milliseconds."""
    moment = _dt.time.fromisoformat(text)
    offset = moment.utcoffset() or _dt.timedelta(0)
    micros = ((moment.hour * 60 + moment.minute) * 60 + moment.second) * 1_000_000 + (
        moment.microsecond)
    return {"time": micros, "offset": (offset.days * 86_400 + offset.seconds) * 1000}


def _time_json_us(micros: int) -> str:
    seconds, us = divmod(micros, 1_000_000)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    text = f"{hours:02d}:{minute:02d}:{sec:02d}"
    return f"{text}.{us:06d}" if us else text


def _interval_avro_us(micros: int) -> dict[str, int]:
    hours, rest = divmod(abs(micros), _HOUR_US)
    sign = -1 if micros < 0 else 1
    return {"months": 0, "hours": sign * hours, "micros": sign * rest}


def _interval_json_us(micros: int) -> str:
    """ISO-8601 duration in hours, minutes and seconds (a MicroDuration has no months left)."""
    sign = "-" if micros < 0 else ""
    hours, rest = divmod(abs(micros), _HOUR_US)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, us = divmod(rest, 1_000_000)
    sec = f"{seconds}.{us:06d}".rstrip("0").rstrip(".") if us else str(seconds)
    return f"{sign}PT{hours}H{minutes}M{sec}S"


_ISO_DURATION = re.compile(
    r"(?P<sign>-)?P(?:(?P<y>-?\d+)Y)?(?:(?P<mo>-?\d+)M)?(?:(?P<d>-?\d+)D)?"
    r"(?:T(?:(?P<h>-?\d+)H)?(?:(?P<mi>-?\d+)M)?(?:(?P<s>-?\d+(?:\.\d+)?)S)?)?")


def _interval_avro_iso(text: str) -> dict[str, int]:
    """Debezium's `Interval` string (interval.handling.mode=string) as months/hours/micros."""
    m = _ISO_DURATION.fullmatch(text)
    if m is None:
        raise ValueError(f"not an ISO-8601 duration: {text!r}")
    sign = -1 if m["sign"] else 1

    def part(name: str) -> int:
        return int(m[name] or 0)

    months = part("y") * 12 + part("mo")
    hours = part("d") * 24 + part("h")
    micros = part("mi") * 60_000_000 + round(Decimal(m["s"] or 0) * 1_000_000)
    return {"months": sign * months, "hours": sign * hours, "micros": sign * micros}


def _variable_scale_number(value: dict[str, Any]) -> str:
    unscaled = int.from_bytes(value["value"], "big", signed=True)
    return format(Decimal(unscaled).scaleb(-int(value["scale"])), "f")


def _json_fragment(text: str) -> Any:
    return orjson.Fragment(text)


def _as_json_text(value: Any) -> str:
    return orjson.dumps(value, default=json_default).decode()


def _as_json_fragment(value: Any) -> Any:
    return orjson.Fragment(orjson.dumps(value, default=json_default))


# -- the mapping -------------------------------------------------------------------------------

_PLAIN: dict[str, Unified] = {
    INT8: Unified("INTEGER", "int"),
    INT16: Unified("INTEGER", "int"),
    INT32: Unified("INTEGER", "int"),
    INT64: Unified("LONG", "long"),
    FLOAT32: Unified("FLOAT", "float"),
    FLOAT64: Unified("DOUBLE", "double"),
    BOOLEAN: Unified("BOOLEAN", "boolean"),
    STRING: Unified("STRING", "string"),
    BYTES: Unified("BYTES", "bytes"),
}

# Connect timestamp/time logical names -> (factor, divisor) to microseconds.
_TO_MICROS: dict[str, tuple[int, int]] = {
    "io.debezium.time.Timestamp": (1000, 1),
    "org.apache.kafka.connect.data.Timestamp": (1000, 1),
    "io.debezium.time.MicroTimestamp": (1, 1),
    "io.debezium.time.NanoTimestamp": (1, 1000),
    "io.debezium.time.Time": (1000, 1),
    "org.apache.kafka.connect.data.Time": (1000, 1),
    "io.debezium.time.MicroTime": (1, 1),
    "io.debezium.time.NanoTime": (1, 1000),
}
_TIMESTAMPS = frozenset({"io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp",
                         "io.debezium.time.MicroTimestamp", "io.debezium.time.NanoTimestamp"})
_DATES = frozenset({"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"})


def _datetime(name: str) -> Unified:
    factor, divisor = _TO_MICROS[name]
    return Unified("DATETIME", DATETIME_RECORD, _scaled(factor, divisor, _datetime_us),
                   _scaled(factor, divisor, _datetime_avro_us))


def _time(name: str, unified: str) -> Unified:
    factor, divisor = _TO_MICROS[name]
    to_us = None if factor == divisor == 1 else _Scaled(factor, divisor, int)
    if unified == "TIME_INTERVAL":
        # MySQL TIME is a signed duration (-838:59:59 .. 838:59:59), not a time of day.
        return Unified("TIME_INTERVAL", {"type": "long", "logicalType": "time-interval-micros"},
                       to_us, to_us)
    return Unified("TIME", _TIME_AVRO, _scaled(factor, divisor, _time_json_us), to_us)


def unified_type(column: Column, family: str) -> Unified:
    """The unified type of one column of a source of `family` ("postgresql", "mysql", ...):
    its name from the source's type table (typemap.py), its Avro type and value converters
    from that name and the column's Connect representation."""
    name = unified_name(column, family)
    return _render(name, column.schema, column.type_name)


def unified_name(column: Column, family: str) -> str:
    """The column's unified type name, from its source's type table (typemap.py)."""
    schema = column.schema
    if family == "postgresql":
        typname = column.type_name.rsplit(".", 1)[-1].strip('"')
        return typemap.pg_unified(
            typname, is_array=schema.type == ARRAY and typname.startswith("_"),
            is_enum=schema.name == "io.debezium.data.Enum",
            has_precision=not (schema.name == "io.debezium.data.VariableScaleDecimal"
                               or (schema.name == "org.apache.kafka.connect.data.Decimal"
                                   and "connect.decimal.precision" not in (
                                       schema.parameters or {}))))
    if family == "mysql":
        return typemap.mysql_unified(column.type_name, column.unsigned)
    if family == "sqlserver":
        return typemap.sqlserver_unified(column.type_name)
    if family == "mongodb":
        return typemap.mongodb_unified(column.type_name)
    return _connect_name(schema)


def _connect_name(schema: ConnectSchema) -> str:
    """Sources without a type table (Oracle, Db2 so far): the name Connect implies."""
    name = schema.name
    if name in _TIMESTAMPS:
        return "DATETIME"
    if name in _TO_MICROS:
        return "TIME"
    if name in _DATES:
        return "DATE"
    if name == "io.debezium.time.ZonedTimestamp":
        return "TIMESTAMP"
    if name in ("io.debezium.time.MicroDuration", "io.debezium.time.Interval"):
        return "INTERVAL"
    if name == "org.apache.kafka.connect.data.Decimal":
        return "DECIMAL" if "connect.decimal.precision" in (schema.parameters or {}) else (
            "NUMBER")
    if name == "io.debezium.data.VariableScaleDecimal":
        return "NUMBER"
    if name == "io.debezium.data.Json" or schema.type in (MAP, STRUCT):
        return "JSON"
    if schema.type == ARRAY:
        return "ARRAY"
    return _PLAIN[schema.type].name


UNSUPPORTED_AVRO = {"type": "null", "logicalType": "unsupported"}
_JSON_AVRO = {"type": "string", "logicalType": "json"}
_NUMBER_AVRO = {"type": "string", "logicalType": "number"}
_TIMESTAMP_AVRO = {"type": "long", "logicalType": "timestamp-micros"}
_TIME_AVRO = {"type": "long", "logicalType": "time-micros"}
_UINT64 = 1 << 64


def _render(unified: str, schema: ConnectSchema, source_type: str) -> Unified:
    """The Avro type and converters of a column of unified type `unified` whose values come
    in the Connect representation `schema` (the forms of the unified-types page, §A)."""
    name = schema.name
    kind = schema.type
    if unified == "UNSUPPORTED":
        return Unified("UNSUPPORTED", UNSUPPORTED_AVRO, _null, _null)
    if unified in ("INTEGER", "LONG"):
        avro = "int" if unified == "INTEGER" else "long"
        if kind == BOOLEAN:
            return Unified(unified, avro, int, int)
        if name == "io.debezium.data.Bits":
            return Unified(unified, avro, _bits_int, _bits_int)
        return Unified(unified, avro)
    if unified in ("FLOAT", "DOUBLE"):
        avro = "float" if unified == "FLOAT" else "double"
        if kind in (FLOAT32, FLOAT64):
            return Unified(unified, avro)
        return Unified(unified, avro, _to_float, _to_float)
    if unified == "BOOLEAN":
        return Unified("BOOLEAN", "boolean")
    if unified == "BYTES":
        if kind == BOOLEAN:  # PostgreSQL bit(1): Connect has it as a boolean
            return Unified("BYTES", "bytes", _bool_byte, _bool_byte)
        return Unified("BYTES", "bytes")
    if unified == "STRING":
        if kind == STRING:
            return Unified("STRING", "string")
        return Unified("STRING", "string", _as_json_text, _as_json_text)
    if unified == "DATE":
        return Unified("DATE", {"type": "int", "logicalType": "date"}, _date_json)
    if unified == "DATETIME" and name in _TIMESTAMPS:
        return _datetime(name)
    if unified == "TIMESTAMP" and name in _TIMESTAMPS:
        factor, divisor = _TO_MICROS[name]
        return Unified("TIMESTAMP", _TIMESTAMP_AVRO, _scaled(factor, divisor, _datetime_us),
                       None if factor == divisor == 1 else _Scaled(factor, divisor, int))
    if unified == "TIMESTAMP" and name == "io.debezium.time.ZonedTimestamp":
        return Unified("TIMESTAMP", _TIMESTAMP_AVRO, None, _zoned_timestamp_us)
    if unified == "TIMESTAMP_WITH_TIME_ZONE" and name == "io.debezium.time.ZonedTimestamp":
        return Unified(unified, TIMESTAMP_TZ_RECORD, None, _timestamp_tz_avro)
    if unified == "TIME_WITH_TIME_ZONE" and name == "io.debezium.time.ZonedTime":
        return Unified(unified, TIME_TZ_RECORD, None, _time_tz_avro)
    if unified in ("TIME", "TIME_INTERVAL") and name in _TO_MICROS:
        return _time(name, unified)
    if unified == "INTERVAL" and name == "io.debezium.time.MicroDuration":
        return Unified("INTERVAL", INTERVAL_RECORD, _interval_json_us, _interval_avro_us)
    if unified == "INTERVAL" and name == "io.debezium.time.Interval":
        return Unified("INTERVAL", INTERVAL_RECORD, None, _interval_avro_iso)
    if unified == "DECIMAL" and name == "org.apache.kafka.connect.data.Decimal":
        params = schema.parameters or {}
        scale = int(params.get("scale", "0"))
        precision = params.get("connect.decimal.precision")
        if precision is not None:
            return Unified(f"DECIMAL({precision},{scale})", {
                "type": "bytes", "logicalType": "decimal",
                "precision": int(precision), "scale": scale},
                _DecimalValue(scale, json=True), _DecimalValue(scale, json=False))
        unified = "NUMBER"  # no declared precision: Avro's decimal needs one
    if unified == "DECIMAL" and kind == INT64:
        # MySQL BIGINT UNSIGNED in bigint.unsigned.handling.mode=long: Connect's long wraps
        # above 2^63-1; the unsigned value is restored (DECIMAL(20,0) holds 2^64-1).
        return Unified("DECIMAL(20,0)", {"type": "bytes", "logicalType": "decimal",
                                         "precision": 20, "scale": 0},
                       _unsigned_json, _unsigned_decimal)
    if unified in ("DECIMAL", "NUMBER"):
        if name == "org.apache.kafka.connect.data.Decimal":
            scale = int((schema.parameters or {}).get("scale", "0"))
            text = _DecimalValue(scale, json=False, text=True)
            return Unified("NUMBER", _NUMBER_AVRO, text, text)
        if name == "io.debezium.data.VariableScaleDecimal":
            return Unified("NUMBER", _NUMBER_AVRO, _variable_scale_number,
                           _variable_scale_number)
        # decimal.handling.mode double/string: the digits Connect has, as a NUMBER
        return Unified("NUMBER", _NUMBER_AVRO, _text, _text)
    if unified == "JSON":
        if name == "io.debezium.data.Json":
            return Unified("JSON", _JSON_AVRO, _json_fragment)
        return Unified("JSON", _JSON_AVRO, _as_json_fragment, _as_json_text)
    if unified == "GEOMETRY" and kind == STRUCT:
        kind_name = source_type.split(" ", maxsplit=1)[0].lower()
        return Unified("GEOMETRY", GEOMETRY_RECORD, _Geometry(kind_name, json=True),
                       _Geometry(kind_name, json=False))
    if unified == "ARRAY" and kind == ARRAY and schema.items is not None:
        item_type = source_type[1:] if source_type.startswith("_") else source_type
        item = _render(typemap.pg_unified(item_type), schema.items, item_type)
        if isinstance(item.avro, dict) and item.avro.get("type") == "record":
            # records inside arrays would need their own names: kept whole, as JSON text
            return Unified("ARRAY", {"type": "array", "items": ["null", "string"]},
                           _as_json_fragment, _Each(_as_json_text))
        return Unified("ARRAY", {"type": "array", "items": ["null", item.avro]},
                       None if item.to_json is None else _Each(item.to_json),
                       None if item.to_avro is None else _Each(item.to_avro))
    raise ValueError(f"a {source_type} column (Connect {name or kind}) cannot be rendered "
                     f"as Datastream's {unified}: no such representation")


def _null(value: Any) -> None:
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else format(value, "f") if isinstance(
        value, Decimal) else str(value)


def _to_float(value: Any) -> float:
    if isinstance(value, ConnectDecimal):
        value = value.value
    return float(value)


def _bits_int(value: bytes) -> int:
    """Debezium's Bits are little-endian bytes."""
    return int.from_bytes(value, "little")


def _bool_byte(value: bool) -> bytes:
    return b"\x01" if value else b"\x00"


def _unsigned_json(value: int) -> Any:
    return orjson.Fragment(str(value % _UINT64))


def _unsigned_decimal(value: int) -> Decimal:
    return Decimal(value % _UINT64)


class _Each:
    """A converter applied to each non-null item of an array."""

    __slots__ = ("fn",)

    def __init__(self, fn: Converter) -> None:
        self.fn = fn

    def __call__(self, values: list[Any]) -> list[Any]:
        fn = self.fn
        return [None if v is None else fn(v) for v in values]


class _Geometry:
    """Debezium's Geometry struct {wkb, srid} as the unified GEOMETRY {value, srid, type}."""

    __slots__ = ("json", "kind")

    def __init__(self, kind: str, *, json: bool) -> None:
        self.kind, self.json = kind, json

    def __call__(self, value: Any) -> Any:
        wkb = value["wkb"]
        if self.json:
            return {"value": base64.b64encode(bytes(wkb)).decode("ascii"),
                    "srid": value.get("srid"), "type": self.kind}
        return {"value": bytes(wkb), "srid": value.get("srid"), "type": self.kind}


class _DecimalValue:
    """A Connect Decimal (a `Decimal`, a `ConnectDecimal` as the PostgreSQL fast path passes
    it, or unscaled two's-complement bytes) as a JSON number or an Avro decimal at the schema's
    scale exactly."""

    __slots__ = ("exponent", "json", "scale", "text")

    def __init__(self, scale: int, *, json: bool, text: bool = False) -> None:
        self.scale = scale
        self.exponent = Decimal(1).scaleb(-scale)
        self.json = json
        self.text = text

    def __call__(self, value: Any) -> Any:
        if isinstance(value, ConnectDecimal):
            value = value.value
        elif not isinstance(value, Decimal):
            value = Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-self.scale)
        if self.text:  # NUMBER: its digits as a string, in JSON and Avro alike
            return format(value, "f")
        if self.json:
            return orjson.Fragment(format(value, "f"))
        return value.quantize(self.exponent)
