"""Table definitions read from the binlog itself, for rows the schema history cannot decode.

Why: a DDL statement that could not be parsed (and was skipped by
``schema.history.internal.skip.unparseable.ddl``) leaves the history without the table it
created, or with an out-of-date version of the table it altered.  Dropping the rows of such a
table, or decoding them with the wrong columns, loses data silently.  The TABLE_MAP event that
precedes every row event describes the table as the server wrote the rows: column types and
their metadata, nullability and, with ``binlog_row_metadata=FULL``, names, signedness,
charsets, ENUM/SET members and the primary key.  `table_from_map` turns that into the same
`MySqlTable` the DDL path builds, so the same codec and row decoder serve it;
`table_map_mismatch` tells whether a history table still matches what the binlog says.

What the metadata cannot give (documented in docs/mysql.md): column defaults, comments, the
exact length of integer display widths and of TEXT/BLOB columns, FLOAT(M,D) and BOOLEAN (they
travel as FLOAT and TINYINT), MariaDB's JSON (LONGTEXT), UUID/INET4/INET6 (BINARY), unique
keys, AUTO_INCREMENT, generated columns and the collation name (only its charset).
"""

from __future__ import annotations

from typing import Final

from headwater.connectors.mysql.binlog import events as ev
from headwater.connectors.mysql.binlog.charsets import BINARY_COLLATION, charset_of_collation
from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable

__all__ = ["TableMetadataError", "table_from_map", "table_map_mismatch"]


class TableMetadataError(ValueError):
    """The TABLE_MAP lacks what a table definition needs (binlog_row_metadata is not FULL)."""


_INTEGERS: Final = {ev.T_TINY: "TINYINT", ev.T_SHORT: "SMALLINT", ev.T_INT24: "MEDIUMINT",
                    ev.T_LONG: "INT", ev.T_LONGLONG: "BIGINT"}
_TEMPORAL: Final = {ev.T_DATE: "DATE", ev.T_NEWDATE: "DATE", ev.T_TIME: "TIME",
                    ev.T_TIME2: "TIME", ev.T_DATETIME: "DATETIME", ev.T_DATETIME2: "DATETIME",
                    ev.T_TIMESTAMP: "TIMESTAMP", ev.T_TIMESTAMP2: "TIMESTAMP"}
_FSP_TYPES: Final = frozenset({ev.T_TIME2, ev.T_DATETIME2, ev.T_TIMESTAMP2})
# BLOB-family metadata (its length prefix size) -> (text type, binary type).
_LOBS: Final = {1: ("TINYTEXT", "TINYBLOB"), 2: ("TEXT", "BLOB"), 3: ("MEDIUMTEXT", "MEDIUMBLOB"),
                4: ("LONGTEXT", "LONGBLOB")}
_LOB_CODES: Final = frozenset({ev.T_BLOB, ev.T_TINY_BLOB, ev.T_MEDIUM_BLOB, ev.T_LONG_BLOB})
_GEOMETRIES: Final = ("GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT",
                      "MULTILINESTRING", "MULTIPOLYGON", "GEOMETRYCOLLECTION")
# Bytes per character of multi-byte charsets (CHAR/VARCHAR metadata counts bytes).
_MAX_BYTES: Final = {"utf8mb4": 4, "utf8mb3": 3, "utf8": 3, "ucs2": 2, "utf16": 4,
                     "utf16le": 4, "utf32": 4, "gb18030": 4, "ujis": 3, "eucjpms": 3,
                     "big5": 2, "gbk": 2, "gb2312": 2, "sjis": 2, "cp932": 2, "euckr": 2}


def _string_bytes(meta: int) -> int:
    """CHAR/BINARY's byte length from STRING's metadata (as rows.py reads it)."""
    return (((meta >> 4) & 0x300) ^ 0x300) + (meta & 0xFF)


def table_from_map(table_map: ev.TableMap) -> MySqlTable:
    """The table definition a TABLE_MAP describes.  Raises `TableMetadataError` without
    column names (binlog_row_metadata=MINIMAL or an older server): positional names would
    make events whose fields no consumer can match to the real columns."""
    tm = table_map
    where = f"{tm.database}.{tm.table}"
    if tm.column_names is None or len(tm.column_names) != len(tm.column_types):
        raise TableMetadataError(
            f"the TABLE_MAP of {where} carries no column names (binlog_row_metadata is not "
            "FULL on the server that wrote it)")
    columns = tuple(_column(tm, i) for i in range(len(tm.column_types)))
    primary = tuple(columns[i].name for i in tm.primary_key or ())
    return MySqlTable(tm.database, tm.table, columns, primary)


def _column(tm: ev.TableMap, i: int) -> MySqlColumn:
    assert tm.column_names is not None
    name = tm.column_names[i]
    meta = tm.column_meta[i]
    code = ev.real_type(tm.column_types[i], meta)
    nullable = tm.nullable[i]
    unsigned = bool(tm.unsigned and tm.unsigned[i])
    collation = tm.collations[i] if tm.collations else None
    binary = collation == BINARY_COLLATION
    charset = None if collation is None or binary else charset_of_collation(collation)
    if code in _INTEGERS:
        return MySqlColumn(name, _INTEGERS[code], unsigned=unsigned, nullable=nullable)
    if code in (ev.T_FLOAT, ev.T_DOUBLE):
        return MySqlColumn(name, "FLOAT" if code == ev.T_FLOAT else "DOUBLE",
                           unsigned=unsigned, nullable=nullable)
    if code == ev.T_NEWDECIMAL:
        return MySqlColumn(name, "DECIMAL", length=meta >> 8, scale=meta & 0xFF,
                           unsigned=unsigned, nullable=nullable)
    if code == ev.T_YEAR:
        return MySqlColumn(name, "YEAR", nullable=nullable)
    if code in _TEMPORAL:
        fsp = meta if code in _FSP_TYPES and meta else None
        return MySqlColumn(name, _TEMPORAL[code], length=fsp, nullable=nullable)
    if code == ev.T_BIT:
        return MySqlColumn(name, "BIT", length=meta, nullable=nullable)
    if code in (ev.T_ENUM, ev.T_SET):
        values = tm.enum_values if code == ev.T_ENUM else tm.set_values
        members = values[i] if values else None
        if members is None:
            raise TableMetadataError(
                f"the TABLE_MAP of {tm.database}.{tm.table} carries no members for "
                f"{'ENUM' if code == ev.T_ENUM else 'SET'} column {name!r}")
        return MySqlColumn(name, "ENUM" if code == ev.T_ENUM else "SET", nullable=nullable,
                           charset=charset, members=members)
    if code in (ev.T_VARCHAR, ev.T_VAR_STRING, ev.T_STRING):
        size = meta if code != ev.T_STRING else _string_bytes(meta)
        fixed = code == ev.T_STRING
        if binary:
            return MySqlColumn(name, "BINARY" if fixed else "VARBINARY", length=size,
                               nullable=nullable)
        per_char = _MAX_BYTES.get(charset or "utf8mb4", 1)
        return MySqlColumn(name, "CHAR" if fixed else "VARCHAR", length=size // per_char,
                           nullable=nullable, charset=charset or "utf8mb4")
    if code in _LOB_CODES:
        text, blob = _LOBS.get(meta, ("LONGTEXT", "LONGBLOB"))
        if binary or collation is None:
            return MySqlColumn(name, blob, nullable=nullable)
        return MySqlColumn(name, text, nullable=nullable, charset=charset)
    if code == ev.T_JSON:
        return MySqlColumn(name, "JSON", nullable=nullable)
    if code == ev.T_GEOMETRY:
        kind = tm.geometry_types[i] if tm.geometry_types else None
        type_name = _GEOMETRIES[kind] if kind is not None and kind < len(_GEOMETRIES) \
            else "GEOMETRY"
        return MySqlColumn(name, type_name, nullable=nullable)
    raise TableMetadataError(
        f"column {name!r} of {tm.database}.{tm.table} has binlog type code {code}, which has "
        "no table definition")


# -- does a history table still match its TABLE_MAP? -------------------------------------------

_STRINGS: Final = frozenset({ev.T_STRING, ev.T_VARCHAR, ev.T_VAR_STRING})
_LOBS_JSON: Final = _LOB_CODES | {ev.T_JSON}
# Binlog type codes each DDL type may be written as.  Types not listed are not checked (a type
# this table does not know must not make a valid history look stale).
_EXPECTED: Final[dict[str, frozenset[int]]] = {
    "BOOLEAN": frozenset({ev.T_TINY}), "TINYINT": frozenset({ev.T_TINY}),
    "SMALLINT": frozenset({ev.T_SHORT}), "MEDIUMINT": frozenset({ev.T_INT24}),
    "INT": frozenset({ev.T_LONG}), "BIGINT": frozenset({ev.T_LONGLONG}),
    "FLOAT": frozenset({ev.T_FLOAT, ev.T_DOUBLE}), "DOUBLE": frozenset({ev.T_DOUBLE}),
    "DECIMAL": frozenset({ev.T_NEWDECIMAL}), "YEAR": frozenset({ev.T_YEAR}),
    "DATE": frozenset({ev.T_DATE, ev.T_NEWDATE}), "TIME": frozenset({ev.T_TIME, ev.T_TIME2}),
    "DATETIME": frozenset({ev.T_DATETIME, ev.T_DATETIME2}),
    "TIMESTAMP": frozenset({ev.T_TIMESTAMP, ev.T_TIMESTAMP2}), "BIT": frozenset({ev.T_BIT}),
    "ENUM": frozenset({ev.T_ENUM}), "SET": frozenset({ev.T_SET}),
    **dict.fromkeys(("CHAR", "VARCHAR", "BINARY", "VARBINARY"), _STRINGS),
    **dict.fromkeys(("TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "TINYBLOB", "BLOB",
                     "MEDIUMBLOB", "LONGBLOB", "JSON"), _LOBS_JSON),
    **dict.fromkeys((*_GEOMETRIES, "GEOMCOLLECTION"), frozenset({ev.T_GEOMETRY})),
}
_SIGNED_TYPES: Final = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT",
                                  "DECIMAL", "FLOAT", "DOUBLE"})


def table_map_mismatch(table_map: ev.TableMap, table: MySqlTable) -> str | None:
    """Why `table` (from the schema history) cannot decode the rows of `table_map`, or None.

    Runs once per TABLE_MAP version (the streaming loop caches its verdict with the decoder),
    so it may take its time.  Only differences that would change values are reported: column
    count, names and signedness (when the metadata has them), type families, DECIMAL
    precision/scale, fractional-second precision, BIT length, ENUM/SET members.
    """
    tm = table_map
    count = len(tm.column_types)
    if count != len(table.columns):
        return (f"the binlog has {count} columns, the schema history "
                f"{len(table.columns)}")
    for i, column in enumerate(table.columns):
        problem = _column_mismatch(tm, i, column)
        if problem is not None:
            return f"column {i + 1} ({column.name}): {problem}"
    return None


def _column_mismatch(tm: ev.TableMap, i: int, column: MySqlColumn) -> str | None:
    meta = tm.column_meta[i]
    code = ev.real_type(tm.column_types[i], meta)
    if tm.column_names is not None and tm.column_names[i].lower() != column.name.lower():
        return f"named {tm.column_names[i]!r} in the binlog"
    type_name = column.type_name.upper()
    expected = _EXPECTED.get(type_name)
    if expected is None:
        return None
    if code not in expected:
        return f"{column.qualified_type} in the history, binlog type code {code}"
    if tm.unsigned is not None and type_name in _SIGNED_TYPES and \
            tm.unsigned[i] != (column.unsigned or column.zerofill):
        return "signedness differs"
    if code == ev.T_NEWDECIMAL and column.length is not None and \
            (meta >> 8, meta & 0xFF) != (column.length, column.scale or 0):
        return f"DECIMAL({meta >> 8},{meta & 0xFF}) in the binlog"
    if code in _FSP_TYPES and meta != min(column.length or 0, 6):
        return f"fractional-second precision {meta} in the binlog"
    if code == ev.T_BIT and meta != (column.length or 1):
        return f"BIT({meta}) in the binlog"
    values = tm.enum_values if code == ev.T_ENUM else tm.set_values if code == ev.T_SET \
        else None
    members = values[i] if values is not None else None
    if members is not None and not _same_members(members, column.members):
        return "other ENUM/SET members in the binlog"
    return None


def _same_members(binlog: tuple[str, ...], history: tuple[str, ...]) -> bool:
    """The server strips trailing spaces from members, and the metadata is read as UTF-8
    whatever the column charset: only a different count or a different ASCII member counts."""
    if len(binlog) != len(history):
        return False
    return all(a == b.rstrip(" ") or not (a.isascii() and b.isascii())
               for a, b in zip(binlog, history, strict=True))
