"""What every Datastream event of one table shares, computed once per `TableSchema`.

As in the Debezium format, connectors replace the TableSchema object when a table's structure
changes, so a plan cached per object is never stale: the object name, the unified type and
converters of each column, the Avro schema of the whole event (with the payload's columns in
table order, so that each value is found by its index), the `schema_key` and the constant
part of `source_metadata`.
"""

from __future__ import annotations

import hashlib
import operator
import re
from collections.abc import Callable
from typing import Any

import orjson

from headwater.formats.datastream.sources import MetaField, SourceSpec
from headwater.formats.datastream.unified import Converter, Unified, unified_type
from headwater.model.schema import TableSchema

_AVRO_INVALID = re.compile(r"[^A-Za-z0-9_]")

TIMESTAMP_MILLIS = {"type": "long", "logicalType": "timestamp-millis"}
SORT_KEYS = {"type": "array", "items": ["string", "long"]}


def object_name(spec: SourceSpec, table: TableSchema) -> str:
    """Datastream's object: `<schema>_<table>` (`<database>_<table>` for MySQL), as its
    Cloud Storage folders and its own events name it."""
    tid = table.id
    container = tid.schema if spec.container == "schema" and tid.schema is not None else (
        tid.database)
    return f"{container}_{tid.table}"


def avro_field_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """Column names made valid Avro names, unique (the original is kept in `sourceName`)."""
    out: list[str] = []
    seen: set[str] = set()
    for index, name in enumerate(names):
        clean = _AVRO_INVALID.sub("_", name) or "_"
        if clean[0].isdigit():
            clean = "_" + clean
        if clean in seen:
            clean = f"{clean}_{index}"
        seen.add(clean)
        out.append(clean)
    return tuple(out)


class _Named:
    """Avro named types (datetime, interval): defined at first use, referred to by name after."""

    def __init__(self) -> None:
        self.defined: set[str] = set()

    def __call__(self, avro: Any) -> Any:
        if isinstance(avro, dict) and avro.get("type") == "record":
            if avro["name"] in self.defined:
                return avro["name"]
            self.defined.add(avro["name"])
        return avro


def _nullable(avro: Any) -> Any:
    """A payload field's type: a union with null (UNSUPPORTED is null already)."""
    if isinstance(avro, dict) and avro.get("type") == "null":
        return avro
    return ["null", avro]


def _metadata_avro(spec: SourceSpec) -> dict[str, Any]:
    fields = []
    for f in spec.fields:
        avro = ["null", f.avro] if f.nullable else f.avro
        fields.append({"name": f.name, "type": avro})
    return {"type": "record", "name": "source_metadata", "fields": fields}


class TablePlan:
    __slots__ = (
        "avro_names",
        "avro_schema",
        "avro_to",
        "column_names",
        "dynamic",
        "headers",
        "json_to",
        "key_names",
        "key_positions",
        "meta_template",
        "object",
        "schema_key",
        "topic",
        "unified",
    )

    def __init__(self, table: TableSchema, spec: SourceSpec, topic: str) -> None:
        self.topic = topic
        self.object = object_name(spec, table)
        self.column_names = table.column_names
        self.avro_names = avro_field_names(table.column_names)
        self.key_names = table.key_columns
        self.key_positions = table.key_positions
        self.unified: tuple[Unified, ...] = tuple(unified_type(c, spec.family)
                                                  for c in table.columns)
        # Only the columns whose values need converting: most need none.
        self.json_to: tuple[tuple[int, Converter], ...] = tuple(
            (i, u.to_json) for i, u in enumerate(self.unified) if u.to_json is not None)
        self.avro_to: tuple[tuple[int, Converter], ...] = tuple(
            (i, u.to_avro) for i, u in enumerate(self.unified) if u.to_avro is not None)
        named = _Named()
        payload = {
            "type": "record", "name": "payload",
            "fields": [
                {"name": avro_name, "type": _nullable(named(u.avro)), "default": None,
                 "sourceName": column.name, "sourceType": column.type_name,
                 "unifiedType": u.name}
                for avro_name, column, u in zip(self.avro_names, table.columns, self.unified,
                                                strict=True)
            ],
        }
        # The unified schema's identity: the object and its columns (names, source and
        # unified types), so that equal structures share a key across restarts.
        self.schema_key = hashlib.sha1(
            orjson.dumps([self.object, payload], option=orjson.OPT_SORT_KEYS)).hexdigest()
        self.avro_schema: dict[str, Any] = {
            "type": "record", "name": "datastream_event", "namespace": "headwater",
            "fields": [
                {"name": "stream_name", "type": "string"},
                {"name": "read_method", "type": "string"},
                {"name": "object", "type": "string"},
                {"name": "schema_key", "type": "string"},
                {"name": "uuid", "type": "string"},
                {"name": "read_timestamp", "type": TIMESTAMP_MILLIS},
                {"name": "source_timestamp", "type": TIMESTAMP_MILLIS},
                {"name": "sort_keys", "type": SORT_KEYS},
                {"name": "source_metadata", "type": _metadata_avro(spec)},
                {"name": "payload", "type": payload},
            ],
        }
        self.meta_template, self.dynamic = _metadata_plan(spec.fields, table)
        self.headers: tuple[tuple[str, bytes], ...] = ()


def _metadata_plan(
    fields: tuple[MetaField, ...], table: TableSchema
) -> tuple[dict[str, Any], tuple[tuple[str, str, Callable[[Any], Any] | None,
                                       Callable[[Any], Any] | None, Any], ...]]:
    """The metadata dict with its constant values filled, and how to fill the rest per event:
    (name, kind, getter, converter, backfill value) with kind "row" or "pos"."""
    tid = table.id
    statics: dict[str, Any] = {
        "table.schema": tid.schema, "table.table": tid.table, "table.database": tid.database,
        "table.key_columns": list(table.key_columns),
    }
    template: dict[str, Any] = {}
    dynamic: list[tuple[str, str, Callable[[Any], Any] | None, Callable[[Any], Any] | None,
                        Any]] = []
    for f in fields:
        kind, _, attr = f.value.partition(".")
        if kind == "table":
            template[f.name] = statics[f.value]
        elif kind == "row":
            template[f.name] = None
            dynamic.append((f.name, attr, None, None, None))
        elif kind == "pos":
            template[f.name] = None
            dynamic.append((f.name, "pos", operator.attrgetter(attr), f.convert, f.backfill))
        else:
            raise ValueError(f"source_metadata field {f.name}: unknown value {f.value!r}")
    return template, tuple(dynamic)
