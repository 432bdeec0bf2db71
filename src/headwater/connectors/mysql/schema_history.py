"""The durable schema history the MySQL catalog (`schema_catalog.MySqlSchema`) is rebuilt from.

`FileSchemaHistory` records every applied DDL statement with its binlog position, so that after
a restart the catalog can be rebuilt as of the position streaming resumes from (Debezium's
"database history"); the records are Debezium's HistoryRecord, shared with the Kafka history
(`connectors.mysql.kafka_history`).  Invariant: a history record is on disk (fsync) before
`record` returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import orjson

from headwater.connectors.mysql.ddl import DdlParseError, SchemaChange
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.table_changes import table_changes
from headwater.engine.metrics import SchemaHistoryMetrics
from headwater.relational import history_file
from headwater.relational.history_file import HistoryFile, SchemaHistoryError

__all__ = ["FileSchemaHistory", "SchemaHistoryError", "checked_ddl", "history_record",
           "parse_record", "recover_ddl", "replay"]


ANSI_QUOTES_MEMBER = "ansiQuotes"


def history_record(source: dict[str, Any], position: dict[str, Any], database: str | None,
                   ddl: str, changes: list[SchemaChange], ansi_quotes: bool = False) -> bytes:
    """One history record as Debezium's HistoryRecord writes it (file and Kafka alike), so
    either store can be read by Debezium and the other way round.  A statement that ran
    under sql_mode ANSI_QUOTES says so (`"ansiQuotes": true`, a member Debezium's reader
    passes over): replayed without it, its "quoted" names would read as strings."""
    record: dict[str, Any] = {
        "source": source,
        "position": position,
        "ts_ms": int(time.time() * 1000),
        "databaseName": database or "",
        "ddl": ddl,
        "tableChanges": table_changes(changes),
    }
    if ansi_quotes:
        record[ANSI_QUOTES_MEMBER] = True
    return orjson.dumps(record)


def parse_record(raw: bytes, where: str) -> dict[str, Any]:
    """A stored history record, checked for the fields recovery needs."""
    return checked_ddl(history_file.parse_record(raw, where), where)


def checked_ddl(record: dict[str, Any], where: str) -> dict[str, Any]:
    """`record`, which MySQL's recovery replays: its `ddl` must be text."""
    if not isinstance(record.get("ddl"), str):
        raise SchemaHistoryError(f"{where} is corrupt: ddl must be a string")
    return record


def replay(records: Iterable[tuple[str, dict[str, Any]]], schema: MySqlSchema,
           include: Callable[[dict[str, Any]], bool], store: str,
           recovered: Callable[[str], None] | None = None) -> int:
    """Applies the records' DDL in order while `include(position)` holds; the count applied.
    Each record comes with a label (line or offset) for the error that names it; `recovered`
    (the schema-history metrics) hears of each statement applied."""
    count = 0
    for label, record in records:
        if not include(record["position"]):
            break
        try:
            schema.apply(record["ddl"], record.get("databaseName") or None,
                         record.get(ANSI_QUOTES_MEMBER) is True)
        except DdlParseError as exc:
            raise SchemaHistoryError(f"{store}: {label} cannot be replayed: {exc}") from exc
        count += 1
        if recovered is not None:
            recovered(record["ddl"])
    return count


class RecordedDdl(Protocol):
    """A store of MySQL history records (this file, or the Kafka topic of kafka_history)."""

    metrics: SchemaHistoryMetrics

    def records(self) -> list[tuple[str, dict[str, Any]]]: ...

    def recovering(self) -> None: ...


def recover_ddl(store: RecordedDdl, schema: MySqlSchema,
                include: Callable[[dict[str, Any]], bool],
                start: Callable[[list[dict[str, Any]]], int] | None = None) -> int:
    """Replays the store's DDL records in order, from the `start(records)`-th (None: the
    first), while `include(position)` holds; the metrics say RECOVERING meanwhile."""
    store.recovering()
    try:
        records = [(label, checked_ddl(record, f"{store}: {label}"))
                   for label, record in store.records()]
        first = start([record for _label, record in records]) if start is not None else 0
        return replay(records[first:], schema, include, str(store), store.metrics.recovered)
    finally:
        store.metrics.status = "RUNNING"


class FileSchemaHistory(HistoryFile):
    """MySQL's schema history file (relational.history_file): DDL records, replayed in file
    order to rebuild the catalog."""

    def __str__(self) -> str:
        return f"schema history {self.path}"

    def record(self, source: dict[str, Any], position: dict[str, Any], database: str | None,
               ddl: str, changes: list[SchemaChange], ansi_quotes: bool = False) -> None:
        self.append(history_record(source, position, database, ddl, changes, ansi_quotes),
                    ddl)

    def recover(self, schema: MySqlSchema, include: Callable[[dict[str, Any]], bool]) -> int:
        """Replays the recorded DDL, in file order, while `include(position)` holds."""
        return recover_ddl(self, schema, include)

    def last_position(self) -> dict[str, Any] | None:
        """Position of the last complete record: DDL up to there is recorded already, and a
        connector re-reading the binlog after a restart must not record it twice."""
        try:
            record = self.last_record()
        except SchemaHistoryError as exc:
            raise SchemaHistoryError(f"{self}: the last record is corrupt: {exc}") from None
        return None if record is None else dict(record["position"])
