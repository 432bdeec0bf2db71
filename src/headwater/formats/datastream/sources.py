"""Datastream's per-source definitions, as data: read methods, change types, `source_metadata`.

Why data and not code per source: the generic event is the same for every database; what a
source changes is a handful of strings and which fields its `source_metadata` has, in which
order, with which Avro type and where each value comes from.  A connector to come (SQL Server,
Oracle, MongoDB) then needs only a position with the attributes its definition names.

A field's `value` says where it comes from:

* `table.schema`, `table.table`, `table.database`, `table.key_columns`: the table (computed
  once per table);
* `row.is_deleted`, `row.change_type`: the event;
* `pos.<attribute>`: the record's position (e.g. `pos.lsn`), through `convert` if given;
  backfill events carry `backfill` instead (they were not read from a log).

Field order and names follow the Datastream events page (seed S003 §3.6); docs/datastream.md
says where Headwater decides what the page leaves open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

STRING = "string"
LONG = "long"
BOOLEAN = "boolean"
STRING_ARRAY = {"type": "array", "items": "string"}
INT_ARRAY = {"type": "array", "items": "int"}


class MetaField(NamedTuple):
    name: str
    avro: Any  # Avro type of the value (a union with null is added when `nullable`)
    value: str  # where the value comes from (module docstring)
    nullable: bool = False
    convert: Callable[[Any], Any] | None = None
    backfill: Any = None  # value of `pos.*` fields on backfill events


class SourceSpec(NamedTuple):
    family: str  # "postgresql", "mysql", ...
    cdc: str  # read_method of log events
    backfill: str  # read_method of (initial) backfill events
    incremental_backfill: str  # read_method of incremental-snapshot backfill events
    split_updates: bool  # UPDATE-INSERT / UPDATE-DELETE rather than UPDATE
    container: str  # what names the object with the table: "schema" or "database"
    fields: tuple[MetaField, ...]
    verified: bool = True  # False: field set from memory of the docs, not checked yet


def pg_lsn(lsn: int) -> str:
    """PostgreSQL's own text form of an LSN (`16/B374D848`), as pg_current_wal_lsn() shows it."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def _text(value: Any) -> str:
    return str(value)


IS_DELETED = MetaField("is_deleted", BOOLEAN, "row.is_deleted")
CHANGE_TYPE = MetaField("change_type", STRING, "row.change_type")

POSTGRESQL = SourceSpec(
    family="postgresql",
    cdc="postgres-cdc-wal",
    backfill="postgresql-backfill",
    incremental_backfill="postgresql-backfill",
    split_updates=False,
    container="schema",
    fields=(
        MetaField("schema", STRING, "table.schema"),
        MetaField("table", STRING, "table.table"),
        IS_DELETED,
        CHANGE_TYPE,
        MetaField("tx_id", STRING, "pos.tx_id", nullable=True, convert=_text),
        MetaField("lsn", STRING, "pos.lsn", nullable=True, convert=pg_lsn),
        MetaField("primary_keys", STRING_ARRAY, "table.key_columns"),
    ),
)

MYSQL = SourceSpec(
    family="mysql",
    cdc="mysql-cdc-binlog",
    backfill="mysql-backfill-fulldump",
    incremental_backfill="mysql-backfill-incremental",
    split_updates=True,
    container="database",
    fields=(
        # Datastream's own backfill events carry "" and 0 here (not null).
        MetaField("log_file", STRING, "pos.file", backfill=""),
        MetaField("log_position", LONG, "pos.pos", backfill=0),
        MetaField("primary_keys", STRING_ARRAY, "table.key_columns"),
        IS_DELETED,
        MetaField("database", STRING, "table.database"),
        MetaField("table", STRING, "table.table"),
        CHANGE_TYPE,
    ),
)

ORACLE = SourceSpec(
    family="oracle",
    cdc="oracle-cdc-logminer",
    backfill="oracle-backfill",
    incremental_backfill="oracle-backfill",
    split_updates=True,
    container="schema",
    fields=(
        MetaField("log_file", STRING, "pos.log_file", nullable=True),
        MetaField("scn", LONG, "pos.scn", nullable=True),
        MetaField("row_id", STRING, "pos.row_id", nullable=True),
        IS_DELETED,
        MetaField("database", STRING, "table.database", nullable=True),
        MetaField("schema", STRING, "table.schema"),
        MetaField("table", STRING, "table.table"),
        CHANGE_TYPE,
        MetaField("tx_id", STRING, "pos.tx_id", nullable=True),
        MetaField("rs_id", STRING, "pos.rs_id", nullable=True),
        MetaField("ssn", LONG, "pos.ssn", nullable=True),
    ),
)

SQLSERVER = SourceSpec(
    family="sqlserver",
    cdc="sqlserver-cdc",
    backfill="sqlserver-backfill",
    incremental_backfill="sqlserver-backfill",
    split_updates=False,
    container="schema",
    fields=(
        MetaField("table", STRING, "table.table"),
        # The page types these long and string array; a name is a string (docs/datastream.md).
        MetaField("database", STRING, "table.database"),
        MetaField("schema", STRING, "table.schema"),
        IS_DELETED,
        MetaField("lsn", STRING, "pos.lsn", nullable=True),
        MetaField("tx_id", STRING, "pos.tx_id", nullable=True),
        MetaField("physical_location", INT_ARRAY, "pos.physical_location", nullable=True),
        MetaField("replication_index", STRING_ARRAY, "table.key_columns"),
        CHANGE_TYPE,
    ),
)

# Unverified: the MongoDB rows of Datastream's "Events and streams" source-specific metadata
# table, and its MongoDB read_method values, could not be read (docs/datastream.md, "What
# Datastream's pages say"); these are Headwater's guess until checked.  The MongoDB
# connector writes these events (connectors/mongodb/datastream.py: rows `_id`, `payload`).
MONGODB = SourceSpec(
    family="mongodb",
    cdc="mongodb-change-streams",
    backfill="mongodb-backfill",
    incremental_backfill="mongodb-backfill",
    split_updates=False,
    container="database",
    fields=(
        MetaField("database", STRING, "table.database"),
        MetaField("collection", STRING, "table.table"),
        IS_DELETED,
        CHANGE_TYPE,
        MetaField("primary_keys", STRING_ARRAY, "table.key_columns"),
    ),
    verified=False,
)

# `SourceContext.kind` -> definition (MariaDB is Datastream's MySQL source).
SOURCES: dict[str, SourceSpec] = {
    "postgresql": POSTGRESQL,
    "mysql": MYSQL,
    "mariadb": MYSQL,
    "oracle": ORACLE,
    "sqlserver": SQLSERVER,
    "mongodb": MONGODB,
}


def source_spec(kind: str) -> SourceSpec:
    try:
        return SOURCES[kind]
    except KeyError:
        raise ValueError(
            f"no Datastream definition for source {kind!r} (known: {', '.join(SOURCES)})"
        ) from None


# change_type per (operation, half of a primary-key change)
def change_type(spec: SourceSpec, op: str, key_change: bool) -> str:
    """`op` is Debezium's code (c, r, u, d); `key_change`: a half of a primary-key change."""
    if op == "d":
        return "UPDATE-DELETE" if key_change and spec.split_updates else "DELETE"
    if op == "u":
        return "UPDATE-INSERT" if spec.split_updates else "UPDATE"
    if key_change and spec.split_updates:
        return "UPDATE-INSERT"
    return "INSERT"
