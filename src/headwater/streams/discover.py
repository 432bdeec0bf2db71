"""Discover: the objects of a source profile's database, shaped like Datastream's discover
response, at a requested depth.

Why Datastream's shape: a Datastream user (and the later REST service) reads
`postgresqlRdbms.postgresqlSchemas[].postgresqlTables[].postgresqlColumns[]` and
`mysqlRdbms.mysqlDatabases[].mysqlTables[].mysqlColumns[]`,
`mongodbCluster.databases[].collections[].fields[]`,
`sqlServerRdbms.schemas[].tables[].columns[]`; each column carries its source
type (`dataType`) and, as a Headwater addition, Datastream's unified type (`unifiedType`),
the type the column has in Datastream-format events (docs/streams.md has the tables).

Depth is Datastream's `hierarchyDepth` (1: schemas/databases, 2: + tables, 3: + columns);
`fullHierarchy` is depth 3.  A `container`/`table` narrows the answer like the discover
request's object to look into.
"""

from __future__ import annotations

from typing import Any, Final

from headwater.formats.datastream import typemap
from headwater.streams.profiles import Profile, source_kind
from headwater.streams.sources import connect

FULL_DEPTH: Final = 3

def pg_unified(typname: str, typtype: str, precision: int | None, is_array: bool) -> str:
    """The unified type from PostgreSQL's type table (the one the events use)."""
    return typemap.pg_unified(typname, is_array=is_array, is_enum=typtype == "e",
                              has_precision=precision is not None)


def mysql_unified(data_type: str, column_type: str) -> str:
    """The unified type from MySQL's type table (the one the events use).  MariaDB's JSON is
    a LONGTEXT (with a json_valid check): STRING, as the capture sees it."""
    t = data_type.upper()
    if t == "INTEGER":
        t = "INT"
    return typemap.mysql_unified(t, "unsigned" in column_type.lower())


# A domain's type is its innermost base type (domains over domains over arrays included).
_PG_COLUMNS: Final = """
WITH RECURSIVE dom(oid, cur, mod) AS (
  SELECT t.oid, t.typbasetype, t.typtypmod FROM pg_type t WHERE t.typtype = 'd'
  UNION ALL
  SELECT dom.oid, t.typbasetype, t.typtypmod FROM dom JOIN pg_type t ON t.oid = dom.cur
  WHERE t.typtype = 'd'),
base AS (SELECT dom.oid, dom.cur, dom.mod FROM dom JOIN pg_type t ON t.oid = dom.cur
         WHERE t.typtype <> 'd')
SELECT n.nspname, c.relname, a.attname, a.attnum, NOT a.attnotnull,
       format_type(a.atttypid, NULL) AS declared,
       bt.typname AS base, bt.typtype, bt.typcategory = 'A' AS is_array,
       COALESCE(ic.character_maximum_length, information_schema._pg_char_max_length(
         bt.oid, base.mod)),
       COALESCE(ic.numeric_precision, information_schema._pg_numeric_precision(
         bt.oid, base.mod)),
       COALESCE(ic.numeric_scale, information_schema._pg_numeric_scale(bt.oid, base.mod)),
       ic.datetime_precision,
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary
               AND a.attnum = ANY(i.indkey)) AS pk
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN base ON base.oid = a.atttypid
JOIN pg_type bt ON bt.oid = COALESCE(base.cur, a.atttypid)
LEFT JOIN information_schema.columns ic ON ic.table_schema = n.nspname
     AND ic.table_name = c.relname AND ic.column_name = a.attname
WHERE c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_%%'
  AND NOT c.relispartition
  AND (%(schema)s IS NULL OR n.nspname = %(schema)s)
  AND (%(table)s IS NULL OR c.relname = %(table)s)
ORDER BY n.nspname, c.relname, a.attnum
"""
_PG_TABLES: Final = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'
  AND (%(schema)s IS NULL OR n.nspname = %(schema)s)
  AND (%(table)s IS NULL OR c.relname = %(table)s)
ORDER BY 1, 2
"""
_PG_SCHEMAS: Final = """
SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema')
  AND nspname NOT LIKE 'pg\\_%%' AND (%(schema)s IS NULL OR nspname = %(schema)s) ORDER BY 1
"""

_MYSQL_SYSTEM: Final = ("mysql", "information_schema", "performance_schema", "sys")
_MY_COLUMNS: Final = """
SELECT c.TABLE_SCHEMA, c.TABLE_NAME, c.COLUMN_NAME, c.ORDINAL_POSITION, c.IS_NULLABLE,
       c.DATA_TYPE, c.COLUMN_TYPE, c.CHARACTER_MAXIMUM_LENGTH, c.NUMERIC_PRECISION,
       c.NUMERIC_SCALE, c.DATETIME_PRECISION, c.COLLATION_NAME, c.COLUMN_KEY
FROM information_schema.COLUMNS c JOIN information_schema.TABLES t
  ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
WHERE t.TABLE_TYPE = 'BASE TABLE' AND c.TABLE_SCHEMA NOT IN %(system)s
  AND (%(db)s IS NULL OR c.TABLE_SCHEMA = %(db)s)
  AND (%(table)s IS NULL OR c.TABLE_NAME = %(table)s)
ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION
"""
_MY_TABLES: Final = """
SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN %(system)s
  AND (%(db)s IS NULL OR TABLE_SCHEMA = %(db)s) AND (%(table)s IS NULL OR TABLE_NAME = %(table)s)
ORDER BY 1, 2
"""
_MY_DATABASES: Final = """
SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN %(system)s
  AND (%(db)s IS NULL OR SCHEMA_NAME = %(db)s) ORDER BY 1
"""


def _nest(containers: list[str], tables: list[tuple[str, str]],
          columns: dict[tuple[str, str], list[dict[str, Any]]], depth: int,
          names: tuple[str, str, str, str]) -> list[dict[str, Any]]:
    container_key, tables_key, columns_key, _ = names
    out: list[dict[str, Any]] = []
    for c in containers:
        entry: dict[str, Any] = {container_key: c}
        if depth >= 2:
            entry[tables_key] = []
            for s, t in tables:
                if s != c:
                    continue
                table: dict[str, Any] = {"table": t}
                if depth >= 3:
                    table[columns_key] = columns.get((s, t), [])
                entry[tables_key].append(table)
        out.append(entry)
    return out


def discover_postgres(conn: Any, depth: int, schema: str | None, table: str | None
                      ) -> dict[str, Any]:
    params = {"schema": schema, "table": table}
    with conn.cursor() as cur:
        cur.execute(_PG_SCHEMAS, params)
        schemas = [r[0] for r in cur.fetchall()]
        cur.execute(_PG_TABLES, params)
        tables = [(r[0], r[1]) for r in cur.fetchall()]
        columns: dict[tuple[str, str], list[dict[str, Any]]] = {}
        if depth >= 3:
            cur.execute(_PG_COLUMNS, params)
            for (s, t, name, pos, nullable, declared, base, typtype, is_array, length,
                 precision, scale, dt_precision, pk) in cur.fetchall():
                columns.setdefault((s, t), []).append({
                    "column": name, "dataType": declared, "unifiedType": pg_unified(
                        base, typtype, precision, bool(is_array)),
                    "length": length, "precision": precision if precision is not None
                    else dt_precision, "scale": scale, "primaryKey": bool(pk),
                    "nullable": bool(nullable), "ordinalPosition": int(pos)})
    if table is not None:
        schemas = [s for s in schemas if any(s == ts for ts, _ in tables)]
    return {"postgresqlRdbms": {"postgresqlSchemas": _nest(
        schemas, tables, columns, depth,
        ("schema", "postgresqlTables", "postgresqlColumns", ""))}}


def discover_mysql(conn: Any, depth: int, database: str | None, table: str | None
                   ) -> dict[str, Any]:
    params: dict[str, Any] = {"system": _MYSQL_SYSTEM, "db": database, "table": table}
    with conn.cursor() as cur:
        cur.execute(_MY_DATABASES, params)
        databases = [r[0] for r in cur.fetchall()]
        cur.execute(_MY_TABLES, params)
        tables = [(r[0], r[1]) for r in cur.fetchall()]
        columns: dict[tuple[str, str], list[dict[str, Any]]] = {}
        if depth >= 3:
            cur.execute(_MY_COLUMNS, params)
            for (db, t, name, pos, nullable, data_type, column_type, length, precision,
                 scale, dt_precision, collation, key) in cur.fetchall():
                columns.setdefault((db, t), []).append({
                    "column": name, "dataType": str(data_type).upper(),
                    "columnType": column_type,
                    "unifiedType": mysql_unified(data_type, column_type),
                    "length": length, "collation": collation,
                    "primaryKey": key == "PRI", "nullable": nullable == "YES",
                    "ordinalPosition": int(pos),
                    "precision": precision if precision is not None else dt_precision,
                    "scale": scale})
    if table is not None:
        databases = [d for d in databases if any(d == td for td, _ in tables)]
    return {"mysqlRdbms": {"mysqlDatabases": _nest(
        databases, tables, columns, depth,
        ("database", "mysqlTables", "mysqlColumns", ""))}}


# Schemas that hold SQL Server's own objects (the change tables, the catalog), never a
# stream's; `dbo.systranschemas` is the table CDC creates for itself.
_SQLSERVER_SYSTEM: Final = frozenset({"cdc", "sys", "information_schema", "guest"})
_SQLSERVER_OWN_TABLES: Final = frozenset({("dbo", "systranschemas")})


def sqlserver_unified(data_type: str) -> str:
    """The unified type from SQL Server's type table (the one the events use)."""
    return typemap.sqlserver_unified(data_type)


def discover_sqlserver(conn: Any, database: str, depth: int, schema: str | None,
                       table: str | None) -> dict[str, Any]:
    """Datastream's `sqlServerRdbms`: the profile's database's schemas that hold user tables,
    the tables, and at depth 3 their columns from INFORMATION_SCHEMA.COLUMNS (the queries the
    connector reads its schema with, connectors/sqlserver/queries.py)."""
    from headwater.connectors.sqlserver import queries

    def rows(sql: str) -> list[tuple[Any, ...]]:
        cur = conn.cursor()
        try:
            cur.execute(queries.with_db(sql, database))
            return [tuple(r) for r in cur.fetchall()]
        finally:
            cur.close()

    def wanted(s: str, t: str) -> bool:
        return (s.lower() not in _SQLSERVER_SYSTEM and (s, t) not in _SQLSERVER_OWN_TABLES
                and (schema is None or s == schema) and (table is None or t == table))

    tables = sorted({(str(s), str(t)) for s, t in rows(queries.GET_TABLES) if wanted(s, t)})
    schemas = sorted({s for s, _ in tables})
    columns: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if depth >= 3:
        keys = {(s, t, c) for s, t, c in rows(queries.GET_PRIMARY_KEYS)}
        for (s, t, name, pos, nullable, data_type, length, precision, scale, dt_precision,
             _default) in rows(queries.GET_COLUMNS):
            if (s, t) not in tables:
                continue
            columns.setdefault((s, t), []).append({
                "column": name, "dataType": str(data_type).upper(),
                "unifiedType": sqlserver_unified(str(data_type)),
                # a character or binary column has a length and no precision
                "length": length, "precision": None if length is not None else (
                    precision if precision is not None else dt_precision),
                "scale": scale, "primaryKey": (s, t, name) in keys,
                "nullable": nullable == "YES", "ordinalPosition": int(pos)})
    return {"sqlServerRdbms": {"schemas": _nest(
        schemas, tables, columns, depth, ("schema", "tables", "columns", ""))}}


_MONGO_SYSTEM: Final = frozenset({"admin", "config", "local"})
_MONGO_SAMPLE: Final = 100


def mongodb_columns() -> list[dict[str, Any]]:
    """A collection's columns in Datastream events (connectors/mongodb/datastream.py), typed
    by MongoDB's type table, the one the events use."""
    from headwater.connectors.mongodb.datastream import (
        DOCUMENT_TYPE,
        ID_COLUMN,
        ID_TYPE,
        PAYLOAD_COLUMN,
    )

    return [{"column": ID_COLUMN, "dataType": ID_TYPE,
             "unifiedType": typemap.mongodb_unified(ID_TYPE), "primaryKey": True,
             "nullable": False, "ordinalPosition": 1},
            {"column": PAYLOAD_COLUMN, "dataType": DOCUMENT_TYPE,
             "unifiedType": typemap.mongodb_unified(DOCUMENT_TYPE), "primaryKey": False,
             "nullable": True, "ordinalPosition": 2}]


def _sampled_fields(collection: Any) -> list[dict[str, Any]]:
    """The top-level fields of the collection's first documents, with the BSON types seen
    (what `field.exclude.list`, Datastream's field exclusions, can name)."""
    from bson.raw_bson import RawBSONDocument

    seen: dict[str, set[str]] = {}
    raw = collection.with_options(codec_options=collection.codec_options.with_options(
        document_class=RawBSONDocument))
    for doc in raw.find({}, limit=_MONGO_SAMPLE):
        data = doc.raw
        at = 4
        while data[at] != 0:  # element: type byte, name, value (names are what is wanted)
            kind = data[at]
            end = data.index(0, at + 1)
            name = data[at + 1:end].decode("utf-8", "replace")
            seen.setdefault(name, set()).add(_BSON_TYPES.get(kind, f"type {kind}"))
            at = end + 1 + _bson_value_size(data, kind, end + 1)
    fields = sorted(seen, key=lambda n: (n != "_id", n))
    return [{"field": n, "dataTypes": sorted(seen[n]), "primaryKey": n == "_id"} for n in fields]


_BSON_TYPES: Final = {1: "DOUBLE", 2: "STRING", 3: "OBJECT", 4: "ARRAY", 5: "BINARY",
                      6: "UNDEFINED", 7: "OBJECTID", 8: "BOOLEAN", 9: "DATE", 10: "NULL",
                      11: "REGEX", 12: "DBPOINTER", 13: "JAVASCRIPT", 14: "SYMBOL",
                      15: "JAVASCRIPT_WITH_SCOPE", 16: "INT32", 17: "TIMESTAMP", 18: "INT64",
                      19: "DECIMAL128", 255: "MIN_KEY", 127: "MAX_KEY"}
_FIXED: Final = {1: 8, 6: 0, 7: 12, 8: 1, 9: 8, 10: 0, 16: 4, 17: 8, 18: 8, 19: 16, 255: 0,
                 127: 0}


def _bson_value_size(data: bytes, kind: int, at: int) -> int:
    if kind in _FIXED:
        return _FIXED[kind]
    length = int.from_bytes(data[at:at + 4], "little", signed=True)
    if kind in (2, 13, 14):  # string-like: int32 length + bytes
        return 4 + length
    if kind in (3, 4, 15):  # documents (and code with scope): the length counts itself
        return length
    if kind == 5:  # binary: length, subtype, bytes
        return 5 + length
    if kind == 11:  # regex: two C strings
        first = data.index(0, at)
        return data.index(0, first + 1) + 1 - at
    if kind == 12:  # DBPointer: string + 12-byte ObjectId
        return 4 + length + 12
    raise ValueError(f"BSON element type {kind} at byte {at - 1}: unknown")


def discover_mongodb(client: Any, depth: int, database: str | None, collection: str | None
                     ) -> dict[str, Any]:
    """Datastream's `mongodbCluster`: databases, their collections, and at depth 3 each
    collection's sampled top-level fields plus (a Headwater addition) the columns its events
    have, with their unified types."""
    databases = sorted(d for d in client.list_database_names()
                       if d not in _MONGO_SYSTEM and (database is None or d == database))
    out: list[dict[str, Any]] = []
    for db in databases:
        entry: dict[str, Any] = {"database": db}
        if depth >= 2:
            names = sorted(n for n in client[db].list_collection_names(
                filter={"type": "collection"})
                if not n.startswith("system.") and (collection is None or n == collection))
            if collection is not None and not names:
                continue
            entry["collections"] = []
            for name in names:
                item: dict[str, Any] = {"collection": name}
                if depth >= 3:
                    item["fields"] = _sampled_fields(client[db][name])
                    item["columns"] = mongodb_columns()
                entry["collections"].append(item)
        out.append(entry)
    return {"mongodbCluster": {"databases": out}}


def discover(profile: Profile, depth: int = FULL_DEPTH, container: str | None = None,
             table: str | None = None) -> dict[str, Any]:
    """The discover response for a source profile (connects with the profile)."""
    if not 1 <= depth <= FULL_DEPTH:
        raise ValueError(f"hierarchy depth {depth}: use 1 (schemas/databases), 2 (+ tables) "
                         "or 3 (+ columns)")
    kind = source_kind(profile.kind)
    conn = connect(profile)
    try:
        if kind.name == "postgresql":
            return discover_postgres(conn, depth, container, table)
        if kind.name == "mysql":
            return discover_mysql(conn, depth, container, table)
        if kind.name == "mongodb":
            return discover_mongodb(conn, depth, container, table)
        if kind.name == "sqlserver":
            database = profile.properties["database.names"].split(",")[0].strip()
            return discover_sqlserver(conn, database, depth, container, table)
        raise NotImplementedError(f"discover for a {kind.name} source")
    finally:
        conn.close()
