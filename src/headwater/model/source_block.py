"""What every connector's Debezium `source` block shares: the connector version string, the
`snapshot` field's schema (a string enum since Debezium 1.x, with Debezium 3.x's values), the
fields every source block starts with (Debezium's common source info), a field helper, and the
source schema and the common values every connector's block is built from."""

from __future__ import annotations

from typing import Any

import orjson

from headwater import __version__
from headwater.model.schema import (
    INT64,
    LITERAL_TYPES,
    STRING,
    STRUCT,
    ConnectField,
    ConnectSchema,
)

CONNECTOR_VERSION = f"headwater-{__version__}"

SNAPSHOT_ENUM_SCHEMA = ConnectSchema(
    STRING,
    optional=True,
    name="io.debezium.data.Enum",
    version=1,
    # Debezium 3.x's SnapshotRecord values, in its order.
    parameters={
        "allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,"
        "incremental"
    },
    default="false",
)


def source_field(name: str, literal: str, optional: bool) -> ConnectField:
    return ConnectField(name, ConnectSchema(literal, optional=optional))


def source_fields(spec: str) -> tuple[ConnectField, ...]:
    """A connector's own source fields, written as Debezium's documentation lists them:
    `name: type` items separated by commas, the type a Connect literal (`string`, `int64`, ...)
    with `?` after it for an optional field, e.g. "table: string?, pos: int64".  A spec that
    is not that fails at import."""
    fields = []
    for item in spec.split(","):
        name, _, literal = (part.strip() for part in item.partition(":"))
        optional = literal.endswith("?")
        literal = literal.removesuffix("?")
        if not name.isidentifier() or literal not in LITERAL_TYPES:
            raise ValueError(f"source field {item.strip()!r}: expected 'name: type' or "
                             "'name: type?' with a Connect type")
        fields.append(source_field(name, literal, optional))
    return tuple(fields)


# The leading fields of every connector's source block, in Debezium's order; each connector's
# own fields follow.
COMMON_SOURCE_FIELDS: tuple[ConnectField, ...] = (
    source_field("version", STRING, False),
    source_field("connector", STRING, False),
    source_field("name", STRING, False),
    source_field("ts_ms", INT64, False),
    ConnectField("snapshot", SNAPSHOT_ENUM_SCHEMA),
    source_field("db", STRING, False),
    source_field("sequence", STRING, True),
)

# Debezium 3.x's microsecond and nanosecond source times, right after the common fields.
SOURCE_TIME_FIELDS: tuple[ConnectField, ...] = (
    source_field("ts_us", INT64, True),
    source_field("ts_ns", INT64, True),
)


def source_schema(
    name: str, *own_fields: ConnectField, version: int | None = 1
) -> ConnectSchema:
    """A connector's source schema `name`: the common fields, `ts_us`/`ts_ns`, then its own.
    Version 1 as Debezium 3.x gives every connector's (SchemaFactory.sourceInfoSchemaBuilder:
    SOURCE_INFO_DEFAULT_SCHEMA_VERSION), the binlog and change-table connectors' included."""
    return ConnectSchema(
        STRUCT,
        optional=False,
        name=name,
        version=version,
        fields=(*COMMON_SOURCE_FIELDS, *SOURCE_TIME_FIELDS, *own_fields),
    )


def common_source_values(
    context: Any, ts_ms: int, snapshot: Any, db: str | None, ts_us: int | None = None
) -> dict[str, Any]:
    """The common fields' and `ts_us`/`ts_ns`'s values of a block (`context`: the record's
    SourceContext; `ts_us` defaults to `ts_ms`'s), in the schema's order; the connector adds
    its own fields after them."""
    if ts_us is None:
        ts_us = ts_ms * 1000
    return {
        "version": context.connector_version,
        "connector": context.kind,
        "name": context.server_name,
        "ts_ms": ts_ms,
        "snapshot": snapshot,
        "db": db,
        "sequence": None,
        "ts_us": ts_us,
        "ts_ns": ts_us * 1000,
    }


# For the blocks' `json_renderer` (formats.debezium_json.SourceBlock): `%` templates of the
# payload's JSON with what depends only on the table version and the context rendered once.
def json_constant(value: Any) -> bytes:
    """`value`'s JSON for a `%` template: a `%` in it doubled."""
    return orjson.dumps(value).replace(b"%", b"%%")


def json_head(context: Any, db: str | None) -> bytes:
    """A template's common fields up to `db`, as `common_source_values` orders them (`ts_ms`
    and `snapshot` left as `%d` and `%s`); the connector's template goes on at `,"sequence":`."""
    const = json_constant
    return (b'{"version":' + const(context.connector_version) + b',"connector":'
            + const(context.kind) + b',"name":' + const(context.server_name)
            + b',"ts_ms":%d,"snapshot":%s,"db":' + const(db))


def snapshot_json() -> dict[str, bytes]:
    """Each SnapshotMarker's JSON by the member's `_value_` (an Enum's own hash and `.value`
    are Python calls, one per event otherwise)."""
    from headwater.model.record import SnapshotMarker

    return {m._value_: orjson.dumps(m.value) for m in SnapshotMarker}

