"""Debezium's `MongoDataConverter` (3.x): a Connect schema inferred from one BSON document, and
the document as a struct of that schema.

Every event gets the schema of its own document (there is no collection schema in MongoDB), so
consumers see whatever this inference produces; it follows Debezium's rules, quirks included:
ObjectId, Decimal128, JavaScript and null -> optional string; int32/int64/double/boolean as
such; dates and BSON timestamps -> Connect Timestamp; binary -> bytes; regex -> struct
`io.debezium.mongodb.regex` {regex, options}; documents -> optional structs named by their path
(`<topic>.address`); arrays -> Connect arrays of one element type (`array.encoding=array`, the
documents of an array merged field by field, the last one's sub-documents winning) or structs
with fields `_0`, `_1`... (`array.encoding=document`).  Where Debezium's converter throws (mixed
element types in `array` encoding, symbols, min/max keys, code with scope, a regex inside an
array, ...) this raises TransformError, which stops the capture as the Debezium task fails.
BSON undefined fields are left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from headwater.connect.record import TransformError, field_schema
from headwater.model.schema import (
    ARRAY as ARRAY_TYPE,
)
from headwater.model.schema import (
    INT64 as INT64_TYPE,
)
from headwater.model.schema import (
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
from headwater.transforms import mongo_bson as b
from headwater.transforms.mongo_bson import Bson, timestamp_value

_SIMPLE = {
    b.NULL: OPTIONAL_STRING, b.STRING: OPTIONAL_STRING, b.JAVASCRIPT: OPTIONAL_STRING,
    b.OBJECT_ID: OPTIONAL_STRING, b.DECIMAL128: OPTIONAL_STRING,
    b.DOUBLE: OPTIONAL_FLOAT64,
    b.BINARY: OPTIONAL_BYTES,
    b.INT32: OPTIONAL_INT32,
    b.INT64: OPTIONAL_INT64,
    b.DATE_TIME: ConnectSchema(INT64_TYPE, optional=True,
                               name="org.apache.kafka.connect.data.Timestamp", version=1),
    b.BOOLEAN: OPTIONAL_BOOLEAN,
}
_SIMPLE[b.TIMESTAMP] = _SIMPLE[b.DATE_TIME]
REGEX_SCHEMA = ConnectSchema(STRUCT, optional=True, name="io.debezium.mongodb.regex", fields=(
    ConnectField("regex", OPTIONAL_STRING), ConnectField("options", OPTIONAL_STRING)))
_EMPTY_STRUCT = ConnectSchema(STRUCT, optional=True)


def _n(name: str | None) -> str:
    return "null" if name is None else name  # Java string concatenation of null


def _array(items: ConnectSchema) -> ConnectSchema:
    return ConnectSchema(ARRAY_TYPE, optional=True, items=items)


class _Builder:
    """Kafka's SchemaBuilder for a struct: named, fields in order, no duplicates."""

    def __init__(self, name: str | None, optional: bool = True) -> None:
        self.name = name
        self.optional = optional
        self.fields: dict[str, ConnectSchema] = {}

    def add(self, name: str, schema: ConnectSchema) -> None:
        if name in self.fields:
            raise TransformError(f"Cannot create field because of field name duplication {name}")
        self.fields[name] = schema

    def build(self) -> ConnectSchema:
        return ConnectSchema(STRUCT, optional=self.optional, name=self.name,
                             fields=tuple(ConnectField(k, v) for k, v in self.fields.items()))


def _unsupported(value: Bson, where: str) -> TransformError:
    return TransformError(f"BSON {value.type} {where} is not supported by Debezium's "
                          "MongoDataConverter")


class MongoDataConverter:
    def __init__(self, array_document: bool, namer: Callable[[str], str],
                 sanitize_value: bool) -> None:
        self.array_document = array_document
        self.namer = namer
        self.sanitize_value = sanitize_value

    # -- schemas ----------------------------------------------------------------------------
    def sub_schema(self, value: Bson) -> ConnectSchema:
        """`getSchema(BsonType)`: the schema of a type without looking at the value."""
        simple = _SIMPLE.get(value.type)
        if simple is not None:
            return simple
        if value.type == b.ARRAY:
            return _EMPTY_STRUCT if self.array_document else _array(OPTIONAL_STRING)
        if value.type == b.DOCUMENT:
            return _EMPTY_STRUCT
        raise _unsupported(value, "inside an array")

    def schema(self, doc: dict[str, Bson], name: str | None, optional: bool = False
               ) -> ConnectSchema:
        builder = _Builder(name, optional)
        for key, value in doc.items():
            self._field(self.namer(key), value, builder)
        return builder.build()

    def _field(self, key: str, value: Bson, builder: _Builder) -> None:
        if key in builder.fields:
            return
        simple = _SIMPLE.get(value.type)
        if simple is not None:
            builder.add(key, simple)
        elif value.type == b.REGULAR_EXPRESSION:
            builder.add(key, REGEX_SCHEMA)
        elif value.type == b.DOCUMENT:
            if not value.value:
                builder.add(key, _EMPTY_STRUCT)
            else:
                builder.add(key, self.schema(value.value, f"{_n(builder.name)}.{key}", True))
        elif value.type == b.ARRAY:
            self._array_field(key, value.value, builder)
        elif value.type == b.JAVASCRIPT_WITH_SCOPE:
            raise _unsupported(value, f"(field '{key}')")
        # symbol, undefined, min/max key: no field (Debezium then fails putting a symbol's
        # or key's value, see `_put`; undefined is skipped)

    def _unified(self, elements: list[Bson]) -> tuple[list[list[Bson]], dict[str, Bson] | None,
                                                        list[tuple[int, dict[str, Bson]]],
                                                        list[Bson]]:
        """`traverseArray`: nested arrays (equal ones once), the documents (merged for the
        `array` encoding, indexed for `document`), the other values."""
        nested: list[list[Bson]] = []
        docs: list[tuple[int, dict[str, Bson]]] = []
        primitives: list[Bson] = []
        for value in elements:
            if value.type == b.ARRAY:
                if value.value not in nested:
                    nested.append(value.value)
            elif value.type == b.DOCUMENT:
                docs.append((len(docs), value.value))
            else:
                primitives.append(value)
        merged: dict[str, Bson] | None = None
        if not self.array_document and docs:
            merged = {}
            seen: dict[str, list[ConnectSchema]] = {}
            for _, doc in docs:
                for name, value in doc.items():
                    schemas = seen.setdefault(name, [])
                    schema = self.sub_schema(value)
                    if schema not in schemas:
                        schemas.append(schema)
                    if not (value.type == b.DOCUMENT and value.value) and len(schemas) > 1:
                        raise TransformError("Array elements with different Bson types are "
                                             f"not supported: field '{name}'")
                    merged[name] = value
            merged = merged or None
        return nested, merged, docs, primitives

    def _simple_array(self, key: str, values: list[Bson], builder: _Builder,
                      nested: bool) -> None:
        if key in builder.fields:
            return
        schemas: list[ConnectSchema] = []
        for v in values:
            s = self.sub_schema(v)
            if s not in schemas:
                schemas.append(s)
        if len(schemas) > 1:
            raise TransformError(f"Array elements with different Bson types are not supported: "
                                 f"field '{key}'")
        array = _array(self.sub_schema(values[0]))
        builder.add(key, _array(array) if nested else array)

    def _array_field(self, key: str, elements: list[Bson], builder: _Builder) -> None:
        parent = _n(builder.name)
        if not elements:
            builder.add(key, ConnectSchema(STRUCT, optional=True, name=f"{parent}.{key}")
                        if self.array_document else _array(OPTIONAL_STRING))
            return
        if self.array_document:
            name = parent if parent.endswith(key) else f"{parent}.{key}"
            if name == parent:
                raise TransformError(
                    f"array.encoding=document: the schema name '{parent}' ends with the array "
                    f"field name '{key}', on which Debezium's MongoDataConverter fails")
            builder.add(key, self._document_array(elements, name))
            return
        nested, merged, _, primitives = self._unified(elements)
        for inner in nested:
            inner_nested, inner_merged, _, inner_primitives = self._unified(inner)
            if inner_nested:
                raise TransformError(f"arrays nested three deep (field '{key}') are not "
                                     "supported by Debezium's MongoDataConverter")
            if inner_merged is not None:
                element = self.schema(inner_merged, None, True)
                if element.fields and key not in builder.fields:
                    builder.add(key, _array(_array(element)))
            if inner_primitives:
                self._simple_array(key, inner_primitives, builder, True)
        if merged is not None:
            element = self.schema(merged, f"{parent}.{key}", True)
            if element.fields and key not in builder.fields:
                builder.add(key, _array(element))
        if primitives:
            self._simple_array(key, primitives, builder, False)

    def _document_array(self, elements: list[Bson], name: str) -> ConnectSchema:
        """An array as a struct `_0`, `_1`... (`array.encoding=document`)."""
        nested, _, docs, primitives = self._unified(elements)
        builder = _Builder(name)
        for index, doc in docs:
            element = self._map_lists(doc, f"{name}._{index}")
            if element.fields:
                builder.add(f"_{index}", element)
        for index, inner in enumerate(nested):
            _, _, _, inner_primitives = self._unified(inner)
            element_builder = _Builder(f"{name}._{index}")
            for i, v in enumerate(inner_primitives):
                element_builder.add(f"_{i}", self.sub_schema(v))
            if element_builder.fields:
                builder.add(f"_{index}", element_builder.build())
        for i, v in enumerate(primitives):
            builder.add(f"_{i}", self.sub_schema(v))
        return builder.build()

    def _map_lists(self, doc: dict[str, Bson], name: str) -> ConnectSchema:
        """`parseMapLists`: one document element of a `document`-encoded array."""
        builder = _Builder(name)
        for raw, value in doc.items():
            key = self.namer(raw)
            if value.type == b.ARRAY:
                inner = f"{name}.{key}"
                builder.add(key, self._document_array(value.value, inner) if value.value else
                            ConnectSchema(STRUCT, optional=True, name=self.namer(inner)))
            elif value.type == b.DOCUMENT:
                if value.value:
                    self._field(key, value, builder)
                else:
                    builder.add(key, ConnectSchema(STRUCT, optional=True,
                                                   name=self.namer(f"{name}.{key}")))
            else:
                builder.add(key, self.sub_schema(value))
        return builder.build()

    # -- values -----------------------------------------------------------------------------
    def struct(self, doc: dict[str, Bson], schema: ConnectSchema) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: None for f in schema.fields}
        for key, value in doc.items():
            self._put(self.namer(key), value, schema, out)
        return out

    def _put(self, key: str, value: Bson, schema: ConnectSchema, out: dict[str, Any]) -> None:
        if value.type == b.UNDEFINED:
            return
        target = field_schema(schema, key)
        if target is None:
            raise TransformError(f"{key} is not a valid field name (BSON {value.type})")
        if value.type == b.REGULAR_EXPRESSION:
            out[key] = {"regex": value.value[0], "options": value.value[1]}
        elif value.type == b.DOCUMENT:
            out[key] = self.struct(value.value, target)
        elif value.type == b.ARRAY:
            if not value.value:
                if self.sanitize_value:
                    return
                out[key] = {} if self.array_document else []
            elif self.array_document:
                out[key] = self.struct({f"_{i}": v for i, v in enumerate(value.value)}, target)
            else:
                items = target.items if target.type == ARRAY_TYPE else target
                assert items is not None
                out[key] = self._array_values(value.value, items)
        else:
            out[key] = self.plain(value)

    def _array_values(self, elements: list[Bson], schema: ConnectSchema) -> list[Any]:
        values: list[Any] = []
        for value in elements:
            if value.type == b.ARRAY:
                sub: list[Any] = []
                for inner in value.value:
                    if inner.type == b.ARRAY:
                        sub.append(self._array_values(inner.value, schema))
                    elif inner.type == b.DOCUMENT:
                        assert schema.items is not None
                        sub.append(self.struct(inner.value, schema.items))
                    else:
                        sub.append(self.plain(inner))
                if sub:
                    values.append(sub)  # Debezium leaves empty inner arrays out
            elif value.type == b.DOCUMENT:
                if schema.type != STRUCT:
                    raise TransformError("a document in an array of non-documents is not "
                                         "supported by Debezium's MongoDataConverter")
                values.append(self.struct(value.value, schema))
            else:
                if schema.type == STRUCT:
                    raise TransformError("a value in an array of documents is not supported "
                                         "by Debezium's MongoDataConverter")
                values.append(self.plain(value))
        return values

    @staticmethod
    def plain(value: Bson) -> Any:
        """`getObject`: the Connect value of a non-container BSON value."""
        t = value.type
        if t in (b.STRING, b.OBJECT_ID, b.DECIMAL128, b.JAVASCRIPT, b.DOUBLE, b.BINARY,
                 b.INT32, b.INT64, b.BOOLEAN):
            return value.value
        if t == b.DATE_TIME:
            return timestamp_value(value.value)
        if t == b.TIMESTAMP:
            return timestamp_value(1000 * value.value[0])
        return None
