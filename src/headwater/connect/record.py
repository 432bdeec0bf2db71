"""A Kafka Connect `SourceRecord` as transforms and converters see it.

The fast path (no transforms, JsonConverter) never builds these: it writes JSON bytes straight
from change records.  Once a transform or another converter is configured, every event is first
rendered as a `ConnectRecord` so that transforms can work on schema + value the way Kafka
Connect's SMTs do, and converters serialize the result.

Values use the Python forms the fast path already writes: a Connect STRUCT is a `dict` whose
keys follow the schema's field order, ARRAY a list, MAP a dict, BYTES `bytes`, Connect
`Decimal` a `decimal.Decimal`.  Kafka's own logical types (`org.apache.kafka.connect.data.
Timestamp`, `Date`, `Time`) are `datetime`, `date` and `time` values, as in Java.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

from headwater.model.schema import STRUCT, ConnectField, ConnectSchema


class Header(NamedTuple):
    """One Connect header: its key, schema (None when schemaless) and value."""

    key: str
    schema: ConnectSchema | None
    value: Any


@dataclass(frozen=True, slots=True)
class ConnectRecord:
    """Topic, partition, key and value with their schemas, timestamp and headers."""

    topic: str
    partition: int | None
    key_schema: ConnectSchema | None
    key: Any
    value_schema: ConnectSchema | None
    value: Any
    timestamp: int
    headers: tuple[Header, ...] = ()

    def replace(self, **changes: Any) -> ConnectRecord:
        return dataclasses.replace(self, **changes)

    def header(self, key: str) -> Header | None:
        """The last header named `key` (Kafka's `Headers.lastWithName`)."""
        found: Header | None = None
        for h in self.headers:
            if h.key == key:
                found = h
        return found


def field_schema(schema: ConnectSchema | None, name: str) -> ConnectSchema | None:
    """The schema of a struct's field, or None if the struct has no such field."""
    if schema is None:
        return None
    for f in schema.fields:
        if f.name == name:
            return f.schema
    return None


def struct_schema(
    fields: tuple[ConnectField, ...] | list[ConnectField], base: ConnectSchema | None = None,
    *, optional: bool | None = None,
) -> ConnectSchema:
    """A STRUCT with `fields`, keeping name, version, doc and parameters of `base` (Kafka's
    `SchemaUtil.copySchemaBasics`)."""
    if base is None:
        return ConnectSchema(STRUCT, optional=bool(optional), fields=tuple(fields))
    return ConnectSchema(
        STRUCT,
        optional=base.optional if optional is None else optional,
        name=base.name, version=base.version, parameters=base.parameters, doc=base.doc,
        fields=tuple(fields),
    )


def copy_basics(schema: ConnectSchema, *, optional: bool | None = None) -> ConnectSchema:
    """`schema` with another optionality (Kafka's `SchemaUtil.copySchemaBasics(...).optional()`
    keeps the rest)."""
    return schema if optional is None or optional == schema.optional else schema.with_optional(
        optional)


def require_struct(value: Any, purpose: str) -> dict[str, Any]:
    """Kafka's `Requirements.requireStruct`: a transform that needs a struct says so."""
    if not isinstance(value, dict):
        raise TransformError(
            f"Only Struct objects supported for [{purpose}], found: "
            f"{type(value).__name__ if value is not None else 'null'}")
    return value


def require_map(value: Any, purpose: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TransformError(
            f"Only Map objects supported in absence of schema for [{purpose}], found: "
            f"{type(value).__name__ if value is not None else 'null'}")
    return value


def java_string(value: Any) -> str:
    """A value as Java's string concatenation shows it: null is "null", booleans lower-case."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class TransformError(RuntimeError):
    """A transform met a record it cannot process (Kafka's DataException)."""
