"""Debezium's `io.debezium.transforms.ExtractNewRecordState` (the `unwrap` SMT), 3.x behaviour.

It replaces the change event envelope by its `after` row (the `before` row for a rewritten
delete), optionally with metadata appended as fields (`add.fields`, `__op`, `__source_ts_ms`...)
or headers (`add.headers`), and decides what becomes of deletes and tombstones
(`delete.tombstone.handling.mode`).  Records that are not change events (heartbeats,
transaction boundaries, schema changes) pass unchanged, truncates are dropped, as in Debezium.

The 2.x properties `drop.tombstones` and `delete.handling.mode` (removed in Debezium 3.x) are
still read, because the Debezium tutorial and many deployed configurations use them; they map
onto the same two decisions (what a delete becomes, whether the tombstone after it stays) and
may not be combined with `delete.tombstone.handling.mode`.
"""

from __future__ import annotations

import logging
from typing import Any

from headwater.connect.props import PluginConfigError, PluginProps
from headwater.connect.record import ConnectRecord, Header, field_schema, require_struct
from headwater.model.schema import OPTIONAL_STRING, STRING, ConnectSchema
from headwater.transforms.fields import append_fields

log = logging.getLogger("headwater.transforms")

DELETED_FIELD = "__deleted"
_HEADER_STRING = ConnectSchema(STRING, optional=False)
MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
# What a delete becomes: dropped, a null value with the row schema (Debezium's "tombstone"
# mode: the JDBC sink reads it as a flattened delete), a real tombstone (null schema and
# value), or the before row with __deleted=true.
DELETE_DROP, DELETE_NULL_VALUE, DELETE_TOMBSTONE, DELETE_REWRITE = range(4)
_TX_FIELDS = ("id", "total_order", "data_collection_order")
_TOP_FIELDS = ("op", "ts_ms", "ts_us", "ts_ns")


def is_envelope(schema: ConnectSchema | None) -> bool:
    """Debezium's `Envelope.isEnvelopeSchema`: a struct named `*.Envelope`."""
    return schema is not None and schema.name is not None and schema.name.endswith("Envelope")


class FieldReference:
    """One `add.fields` / `add.headers` entry: `field`, `struct.field`, optionally `:new_name`.

    An unqualified name lives in `transaction` (id, total_order, data_collection_order), at
    the top level (op, ts_ms, ts_us, ts_ns), in `updateDescription` (MongoDB) or in `source`.
    """

    def __init__(self, prefix: str, spec: str) -> None:
        parts = spec.split(":")
        if len(parts) > 2:
            raise PluginConfigError(f"Unexpected field name: {spec}")
        splits = parts[0].split(".")
        self.field = splits[0] if len(splits) == 1 else splits[1]
        self.struct: str | None
        if len(splits) == 1:
            self.struct = ("transaction" if self.field in _TX_FIELDS else None
                           if self.field in _TOP_FIELDS else "updateDescription"
                           if self.field == "updateDescription" else "source")
        else:
            self.struct = splits[0]
        if len(parts) == 2:
            self.new_field = prefix + parts[1]
        else:
            self.new_field = prefix + (self.field if len(splits) == 1
                                       else f"{self.struct}_{self.field}")

    def schema(self, envelope: ConnectSchema) -> ConnectSchema | None:
        parent = field_schema(envelope, self.struct) if self.struct is not None else envelope
        found = field_schema(parent, self.field)
        if found is None:
            found = field_schema(envelope, self.field)  # added to the top by another SMT
        return None if found is None else found.with_optional(True)

    def value(self, envelope_schema: ConnectSchema, envelope: dict[str, Any]) -> Any:
        parent = envelope.get(self.struct) if self.struct is not None else envelope
        if parent is None:
            return None  # e.g. no transaction block in a snapshot
        parent_schema = (field_schema(envelope_schema, self.struct) if self.struct is not None
                         else envelope_schema)
        if field_schema(parent_schema, self.field) is not None:
            return parent.get(self.field)
        return envelope.get(self.field)


def parse_references(prefix: str, specs: tuple[str, ...]) -> list[FieldReference]:
    return [FieldReference(prefix, spec) for spec in specs]


def reference_headers(refs: list[FieldReference], record: ConnectRecord) -> tuple[Header, ...]:
    """The `add.headers` of `record` (ExtractNewRecordState and ExtractNewDocumentState alike):
    each reference's value with its schema, made optional; a reference the envelope lacks adds
    none; a tombstone (null value) gets only `op`, as "d"."""
    envelope = record.value
    out: list[Header] = []
    for ref in refs:
        if envelope is None:
            if ref.field == "op":
                out.append(Header(ref.new_field, _HEADER_STRING, "d"))
            continue
        assert record.value_schema is not None
        schema = ref.schema(record.value_schema)
        if schema is not None:
            out.append(Header(ref.new_field, schema, ref.value(record.value_schema, envelope)))
    return tuple(out)


def delete_handling(p: PluginProps) -> tuple[int, bool]:
    """What a delete becomes (DELETE_*) and whether tombstones stay, from
    `delete.tombstone.handling.mode` or the 2.x `delete.handling.mode`/`drop.tombstones`
    (read with a deprecation warning; the two spellings may not be mixed)."""
    legacy_delete = p.get_str("delete.handling.mode")
    legacy_tombstones = p.get_str("drop.tombstones")
    mode = p.get_str("delete.tombstone.handling.mode")
    if mode is not None and (legacy_delete is not None or legacy_tombstones is not None):
        raise PluginConfigError(
            f"{p.key('delete.tombstone.handling.mode')} cannot be combined with the "
            "Debezium 2.x delete.handling.mode / drop.tombstones")
    if legacy_delete is not None or legacy_tombstones is not None:
        old = p.choice("delete.handling.mode", ("drop", "rewrite", "none"), "drop")
        keep_tombstones = not p.get_bool("drop.tombstones", True)
        log.warning("%s: delete.handling.mode / drop.tombstones are Debezium 2.x "
                    "properties (removed in 3.x); use delete.tombstone.handling.mode",
                    p.label)
        return {"drop": DELETE_DROP, "rewrite": DELETE_REWRITE,
                "none": DELETE_NULL_VALUE}[old or "drop"], keep_tombstones
    chosen = p.choice("delete.tombstone.handling.mode", MODES, "tombstone") or ""
    return {
        "drop": DELETE_DROP, "tombstone": DELETE_NULL_VALUE,
        "rewrite": DELETE_REWRITE, "rewrite-with-tombstone": DELETE_REWRITE,
        "delete-to-tombstone": DELETE_TOMBSTONE,
    }[chosen], chosen == "rewrite-with-tombstone"


class ExtractNewRecordState:
    def __init__(self, p: PluginProps) -> None:
        self.delete, self.keep_tombstones = delete_handling(p)
        self.rewrite = self.delete == DELETE_REWRITE
        self.route_by_field = p.get_str("route.by.field")
        self.add_fields = parse_references(p.get_raw("add.fields.prefix", "__"),
                                           p.get_list("add.fields"))
        self.add_headers = parse_references(p.get_raw("add.headers.prefix", "__"),
                                            p.get_list("add.headers"))
        self.replace_null_with_default = p.get_bool("replace.null.with.default", True)
        self.drop_fields_header = p.get_str("drop.fields.header.name")
        self.drop_fields_from_key = p.get_bool("drop.fields.from.key", False)
        self.drop_fields_keep_compatible = p.get_bool("drop.fields.keep.schema.compatible", True)
        self._schemas: dict[tuple[int, int, str], tuple[Any, ConnectSchema]] = {}

    # -- pieces -----------------------------------------------------------------------------
    def _with_metadata(self, original: ConnectRecord, row_schema: ConnectSchema,
                       row: dict[str, Any], deleted: str | None) -> tuple[ConnectSchema,
                                                                          dict[str, Any]]:
        """The row with `__deleted` (rewrite modes) and the `add.fields` appended."""
        envelope_schema = original.value_schema
        assert envelope_schema is not None
        extra: list[tuple[str, ConnectSchema, Any]] = []
        if deleted is not None:
            extra.append((DELETED_FIELD, OPTIONAL_STRING, deleted))
        for ref in self.add_fields:
            schema = ref.schema(envelope_schema)
            if schema is not None:
                extra.append((ref.new_field, schema, ref.value(envelope_schema, original.value)))
        if not extra:
            return row_schema, row
        key = (id(envelope_schema), id(row_schema), deleted or "")
        cached = self._schemas.get(key)
        new_schema, new_value = append_fields(
            row_schema, row, extra,
            replace_null_with_default=deleted is not None and self.replace_null_with_default)
        if cached is not None and cached[0] is envelope_schema:
            new_schema = cached[1]  # one schema object per table: converters cache by it
        else:
            if len(self._schemas) > 1024:
                self._schemas.clear()
            self._schemas[key] = (envelope_schema, new_schema)
        assert new_value is not None
        return new_schema, new_value

    def _drop_fields(self, record: ConnectRecord) -> ConnectRecord:
        if not self.drop_fields_header:
            return record
        header = record.header(self.drop_fields_header)
        if header is None or not header.value:
            return record
        names = [str(n) for n in header.value]

        def drop(schema: ConnectSchema | None, value: Any) -> tuple[ConnectSchema | None, Any]:
            if schema is None or value is None:
                return schema, value
            gone = {f.name for f in schema.fields if f.name in names
                    and (f.schema.optional or not self.drop_fields_keep_compatible)}
            if not gone:
                return schema, value
            from headwater.transforms.fields import select_fields

            keep = [(f.name, f.name) for f in schema.fields if f.name not in gone]
            return select_fields(schema, value, keep)

        if self.drop_fields_from_key:
            ks, kv = drop(record.key_schema, record.key)
            record = record.replace(key_schema=ks, key=kv)
        vs, vv = drop(record.value_schema, record.value)
        return record.replace(value_schema=vs, value=vv)

    def _route(self, record: ConnectRecord, row: dict[str, Any] | None) -> ConnectRecord:
        if self.route_by_field is None or row is None:
            return record
        topic = row.get(self.route_by_field)
        if topic is None or not str(topic).strip():
            return record
        return record.replace(topic=str(topic))

    # -- the transform ----------------------------------------------------------------------
    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        tombstone = record.value is None
        valid = is_envelope(record.value_schema)
        if (valid or tombstone) and self.add_headers:
            record = record.replace(
                headers=record.headers + reference_headers(self.add_headers, record))
        if tombstone:
            return record if self.keep_tombstones else None
        if not valid:
            return record
        envelope_schema = record.value_schema
        assert envelope_schema is not None
        envelope = require_struct(record.value, "ExtractNewRecordState")
        after = envelope.get("after")
        before = envelope.get("before")
        after_schema = field_schema(envelope_schema, "after")
        if after is None and before is None:
            return None  # truncate: dropped, as Debezium does
        if after is None:
            return self._delete(record, envelope, after_schema)
        assert after_schema is not None
        row_schema, row = after_schema, after
        out = record.replace(value_schema=row_schema, value=row)
        out = self._route(out, row)
        schema, value = self._with_metadata(record, row_schema, row,
                                            "false" if self.rewrite else None)
        out = out.replace(value_schema=schema, value=value)
        return self._drop_fields(out)

    def _delete(self, record: ConnectRecord, envelope: dict[str, Any],
                after_schema: ConnectSchema | None) -> ConnectRecord | None:
        if self.delete == DELETE_DROP:
            return None
        if self.delete == DELETE_NULL_VALUE:
            out = record.replace(value_schema=after_schema, value=None)
        elif self.delete == DELETE_TOMBSTONE:
            out = record.replace(value_schema=None, value=None)
        else:
            before_schema = field_schema(record.value_schema, "before")
            assert before_schema is not None
            before = envelope["before"]
            out = record.replace(value_schema=before_schema, value=before)
        out = self._route(out, envelope.get("before"))
        out = self._drop_fields(out)
        if out.value is not None:
            assert out.value_schema is not None
            schema, value = self._with_metadata(record, out.value_schema, out.value, "true")
            out = out.replace(value_schema=schema, value=value)
        return out
