"""Pairs each Delta target of the pipeline with its source table: key, compared columns.

Targets are found under `headwater.pipeline.delta.path` as `<schema>/<table>` (the pipeline's
layout; its own `_headwater` state tables are left out).  Columns come from both sides: a
column only one side has, or of a type without a canonical form (`canonical.py`), is listed as
not compared; the key is the source's primary key.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from headwater.ops.validate.canonical import kind, supported
from headwater.ops.validate.model import TablePlan
from headwater.ops.validate.source import SqlSource
from headwater.pipeline.delta_target import delta_tables

BOOKKEEPING = "__hw_"


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


def source_columns(src: SqlSource, schema: str, table: str) -> list[str]:
    with src.conn.cursor() as cur:
        cur.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
            (schema, table))
        return [str(r[0]) for r in cur.fetchall()]


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


def plan(src: SqlSource, schema: str, table: str, path: Path) -> TablePlan | str:
    """The comparison plan of one table, or why it cannot be compared."""
    present = source_columns(src, schema, table)
    if not present:
        return f"source table {schema}.{table} not found (target {path})"
    arrow = pa.schema(DeltaTable(str(path)).schema().to_arrow())
    target_types = {f.name: f.type for f in arrow if not f.name.startswith(BOOKKEEPING)}
    compared: list[tuple[str, str]] = []
    skipped: list[str] = []
    for name in present:
        if name not in target_types:
            skipped.append(f"{name} (not in the target)")
            continue
        k = kind(target_types[name])
        if k is None or not supported(src.dialect, k):
            skipped.append(f"{name} (target type {target_types[name]} not compared)")
            continue
        compared.append((name, k))
    skipped += [f"{n} (not in the source)" for n in target_types if n not in present]
    key = primary_key(src, schema, table)
    kinds = dict(compared)
    for k in key:
        if k not in kinds:
            return (f"{schema}.{table}: key column {k} cannot be compared "
                    f"({next((s for s in skipped if s.startswith(k + ' ')), 'missing')})")
    ordered = [(k, kinds[k]) for k in key] + [c for c in compared if c[0] not in key]
    return TablePlan(schema, table, str(path), tuple(key), tuple(ordered),
                     len(key) == 1 and kinds[key[0]] == "int", tuple(skipped))
