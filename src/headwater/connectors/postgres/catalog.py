"""Reads what pgoutput does not say about a table from the system catalogs.

pgoutput's Relation message names the columns, their types and the replica identity columns,
but not nullability, the primary key, type names of extension types, the element type of
arrays, enum labels or what a domain is based on.  Like Debezium (which asks JDBC metadata and
its ``TypeRegistry``), we read those from the catalogs: at start for the snapshot, and again
when a Relation message shows a table whose columns changed.

Each column's type is resolved into a `PgType` (see `headwater.connectors.postgres.types`):
domains are followed to their base type (through any number of domains over domains), the
modifier is the column's or else the nearest domain's, array types carry their (resolved)
element type and its ``typdelim``, enums their labels in ``enumsortorder``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from headwater.connectors.postgres.types import PgType

SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")


class ColumnInfo(NamedTuple):
    name: str
    attnum: int
    type_oid: int
    type_name: str  # pg_type.typname of the column type (base type for domains: see base_*)
    formatted_type: str  # format_type(atttypid, atttypmod), e.g. "character varying(255)"
    type_modifier: int  # atttypmod, else the nearest domain's typtypmod
    not_null: bool
    base_type_oid: int  # for domains the underlying (root) type, else type_oid
    base_type_name: str
    pg_type: PgType | None = None  # the resolved type the mapping takes; None: not resolved
    default_expression: str | None = None  # pg_get_expr(adbin): the column's SQL DEFAULT


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
       pg_get_expr(d.adbin, d.adrelid)
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
ORDER BY a.attrelid, a.attnum
"""

# One row per type: its kind, what a domain is based on, an array's element, an enum's labels.
_TYPES_SQL = """
SELECT t.oid, t.typname, t.typtype, t.typbasetype, t.typtypmod,
       CASE WHEN t.typinput = 'array_in'::regproc THEN t.typelem ELSE 0 END,
       t.typdelim,
       CASE WHEN t.typtype = 'e' THEN
         (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder)
          FROM pg_enum e WHERE e.enumtypid = t.oid)
       END
FROM pg_type t
WHERE t.oid = ANY(%s)
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
    rows = cur.fetchall()
    types = _load_types(cur, {int(r[3]) for r in rows})
    columns: dict[int, list[ColumnInfo]] = {}
    for r in rows:
        pg_type = resolve_type(types, int(r[3]), int(r[6]))
        columns.setdefault(int(r[0]), []).append(
            ColumnInfo(
                name=r[1],
                attnum=int(r[2]),
                type_oid=int(r[3]),
                type_name=r[4],
                formatted_type=r[5],
                type_modifier=pg_type.typmod,
                not_null=bool(r[7]),
                base_type_oid=pg_type.oid,
                base_type_name=pg_type.name,
                pg_type=pg_type,
                default_expression=r[8],
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


class TypeRow(NamedTuple):
    """The pg_type facts `resolve_type` needs about one type."""

    oid: int
    name: str
    kind: str  # typtype
    base_oid: int  # typbasetype (domains), else 0
    typmod: int  # typtypmod (domains), else -1
    element_oid: int  # typelem of array types (typinput = array_in), else 0
    delimiter: str  # typdelim
    enum_labels: tuple[str, ...]


def _load_types(cur: Any, oids: set[int]) -> dict[int, TypeRow]:
    """pg_type rows of `oids` and of every type they lead to (domain bases, array elements)."""
    types: dict[int, TypeRow] = {}
    pending = set(oids)
    while pending:
        cur.execute(_TYPES_SQL, (sorted(pending),))
        pending = set()
        for r in cur.fetchall():
            row = TypeRow(
                oid=int(r[0]),
                name=r[1],
                kind=r[2],
                base_oid=int(r[3]),
                typmod=int(r[4]),
                element_oid=int(r[5]),
                delimiter=r[6],
                enum_labels=tuple(r[7] or ()),
            )
            types[row.oid] = row
            for nxt in (row.base_oid if row.kind == "d" else 0, row.element_oid):
                if nxt and nxt not in types:
                    pending.add(nxt)
        pending -= types.keys()
    return types


def resolve_type(types: dict[int, TypeRow], oid: int, typmod: int) -> PgType:
    """The `PgType` of a column of type `oid` with modifier `typmod` (atttypmod).

    Domains are followed to their base type; the modifier is the column's, else that of the
    nearest domain with one (Debezium's ``PostgresType.getDefaultLength``).  Unknown OIDs give a
    bare ``PgType(oid)``.
    """
    row = types.get(oid)
    seen: set[int] = set()
    while row is not None and row.kind == "d" and row.oid not in seen:
        seen.add(row.oid)
        if typmod < 0:
            typmod = row.typmod
        base = types.get(row.base_oid)
        if base is None:
            return PgType(row.base_oid, "", typmod)
        row = base
    if row is None:
        return PgType(oid, "", typmod)
    element = resolve_type(types, row.element_oid, typmod) if row.element_oid else None
    return PgType(
        oid=row.oid,
        name=row.name,
        typmod=typmod,
        kind=row.kind,
        enum_labels=row.enum_labels,
        element=element,
        delimiter=row.delimiter,
    )


def current_database(cur: Any) -> str:
    cur.execute("SELECT current_database()")
    return str(cur.fetchone()[0])
