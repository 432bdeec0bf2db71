"""The contract a source connector's test driver fulfils, so one conformance suite runs against
every connector's real server.

A driver is bound to one test: it owns a fresh database (or schema) on a server shared by the
session, so tests see only their own tables.  SQL passed to a driver uses only what every
supported server understands (DB-API `%s` parameters, `int`/`bigint`/`varchar(n)` columns);
anything dialect-specific (quoting, topic and collection names, connector properties, the
types table) is the driver's job.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

Statement = str | tuple[str, Sequence[Any]]


@dataclass(frozen=True)
class Column:
    """A portable column: `type` is SQL both dialects accept (int, bigint, varchar(n))."""

    name: str
    type: str
    nullable: bool = True


@dataclass(frozen=True)
class TypeCase:
    """One column of a driver's types table: its SQL type, a literal to store and the value
    Debezium's JSON converter writes for it (default converter modes)."""

    column: str
    sql_type: str
    literal: str
    expected: Any


class SourceDriver(Protocol):
    name: str  # the pytest id: "postgres", "mariadb"
    prefix: str  # topic.prefix
    # Whether the server logs a primary-key update as one update, which the connector turns
    # into delete, tombstone and create carrying the __debezium.newkey/oldkey headers
    # (Debezium's RelationalChangeRecordEmitter); False where the server itself logs a delete
    # and an insert (SQL Server's split update), whose events carry no key headers.
    key_change_headers: bool

    def properties(self, topics: Path, offsets: Path, tables: Sequence[str] | None = None,
                   extra: Mapping[str, object] | None = None) -> dict[str, str]:
        """Connector properties for a capture of this test's database into `topics`, storing
        offsets in `offsets`; `tables` (plain names) becomes table.include.list."""
        ...

    def create_table(self, name: str, columns: Sequence[Column], key: Sequence[str]) -> None:
        """Creates a table whose every column's old values reach the log (the before image
        of updates and deletes is complete)."""
        ...

    def execute(self, *statements: Statement) -> None:
        """Runs the statements as one transaction."""
        ...

    def connect(self) -> Any:
        """A new DB-API connection to this test's database, autocommit off (load threads)."""
        ...

    def quote(self, name: str) -> str:
        """`name` as a quoted identifier."""
        ...

    def topic(self, table: str) -> str:
        """The topic Debezium names for `table` of this test's database (sanitized)."""
        ...

    def collection(self, table: str) -> str:
        """The data collection id of `table`: in signals and transaction metadata."""
        ...

    def rows(self, table: str) -> list[dict[str, Any]]:
        """The table's current rows, column name -> value."""
        ...

    def restart_server(self) -> None:
        """Stops the (shared) server cleanly and starts it again on the same port."""
        ...

    def types_table(self) -> list[TypeCase]:
        """The column types this connector must convert as Debezium does."""
        ...

    def close(self) -> None:
        """Drops what the test created on the server (database, replication slot)."""
        ...


def connect_decimal(unscaled: int) -> str:
    """A Connect Decimal in JSON: base64 of the minimal big-endian two's complement."""
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def properties_text(props: Mapping[str, str]) -> str:
    """A .properties file's text; a backslash is escaped as Java's loader expects."""
    return "".join(f"{k}={v.replace(chr(92), chr(92) * 2)}\n" for k, v in props.items())


def debezium_topic(*parts: str) -> str:
    """Debezium's default topic name: the parts joined by dots, every UTF-16 code unit outside
    [a-zA-Z0-9._-] replaced by `_` (AbstractTopicNamingStrategy.sanitizedTopicName)."""
    name = ".".join(parts)
    out = []
    for ch in name:
        units = len(ch.encode("utf-16-le")) // 2
        ok = ch.isascii() and (ch.isalnum() or ch in "._-")
        out.append(ch if ok else "_" * units)
    return "".join(out)
