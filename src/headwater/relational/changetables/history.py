"""The SQL Server and Db2 schema history: each table definition the connector started using
(a CREATE at the snapshot or for a table new to capture, an ALTER at a capture-instance switch
or re-registration), stored with the position it took effect at, and recovered on restart.

Why: a change row is decoded with the columns its capture instance (CD table) has, which after
a schema change differ from today's catalog.  Rows of an old instance still unread at a restart
must be decoded as they were written, so the definitions are rebuilt from this history, not
read from the catalog again (Debezium's HistorizedRelationalDatabaseSchema.recover).

Records are Debezium's HistoryRecord (`source`, `position`, `ts_ms`, `databaseName`,
`schemaName`, `ddl`, `tableChanges`; relational.table_changes for the JSON), in the file or the
Kafka topic (relational.history_file, relational.history_kafka), so Debezium can read
Headwater's history and the other way round.

Which records a restart applies: those of its source partition whose position is at or before
the stored offset.  Positions are Debezium's offsets (`commit_lsn`, `change_lsn`,
`event_serial_no`) and are compared as the change-table poller orders changes: by commit LSN,
then change LSN, a position without a change LSN standing for the end of its commit (a
snapshot, or a poll that read everything up to it), then the serial number.  (Debezium compares
only `change_lsn`, so after an idle poll - whose offset has no change LSN - it skips every
streamed record on recovery; Headwater keeps them: docs/compatibility.md.)  Recovery starts at
the first record of the last snapshot of the partition, as a new snapshot's records replace
what was there before (the file is cleared then; a Kafka topic only appended to).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from headwater.engine.metrics import SchemaHistoryMetrics
from headwater.model.schema import TableId
from headwater.relational.history_file import SchemaHistoryError
from headwater.relational.table_changes import (
    KINDS,
    TableChange,
    change_document,
    parse_id,
    table_from_document,
)
from headwater.relational.table_definition import TableDefinition

LsnBytes = Callable[[str | None], bytes | None]
PositionKey = tuple[bytes, int, bytes, int]


class HistoryStore(Protocol):
    """A place records go (relational.history_file.HistoryFile, relational.history_kafka
    .KafkaHistoryTopic)."""

    clears: bool
    metrics: SchemaHistoryMetrics

    def exists(self) -> bool: ...

    def append(self, value: bytes, change: str) -> None: ...

    def records(self) -> list[tuple[str, dict[str, Any]]]: ...

    def recovering(self) -> None: ...

    def clear(self) -> None: ...

    def close(self) -> None: ...


def position_key(position: dict[str, Any], lsn_bytes: LsnBytes) -> PositionKey:
    """The order of an offset-shaped position (module docstring)."""
    commit = lsn_bytes(position.get("commit_lsn")) or b""
    change = lsn_bytes(position.get("change_lsn"))
    if change is None:
        return (commit, 1, b"", 0)
    return (commit, 0, change, int(position.get("event_serial_no") or 0))


def history_record(source: dict[str, Any], position: dict[str, Any], database: str | None,
                   schema: str | None, ddl: str | None, change: TableChange) -> bytes:
    """One HistoryRecord; fields Debezium leaves out when null are left out."""
    record: dict[str, Any] = {"source": source, "position": position,
                              "ts_ms": int(time.time() * 1000)}
    if database is not None:
        record["databaseName"] = database
    if schema is not None:
        record["schemaName"] = schema
    if ddl is not None:
        record["ddl"] = ddl
    record["tableChanges"] = [change_document(change)]
    return orjson.dumps(record)


class ChangeTableHistory:
    """Writes and recovers one connector's table definitions.  `table_id` turns the parts of
    a recorded id back into the connector's TableId."""

    def __init__(self, store: HistoryStore, lsn_bytes: LsnBytes,
                 table_id: Callable[[tuple[str, ...]], TableId]) -> None:
        self.store = store
        self.lsn_bytes = lsn_bytes
        self.table_id = table_id

    def __str__(self) -> str:
        return str(self.store)

    def record(self, source: dict[str, Any], position: dict[str, Any], database: str | None,
               schema: str | None, ddl: str | None, change: TableChange) -> None:
        """Stores the record durably (fsync / broker acknowledgement) before returning, so the
        history is never behind an offset stored later."""
        self.store.append(history_record(source, position, database, schema, ddl, change),
                          f"{change.kind} {change.id}")

    def recover(self, source: dict[str, Any],
                stored: dict[str, Any]) -> dict[TableId, TableDefinition]:
        """The definitions in force at the `stored` offset of the `source` partition."""
        self.store.recovering()
        try:
            return self._recover(source, position_key(stored, self.lsn_bytes))
        finally:
            self.store.metrics.status = "RUNNING"

    def _recover(self, source: dict[str, Any],
                 stored: PositionKey) -> dict[TableId, TableDefinition]:
        records = [(label, r) for label, r in self.store.records() if r.get("source") == source]
        tables: dict[TableId, TableDefinition] = {}
        for label, record in records[_last_snapshot(records):]:
            where = f"{self.store}: {label}"
            try:
                if position_key(record["position"], self.lsn_bytes) > stored:
                    continue
                for element in record.get("tableChanges") or ():
                    self._apply(tables, element)
            except (KeyError, TypeError, ValueError) as exc:
                raise SchemaHistoryError(f"{where} cannot be recovered: {exc!r}") from exc
            self.store.metrics.recovered(f"{label}")
        return tables

    def _apply(self, tables: dict[TableId, TableDefinition], element: dict[str, Any]) -> None:
        kind = element["type"]
        if kind not in KINDS:
            raise ValueError(f"unknown table change type {kind!r}")
        table_id = self.table_id(parse_id(str(element["id"])))
        if kind == "DROP":
            tables.pop(table_id, None)
        else:
            tables[table_id] = table_from_document(element, table_id)


def _last_snapshot(records: list[tuple[str, dict[str, Any]]]) -> int:
    """Index of the first record of the last snapshot (0 if none): a record whose position
    says `snapshot` and whose predecessor is not a snapshot record at the same position."""
    start = 0
    previous: dict[str, Any] | None = None
    for index, (_label, record) in enumerate(records):
        position = record.get("position") or {}
        if position.get("snapshot") and not (
                previous is not None and previous.get("snapshot")
                and previous.get("commit_lsn") == position.get("commit_lsn")):
            start = index
        previous = position
    return start
