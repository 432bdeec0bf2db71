"""The DB-API adapter over psycopg2 that the SQL Server and Db2 emulations share.

Why: both emulations hand the connector a driver-shaped module (pymssql, ibm_db_dbi) whose
cursors translate each statement to PostgreSQL and return values as the real driver would
(bytes for binary columns, not psycopg2's memoryview).  Only the translation (`execute`), the
autocommit surface and `connect`'s signature differ; they stay in each emulation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar


def plain(value: Any) -> Any:
    """A driver's value: bytes where psycopg2 gives a memoryview."""
    return bytes(value) if isinstance(value, memoryview) else value


class EmulatedCursor:
    """A psycopg2 cursor seen through a real driver's eyes; subclasses implement `execute`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def description(self) -> Any:
        return self._inner.description

    @property
    def rowcount(self) -> int:
        return int(self._inner.rowcount)

    def execute(self, operation: str, params: Sequence[Any] | None = None) -> None:
        raise NotImplementedError

    def fetchone(self) -> tuple[Any, ...] | None:
        row = self._inner.fetchone()
        return None if row is None else tuple(plain(v) for v in row)

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        return [tuple(plain(v) for v in row) for row in self._inner.fetchmany(size)]

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [tuple(plain(v) for v in row) for row in self._inner.fetchall()]

    def __iter__(self) -> Any:
        for row in self._inner:
            yield tuple(plain(v) for v in row)

    def close(self) -> None:
        self._inner.close()


class EmulatedConnection:
    """A psycopg2 connection whose cursors are `CURSOR` (the emulation's cursor class)."""

    CURSOR: ClassVar[type[EmulatedCursor]] = EmulatedCursor

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def cursor(self) -> Any:
        return self.CURSOR(self._inner.cursor())

    def commit(self) -> None:
        self._inner.commit()

    def rollback(self) -> None:
        self._inner.rollback()

    def close(self) -> None:
        self._inner.close()


def install_schema(connection: Any, package: str) -> None:
    """Runs `package`'s schema.sql (an emulation's surface) in the database of a psycopg2
    connection."""
    from importlib.resources import files

    sql = files(package).joinpath("schema.sql").read_text()
    with connection.cursor() as cur:
        cur.execute(sql)
