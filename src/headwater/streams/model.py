"""A stream: a source profile, a destination profile, the objects it carries and how they
are backfilled.

Why Datastream's shape: its users think in include/exclude object lists (databases or
schemas, tables, columns) and in a backfill strategy (all objects automatically, or none,
plus per-object backfills started and stopped by hand).  Those are kept here as data; the
translation into Debezium's properties is `translate.py`'s job, so the catalog stores what
the user said, not one rendering of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from headwater.model.collection import SignalError, format_collection, split_collection

BACKFILL_AUTOMATIC: Final = "automatic"  # Datastream's BackfillAllStrategy
BACKFILL_NONE: Final = "none"  # Datastream's BackfillNoneStrategy
BACKFILL_STRATEGIES: Final = (BACKFILL_AUTOMATIC, BACKFILL_NONE)


class StreamSpecError(ValueError):
    """A stream definition that cannot be used; the message says which part."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """One include/exclude entry: a schema (PostgreSQL) or database (MySQL), optionally one
    table, optionally one column of it."""

    container: str
    table: str | None = None
    column: str | None = None

    @classmethod
    def parse(cls, text: str) -> ObjectRef:
        """`schema`, `schema.table` or `schema.table.column`; a part with a dot in double
        quotes (`"my.schema".orders`), as in signals."""
        try:
            parts = split_collection(text)
        except SignalError as exc:
            raise StreamSpecError(str(exc)) from None
        return cls(*parts)

    def __str__(self) -> str:
        return format_collection(tuple(p for p in (self.container, self.table, self.column)
                                       if p is not None))

    def table_name(self) -> str:
        if self.table is None:
            raise StreamSpecError(f"{self}: a table is needed here, not a whole "
                                  "schema/database")
        return format_collection((self.container, self.table))


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """What the user defines.  `include` empty means every object (Datastream: no include
    list = all objects); `exclude` removes from that."""

    name: str
    source_profile: str
    destination_profile: str
    include: tuple[ObjectRef, ...] = ()
    exclude: tuple[ObjectRef, ...] = ()
    backfill: str = BACKFILL_AUTOMATIC
    # Datastream's BackfillAllStrategy.excludedObjects: tables that are streamed but not
    # backfilled automatically (a per-object backfill can still be started).
    backfill_exclude: tuple[ObjectRef, ...] = ()
    destination_path: str = ""  # under the destination profile's directory; default: name
    properties: Mapping[str, str] = field(default_factory=dict)  # extra connector properties

    def __post_init__(self) -> None:
        if self.backfill not in BACKFILL_STRATEGIES:
            raise StreamSpecError(f"backfill strategy {self.backfill!r} is not "
                                  + " or ".join(BACKFILL_STRATEGIES))
        for ref in self.backfill_exclude:
            ref.table_name()
        if self.backfill_exclude and self.backfill != BACKFILL_AUTOMATIC:
            raise StreamSpecError("backfill exclusions need the automatic backfill strategy")

    def as_json(self) -> dict[str, Any]:
        return {
            "include": [str(r) for r in self.include],
            "exclude": [str(r) for r in self.exclude],
            "backfill": self.backfill,
            "backfill_exclude": [str(r) for r in self.backfill_exclude],
            "destination_path": self.destination_path,
            "properties": dict(self.properties),
        }

    @classmethod
    def from_json(cls, name: str, source: str, destination: str,
                  doc: Mapping[str, Any]) -> StreamSpec:
        def refs(key: str) -> tuple[ObjectRef, ...]:
            items: Sequence[str] = doc.get(key, ())
            return tuple(ObjectRef.parse(x) for x in items)

        return cls(name, source, destination, refs("include"), refs("exclude"),
                   str(doc.get("backfill", BACKFILL_AUTOMATIC)), refs("backfill_exclude"),
                   str(doc.get("destination_path", "")),
                   {str(k): str(v) for k, v in dict(doc.get("properties", {})).items()})


# Datastream's object-list keys per source kind: (containers, container, tables, columns)
# and the name its SourceConfig / ExcludedObjects fields start with.
_SHAPES: dict[str, tuple[str, tuple[str, str, str, str]]] = {
    "postgresql": ("postgresql", ("postgresqlSchemas", "schema", "postgresqlTables",
                                  "postgresqlColumns")),
    "mysql": ("mysql", ("mysqlDatabases", "database", "mysqlTables", "mysqlColumns")),
    "sqlserver": ("sqlServer", ("schemas", "schema", "tables", "columns")),
    "mongodb": ("mongodb", ("databases", "database", "collections", "fields")),
}


def source_prefix(kind: str) -> str:
    """The prefix of Datastream's `<prefix>SourceConfig` / `<prefix>ExcludedObjects`."""
    return _SHAPES[kind][0]


def datastream_objects(refs: Sequence[ObjectRef], container: str,
                       kind: str | None = None) -> dict[str, Any]:
    """Include/exclude refs in Datastream's nested object-list shape, e.g. for PostgreSQL
    `{"postgresqlSchemas": [{"schema": "public", "postgresqlTables": [{"table": "t",
    "postgresqlColumns": [{"column": "c"}]}]}]}`; SQL Server's is `schemas[].tables[]
    .columns[]`, MongoDB's `databases[].collections[].fields[]`."""
    if kind is None:
        kind = "postgresql" if container == "schema" else "mysql"
    level, key, tables_key, columns_key = _SHAPES[kind][1]
    item = "collection" if kind == "mongodb" else "table"
    leaf = "field" if kind == "mongodb" else "column"
    out: dict[str, dict[str, Any]] = {}
    for ref in refs:
        entry = out.setdefault(ref.container, {key: ref.container})
        if ref.table is None:
            continue
        tables = entry.setdefault(tables_key, [])
        table = next((t for t in tables if t[item] == ref.table), None)
        if table is None:
            table = {item: ref.table}
            tables.append(table)
        if ref.column is not None:
            table.setdefault(columns_key, []).append({leaf: ref.column})
    return {level: list(out.values())}
