"""Type names, synonyms and charset rules of MySQL/MariaDB column definitions.

The parser reads a type as written; this module knows what the server makes of it: synonyms
(INT4 is INT), defaults (CHAR is CHAR(1)), and the charset a string column ends up with once
the table's and database's defaults are known.  National types keep their own names
(NCHAR, NATIONAL VARCHAR, ...) because Debezium reports them so, with their own JDBC types.
"""

from __future__ import annotations

from dataclasses import replace

from headwater.connectors.mysql.columns import MySqlColumn
from headwater.connectors.mysql.ddl_model import ColumnSpec

INTEGER_SYNONYMS = {
    "TINYINT": "TINYINT", "INT1": "TINYINT",
    "SMALLINT": "SMALLINT", "INT2": "SMALLINT",
    "MEDIUMINT": "MEDIUMINT", "INT3": "MEDIUMINT", "MIDDLEINT": "MEDIUMINT",
    "INT": "INT", "INTEGER": "INT", "INT4": "INT",
    "BIGINT": "BIGINT", "INT8": "BIGINT",
}
DECIMAL_SYNONYMS = frozenset({"DECIMAL", "DEC", "FIXED", "NUMERIC"})
# Types that take no arguments (or whose optional argument is a length/fsp/dimension).
SIMPLE_TYPES = {
    "DATE": "DATE", "TIME": "TIME", "DATETIME": "DATETIME", "TIMESTAMP": "TIMESTAMP",
    "YEAR": "YEAR", "BIT": "BIT", "BINARY": "BINARY", "VARBINARY": "VARBINARY",
    "TINYBLOB": "TINYBLOB", "BLOB": "BLOB", "MEDIUMBLOB": "MEDIUMBLOB", "LONGBLOB": "LONGBLOB",
    "TINYTEXT": "TINYTEXT", "TEXT": "TEXT", "MEDIUMTEXT": "MEDIUMTEXT", "LONGTEXT": "LONGTEXT",
    "VARCHAR": "VARCHAR", "VARCHARACTER": "VARCHAR",
    "JSON": "JSON", "GEOMETRY": "GEOMETRY", "POINT": "POINT", "LINESTRING": "LINESTRING",
    "POLYGON": "POLYGON", "MULTIPOINT": "MULTIPOINT", "MULTILINESTRING": "MULTILINESTRING",
    "MULTIPOLYGON": "MULTIPOLYGON", "GEOMETRYCOLLECTION": "GEOMETRYCOLLECTION",
    "GEOMCOLLECTION": "GEOMETRYCOLLECTION", "UUID": "UUID", "INET4": "INET4",
    "INET6": "INET6", "VECTOR": "VECTOR", "BOOL": "BOOLEAN", "BOOLEAN": "BOOLEAN",
    "FLOAT4": "FLOAT", "FLOAT8": "DOUBLE", "REAL": "DOUBLE",
}
# The national types as Debezium's type resolver names them (the keywords as written, BINARY
# included when it follows) and the plain type each one is.
NATIONAL_TYPES = {
    "NCHAR": "CHAR", "NCHAR BINARY": "CHAR", "NATIONAL CHAR": "CHAR",
    "NATIONAL CHAR BINARY": "CHAR", "NATIONAL CHARACTER": "CHAR",
    "NATIONAL CHARACTER BINARY": "CHAR",
    "NVARCHAR": "VARCHAR", "NVARCHAR BINARY": "VARCHAR", "NCHAR VARYING": "VARCHAR",
    "NCHAR VARCHAR": "VARCHAR", "NCHAR VARCHAR BINARY": "VARCHAR",
    "NATIONAL VARCHAR": "VARCHAR", "NATIONAL VARCHAR BINARY": "VARCHAR",
    "NATIONAL CHAR VARYING": "VARCHAR", "NATIONAL CHARACTER VARYING": "VARCHAR",
}
# java.sql.Types of the national types (NCHAR, NVARCHAR), as Debezium's resolver assigns them.
NATIONAL_JDBC_TYPES = {name: -15 if base == "CHAR" else -9 for name, base in NATIONAL_TYPES.items()}
STRING_TYPES = frozenset(
    {"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET",
     *NATIONAL_TYPES})


def base_type(type_name: str) -> str:
    """The plain type behind a national type name (the name itself for any other type)."""
    return NATIONAL_TYPES.get(type_name, type_name)

DEFAULT_LENGTH = {"CHAR": 1, "BINARY": 1, "BIT": 1}
_TO_BINARY = {"CHAR": "BINARY", "VARCHAR": "VARBINARY", "TINYTEXT": "TINYBLOB",
              "TEXT": "BLOB", "MEDIUMTEXT": "MEDIUMBLOB", "LONGTEXT": "LONGBLOB"}
_TEXT_SIZES = (("TINY", 255), ("", 65535), ("MEDIUM", 16777215), ("LONG", 4294967295))
# Bytes per character, for TEXT(M): the smallest TEXT type that holds M characters.
_MAX_BYTES_PER_CHAR = {
    "latin1": 1, "ascii": 1, "binary": 1, "latin2": 1, "cp1250": 1, "cp1251": 1,
    "cp1252": 1, "utf8mb3": 3, "utf8mb4": 4, "ucs2": 2, "utf16": 4, "utf16le": 4,
    "utf32": 4, "gbk": 2, "big5": 2, "sjis": 2, "cp932": 2, "euckr": 2, "gb2312": 2,
    "ujis": 3, "eucjpms": 3, "gb18030": 4,
}


def normalize_charset(name: str) -> str:
    """Lower case; `utf8` is `utf8mb3` (as MySQL 8 and MariaDB 10.6+ print it)."""
    name = name.lower()
    return "utf8mb3" if name == "utf8" else name


def normalize_collation(name: str) -> str:
    name = name.lower()
    return "utf8mb3" + name[4:] if name.startswith("utf8_") else name


def charset_of_collation(collation: str) -> str:
    """The charset a collation belongs to: its name up to the first underscore."""
    collation = normalize_collation(collation)
    return "binary" if collation == "binary" else collation.split("_", 1)[0]


def _text_type(type_name: str, length_bytes: int) -> str:
    family = "BLOB" if type_name.endswith("BLOB") else "TEXT"
    for prefix, size in _TEXT_SIZES:
        if length_bytes <= size:
            return prefix + family
    return "LONG" + family


def resolve_column(spec: ColumnSpec, table_charset: str | None,
                   table_collation: str | None) -> MySqlColumn:
    """The column with charset inheritance applied and binary charsets turned into binary types.

    String columns without a charset of their own take the table's default charset (which the
    catalog has already resolved from the database and server defaults).
    """
    column = spec.column
    type_name = column.type_name
    if type_name not in STRING_TYPES:
        if spec.declared_length is not None and type_name == "BLOB":
            return replace(column, type_name=_text_type("BLOB", spec.declared_length))
        return column
    charset = column.charset
    collation = column.collation
    if charset is None and collation is not None:
        charset = charset_of_collation(collation)
    if charset is None:
        charset = table_charset
        if collation is None and table_collation is not None and (
                charset is None or charset_of_collation(table_collation) == charset):
            collation = table_collation
    if spec.binary_collation and collation is None and charset is not None:
        collation = charset + "_bin"
    if spec.declared_length is not None and type_name == "TEXT":
        per_char = _MAX_BYTES_PER_CHAR.get(charset or "", 4)
        type_name = _text_type("TEXT", spec.declared_length * per_char)
    if charset == "binary" and base_type(type_name) in _TO_BINARY:
        return replace(column, type_name=_TO_BINARY[base_type(type_name)], charset=None,
                       collation=None)
    return replace(column, type_name=type_name, charset=charset, collation=collation)


def binary_type(type_name: str) -> str:
    """The binary type a string type becomes in the binary charset (ENUM/SET stay)."""
    return _TO_BINARY.get(base_type(type_name), type_name)


def converted_text_type(type_name: str, old_charset: str | None, new_charset: str) -> str:
    """The TEXT type CONVERT TO CHARACTER SET picks: the server widens a TEXT column so that
    it still holds as many characters as before (latin1 TEXT becomes utf8mb4 MEDIUMTEXT)."""
    if type_name not in ("TINYTEXT", "TEXT", "MEDIUMTEXT"):
        return type_name
    size = dict(_TEXT_SIZES)[type_name[:-4]]
    chars = size // _MAX_BYTES_PER_CHAR.get(old_charset or "", 4)
    return _text_type("TEXT", chars * _MAX_BYTES_PER_CHAR.get(new_charset, 4))
