"""Datastream's per-source type tables: source type -> unified type, as data.

Why one table per source, used by both the events (formats/datastream/unified.py renders each
column in the form its unified type has in Avro and JSON) and `discover` (streams/discover.py
reports the same name): the two must never disagree, and a type's row is then fixed in one
place.  The rows follow Google's tables as /work/shared/reference/datastream-types.md records
them (the BigQuery mapping page, Google's own unified-type mapping code, and the readings of
its §E); rows the reference leaves unsettled are listed in `UNSETTLED` and marked ⚠ in
docs/datastream.md.  Types outside Google's tables (PostgreSQL extensions such as hstore,
MariaDB's inet4/inet6/uuid) are Headwater's own rows, listed in `HEADWATER_ROWS`.

Keys are the source's own type names as the connectors name a column (`Column.type_name`):
PostgreSQL's `pg_type.typname` (`int4`, `timestamptz`), MySQL's upper-case base type with
` UNSIGNED` for unsigned integers (`BIGINT UNSIGNED`), SQL Server's `data_type`.  A type not
in its source's table is UNSUPPORTED, as Datastream treats a type it does not map.
"""

from __future__ import annotations

from typing import Final

UNSUPPORTED: Final = "UNSUPPORTED"

POSTGRESQL_TYPES: Final[dict[str, str]] = {
    "int2": "INTEGER", "int4": "INTEGER", "int8": "LONG", "oid": "LONG",
    "bit": "BYTES", "varbit": "BYTES", "bytea": "BYTES",
    "bool": "BOOLEAN",
    "bpchar": "STRING", "char": "STRING", "varchar": "STRING", "text": "STRING",
    "name": "STRING", "citext": "STRING", "cidr": "STRING", "inet": "STRING",
    "macaddr": "STRING", "macaddr8": "STRING", "uuid": "STRING", "xml": "STRING",
    "tsquery": "STRING", "tsvector": "STRING", "txid_snapshot": "STRING",
    "date": "DATE",
    "float8": "DOUBLE", "money": "DOUBLE", "float4": "FLOAT",
    "json": "JSON", "jsonb": "JSON",
    "time": "TIME", "timetz": "TIME_WITH_TIME_ZONE",
    "timestamp": "TIMESTAMP", "timestamptz": "TIMESTAMP_WITH_TIME_ZONE",
    "interval": "INTERVAL",
    # numeric: DECIMAL with a declared precision, NUMBER without (see pg_unified)
    "numeric": "DECIMAL",
    "box": UNSUPPORTED, "circle": UNSUPPORTED, "line": UNSUPPORTED, "lseg": UNSUPPORTED,
    "path": UNSUPPORTED, "point": UNSUPPORTED, "polygon": UNSUPPORTED,
    "pg_lsn": UNSUPPORTED, "pg_snapshot": UNSUPPORTED,
    # Headwater's rows (not in Google's tables): text forms
    "ltree": "STRING", "isbn": "STRING", "hstore": "STRING", "int4range": "STRING",
    "int8range": "STRING", "numrange": "STRING", "tsrange": "STRING", "tstzrange": "STRING",
    "daterange": "STRING",
}

MYSQL_TYPES: Final[dict[str, str]] = {
    "TINYINT": "INTEGER", "SMALLINT": "INTEGER", "MEDIUMINT": "INTEGER", "INT": "INTEGER",
    "YEAR": "INTEGER", "BOOLEAN": "INTEGER",
    "TINYINT UNSIGNED": "INTEGER", "SMALLINT UNSIGNED": "INTEGER",
    "MEDIUMINT UNSIGNED": "INTEGER", "INT UNSIGNED": "LONG",
    "BIGINT": "LONG", "BIGINT UNSIGNED": "DECIMAL",
    "BIT": "LONG",
    "DECIMAL": "DECIMAL", "DECIMAL UNSIGNED": "DECIMAL",
    "FLOAT": "FLOAT", "FLOAT UNSIGNED": "FLOAT", "DOUBLE": "DOUBLE", "DOUBLE UNSIGNED": "DOUBLE",
    "DATE": "DATE", "DATETIME": "DATETIME", "TIMESTAMP": "TIMESTAMP", "TIME": "TIME_INTERVAL",
    "JSON": "JSON",
    "CHAR": "STRING", "VARCHAR": "STRING", "TINYTEXT": "STRING", "TEXT": "STRING",
    "MEDIUMTEXT": "STRING", "LONGTEXT": "STRING", "ENUM": "STRING", "SET": "STRING",
    "BINARY": "BYTES", "VARBINARY": "BYTES", "TINYBLOB": "BYTES", "BLOB": "BYTES",
    "MEDIUMBLOB": "BYTES", "LONGBLOB": "BYTES",
    "GEOMETRY": UNSUPPORTED, "POINT": UNSUPPORTED, "LINESTRING": UNSUPPORTED,
    "POLYGON": UNSUPPORTED, "MULTIPOINT": UNSUPPORTED, "MULTILINESTRING": UNSUPPORTED,
    "MULTIPOLYGON": UNSUPPORTED, "GEOMETRYCOLLECTION": UNSUPPORTED,
    # Headwater's rows (MariaDB types not in Google's tables)
    "INET4": "STRING", "INET6": "STRING", "UUID": "STRING",
}

SQLSERVER_TYPES: Final[dict[str, str]] = {
    "bigint": "LONG", "int": "INTEGER", "smallint": "INTEGER", "tinyint": "INTEGER",
    "binary": "BYTES", "image": "BYTES", "varbinary": "BYTES", "timestamp": "BYTES",
    "rowversion": "BYTES",
    "bit": "BOOLEAN",
    "char": "STRING", "nchar": "STRING", "ntext": "STRING", "nvarchar": "STRING",
    "text": "STRING", "varchar": "STRING", "uniqueidentifier": "STRING", "xml": "STRING",
    "date": "DATE",
    "datetime": "DATETIME", "datetime2": "DATETIME", "smalldatetime": "DATETIME",
    "datetimeoffset": "TIMESTAMP",
    "decimal": "DECIMAL", "numeric": "DECIMAL", "money": "DECIMAL", "smallmoney": "DECIMAL",
    "float": "DOUBLE", "real": "FLOAT",
    "time": "TIME",
    "geometry": "GEOMETRY", "geography": "GEOMETRY",
}

# MongoDB: a collection's Datastream row is its document's `_id` and the document, both as
# Extended JSON text (connectors/mongodb/datastream.py); the BSON types inside are the JSON's
# (Google's BSON -> BigQuery JSON table, reference §B), not columns of their own.
MONGODB_TYPES: Final[dict[str, str]] = {
    "id": "STRING", "document": "JSON",
}

TABLES: Final[dict[str, dict[str, str]]] = {
    "postgresql": POSTGRESQL_TYPES, "mysql": MYSQL_TYPES, "sqlserver": SQLSERVER_TYPES,
    "mongodb": MONGODB_TYPES,
}

# Rows the reference does not settle (docs/datastream.md keeps them marked ⚠).
UNSETTLED: Final[dict[str, dict[str, str]]] = {
    "postgresql": {
        "timestamptz": "page row not read; Google's code: TIMESTAMP_WITH_TIME_ZONE record",
        "timetz": "page row not read; Google's code: TIME_WITH_TIME_ZONE record",
        "numeric": "page row not read; Google's code says NUMBER for every numeric",
        "box": "how Datastream renders UNSUPPORTED in events not read (null here)",
        "circle": "how Datastream renders UNSUPPORTED in events not read (null here)",
        "line": "how Datastream renders UNSUPPORTED in events not read (null here)",
        "lseg": "how Datastream renders UNSUPPORTED in events not read (null here)",
        "path": "how Datastream renders UNSUPPORTED in events not read (null here)",
        "point": "how Datastream renders UNSUPPORTED in events not read (null here)",
        "polygon": "how Datastream renders UNSUPPORTED in events not read (null here)",
        "ARRAY": "page row not read (BigQuery: JSON); kept ARRAY",
    },
    "mysql": {
        "BIGINT UNSIGNED": "DECIMAL (BigQuery DECIMAL) vs NUMBER (Google's code)",
        **{t: "BigQuery: STRING (hex encoded); Google's code: STRING; kept BYTES"
           for t in ("BINARY", "VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB")},
    },
    "mongodb": {
        "id": "the events page's MongoDB rows not read: `_id` as Extended JSON text is "
              "Headwater's reading",
        "document": "the events page's MongoDB rows not read: the document as one JSON "
                    "`payload` column is Headwater's reading (BigQuery: JSON)",
    },
    "sqlserver": {
        "decimal": "BigQuery NUMERIC/BIGNUMERIC thresholds lost",
        "numeric": "BigQuery NUMERIC/BIGNUMERIC thresholds lost",
        "datetimeoffset": "BigQuery TIMESTAMP; TIMESTAMP vs TIMESTAMP_WITH_TIME_ZONE unread",
    },
}


def table_for(family: str) -> dict[str, str]:
    try:
        return TABLES[family]
    except KeyError:
        raise ValueError(f"no Datastream type table for source {family!r} "
                         f"(known: {', '.join(TABLES)})") from None


def pg_unified(typname: str, *, is_array: bool = False, is_enum: bool = False,
               has_precision: bool = True) -> str:
    """PostgreSQL: arrays are ARRAY, enums STRING, numeric without precision NUMBER."""
    if is_array:
        return "ARRAY"
    if is_enum:
        return "STRING"
    if typname == "numeric" and not has_precision:
        return "NUMBER"
    return POSTGRESQL_TYPES.get(typname, UNSUPPORTED)


def mysql_key(type_name: str, unsigned: bool) -> str:
    """The MySQL table's key: the upper-case base type, ` UNSIGNED` where declared."""
    base = type_name.upper()
    return f"{base} UNSIGNED" if unsigned and f"{base} UNSIGNED" in MYSQL_TYPES else base


def mysql_unified(type_name: str, unsigned: bool = False) -> str:
    return MYSQL_TYPES.get(mysql_key(type_name, unsigned), UNSUPPORTED)


def mongodb_unified(type_name: str) -> str:
    return MONGODB_TYPES.get(type_name, UNSUPPORTED)


def sqlserver_unified(type_name: str) -> str:
    # the change-table catalog names an identity column "<type> identity"
    return SQLSERVER_TYPES.get(type_name.split(" ", maxsplit=1)[0].lower(), UNSUPPORTED)
