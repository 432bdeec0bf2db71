"""Datastream payload values -> Arrow (Delta/Spark) types.

Avro files carry the payload's schema in their header: each column's Avro type (with
Datastream's logical types and the unified type's records), so the column types are exact:

| unified (Avro) | column |
|---|---|
| BOOLEAN | boolean |
| INTEGER (`int`), LONG (`long`), TIME_INTERVAL (`long` time-interval-micros, µs) | int / long |
| FLOAT, DOUBLE | float / double |
| DECIMAL(p,s) (`bytes` decimal) | decimal(p,s) (p > 38: string) |
| NUMBER, STRING, JSON (`string`, any logical type) | string |
| BYTES | binary |
| DATE (`int` date) | date |
| DATETIME (record date + time-micros) | timestamp without zone (µs) |
| TIMESTAMP (`long` timestamp-micros/millis) | timestamp (UTC, µs) |
| TIME (`long` time-micros) | string `HH:MM:SS[.ffffff]` (Delta has no TIME type) |
| INTERVAL (record months, hours, micros) | struct of the three |
| TIMESTAMP_WITH_TIME_ZONE (record timestampTz) | timestamp (UTC, µs) |
| TIME_WITH_TIME_ZONE (record timeTz) | string `HH:MM:SS[.ffffff]+hh:mm` |
| GEOMETRY (record value, srid, type) | struct of the three |
| UNSUPPORTED (`null`) | string, always null |
| ARRAY | array of the item's column type |

JSON events carry no types, so a JSON column's type comes from its values (`infer_json`):
integers long, other numbers double, booleans, strings string (dates, times and timestamps stay
their ISO text), objects and arrays their JSON text.  A column holding only nulls takes the
target's type if it has one and is left out of the batch otherwise.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

import orjson
import pyarrow as pa

from headwater.pipeline.connect_types import FieldType


class AvroColumn(NamedTuple):
    avro_name: str  # the payload field's (valid Avro) name
    name: str  # the source column name (`sourceName`)
    type: FieldType


def _identity(v: Any) -> Any:
    return v


def _time_text(v: Any) -> str:
    if isinstance(v, dt.time):
        return v.isoformat()
    seconds, micros = divmod(int(v), 1_000_000)  # a long without fastavro's logical type
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{s:02d}" + (f".{micros:06d}" if micros else "")


def _datetime(v: Any) -> dt.datetime:
    """Datastream's DATETIME record {date, time-micros}: one timestamp without zone."""
    time = v["time"]
    if not isinstance(time, dt.time):
        time = (dt.datetime.min + dt.timedelta(microseconds=int(time))).time()
    return dt.datetime.combine(v["date"], time)


def _utc(v: Any) -> dt.datetime:
    if isinstance(v, dt.datetime):
        return v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=int(v))


def _timestamp_tz(v: Any) -> dt.datetime:
    return _utc(v["timestamp"])


def _millis(v: Any) -> int:
    """An Avro time-millis (fastavro gives a datetime.time) as milliseconds."""
    if isinstance(v, dt.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
    return int(v)


def _time_tz_text(v: Any) -> str:
    offset_ms = _millis(v["offset"])
    sign = "-" if offset_ms < 0 else "+"
    minutes = abs(offset_ms) // 60_000
    return f"{_time_text(v['time'])}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _text(v: Any) -> str:
    return v if isinstance(v, str) else str(v)


_PRIMITIVE: dict[str, FieldType] = {
    "boolean": FieldType(pa.bool_(), _identity),
    "int": FieldType(pa.int32(), _identity),
    "long": FieldType(pa.int64(), _identity),
    "float": FieldType(pa.float32(), _identity),
    "double": FieldType(pa.float64(), _identity),
    "bytes": FieldType(pa.binary(), bytes),
    "string": FieldType(pa.string(), _identity),
}

_GEOMETRY = pa.struct([("value", pa.binary()), ("srid", pa.int32()), ("type", pa.string())])
_INTERVAL = pa.struct([("months", pa.int32()), ("hours", pa.int32()), ("micros", pa.int64())])


def _short(name: str) -> str:
    return name.rpartition(".")[2]


def avro_type(schema: Any, named: dict[str, Any]) -> FieldType:
    """The column type of one Avro type (nullable unions reduced to their non-null branch);
    `named` collects the record definitions met so far, as references use their names."""
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) != 1:
            raise ValueError(f"unsupported Avro union {schema!r}")
        return avro_type(branches[0], named)
    if isinstance(schema, str):
        if schema in _PRIMITIVE:
            return _PRIMITIVE[schema]
        if _short(schema) in named:
            return avro_type(named[_short(schema)], named)
        raise ValueError(f"unknown Avro type {schema!r}")
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if kind == "record":
        named[_short(schema["name"])] = schema
        fields = {f["name"] for f in schema.get("fields", [])}
        if fields == {"date", "time"}:
            return FieldType(pa.timestamp("us"), _datetime)
        if fields == {"months", "hours", "micros"}:
            return FieldType(_INTERVAL, _identity)
        if fields == {"timestamp", "offset"}:  # timestampTz: the instant, in UTC
            return FieldType(pa.timestamp("us", tz="UTC"), _timestamp_tz)
        if fields == {"time", "offset"}:  # timeTz: its ISO text with the offset
            return FieldType(pa.string(), _time_tz_text)
        if fields == {"value", "srid", "type"}:  # geometry: WKB, SRID and its kind
            return FieldType(_GEOMETRY, _identity)
        raise ValueError(f"unsupported Avro record {schema.get('name')!r} in a payload")
    if kind == "array":
        item = avro_type(schema["items"], named)
        decode = item.decode

        def decode_list(v: Any) -> list[Any]:
            return [None if x is None else decode(x) for x in v]

        return FieldType(pa.list_(item.arrow), decode_list)
    if logical == "decimal":
        precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
        if precision > 38:
            return FieldType(pa.string(), lambda v: format(Decimal(v), "f"))
        return FieldType(pa.decimal128(precision, scale), _identity)
    if logical == "date":
        return FieldType(pa.date32(), _identity)
    if logical in ("timestamp-micros", "timestamp-millis"):
        return FieldType(pa.timestamp("us", tz="UTC"), _utc)
    if logical in ("local-timestamp-micros", "local-timestamp-millis"):
        return FieldType(pa.timestamp("us"), _identity)
    if logical in ("time-micros", "time-millis"):
        return FieldType(pa.string(), _time_text)
    if kind == "string":
        return FieldType(pa.string(), _text)  # NUMBER, JSON: text
    if kind == "null":  # UNSUPPORTED: Datastream carries no value
        return FieldType(pa.string(), _identity)
    # a nested type, or a primitive with a logical type of its own (time-interval-micros)
    return avro_type(kind, named)


def payload_columns(event_schema: Mapping[str, Any]) -> tuple[AvroColumn, ...]:
    """The payload's columns of a Datastream event schema (the Avro file header's)."""
    named: dict[str, Any] = {}
    payload: Any = None
    for f in event_schema.get("fields", []):
        if f["name"] == "payload":
            payload = f["type"]
    if not isinstance(payload, dict) or payload.get("type") != "record":
        raise ValueError("the Avro schema has no payload record: not a Datastream event")
    return tuple(
        AvroColumn(f["name"], f.get("sourceName") or f["name"], avro_type(f["type"], named))
        for f in payload["fields"])


# -- JSON: types from the values ------------------------------------------------------------
LONG = FieldType(pa.int64(), _identity)
DOUBLE = FieldType(pa.float64(), float)
BOOLEAN = FieldType(pa.bool_(), _identity)
STRING = FieldType(pa.string(), _identity)


def _json_text(v: Any) -> str:
    return v if isinstance(v, str) else orjson.dumps(v).decode()


JSON_TEXT = FieldType(pa.string(), _json_text)

_KINDS: dict[type, str] = {bool: "boolean", int: "long", float: "double", str: "string",
                           dict: "json", list: "json"}


def json_kind(value: Any) -> str:
    return _KINDS.get(type(value), "json")


def join_kinds(a: str | None, b: str) -> str:
    """The kind of a column holding values of both kinds: long and double make double; any
    other mix is JSON text (a JSON column holding numbers and strings)."""
    if a is None or a == b:
        return b
    if {a, b} == {"long", "double"}:
        return "double"
    return "json"


def json_field(kind: str | None, existing: pa.DataType | None) -> FieldType | None:
    """The column type of a JSON column of `kind` (None: only nulls), given the target's type
    of it (None: no such column yet).  The target's type wins where the values fit it: a
    double column stays double when a batch holds only integral numbers, a text column stays
    text."""
    if existing is not None:
        if kind is None:
            return _for_existing(existing)
        if pa.types.is_floating(existing) and kind in ("long", "double"):
            return DOUBLE
        if pa.types.is_string(existing) or pa.types.is_large_string(existing):
            return JSON_TEXT if kind in ("json", "long", "double", "boolean") else STRING
    if kind is None:
        return None
    return {"long": LONG, "double": DOUBLE, "boolean": BOOLEAN, "string": STRING,
            "json": JSON_TEXT}[kind]


def _for_existing(existing: pa.DataType) -> FieldType:
    """A null-only column's type: the target's (its values are all null, nothing to decode)."""
    decode: Callable[[Any], Any] = _identity
    return FieldType(existing, decode)
