"""Debezium's `JsonSchemaData`: a Connect schema and value inferred from a JSON text, for the
outbox router's `table.expand.json.payload`.

Consumers of expanded payloads (Avro, schema registries) see these schemas, so the inference
follows Debezium's exactly: objects become optional structs named by their path (`payload`,
`payload.address`), integers int32 or int64 by magnitude (Jackson's IntNode/LongNode), other
numbers float64, nulls and empty arrays are left out unless `table.json.payload.null.behavior`
/ `table.json.payload.empty.array.behavior` keep them, arrays must be homogeneous and arrays of
objects get the merge of their elements' schemas.  Anything Debezium cannot expand raises
`JsonExpansionError`, upon which the payload stays the JSON string (Debezium logs a warning).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from headwater.model.schema import (
    ARRAY,
    BYTES,
    FLOAT64,
    OPTIONAL_BOOLEAN,
    OPTIONAL_BYTES,
    OPTIONAL_FLOAT64,
    OPTIONAL_INT32,
    OPTIONAL_INT64,
    OPTIONAL_STRING,
    STRUCT,
    ConnectField,
    ConnectSchema,
)

_INT32_RANGE = range(-(2**31), 2**31)
_INT64_RANGE = range(-(2**63), 2**63)


class JsonExpansionError(ValueError):
    """The JSON cannot be expanded the way Debezium expands it."""


def _kind(node: Any) -> str:
    if node is None:
        return "null"
    if isinstance(node, bool):
        return "boolean"
    if isinstance(node, int | float):
        return "number"
    if isinstance(node, str):
        return "string"
    if isinstance(node, list):
        return "array"
    return "object"


class JsonSchemaData:
    def __init__(self, null_bytes: bool, empty_array_string: bool,
                 field_namer: Callable[[str], str]) -> None:
        self.null_bytes = null_bytes
        self.empty_array_string = empty_array_string
        self.field_namer = field_namer

    @staticmethod
    def parse(text: str) -> Any:
        """Jackson's `readTree` for texts starting with `{` or `[` (others are refused)."""
        if not text.startswith(("{", "[")):
            raise JsonExpansionError(f"Unable to parse payload starting with '{text[:1]}'")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise JsonExpansionError(str(exc)) from None

    def to_schema(self, key: str | None, node: Any) -> ConnectSchema | None:
        kind = _kind(node)
        if kind == "string":
            return OPTIONAL_STRING
        if kind == "boolean":
            return OPTIONAL_BOOLEAN
        if kind == "number":
            if isinstance(node, int) and node in _INT32_RANGE:
                return OPTIONAL_INT32
            if isinstance(node, int) and node in _INT64_RANGE:
                return OPTIONAL_INT64
            return OPTIONAL_FLOAT64
        if kind == "array":
            if not node:
                return (ConnectSchema(ARRAY, optional=True, items=OPTIONAL_STRING)
                        if self.empty_array_string else None)
            return ConnectSchema(ARRAY, optional=True, items=self._element_schema(key, node))
        if kind == "object":
            fields: list[ConnectField] = []
            names: set[str] = set()
            for raw_name, value in node.items():
                name = self.field_namer(raw_name)
                child = self.to_schema((key + "." if key and key.strip() else "") + name, value)
                if child is not None and name not in names:
                    names.add(name)
                    fields.append(ConnectField(name, child))
            return ConnectSchema(STRUCT, optional=True, name=key, fields=tuple(fields))
        return OPTIONAL_BYTES if self.null_bytes else None

    def _element_schema(self, key: str | None, array: list[Any]) -> ConnectSchema:
        sample = self._first_element(array)
        if _kind(sample) == "object":
            # Debezium iterates a HashSet of the elements' schemas; here first-seen order.
            distinct: list[ConnectSchema] = []
            for element in array:
                if _kind(element) == "object":
                    schema = self.to_schema(key, element)
                    if schema is not None and schema not in distinct:
                        distinct.append(schema)
            merged: ConnectSchema | None = None
            for schema in distinct:
                merged = schema if merged is None else self._merge(merged, schema)
            assert merged is not None
            return merged
        element_schema = self.to_schema(None, sample)
        if element_schema is None:
            raise JsonExpansionError(f"Array '{array}' has unrecognized member schema.")
        return element_schema

    @staticmethod
    def _merge(left: ConnectSchema, right: ConnectSchema) -> ConnectSchema:
        fields = {f.name: f for f in left.fields}
        for f in right.fields:
            old = fields.get(f.name)
            if old is None or (old.schema != f.schema and old.schema.type == BYTES
                               and f.schema.type != BYTES):
                fields[f.name] = f
        return ConnectSchema(STRUCT, optional=left.optional, name=left.name,
                             version=left.version, parameters=left.parameters, doc=left.doc,
                             fields=tuple(fields.values()))

    def _first_element(self, array: list[Any]) -> Any:
        ref: Any = None
        ref_schema: ConnectSchema | None = None
        for element in array:
            if element is None:
                continue
            if ref is None:
                ref = element
            if _kind(element) != _kind(ref):
                raise JsonExpansionError(f"Field is not a homogenous array ({ref} x "
                                         f"{_kind(element).upper()}).")
            if _kind(ref) == "number":
                if ref_schema is None:
                    ref_schema = self.to_schema(None, ref)
                if self.to_schema(None, element) is not ref_schema:
                    raise JsonExpansionError(
                        f"Field is not a homogenous array ({ref} x {element}), different "
                        "number types")
        return ref

    def to_value(self, node: Any, schema: ConnectSchema) -> Any:
        """`toConnectData`: the root must be an object (Debezium builds a Struct of it)."""
        if schema.type != STRUCT or not isinstance(node, dict):
            raise JsonExpansionError("Not a struct schema: " + schema.type)
        return self._struct(node, schema)

    def _struct(self, node: dict[str, Any], schema: ConnectSchema) -> dict[str, Any]:
        # Fields are looked up by their (adjusted) schema name, as Debezium does.
        return {f.name: self._value(node[f.name], f.schema) if f.name in node else None
                for f in schema.fields}

    def _value(self, node: Any, schema: ConnectSchema) -> Any:
        kind = _kind(node)
        if kind == "array":
            assert schema.items is not None
            return [self._value(v, schema.items) for v in node]
        if kind == "object":
            return self._struct(node, schema)
        if kind == "number" and schema.type == FLOAT64:
            return float(node)
        return node
