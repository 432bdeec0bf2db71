"""Column types inferred from Extended JSON documents, and how two inferred types combine.

The types form a small lattice so that the order in which documents arrive does not matter:
null (no value seen yet) joins anything; long and double give double; two documents give the
struct of their fields' joins; two arrays the array of their elements' join; anything else
(a string and a number, a document and an array, a date and a long) gives string, where values
are written as their Extended JSON text (`ejson.conform`).  The mapping follows Debezium's
MongoDataConverter (ExtractNewDocumentState): ObjectId, Decimal128, symbol, JavaScript ->
string (Decimal128 carries 34 digits at any exponent, which no Delta decimal holds exactly),
int32/int64 -> long, date and BSON timestamp -> timestamp, binary -> binary.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from headwater.pipeline.documents.ejson import is_document, wrapper
from headwater.pipeline.documents.options import DocumentOptions

TIMESTAMP = pa.timestamp("us", tz="UTC")
NULL = pa.null()

_WRAPPED: dict[str, pa.DataType] = {
    "$date": TIMESTAMP, "$timestamp": TIMESTAMP, "$numberLong": pa.int64(),
    "$numberInt": pa.int64(), "$numberDouble": pa.float64(), "$binary": pa.binary(),
}


def infer(value: Any, opts: DocumentOptions) -> pa.DataType:
    """The column type of one Extended JSON value (null: no information)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, float):
        return pa.float64()
    if isinstance(value, str):
        return pa.string()
    if isinstance(value, list):
        if opts.nested == "json":
            return pa.string()
        element = NULL
        for v in value:
            element = merge(element, infer(v, opts))
        return pa.list_(element)
    tag = wrapper(value)
    if tag is not None:
        return _WRAPPED.get(tag, pa.string())
    if opts.nested == "json":
        return pa.string()
    return pa.struct([pa.field(k, infer(v, opts)) for k, v in value.items()])


def merge(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    """The join of two inferred types (see the module docstring)."""
    if a == b:
        return a
    if a == NULL:
        return b
    if b == NULL:
        return a
    numbers = {pa.int64(), pa.float64()}
    if a in numbers and b in numbers:
        return pa.float64()
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        fields = {f.name: f.type for f in a}
        for f in b:
            fields[f.name] = merge(fields[f.name], f.type) if f.name in fields else f.type
        return pa.struct([pa.field(n, t) for n, t in fields.items()])
    if pa.types.is_list(a) and pa.types.is_list(b):
        return pa.list_(merge(a.value_type, b.value_type))
    return pa.string()


def finalize(typ: pa.DataType) -> pa.DataType | None:
    """A type Delta can store: fields with no value seen yet are left out (None: the whole
    column), an array whose elements were never seen holds strings."""
    if typ == NULL:
        return None
    if pa.types.is_struct(typ):
        fields = [pa.field(f.name, t) for f in typ if (t := finalize(f.type)) is not None]
        return pa.struct(fields) if fields else None
    if pa.types.is_list(typ):
        return pa.list_(finalize(typ.value_type) or pa.string())
    return typ


def normalize(typ: pa.DataType) -> pa.DataType:
    """A type read back from a Delta table in the form `infer` writes (large and view
    variants, field nullability)."""
    if pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return pa.string()
    if pa.types.is_large_binary(typ) or pa.types.is_binary_view(typ):
        return pa.binary()
    if pa.types.is_large_list(typ) or pa.types.is_list_view(typ) or pa.types.is_list(typ):
        return pa.list_(normalize(typ.value_type))
    if pa.types.is_struct(typ):
        return pa.struct([pa.field(f.name, normalize(f.type)) for f in typ])
    if pa.types.is_timestamp(typ):
        return TIMESTAMP
    return typ


def flatten(doc: dict[str, Any], delimiter: str, prefix: str = "") -> dict[str, Any]:
    """Nested documents as top-level fields `a<delimiter>b`, as Kafka Connect's Flatten does
    for ExtractNewDocumentState's `flatten.struct` (arrays stay as they are)."""
    out: dict[str, Any] = {}
    for name, value in doc.items():
        full = prefix + name
        if is_document(value):
            out.update(flatten(value, delimiter, full + delimiter))
        else:
            out[full] = value
    return out


def fields(doc: dict[str, Any], opts: DocumentOptions) -> dict[str, Any]:
    """The document's column values by column name (still Extended JSON)."""
    return flatten(doc, opts.delimiter) if opts.flatten_struct else doc


def columns(docs: list[dict[str, Any]], opts: DocumentOptions) -> dict[str, pa.DataType]:
    """The columns the documents need, in order of first appearance, with their joined types,
    not finalized: joined with the target's types first, so that e.g. a batch of empty arrays
    does not turn an array of longs into one of strings."""
    joined: dict[str, pa.DataType] = {}
    for doc in docs:
        for name, value in fields(doc, opts).items():
            t = infer(value, opts)
            joined[name] = merge(joined[name], t) if name in joined else t
    return joined
