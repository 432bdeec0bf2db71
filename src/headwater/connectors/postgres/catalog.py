"""Reads what pgoutput does not say about a table from the system catalogs.

pgoutput's Relation message names the columns, their types and the replica identity columns,
but not nullability, the primary key or type names of extension types.  Like Debezium (which
asks JDBC metadata), we read those from the catalogs: at start for the snapshot, and again
when a Relation message shows a table whose columns changed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")


class ColumnInfo(NamedTuple):
    name: str
    attnum: int
    type_oid: int
    type_name: str  # pg_type.typname of the column type (base type for domains: see base_*)
    formatted_type: str  # format_type(atttypid, atttypmod), e.g. "character varying(255)"
    type_modifier: int
    not_null: bool
    base_type_oid: int  # for domains the underlying type, else type_oid
    base_type_name: str


class TableInfo(NamedTuple):
    oid: int
    schema: str
    name: str
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...]
    replica_identity: str  # 'd' default, 'n' nothing, 'f' full, 'i' index
    identity_index_columns: tuple[str, ...]


_TABLES_SQL = """
SELECT c.oid, n.nspname, c.relname, c.relreplident
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
  AND n.nspname NOT LIKE 'pg_temp_%%' AND n.nspname NOT LIKE 'pg_toast_temp_%%'
  AND NOT c.relispartition
ORDER BY n.nspname, c.relname
"""

_COLUMNS_SQL = """
SELECT a.attrelid, a.attname, a.attnum, a.atttypid, t.typname,
       format_type(a.atttypid, a.atttypmod), a.atttypmod, a.attnotnull,
       CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END,
       CASE WHEN t.typtype = 'd' THEN bt.typname ELSE t.typname END,
       CASE WHEN t.typtype = 'd' AND a.atttypmod = -1 THEN t.typtypmod ELSE a.atttypmod END
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type bt ON bt.oid = t.typbasetype
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY a.attrelid, a.attnum
"""

_KEYS_SQL = """
SELECT i.indrelid, i.indisprimary, i.indisreplident,
       array_agg(a.attname ORDER BY k.ord)
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = ANY(%s) AND (i.indisprimary OR i.indisreplident)
GROUP BY i.indexrelid, i.indrelid, i.indisprimary, i.indisreplident
"""


def list_tables(cur: Any) -> list[tuple[int, str, str]]:
    """(oid, schema, table) of every user table, system schemas excluded."""
    cur.execute(_TABLES_SQL)
    return [(int(r[0]), r[1], r[2]) for r in cur.fetchall()]


def describe_tables(cur: Any, oids: list[int]) -> dict[int, TableInfo]:
    """Columns, primary key and replica identity of the given tables."""
    if not oids:
        return {}
    cur.execute(
        "SELECT c.oid, n.nspname, c.relname, c.relreplident FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = ANY(%s)",
        (oids,),
    )
    heads = {int(r[0]): (r[1], r[2], r[3]) for r in cur.fetchall()}
    cur.execute(_COLUMNS_SQL, (oids,))
    columns: dict[int, list[ColumnInfo]] = {}
    for r in cur.fetchall():
        columns.setdefault(int(r[0]), []).append(
            ColumnInfo(
                name=r[1],
                attnum=int(r[2]),
                type_oid=int(r[3]),
                type_name=r[4],
                formatted_type=r[5],
                type_modifier=int(r[10]),
                not_null=bool(r[7]),
                base_type_oid=int(r[8]),
                base_type_name=r[9],
            )
        )
    cur.execute(_KEYS_SQL, (oids,))
    pks: dict[int, tuple[str, ...]] = {}
    idents: dict[int, tuple[str, ...]] = {}
    for relid, is_pk, is_ident, names in cur.fetchall():
        if is_pk:
            pks[int(relid)] = tuple(names)
        if is_ident:
            idents[int(relid)] = tuple(names)
    out: dict[int, TableInfo] = {}
    for oid, (schema, name, ident) in heads.items():
        out[oid] = TableInfo(
            oid=oid,
            schema=schema,
            name=name,
            columns=tuple(columns.get(oid, ())),
            primary_key=pks.get(oid, ()),
            replica_identity=ident,
            identity_index_columns=idents.get(oid, ()),
        )
    return out


def current_database(cur: Any) -> str:
    cur.execute("SELECT current_database()")
    return str(cur.fetchone()[0])
