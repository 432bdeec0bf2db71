"""A collection as the core sees it, and its documents as change record images.

Why a `TableSchema`: the dispatcher, the topic naming, the transaction counts and the metrics
all work on tables; a collection is one whose `attributes` mark the document envelope
(``envelope: document``), which makes the Debezium JSON format render it with Debezium's
MongoDB envelope (`formats/debezium_json.py`, `_DocumentPlan`) instead of the relational one.

Images have a fixed layout (`ID`, `JSON`, `UPDATE`): the key's `id` text (the `_id` in Extended
JSON), the document's JSON text (or None: no pre/post image) and, on `after` of an update, the
`updateDescription` payload.  Everything is encoded here, once, on the capture thread; the
format only places the strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from headwater.connectors.mongodb.extended_json import document_json, id_json, update_description
from headwater.connectors.mongodb.fields import FieldFilter
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
            doc = self.fields.document(dict(doc))
        return document_json(doc)

    def read(self, doc: Mapping[str, Any]) -> Image:
        """A snapshot read's `after`."""
        return (id_json(doc["_id"]), self._json(doc), None)

    def change(self, event: Mapping[str, Any]) -> tuple[Op, Image | None, Image | None]:
        """(op, before, after) of a change stream event."""
        kind = event.get("operationType")
        op = _OPS.get(kind)  # type: ignore[arg-type]
        if op is None:
            raise UnknownOperation(f"change stream event of type {kind!r}")
        key = id_json(event["documentKey"]["_id"])
        pre = event.get("fullDocumentBeforeChange")
        if op is Op.CREATE:
            return op, None, (key, self._json(event.get("fullDocument")), None)
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
                "updatedFields": fields.change(dict(updated)) if updated is not None else None,
                "truncatedArrays": truncated}
