"""Kafka Connect style schemas and the table/column model every connector and format shares.

A connector describes each captured table once (a `TableSchema`) and every change record points
at it; formats render the Connect schema JSON from it.  Schemas are immutable values so that a
rendered form can be cached per table and reused for every event of that table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Kafka Connect literal types, spelled as JsonConverter writes them.
INT8 = "int8"
INT16 = "int16"
INT32 = "int32"
INT64 = "int64"
FLOAT32 = "float32"
FLOAT64 = "float64"
BOOLEAN = "boolean"
STRING = "string"
BYTES = "bytes"
ARRAY = "array"
MAP = "map"
STRUCT = "struct"

LITERAL_TYPES = frozenset(
    {INT8, INT16, INT32, INT64, FLOAT32, FLOAT64, BOOLEAN, STRING, BYTES, ARRAY, MAP, STRUCT}
)


class _NoDefault:
    """Marks a schema without a default (None is a legitimate default of optional fields)."""

    _instance: _NoDefault | None = None

    def __new__(cls) -> _NoDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True, slots=True)
class ConnectSchema:
    """One Kafka Connect schema: a literal type plus optional logical name, version, parameters."""

    type: str
    optional: bool = True
    name: str | None = None
    version: int | None = None
    parameters: Mapping[str, str] | None = None
    default: Any = NO_DEFAULT
    fields: tuple[ConnectField, ...] = ()
    items: ConnectSchema | None = None  # ARRAY element schema
    keys: ConnectSchema | None = None  # MAP key schema
    values: ConnectSchema | None = None  # MAP value schema
    doc: str | None = None  # Connect schema doc (Debezium documents some semantic types)

    def __post_init__(self) -> None:
        if self.type not in LITERAL_TYPES:
            raise ValueError(f"unknown Kafka Connect type {self.type!r}")

    def with_optional(self, optional: bool) -> ConnectSchema:
        return ConnectSchema(
            self.type,
            optional,
            self.name,
            self.version,
            self.parameters,
            self.default,
            self.fields,
            self.items,
            self.keys,
            self.values,
            self.doc,
        )


@dataclass(frozen=True, slots=True)
class ConnectField:
    name: str
    schema: ConnectSchema


# Kafka Connect's `Schema.OPTIONAL_*_SCHEMA`: the plain optional schemas (immutable, so shared).
OPTIONAL_BOOLEAN = ConnectSchema(BOOLEAN, optional=True)
OPTIONAL_INT32 = ConnectSchema(INT32, optional=True)
OPTIONAL_INT64 = ConnectSchema(INT64, optional=True)
OPTIONAL_FLOAT64 = ConnectSchema(FLOAT64, optional=True)
OPTIONAL_STRING = ConnectSchema(STRING, optional=True)
OPTIONAL_BYTES = ConnectSchema(BYTES, optional=True)


@dataclass(frozen=True, slots=True, order=True)
class TableId:
    """A captured table.  `schema` is the database schema (PostgreSQL) or None (MySQL)."""

    database: str
    schema: str | None
    table: str

    @property
    def identifier(self) -> str:
        """`schema.table` (or `database.table` without schemas): the name filters match on."""
        return f"{self.schema if self.schema is not None else self.database}.{self.table}"

    def __str__(self) -> str:
        return self.identifier


@dataclass(frozen=True, slots=True)
class Column:
    """A captured column: its source type and the Connect schema its values are converted to."""

    name: str
    position: int  # 0-based index into the row tuples of change records
    type_name: str  # the source's own type name, e.g. "numeric", "varchar", "timestamptz"
    schema: ConnectSchema  # schema of the converted value (its `optional` is the column's)
    length: int | None = None
    scale: int | None = None
    type_oid: int | None = None  # source type identifier where the source has one
    # Value used in place of a missing value of a NOT NULL column, as Debezium does for
    # partial before-images (e.g. PostgreSQL REPLICA IDENTITY DEFAULT deletes).
    fallback: Any = None
    # An unsigned integer column (MySQL): Datastream's type table tells BIGINT UNSIGNED apart.
    unsigned: bool = False
    # A key column's schema in the message key when it differs from `schema`: Debezium builds
    # the key schema without column mappers, so `column.propagate.source.type` parameters on a
    # key column appear in the value's before/after only (None: the key uses `schema`).
    key_schema: ConnectSchema | None = None

    @property
    def schema_in_key(self) -> ConnectSchema:
        """The schema of this column's field in the message key."""
        return self.schema if self.key_schema is None else self.key_schema

    @property
    def optional(self) -> bool:
        return self.schema.optional


@dataclass(frozen=True, slots=True)
class TableSchema:
    """A table as captured: its columns in order and the columns making up the message key.

    `key_columns` empty means the table has no key and its events carry a null key.
    `key_origin` says where the key came from: "primary_key", "unique_index",
    "replica_identity_index" or "message.key.columns".
    """

    id: TableId
    columns: tuple[Column, ...]
    key_columns: tuple[str, ...] = ()
    key_origin: str = "primary_key"
    # Source-specific extras a format may need (e.g. PostgreSQL replica identity).
    attributes: Mapping[str, Any] = field(default_factory=dict)
    # Derived once: read for every event on the hot paths.
    column_names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    key_positions: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = tuple(c.name for c in self.columns)
        missing = [k for k in self.key_columns if k not in names]
        if missing:
            raise ValueError(f"table {self.id}: key columns {missing} are not among its columns")
        object.__setattr__(self, "column_names", names)
        object.__setattr__(self, "key_positions", tuple(names.index(k) for k in self.key_columns))

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"table {self.id} has no column {name!r}")
