"""Pairs each target of the pipeline with its source table: key, compared columns.

Delta targets are found under `headwater.pipeline.delta.path` as `<schema>/<table>` (the
pipeline's layout; its own `_headwater` state tables are left out); JDBC targets by
`jdbc_side.py`.  Columns come from both sides: a column only one side has, or of a type without
a canonical form (`canonical.py`), is listed as not compared; the key is the source's primary
key.  The columns the pipeline adds for its mode (`__hw_*`, SCD2's validity range, the
changelog's event metadata) are bookkeeping, never compared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, TypeVar

import pyarrow as pa
from deltalake import DeltaTable

from headwater.config import ConfigError
from headwater.pipeline.columnar import CHANGELOG_META
from headwater.pipeline.delta_target import END, START, delta_tables
from headwater.validate.canonical import SOURCE_TEXT_TYPES, kind, supported
from headwater.validate.model import TablePlan
from headwater.validate.source import SqlSource

BOOKKEEPING: Final = "__hw_"
MODE_COLUMNS: Final = {"scd1": frozenset[str](), "scd2": frozenset({START, END}),
                       "changelog": frozenset(CHANGELOG_META.names)}

Found = TypeVar("Found", bound=tuple[object, ...])


def named(found: Sequence[Found], tables: tuple[str, ...], missing: Callable[[str], str]
          ) -> list[Found]:
    """The targets found (each `(schema, table, ...)`), only `tables` (`schema.table`) when
    named: a ConfigError with `missing(name)` for each named table that has no target."""
    if not tables:
        return list(found)
    names = {f"{f[0]}.{f[1]}" for f in found}
    unknown = [t for t in tables if t not in names]
    if unknown:
        raise ConfigError([missing(t) for t in unknown])
    return [f for f in found if f"{f[0]}.{f[1]}" in tables]


# name -> (canonical kind or None, the declared type, for the message)
TargetColumns = dict[str, tuple[str | None, str]]


def is_bookkeeping(name: str, mode: str) -> bool:
    return name.startswith(BOOKKEEPING) or name in MODE_COLUMNS[mode]


def targets(root: Path) -> list[tuple[str, str, Path]]:
    """(schema, table, path) of the target tables under the Delta root."""
    found = []
    for path in delta_tables(root):
        rel = path.relative_to(root).parts
        if rel and rel[0] == "_headwater":
            continue
        if len(rel) == 2:
            found.append((rel[0], rel[1], path))
    return found


def delta_columns(path: Path) -> TargetColumns:
    arrow = pa.schema(DeltaTable(str(path)).schema().to_arrow())
    return {f.name: (kind(f.type), str(f.type)) for f in arrow}


def source_columns(src: SqlSource, schema: str, table: str) -> dict[str, str]:
    """Column name -> data type (information_schema), in table order."""
    with src.conn.cursor() as cur:
        cur.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
            (schema, table))
        return {str(r[0]): str(r[1]).lower() for r in cur.fetchall()}


def primary_key(src: SqlSource, schema: str, table: str) -> list[str]:
    with src.conn.cursor() as cur:
        if src.dialect == "postgres":
            cur.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary "
                "ORDER BY array_position(i.indkey::int2[], a.attnum)",
                (f"{src.q(schema)}.{src.q(table)}",))
        else:
            cur.execute(
                "SELECT column_name FROM information_schema.key_column_usage "
                "WHERE table_schema = %s AND table_name = %s AND constraint_name = 'PRIMARY' "
                "ORDER BY ordinal_position", (schema, table))
        return [str(r[0]) for r in cur.fetchall()]


def plan(src: SqlSource, schema: str, table: str, target: str, columns: TargetColumns,
         mode: str = "scd1", target_dialect: str | None = None) -> TablePlan | str:
    """The comparison plan of one table, or why it cannot be compared.

    `target_dialect`: the database computing the target side (None: Python, for Delta).  A
    text target column is compared only when its source column is text: the pipeline stores
    times of day, JSON, intervals, ... as strings in forms of its own, not the database's."""
    present = source_columns(src, schema, table)
    if not present:
        return f"source table {schema}.{table} not found (target {target})"
    target_types = {n: c for n, c in columns.items() if not is_bookkeeping(n, mode)}
    compared: list[tuple[str, str]] = []
    skipped: list[str] = []
    for name, source_type in present.items():
        if name not in target_types:
            skipped.append(f"{name} (not in the target)")
            continue
        k, declared = target_types[name]
        if (k is None or not supported(src.dialect, k)
                or (target_dialect is not None and not supported(target_dialect, k))):
            skipped.append(f"{name} (target type {declared} not compared)")
            continue
        if k == "text" and source_type not in SOURCE_TEXT_TYPES:
            skipped.append(f"{name} (source type {source_type} held as text: not compared)")
            continue
        compared.append((name, k))
    skipped += [f"{n} (not in the source)" for n in target_types if n not in present]
    key = primary_key(src, schema, table)
    kinds = dict(compared)
    for k in key:
        if k not in kinds:
            return (f"{schema}.{table}: key column {k} cannot be compared "
                    f"({next((s for s in skipped if s.startswith(k + ' ')), 'missing')})")
    if mode == "changelog" and not key:
        return (f"{schema}.{table} has no primary key: its changelog target's current rows "
                "cannot be told apart (the latest change per key needs a key)")
    ordered = [(k, kinds[k]) for k in key] + [c for c in compared if c[0] not in key]
    return TablePlan(schema, table, target, tuple(key), tuple(ordered),
                     len(key) == 1 and kinds[key[0]] == "int", tuple(skipped), mode)
