"""Debezium's `io.debezium.connector.mongodb.transforms.ExtractNewDocumentState` (3.x).

MongoDB events carry documents as extended JSON strings (`after`, `before`,
`updateDescription.updatedFields`), which sinks cannot use column by column; this transform
replaces the envelope by the document as a Connect struct whose schema is inferred from that
document (`mongo_converter`), and the key by a struct `{id: <_id as a typed value>}`.

What it does with each event, as Debezium 3.x does:
* insert, replace, read, and updates carrying a full document (`change_streams_update_full*`
  capture modes): the `after` document;
* updates without a full document (`change_streams` mode): a document made of the
  `updatedFields` (dotted paths stay field names, `a.b`, or `a<delimiter>b` with
  `flatten.struct`) minus `removedFields`, plus `_id` from the key: a patch, not the row;
* deletes and tombstones per `delete.tombstone.handling.mode` (drop, tombstone and
  delete-to-tombstone give a real tombstone here since the value is not a struct; rewrite
  keeps the `before` pre-image if any, else only `__deleted`, `_id` with
  `delete.tombstone.handling.mode.rewrite-with-id`); the 2.x `delete.handling.mode` /
  `drop.tombstones` are read as ExtractNewRecordState reads them;
* `add.fields`/`add.headers` as ExtractNewRecordState (op, collection, db, ord, wallTime,
  `updateDescription.updatedFields`...);
* `flatten.struct` (Kafka's Flatten on the value), `array.encoding`,
  `field.name.adjustment.mode` (and the 2.x `sanitize.field.names=true`, as `avro`).
Records whose key is not a `*.Key` struct (heartbeats, transaction events) pass unchanged.
`route.by.field` and `replace.null.with.default` are read and change nothing, as in Debezium.
"""

from __future__ import annotations

import logging
from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import (
    ConnectRecord,
    TransformError,
    require_struct,
)
from headwater.model.schema import STRUCT, ConnectField, ConnectSchema
from headwater.transforms import mongo_bson as b
from headwater.transforms.extract_new_state import (
    DELETE_DROP,
    DELETE_REWRITE,
    delete_handling,
    is_envelope,
    parse_references,
    reference_headers,
)
from headwater.transforms.mongo_bson import Bson, parse_document
from headwater.transforms.mongo_converter import MongoDataConverter
from headwater.transforms.names import field_name_adjuster, read_mode, schema_name_adjuster

log = logging.getLogger("headwater.transforms")


def flatten(schema: ConnectSchema, value: dict[str, Any], delimiter: str
            ) -> tuple[ConnectSchema, dict[str, Any]]:
    """Kafka's `Flatten$Value` on a struct: nested struct fields become `outer<delim>inner`
    (optional when any parent is), arrays and maps stay, empty structs vanish."""
    fields: list[ConnectField] = []
    out: dict[str, Any] = {}

    def walk(s: ConnectSchema, v: dict[str, Any] | None, prefix: str, optional: bool) -> None:
        for f in s.fields:
            name = f"{prefix}{delimiter}{f.name}" if prefix else f.name
            child_optional = optional or f.schema.optional
            child = v.get(f.name) if v is not None else None
            if f.schema.type == STRUCT:
                walk(f.schema, child, name, child_optional)
                continue
            if any(existing.name == name for existing in fields):
                raise TransformError(
                    f"Cannot create field because of field name duplication {name}")
            fields.append(ConnectField(name, f.schema.with_optional(child_optional)
                                       if child_optional != f.schema.optional else f.schema))
            out[name] = child

    walk(schema, value, "", False)
    return ConnectSchema(STRUCT, optional=schema.optional, name=schema.name,
                         version=schema.version, parameters=schema.parameters, doc=schema.doc,
                         fields=tuple(fields)), out


def _is_key(schema: ConnectSchema | None) -> bool:
    """SmtManager.isValidKey: a key schema named `*.Key`."""
    return schema is not None and schema.name is not None and schema.name.endswith("Key")


class ExtractNewDocumentState:
    def __init__(self, p: PluginProps) -> None:
        self.delete, self.keep_tombstones = delete_handling(p)
        self.rewrite = self.delete == DELETE_REWRITE
        self.add_fields = parse_references(p.get_raw("add.fields.prefix", "__"),
                                           p.get_list("add.fields"))
        self.add_headers = parse_references(p.get_raw("add.headers.prefix", "__"),
                                            p.get_list("add.headers"))
        p.ignore("route.by.field", "replace.null.with.default")  # no effect on MongoDB events
        mode = read_mode(p, "field.name.adjustment.mode")
        if p.get_str("sanitize.field.names") is not None:
            if p.has("field.name.adjustment.mode"):
                raise PluginConfigError(f"{p.key('sanitize.field.names')} (Debezium 1.x) cannot "
                                        "be combined with field.name.adjustment.mode")
            mode = "avro" if p.get_bool("sanitize.field.names", False) else "none"
            log.warning("%s: sanitize.field.names is a Debezium 1.x property; use "
                        "field.name.adjustment.mode", p.label)
        self.schema_names = schema_name_adjuster(mode)
        self.adjust_names = mode != "none"
        encoding = p.choice("array.encoding", ("array", "document"), "array")
        self.converter = MongoDataConverter(encoding == "document", field_name_adjuster(mode),
                                            mode != "none")
        self.flatten_struct = p.get_bool("flatten.struct", False)
        self.delimiter = p.get_raw("flatten.struct.delimiter", "_")
        self.rewrite_with_id = p.get_bool("delete.tombstone.handling.mode.rewrite-with-id",
                                          False)

    # -- pieces -----------------------------------------------------------------------------
    def _patch(self, update: dict[str, Any], key_doc: dict[str, Bson]) -> dict[str, Bson]:
        """The document of an update without a full document: updated minus removed fields,
        with `_id`."""
        doc: dict[str, Bson] = {}
        updated = update.get("updatedFields")
        if updated is not None:
            doc.update(parse_document(updated))
        for name in update.get("removedFields") or ():
            doc.pop(name, None)
        if "_id" not in doc:
            doc["_id"] = key_doc["id"]
        if self.flatten_struct:
            doc = {k.replace(".", self.delimiter): v for k, v in doc.items()}
        return doc

    def _value_schema_name(self, record: ConnectRecord) -> str:
        assert record.value_schema is not None and record.value_schema.name is not None
        name = record.value_schema.name
        if name.endswith("Envelope"):
            name = name[:-9]
        if self.adjust_names:
            name = ".".join(self.schema_names(part) for part in name.split("."))
        return name

    def _new_record(self, record: ConnectRecord, key_doc: dict[str, Bson],
                    value_doc: dict[str, Bson] | None) -> ConnectRecord:
        conv = self.converter
        key_schema = conv.schema(key_doc, None)
        key = conv.struct(key_doc, key_schema)
        if not value_doc:
            return record.replace(key_schema=key_schema, key=key, value_schema=None,
                                  value=None)
        schema = conv.schema(value_doc, self._value_schema_name(record))
        value = conv.struct(value_doc, schema)
        envelope_schema = record.value_schema
        assert envelope_schema is not None
        extra: list[ConnectField] = []
        for ref in self.add_fields:
            found = ref.schema(envelope_schema)
            if found is None:
                raise TransformError(f"{ref.new_field} is not a valid field name "
                                     f"(add.fields: no {ref.field} in the event)")
            if any(f.name == ref.new_field for f in schema.fields):
                raise TransformError(
                    f"Cannot create field because of field name duplication {ref.new_field}")
            extra.append(ConnectField(ref.new_field, found))
            value[ref.new_field] = ref.value(envelope_schema, record.value)
        if extra:
            schema = ConnectSchema(STRUCT, optional=False, name=schema.name,
                                   fields=(*schema.fields, *extra))
        if self.flatten_struct:
            schema, value = flatten(schema, value, self.delimiter)
        return record.replace(key_schema=key_schema, key=key, value_schema=schema, value=value)

    # -- the transform ----------------------------------------------------------------------
    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if not _is_key(record.key_schema):
            return record
        if self.add_headers:
            record = record.replace(
                headers=record.headers + reference_headers(self.add_headers, record))
        key_struct = require_struct(record.key, "ExtractNewDocumentState key")
        key_doc = parse_document('{"id": ' + str(key_struct.get("id")) + "}")
        if record.value is None:
            if not self.keep_tombstones:
                return None
            return self._new_record(record, key_doc, None)
        if not is_envelope(record.value_schema):
            return record
        envelope = require_struct(record.value, "ExtractNewDocumentState")
        after = envelope.get("after")
        update = envelope.get("updateDescription")
        deletion = after is None and update is None
        document: dict[str, Bson] | None = None
        if deletion:
            if self.delete == DELETE_DROP:
                return None
            if self.rewrite and envelope.get("before") is not None:
                document = parse_document(envelope["before"])
        elif after is not None:
            document = parse_document(after)
        else:
            document = self._patch(require_struct(update, "updateDescription"), key_doc)
        if self.rewrite:
            document = dict(document or {})
            document[DELETED_FIELD] = Bson(b.BOOLEAN, deletion)
            if self.rewrite_with_id and "_id" not in document and "id" in key_doc:
                document["_id"] = key_doc["id"]
        return self._new_record(record, key_doc, document)


DELETED_FIELD = "__deleted"
