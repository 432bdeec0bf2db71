"""The MySQL table model shared by the DDL parser, the binlog decoder, the type mapping and the
connector, and the contract for the Python values that flow between them.

Why a model of our own and not `TableSchema`: binlog row events carry only values, so decoding
them needs what DDL says (unsigned, charset, ENUM/SET members, fractional-second precision,
BIT length), which the Connect-level `TableSchema` does not keep.  The schema history replays
DDL into `MySqlTable` values; the type mapping turns a `MySqlTable` into a `TableSchema` plus
one converter per column.

Natural values (what both the binlog decoder and the snapshot reader hand to the converters,
the same for both so one converter serves both paths):

========================  ===========================================================
column type               natural value
========================  ===========================================================
TINYINT..BIGINT           int, already signed or unsigned as the column says
BOOLEAN                   int (0 or 1)
FLOAT, DOUBLE             float
DECIMAL/NUMERIC           decimal.Decimal
CHAR/VARCHAR/TEXT family  str (decoded with the column charset)
BINARY/VARBINARY/BLOB     bytes
DATE                      datetime.date, or ZERO_TEMPORAL for zero / partly zero dates and
                          dates only ALLOW_INVALID_DATES admits (2020-02-30)
DATETIME                  datetime.datetime (naive), or ZERO_TEMPORAL
TIMESTAMP                 datetime.datetime (naive, UTC); the binlog's zero timestamp (a
                          stored 0) is the epoch; a snapshot reads JdbcTimestamp, or
                          ZERO_TEMPORAL for the zero timestamp
TIME                      datetime.timedelta (may be negative, up to +-838:59:59.999999)
YEAR                      int, the full year (YEAR(2) 69 -> 2069; 0 for the zero year)
BIT(n)                    bytes, big-endian, ceil(n/8) long (as the server sends it)
ENUM                      str (the member; '' for the invalid-value index 0)
SET                       str (members joined by ',' in definition order)
JSON                      str (JSON text; MariaDB stores JSON as LONGTEXT)
GEOMETRY family           bytes in MySQL's internal format: 4-byte little-endian SRID + WKB
UUID (MariaDB)            str, or the 16 bytes
INET4 / INET6 (MariaDB)   str, or the 4 / 16 bytes
========================  ===========================================================

NULL is None everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class _ZeroTemporal:
    """MySQL's zero date/datetime ('0000-00-00'), which no Python date can hold."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ZERO_TEMPORAL"

    def __reduce__(self) -> str:
        return "ZERO_TEMPORAL"


ZERO_TEMPORAL: Any = _ZeroTemporal()


class JdbcTimestamp(datetime):
    """A TIMESTAMP value read by a SELECT (snapshot, incremental snapshot), not from the binlog.

    Debezium reads these through JDBC as ``java.sql.Timestamp``, which ZonedTimestamp formats
    with as few fraction digits as the value needs (``...30.1Z``), while binlog values are
    ``ZonedDateTime``s formatted with the column's precision (``...30.100Z``); the type tells
    the converter which form a value gets."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class MySqlColumn:
    """One column as DDL (or the information schema) defines it.

    `type_name` is the upper-case base type without attributes, synonyms resolved:
    INTEGER -> INT, BOOL/BOOLEAN -> BOOLEAN (Debezium maps a column declared BOOLEAN to a
    Connect boolean; TINYINT(1), which SHOW CREATE TABLE prints for it, stays TINYINT),
    DEC/FIXED/NUMERIC -> DECIMAL,
    REAL -> DOUBLE (FLOAT when the server runs with REAL_AS_FLOAT), CHARACTER -> CHAR,
    CHARACTER VARYING / NVARCHAR / NATIONAL VARCHAR -> VARCHAR, NCHAR -> CHAR,
    SERIAL -> BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE, and so on.
    MariaDB's JSON stays JSON (it is LONGTEXT with a check; consumers expect
    io.debezium.data.Json).
    """

    name: str
    type_name: str  # e.g. "INT", "VARCHAR", "DECIMAL", "DATETIME", "ENUM", "GEOMETRY"
    # CHAR/VARCHAR/BINARY/VARBINARY length, integer display width, DECIMAL precision, BIT
    # length, fractional-second precision of TIME/DATETIME/TIMESTAMP, YEAR width; None if unset.
    length: int | None = None
    scale: int | None = None  # DECIMAL/FLOAT/DOUBLE scale; None if unset
    unsigned: bool = False
    zerofill: bool = False
    nullable: bool = True
    charset: str | None = None  # column charset if given or inherited (e.g. "utf8mb4", "latin1")
    collation: str | None = None
    members: tuple[str, ...] = ()  # ENUM / SET members, unquoted, in definition order
    auto_increment: bool = False
    # Default as the DDL spells it, unquoted for string literals; None when none is given
    # (an explicit DEFAULT NULL is also None).  Kept for schema change events and fallbacks.
    default: str | None = None
    comment: str | None = None
    generated: bool = False  # GENERATED ALWAYS AS (...) [VIRTUAL|STORED|PERSISTENT]

    @property
    def qualified_type(self) -> str:
        """The type as a user would write it, e.g. "DECIMAL(10,2) UNSIGNED", for messages."""
        text = self.type_name
        if self.members:
            text += "(" + ",".join("'" + m.replace("'", "''") + "'" for m in self.members) + ")"
        elif self.length is not None and self.scale is not None:
            text += f"({self.length},{self.scale})"
        elif self.length is not None:
            text += f"({self.length})"
        if self.unsigned:
            text += " UNSIGNED"
        return text


@dataclass(frozen=True, slots=True)
class MySqlTable:
    """One table version: its columns in ordinal order and its primary key."""

    database: str
    name: str
    columns: tuple[MySqlColumn, ...]
    primary_key: tuple[str, ...] = ()
    # Unique keys (each a tuple of column names) in definition order: the key of a table
    # without a primary key is its first unique key whose columns are all NOT NULL.
    unique_keys: tuple[tuple[str, ...], ...] = ()
    default_charset: str | None = None
    comment: str | None = None
    column_index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "column_index", {c.name.lower(): i for i, c in enumerate(self.columns)}
        )

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"

    def column(self, name: str) -> MySqlColumn:
        """Column by name, case-insensitively as MySQL compares column names."""
        try:
            return self.columns[self.column_index[name.lower()]]
        except KeyError:
            raise KeyError(f"table {self.qualified_name} has no column {name!r}") from None
