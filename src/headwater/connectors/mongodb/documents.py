"""A collection as the core sees it, and its documents as change record images.

Why a `TableSchema`: the dispatcher, the topic naming, the transaction counts and the metrics
all work on tables; a collection is one whose `attributes` mark the document envelope
(``envelope: document``), which makes the Debezium JSON format render it with Debezium's
MongoDB envelope (`formats/debezium_json.py`, `_DocumentPlan`) instead of the relational one.

Images have a fixed layout (`ID`, `JSON`, `UPDATE`): the key's `id` text (the `_id` in Extended
JSON), the document's JSON text (or None: no pre/post image) and, on `after` of an update, the
`updateDescription` payload.  Everything is encoded here, once, on the capture thread; the
format only places the strings.

Documents and change events arrive as `RawBSONDocument` (the sources read with that document
class): their bytes are encoded directly by `extended_json`'s raw walker, which is exact for
every BSON type (a decoded document has lost symbol, undefined, DBPointer and the regex option
order) and skips building Python objects for every field.  Only `field.exclude.list` /
`field.renames` need the document as a dict: such collections decode it (dates beyond
datetime's range kept as DatetimeMS) and pay for the decoded path.  Plain mappings are accepted
everywhere as well (tests, decoded callers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from bson import decode as _bson_decode
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument

from headwater.connectors.mongodb.extended_json import (
    document_json,
    document_json_raw,
    id_json,
    id_json_raw,
    update_description,
)
from headwater.connectors.mongodb.fields import FieldFilter
from headwater.connectors.mongodb.rawdoc import RAW_TYPES
from headwater.model.record import Op
from headwater.model.schema import STRING, Column, ConnectSchema, TableId, TableSchema

ENVELOPE_ATTRIBUTE: Final = "envelope"
DOCUMENT_ENVELOPE: Final = "document"
ID, JSON, UPDATE = 0, 1, 2
Image = tuple[str, str | None, dict[str, Any] | None]

JSON_SCHEMA: Final = ConnectSchema(STRING, optional=True, name="io.debezium.data.Json",
                                   version=1)
_COLUMNS: Final = (
    Column("id", ID, "_id", ConnectSchema(STRING, optional=False)),
    Column("document", JSON, "document", JSON_SCHEMA),
    Column("updateDescription", UPDATE, "updateDescription", JSON_SCHEMA),
)


def collection_schema(database: str, collection: str) -> TableSchema:
    return TableSchema(TableId(database, None, collection), _COLUMNS, key_columns=("id",),
                       key_origin="_id", attributes={ENVELOPE_ATTRIBUTE: DOCUMENT_ENVELOPE})


def is_document_table(table: TableSchema) -> bool:
    return table.attributes.get(ENVELOPE_ATTRIBUTE) == DOCUMENT_ENVELOPE


class UnknownOperation(ValueError):
    """A change stream event that is no document change (drop, rename, invalidate...)."""


_OPS: Final = {"insert": Op.CREATE, "update": Op.UPDATE, "replace": Op.UPDATE,
               "delete": Op.DELETE}


class CollectionCodec:
    """One collection's schema and field rules; turns documents and change events into images
    (MongoDbCollectionSchema)."""

    __slots__ = ("fields", "schema")

    def __init__(self, schema: TableSchema, fields: FieldFilter) -> None:
        self.schema = schema
        self.fields = fields

    def _json(self, doc: Mapping[str, Any] | None) -> str | None:
        if doc is None:
            return None
        if self.fields:
            return document_json(self.fields.document(decoded(doc)))
        if type(doc) in RAW_TYPES:
            return document_json_raw(cast(RawBSONDocument, doc).raw)
        return document_json(doc)

    def read(self, doc: Mapping[str, Any]) -> Image:
        """A snapshot read's `after`."""
        if type(doc) in RAW_TYPES and not self.fields:
            raw = cast(RawBSONDocument, doc).raw
            return (id_json_raw(raw), document_json_raw(raw), None)
        return (id_json(doc["_id"]), self._json(doc), None)

    def change(self, event: Mapping[str, Any]) -> tuple[Op, Image | None, Image | None]:
        """(op, before, after) of a change stream event."""
        kind = event["operationType"]
        op = _OPS.get(kind)
        if op is None:
            raise UnknownOperation(f"change stream event of type {kind!r}")
        document_key = event["documentKey"]
        key = (id_json_raw(document_key.raw) if type(document_key) in RAW_TYPES
               else id_json(document_key["_id"]))
        if op is Op.CREATE:
            return op, None, (key, self._json(event.get("fullDocument")), None)
        pre = event.get("fullDocumentBeforeChange")
        if op is Op.DELETE:
            return op, (key, self._json(pre), None), None
        before = (key, self._json(pre), None) if pre is not None else None
        desc = event.get("updateDescription")
        update = update_description(self._filtered(desc)) if desc is not None else None
        return op, before, (key, self._json(event.get("fullDocument")), update)

    def _filtered(self, desc: Mapping[str, Any]) -> Mapping[str, Any]:
        fields = self.fields
        if not fields:
            return desc
        removed = [p for p in (fields.path(f) for f in desc.get("removedFields") or ())
                   if p is not None]
        truncated = []
        for item in desc.get("truncatedArrays") or ():
            path = fields.path(item["field"])
            if path is not None:
                truncated.append({"field": path, "newSize": item["newSize"]})
        updated = desc.get("updatedFields")
        return {"removedFields": removed,
                "updatedFields": fields.change(decoded(updated)) if updated is not None else None,
                "truncatedArrays": truncated}


_DECODE_OPTIONS: Final[CodecOptions[dict[str, Any]]] = CodecOptions(
    datetime_conversion=DatetimeConversion.DATETIME_AUTO)


def decoded(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A mutable copy of a document for the field rules; a raw one decoded with dict
    sub-documents and out-of-range dates kept (DATETIME_AUTO)."""
    if isinstance(doc, RawBSONDocument):
        return _bson_decode(doc.raw, _DECODE_OPTIONS)
    return dict(doc)
