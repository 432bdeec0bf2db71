"""A collection as Datastream's MongoDB source writes it: two columns, `_id` and `payload`.

Why a codec of its own: a Datastream event carries the whole changed row in `payload`, and a
MongoDB document has no fixed columns, so the row is the document's `_id` and the document
itself, both as MongoDB Extended JSON text (docs/datastream.md, "MongoDB").  The generic
renderer (formats/datastream) then treats a collection as any other table: `_id` is the key
(`source_metadata.primary_keys`), `payload` a JSON column, and its Avro and JSON forms, the
object name, `uuid` and `sort_keys` come from the same code as every other source's.

The Extended JSON dialect is Datastream's `jsonMode`: canonical by default (every value
typed, `{"$numberInt": "1"}`; NaN and infinities kept), or by option
(`headwater.datastream.mongodb.json.mode`) Datastream's STRICT (Extended JSON v1 strict mode,
as Google's BigQuery page shows it: `{"$date": <ms>}`, `{"$numberLong": "…"}`,
`{"$binary": "…", "$type": "00"}`, `{"$regex": …, "$options": …}`, plain doubles and int32)
or relaxed (v2 relaxed: not a Datastream mode, kept for readers that want plain numbers);
pymongo's `json_util` writes all three, from the document decoded with dates beyond Python's
range kept.  Strict JSON cannot hold NaN or an infinity: Datastream drops such a document,
Headwater stops with an error naming it (`NonFiniteInStrictMode`) rather than lose it.  The
Debezium connector's own JSON (`extended_json`) is a different dialect (Debezium's strict
mode) and is not used here.

Updates need the whole document: the capture modes without `update_full` are refused with
Datastream events (config.py).  A document gone before its update was looked up (and a delete
without a pre-image) has `payload` null; the key still says which document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from bson import json_util
from bson.json_util import (
    CANONICAL_JSON_OPTIONS,
    RELAXED_JSON_OPTIONS,
    DatetimeRepresentation,
    JSONMode,
    JSONOptions,
)

from headwater.connectors.mongodb.documents import JSON_SCHEMA, UnknownOperation, decoded
from headwater.connectors.mongodb.fields import FieldFilter
from headwater.model.record import Op
from headwater.model.schema import STRING, Column, ConnectSchema, TableId, TableSchema

JSON_MODES: Final = ("canonical", "strict", "relaxed")
# Extended JSON v1 strict mode as Datastream's STRICT writes it (reference §B, MongoDB): dates
# as milliseconds, int64 labelled, binary and regex in their v1 forms, doubles and int32 plain
STRICT_JSON_OPTIONS: Final = JSONOptions(
    json_mode=JSONMode.LEGACY, strict_number_long=True,
    datetime_representation=DatetimeRepresentation.LEGACY)
_OPTIONS: Final[dict[str, JSONOptions]] = {
    "canonical": CANONICAL_JSON_OPTIONS, "strict": STRICT_JSON_OPTIONS,
    "relaxed": RELAXED_JSON_OPTIONS}

ID_COLUMN: Final = "_id"
PAYLOAD_COLUMN: Final = "payload"
# Source type names of the two columns: the keys of typemap.MONGODB_TYPES.
ID_TYPE: Final = "id"
DOCUMENT_TYPE: Final = "document"

Row = tuple[str, str | None]

_COLUMNS: Final = (
    Column(ID_COLUMN, 0, ID_TYPE, ConnectSchema(STRING, optional=False)),
    Column(PAYLOAD_COLUMN, 1, DOCUMENT_TYPE, JSON_SCHEMA),
)
_OPS: Final = {"insert": Op.CREATE, "update": Op.UPDATE, "replace": Op.UPDATE,
               "delete": Op.DELETE}


class NonFiniteInStrictMode(ValueError):
    """A document holding NaN or an infinity, which strict JSON cannot write."""


def datastream_collection_schema(database: str, collection: str) -> TableSchema:
    return TableSchema(TableId(database, None, collection), _COLUMNS, key_columns=(ID_COLUMN,),
                       key_origin=ID_COLUMN)


def json_options(mode: str) -> JSONOptions:
    try:
        return _OPTIONS[mode]
    except KeyError:
        raise ValueError(f"Extended JSON mode {mode!r}: use one of {', '.join(JSON_MODES)}"
                         ) from None


class DatastreamCodec:
    """One collection's Datastream rows (`_id`, `payload`) from documents and change events;
    the interface of `documents.CollectionCodec` (`schema`, `read`, `change`)."""

    __slots__ = ("fields", "options", "schema", "strict")

    def __init__(self, schema: TableSchema, fields: FieldFilter, mode: str = "canonical"
                 ) -> None:
        self.schema = schema
        self.fields = fields
        self.options = json_options(mode)
        self.strict = mode == "strict"

    def _text(self, value: Any) -> str:
        if not self.strict:
            return json_util.dumps(value, json_options=self.options)
        try:
            return json_util.dumps(value, json_options=self.options, allow_nan=False)
        except ValueError as exc:
            if "Out of range float" not in str(exc):
                raise
            table = self.schema.id
            raise NonFiniteInStrictMode(
                f"{table.database}.{table.table}: a document holds NaN or an infinity, which "
                f"headwater.datastream.mongodb.json.mode=strict cannot write (Datastream drops "
                f"such a document; Headwater stops rather than lose it): use canonical. "
                f"Document: {json_util.dumps(value, json_options=CANONICAL_JSON_OPTIONS)[:300]}"
            ) from None

    def _document(self, doc: Mapping[str, Any] | None) -> str | None:
        if doc is None:
            return None
        plain = decoded(doc)
        return self._text(self.fields.document(plain) if self.fields else plain)

    def _id(self, key: Mapping[str, Any]) -> str:
        return self._text(decoded(key)["_id"])

    def read(self, doc: Mapping[str, Any]) -> Row:
        """A backfill row."""
        plain = decoded(doc)
        return (self._text(plain["_id"]),
                self._text(self.fields.document(plain) if self.fields else plain))

    def change(self, event: Mapping[str, Any]) -> tuple[Op, Row | None, Row | None]:
        """(op, before, after) of a change stream event."""
        kind = event["operationType"]
        op = _OPS.get(kind)
        if op is None:
            raise UnknownOperation(f"change stream event of type {kind!r}")
        key = self._id(event["documentKey"])
        if op is Op.DELETE:
            return op, (key, self._document(event.get("fullDocumentBeforeChange"))), None
        return op, None, (key, self._document(event.get("fullDocument")))
