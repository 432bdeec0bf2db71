"""Values of MongoDB relaxed Extended JSON (as parsed by orjson) converted to column values.

The documents stay in their Extended JSON form everywhere in the pipeline (patches apply to
it, the target keeps it in `__hw_doc`), because that form is exact: converting to typed column
values is one way only (an ObjectId and a string both become strings).  This module is that
one-way step, given the column's Arrow type.  A value that does not fit its column's type (the
column fell back to string after a type conflict) is written as its Extended JSON text, except
values whose natural column type is string (strings, ObjectIds, decimals), written as such.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pyarrow as pa

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Wrappers of BSON types whose value Extended JSON writes as an object of one `$` key (two for
# code with scope).
WRAPPERS = frozenset({
    "$oid", "$date", "$numberDecimal", "$numberLong", "$numberInt", "$numberDouble", "$binary",
    "$uuid", "$timestamp", "$regularExpression", "$symbol", "$code", "$minKey", "$maxKey",
    "$undefined", "$dbPointer", "$scope",
})


def wrapper(value: Any) -> str | None:
    """The `$` key of an Extended JSON type wrapper, None for plain values and documents."""
    if isinstance(value, dict) and 1 <= len(value) <= 2:
        first = next(iter(value))
        if first in WRAPPERS and all(k in WRAPPERS for k in value):
            return "$code" if "$scope" in value else first
    return None


def is_document(value: Any) -> bool:
    return isinstance(value, dict) and wrapper(value) is None


def text(value: Any) -> str:
    """The value's relaxed Extended JSON text."""
    return orjson.dumps(value).decode()


def _as_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    tag = wrapper(value)
    if tag in ("$oid", "$numberDecimal", "$symbol", "$uuid"):
        inner = value[tag]
        if isinstance(inner, str):
            return inner
    return text(value)


def _date(inner: Any) -> datetime:
    if isinstance(inner, str):
        return datetime.fromisoformat(inner.replace("Z", "+00:00")).astimezone(UTC)
    if isinstance(inner, dict) and "$numberLong" in inner:  # outside years 1970-9999
        return EPOCH + timedelta(milliseconds=int(inner["$numberLong"]))
    if isinstance(inner, int):
        return EPOCH + timedelta(milliseconds=inner)
    raise ValueError(f"not a $date: {inner!r}")


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"not an integer: {value!r}")
    if isinstance(value, int):
        return value
    tag = wrapper(value)
    if tag in ("$numberLong", "$numberInt"):
        return int(value[tag])
    raise ValueError(f"not an integer: {value!r}")


def _float(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    tag = wrapper(value)
    if tag in ("$numberDouble", "$numberLong", "$numberInt"):
        return float(value[tag])  # "NaN", "Infinity", "-Infinity" included
    raise ValueError(f"not a number: {value!r}")


def _timestamp(value: Any) -> datetime:
    tag = wrapper(value)
    if tag == "$date":
        return _date(value["$date"])
    if tag == "$timestamp":  # a BSON Timestamp: its seconds, as Debezium's converter does
        return EPOCH + timedelta(seconds=int(value["$timestamp"]["t"]))
    raise ValueError(f"not a date: {value!r}")


def _binary(value: Any) -> bytes:
    if wrapper(value) == "$binary":
        inner = value["$binary"]
        data = inner["base64"] if isinstance(inner, dict) else inner
        return base64.b64decode(data)
    raise ValueError(f"not binary: {value!r}")


def conform(value: Any, typ: pa.DataType) -> Any:
    """The Python value pyarrow builds a `typ` column from, for an Extended JSON value that
    fits `typ` (the caller inferred `typ` from such values, `shapes.merge`)."""
    if value is None:
        return None
    if pa.types.is_string(typ):
        return _as_string(value)
    if pa.types.is_struct(typ):
        if not is_document(value):
            raise ValueError(f"not a document: {value!r}")
        return {f.name: conform(value.get(f.name), f.type) for f in typ}
    if pa.types.is_list(typ):
        if not isinstance(value, list):
            raise ValueError(f"not an array: {value!r}")
        return [conform(v, typ.value_type) for v in value]
    if pa.types.is_int64(typ):
        return _int(value)
    if pa.types.is_float64(typ):
        return _float(value)
    if pa.types.is_boolean(typ):
        if not isinstance(value, bool):
            raise ValueError(f"not a boolean: {value!r}")
        return value
    if pa.types.is_timestamp(typ):
        return _timestamp(value)
    if pa.types.is_binary(typ):
        return _binary(value)
    raise ValueError(f"no conversion to {typ}")


def column(values: list[Any], typ: pa.DataType) -> pa.Array:
    """An Arrow column of `typ` from Extended JSON values."""
    return pa.array([conform(v, typ) for v in values], type=typ)
