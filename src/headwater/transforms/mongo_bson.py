"""The BSON values inside Debezium's MongoDB event strings, as `BsonDocument.parse` reads them.

ExtractNewDocumentState parses `after`/`before` (STRICT extended JSON), `updatedFields` and the
key's `id` (RELAXED) back into BSON before it infers a Connect schema, and the schema depends on
the BSON *type* (an int64 is not an int32, an ObjectId is a string field, a `$date` a
Timestamp).  Python's JSON values lose those types, so each value here is a `Bson` (type, value)
pair.  A bare integer is int32 when it fits, else int64, as bson-java's JsonReader decides;
that is what Debezium sees too for RELAXED texts, which write int64 as plain numbers.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any, NamedTuple

from headwater.connect.record import TransformError

# bson-java's BsonType names, as MongoDataConverter switches on them.
NULL, STRING, INT32, INT64 = "NULL", "STRING", "INT32", "INT64"
DOUBLE, BOOLEAN = "DOUBLE", "BOOLEAN"
DECIMAL128, OBJECT_ID, DATE_TIME, TIMESTAMP = "DECIMAL128", "OBJECT_ID", "DATE_TIME", "TIMESTAMP"
BINARY, REGULAR_EXPRESSION, JAVASCRIPT = "BINARY", "REGULAR_EXPRESSION", "JAVASCRIPT"
JAVASCRIPT_WITH_SCOPE, SYMBOL, UNDEFINED = "JAVASCRIPT_WITH_SCOPE", "SYMBOL", "UNDEFINED"
MIN_KEY, MAX_KEY, DOCUMENT, ARRAY = "MIN_KEY", "MAX_KEY", "DOCUMENT", "ARRAY"
_INT32 = range(-(2**31), 2**31)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class Bson(NamedTuple):
    """One BSON value: DOCUMENT holds a dict of Bson, ARRAY a list of Bson, BINARY bytes,
    REGULAR_EXPRESSION (pattern, options), TIMESTAMP (seconds, increment), DATE_TIME ms,
    DECIMAL128/OBJECT_ID/STRING/JAVASCRIPT/SYMBOL their text."""

    type: str
    value: Any


def _number(value: int | float) -> Bson:
    if isinstance(value, float):
        return Bson(DOUBLE, value)
    return Bson(INT32, value) if value in _INT32 else Bson(INT64, value)


def _date(inner: Any) -> Bson:
    if isinstance(inner, int):
        return Bson(DATE_TIME, inner)
    if isinstance(inner, dict) and "$numberLong" in inner:
        return Bson(DATE_TIME, int(inner["$numberLong"]))
    if isinstance(inner, str):
        parsed = dt.datetime.fromisoformat(inner.replace("Z", "+00:00"))
        return Bson(DATE_TIME, (parsed - _EPOCH) // dt.timedelta(milliseconds=1))
    raise TransformError(f"invalid $date value {inner!r}")


def _wrapped(obj: dict[str, Any]) -> Bson | None:
    """The value of an extended JSON type wrapper, None for a plain document."""
    keys = tuple(obj)
    if not keys or not keys[0].startswith("$"):
        return None
    first = keys[0]
    inner = obj[first]
    if keys == ("$oid",):
        return Bson(OBJECT_ID, inner)
    if keys == ("$date",):
        return _date(inner)
    if keys == ("$numberLong",):
        return Bson(INT64, int(inner))
    if keys == ("$numberInt",):
        return Bson(INT32, int(inner))
    if keys == ("$numberDouble",):
        return Bson(DOUBLE, float(inner.replace("Infinity", "inf")))
    if keys == ("$numberDecimal",):
        return Bson(DECIMAL128, "NaN" if inner == "-NaN" else inner)
    if set(keys) == {"$binary", "$type"}:
        return Bson(BINARY, base64.b64decode(inner))
    if keys == ("$binary",) and isinstance(inner, dict):
        return Bson(BINARY, base64.b64decode(inner["base64"]))
    if keys == ("$uuid",):
        return Bson(BINARY, bytes.fromhex(inner.replace("-", "")))
    if set(keys) == {"$regex", "$options"}:
        return Bson(REGULAR_EXPRESSION, (inner, obj["$options"]))
    if keys == ("$regularExpression",):
        return Bson(REGULAR_EXPRESSION, (inner["pattern"], inner["options"]))
    if keys == ("$timestamp",):
        return Bson(TIMESTAMP, (int(inner["t"]), int(inner["i"])))
    if keys == ("$code",):
        return Bson(JAVASCRIPT, inner)
    if set(keys) == {"$code", "$scope"}:
        return Bson(JAVASCRIPT_WITH_SCOPE, (obj["$code"], convert(obj["$scope"])))
    if keys == ("$symbol",):
        return Bson(SYMBOL, inner)
    if keys == ("$undefined",):
        return Bson(UNDEFINED, None)
    if keys == ("$minKey",):
        return Bson(MIN_KEY, None)
    if keys == ("$maxKey",):
        return Bson(MAX_KEY, None)
    return None  # e.g. {"$ref", "$id"} (a DBRef): a document


def convert(node: Any) -> Bson:
    """A parsed JSON value as BSON."""
    if node is None:
        return Bson(NULL, None)
    if isinstance(node, bool):
        return Bson(BOOLEAN, node)
    if isinstance(node, int | float):
        return _number(node)
    if isinstance(node, str):
        return Bson(STRING, node)
    if isinstance(node, list):
        return Bson(ARRAY, [convert(v) for v in node])
    wrapped = _wrapped(node)
    if wrapped is not None:
        return wrapped
    return Bson(DOCUMENT, {k: convert(v) for k, v in node.items()})


def parse_document(text: str) -> dict[str, Bson]:
    """`BsonDocument.parse(text)`: a document's fields in order."""
    try:
        node = json.loads(text)
    except ValueError as exc:
        raise TransformError(f"invalid JSON document: {exc}") from None
    doc = convert(node)
    if doc.type != DOCUMENT:
        raise TransformError(f"not a JSON document: {text[:80]}")
    return dict(doc.value)


def timestamp_value(ms: int) -> dt.datetime:
    """A Connect Timestamp (java.util.Date of `ms`) as the datetime Headwater records hold."""
    try:
        return _EPOCH + dt.timedelta(milliseconds=ms)
    except OverflowError:
        raise TransformError(f"date {ms} ms from the epoch is outside years 1-9999, which "
                             "Headwater's Connect records cannot hold") from None
