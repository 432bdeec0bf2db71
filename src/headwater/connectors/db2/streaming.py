"""Db2 streaming: every `poll.interval.ms`, each registered table's CD table is read from the
last processed commit sequence to the current maximum SYNCHPOINT of IBMSNAP_REGISTER, merged
in (IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ) order by the change-table poller and dispatched, as
Debezium's Db2StreamingChangeEventSource does.

Updates: Debezium's setup registers tables with CHG_UPD_TO_DEL_INS='Y', so SQL Replication
writes an update as a 'D' row (the before image) and an 'I' row (the after image) of the same
transaction, next in INTENTSEQ order; the LUW change query turns that pair into operations
3/4 (a 'D' followed by an 'I' in one transaction is an update: Debezium's rule, which also
pairs a delete and an unrelated insert of the same table in one transaction).  The update is
reported at the 'I' row's INTENTSEQ (Debezium advances to it before emitting).  On z/OS an
'U' row is a single after image (operation 5): an update without a before image.

Offsets are Debezium's (`commit_lsn`, `change_lsn`, `event_serial_no`); a stored change LSN
means the transaction may be unfinished, so the next read starts at its commit LSN and the
poller replays what was written.  Event times are what Debezium uses: the server's CURRENT
TIMESTAMP when the commit sequence is first seen (LSN_TO_TIMESTAMP), not the commit time.
The transaction id of the metadata events is the commit LSN.
The loop and the offset bookkeeping are the change-table base's
(relational.changetables.streaming); this module supplies Db2's reads.
"""

from __future__ import annotations

import logging
from typing import Any

from headwater.connectors.db2 import queries
from headwater.connectors.db2.catalog import ChangeTable, change_tables, registrations
from headwater.connectors.db2.config import Db2ConnectorConfig
from headwater.connectors.db2.lsn import increment, lsn_bytes, lsn_text
from headwater.connectors.db2.position import Db2Position
from headwater.connectors.db2.types import definition_mapping
from headwater.model.schema import TableId
from headwater.relational.changetables.codecs import CodecCache
from headwater.relational.changetables.poller import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    Change,
    ChangeRow,
)
from headwater.relational.changetables.schema import ChangeTableSchema
from headwater.relational.changetables.schema_follower import SchemaFollower
from headwater.relational.changetables.streaming import (
    LsnStream,
    LsnStreaming,
    epoch_us,
    scalar,
)

__all__ = ["Db2Stream", "Db2Streaming", "collection_name", "epoch_us", "max_lsn", "normalized"]

log = logging.getLogger("headwater.connectors.db2")

# Debezium's operation codes (Db2ChangeRecordEmitter) onto the poller's.
_OPERATIONS = {1: DELETE, 2: INSERT, 3: UPDATE_BEFORE, 4: UPDATE_AFTER, 5: UPDATE_AFTER}
_DATA = 4  # OPCODE, IBMSNAP_COMMITSEQ, IBMSNAP_INTENTSEQ, IBMSNAP_OPERATION, then the columns


def max_lsn(conn: Any, cfg: Db2ConnectorConfig) -> bytes | None:
    """The maximum SYNCHPOINT of IBMSNAP_REGISTER (Debezium's getMaxLsn)."""
    sql, _register, _changes = queries.for_platform(cfg.db2_platform)
    value = scalar(conn, queries.with_schemas(sql, cfg.cdc_control_schema,
                                              cfg.cdc_change_tables_schema))
    return None if value is None else bytes(value)


def normalized(raw: list[Any], table: ChangeTable) -> list[ChangeRow]:
    """Change-query rows as poller rows: an update's before row takes its after row's
    INTENTSEQ (the position Debezium reports the update at), so the poller pairs them."""
    out: list[ChangeRow] = []
    width = len(table.change_columns or table.columns)
    for index, row in enumerate(raw):
        commit, change = bytes(row[1]), bytes(row[2])
        if table.stop_lsn is not None and table.stop_lsn <= commit:
            continue  # CD_OLD_SYNCHPOINT: the table is no longer captured there
        opcode = _OPERATIONS.get(int(row[0]) if row[0] is not None else 0, 0)
        if opcode == UPDATE_BEFORE and index + 1 < len(raw):
            change = bytes(raw[index + 1][2])
        out.append(ChangeRow(commit, change, opcode, tuple(row[_DATA:_DATA + width])))
    return out


def collection_name(table: TableId) -> str:
    """`schema.table`: Debezium's Db2 table ids have an empty catalog."""
    return f"{table.schema}.{table.table}"


class Db2Stream(LsnStream):
    """The database's position and registered tables; with a `schema`, its table definitions
    come from the schema history and follow re-registrations (schema_follower)."""

    position_class = Db2Position

    def __init__(self, cfg: Db2ConnectorConfig, conn: Any, offset: dict[str, Any] | None,
                 schema: ChangeTableSchema | None = None) -> None:
        self.cfg = cfg
        self._tables: list[ChangeTable] = change_tables(conn, cfg)
        self.known = registrations(conn, cfg)
        super().__init__(conn, offset, lsn_bytes, lsn_text)
        self.times: dict[bytes, int] = {}
        if schema is not None:
            schema.recover(cfg.database_dbname, offset or {})
            self.follower = SchemaFollower(schema, CodecCache(cfg, definition_mapping(cfg)),
                                           self.current_position)
            self.follower.track(self._tables, self.commit)

    def offset(self) -> dict[str, Any]:
        """Debezium's Db2 offsets carry `snapshot_completed` with the position."""
        return {**super().offset(), "snapshot_completed": True}

    def to_lsn(self) -> bytes | None:
        to_lsn = max_lsn(self.conn, self.cfg)
        if to_lsn is None:
            log.warning("No maximum LSN in the database; please ensure that the ASN Capture "
                        "program is running")
        return to_lsn

    def idle(self) -> None:
        self.conn.rollback()

    def end_read(self) -> None:
        self.conn.rollback()

    def tables(self) -> list[Any]:
        return list(self._tables)

    def increment(self, lsn: bytes) -> bytes:
        return increment(lsn)

    def event_us(self, change: Change) -> int:
        return self.commit_us(change.commit)

    def commit_us(self, commit: bytes) -> int:
        """LSN_TO_TIMESTAMP, cached per commit LSN as Debezium caches it."""
        if commit not in self.times:
            if len(self.times) > 100:
                self.times.clear()
            self.times[commit] = epoch_us(scalar(self.conn, queries.LSN_TO_TIMESTAMP, (commit,)))
        return self.times[commit]

    def rows(self, table: ChangeTable, from_lsn: bytes, to_lsn: bytes) -> list[ChangeRow]:
        _max, _register, template = queries.for_platform(self.cfg.db2_platform)
        sql = queries.with_schemas(template, self.cfg.cdc_control_schema,
                                   self.cfg.cdc_change_tables_schema).replace("#", table.cd_table)
        cur = self.conn.cursor()
        try:
            cur.execute(sql, (from_lsn, to_lsn))
            raw: list[Any] = []
            fetch = self.cfg.query_fetch_size or 10_000
            while chunk := cur.fetchmany(fetch):
                raw.extend(chunk)
            return normalized(raw, table)
        finally:
            cur.close()

    def refresh(self) -> None:
        """Reloads the registered tables when the register changed (a table added to or
        removed from capture while running, which Debezium detects too)."""
        known = registrations(self.conn, self.cfg)
        if known != self.known:
            current = change_tables(self.conn, self.cfg)
            self._tables, self.known = current, known
            log.info("registered tables now %s", ", ".join(str(t) for t in current))
            if self.follower is not None:
                self.follower.track(current, self.commit)


class Db2Streaming(LsnStreaming[Db2Stream]):
    """The streaming source: one database, one dispatcher."""

    LABEL = "Db2"
    POSITION = Db2Position
    cfg: Db2ConnectorConfig

    def open_streams(self, offset: dict[str, Any]) -> list[Db2Stream]:
        schema = self.table_schema
        return [Db2Stream(self.cfg, self.connect(), offset,
                          schema() if schema is not None else None)]

    def stored_offset(self, streams: list[Db2Stream]) -> dict[str, Any]:
        return streams[0].offset()

    def collection_name(self, table: TableId) -> str:
        return collection_name(table)
