"""The Db2 connector: start step (snapshot mode, stored offset), the initial snapshot, and the
streaming source (streaming.py) on the change-table poller.

The snapshot takes the seven steps of Debezium's Db2 documentation (seed 004, "initial
snapshot steps"), which every relational connector's snapshot logs by name ("snapshot step
N/7: ...", relational/snapshot.py) in that order:

1. determine the tables in capture mode (IBMSNAP_REGISTER, filtered by the configuration);
2. lock them (`snapshot.isolation.mode` repeatable_read or exclusive with
   `snapshot.locking.mode` exclusive: Debezium's lock statement per table);
3. read the maximum LSN (the register's maximum SYNCHPOINT);
4. capture the schema of the captured tables (SYSCAT.COLUMNS): a CREATE per table in the
   schema history and on the schema change topic (relational.changetables.schema);
5. release the locks (repeatable_read: back to the savepoint taken before them; exclusive
   keeps them to the end of the snapshot transaction);
6. at that LSN, read every captured table found in step 1 (a table registered later is
   skipped and covered by streaming), one READ event per row carrying that LSN;
7. record the completed snapshot in the offsets.

Signals, ad hoc and incremental snapshots run on the change-table base's hook with Db2's chunk
source (incremental.py), their steps logged by the seed's names (relational.changetables.
adhoc_steps).

Without data (`snapshot.mode=no_data` and no stored offset) steps 6 is skipped; with
`snapshot.mode=recovery` and a stored offset the schema is recorded at that offset, which
streaming resumes from.
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import Any

from headwater.connectors.db2 import queries
from headwater.connectors.db2.catalog import ChangeTable, change_tables
from headwater.connectors.db2.config import Db2ConnectorConfig
from headwater.connectors.db2.incremental import Db2ChunkSource
from headwater.connectors.db2.lsn import lsn_bytes, lsn_text
from headwater.connectors.db2.position import Db2Position, Db2SourceBlock
from headwater.connectors.db2.schema_events import Db2SchemaEventShape
from headwater.connectors.db2.streaming import Db2Streaming, max_lsn
from headwater.engine.source import SourceRunContext
from headwater.model.record import SchemaChangeEvent
from headwater.model.schema import TableId
from headwater.relational.changetables.connector import ChangeTableConnector, ChangeTableSnapshot
from headwater.relational.changetables.paramstyle import connect_qmark
from headwater.relational.snapshot import step

log = logging.getLogger("headwater.connectors.db2")

def execute(conn: Any, sql: str) -> None:
    cur = conn.cursor()
    try:
        cur.execute(sql)
    finally:
        cur.close()


class Db2Snapshot(ChangeTableSnapshot):
    """Reads every captured table once, in one transaction under `snapshot.isolation.mode`,
    rows fetched `snapshot.fetch.size` at a time (batching and markers: ChangeTableSnapshot)."""

    connector: Db2Connector

    def run(self, ctx: SourceRunContext) -> dict[str, Any]:
        cfg = self.connector.cfg
        conn = self.connector.connect()
        try:
            conn.rollback()
            execute(conn, queries.ISOLATION[cfg.snapshot_isolation_mode])
            tables = self._tables(conn)
            locked = self._lock(conn, tables)
            lsn = max_lsn(conn, cfg)
            step(log, 3, f"LSN {lsn_text(lsn)}")
            text = lsn_text(lsn)
            self.begin_partition(ctx, self._schema(tables, text), Db2Position(text, None, None))
            self._release(conn, locked)
            for table in tables if self.data else ():
                self._read(ctx, conn, table, text)
            conn.commit()
        finally:
            conn.close()
        offset = self.at or {"snapshot_completed": True, "commit_lsn": text, "change_lsn": None,
                             "event_serial_no": None}
        step(log, 7, f"commit_lsn {offset.get('commit_lsn')}")
        self.finish(ctx, offset)
        return offset

    def _schema(self, tables: list[ChangeTable], lsn: str | None) -> list[SchemaChangeEvent]:
        """Step 4: a CREATE per table, at the snapshot's LSN (or the stored offset)."""
        history = self.connector.history.store
        if history.clears:
            history.clear()
        at = self.at
        position = (Db2Position(at.get("commit_lsn"), at.get("change_lsn"),
                                at.get("event_serial_no")) if at else Db2Position(lsn, None, None))
        definitions = [t.definition for t in tables if t.definition is not None]
        events = self.connector.table_schema().snapshot(definitions, position,
                                                        last=not self.data)
        step(log, 4, f"{len(definitions)} tables, recorded in {history} at commit_lsn "
                     f"{position.commit_lsn}")
        return events

    def _tables(self, conn: Any) -> list[ChangeTable]:
        tables = change_tables(conn, self.connector.cfg)
        step(log, 1, ", ".join(t.table.identifier for t in tables) or "none")
        return tables

    def _lock(self, conn: Any, tables: list[ChangeTable]) -> bool:
        cfg = self.connector.cfg
        if (cfg.snapshot_isolation_mode not in ("repeatable_read", "exclusive")
                or cfg.snapshot_locking_mode == "none"):
            step(log, 2, f"no locks: snapshot.isolation.mode={cfg.snapshot_isolation_mode}, "
                         f"snapshot.locking.mode={cfg.snapshot_locking_mode}")
            return False
        execute(conn, "SAVEPOINT db2_schema_snapshot ON ROLLBACK RETAIN CURSORS")
        for table in tables:
            execute(conn, queries.LOCK_TABLE.replace(
                "#", queries.table_name(table.table.schema or "", table.table.table)))
        step(log, 2, f"{len(tables)} tables, "
                     f"snapshot.isolation.mode={cfg.snapshot_isolation_mode}")
        return True

    def _release(self, conn: Any, locked: bool) -> None:
        if locked and self.connector.cfg.snapshot_isolation_mode == "repeatable_read":
            execute(conn, "ROLLBACK TO SAVEPOINT db2_schema_snapshot")
            step(log, 5, "back to the savepoint taken before the locks")
        else:
            step(log, 5, "nothing to release" if not locked else
                         "exclusive: the locks are kept until the snapshot transaction ends")

    def _read(self, ctx: SourceRunContext, conn: Any, table: ChangeTable,
              lsn: str | None) -> None:
        """Reads one table."""
        cfg = self.connector.cfg
        step(log, 6, f"{table.table.identifier} at LSN {lsn}")
        columns = ", ".join(queries.quote(c) for c in table.columns)
        sql = (queries.SELECT_TABLE.replace("#columns", columns)
               .replace("#table", queries.table_name(table.table.schema or "",
                                                     table.table.table)))
        count = self.read_rows(ctx, table.table.identifier, conn, sql, table.codec,
                               cfg.snapshot_fetch_size or 2000)
        step(log, 6, f"{table.table.identifier} done, {count} rows")


class Db2Connector(ChangeTableConnector):
    DATABASE = "Db2"
    STREAMING = Db2Streaming
    SOURCE_BLOCK = Db2SourceBlock
    SNAPSHOT = Db2Snapshot
    CHUNK_SOURCE = Db2ChunkSource
    cfg: Db2ConnectorConfig
    _driver: Any = None
    lsn_bytes = staticmethod(lsn_bytes)

    def schema_shape(self) -> Db2SchemaEventShape:
        return Db2SchemaEventShape(self.context, self.source_block, self.cfg.database_dbname)

    @property
    def driver(self) -> Any:
        """The DB-API module, imported on first use (ibm_db needs IBM's CLI driver; the
        emulation's tests must not)."""
        if self._driver is None:
            self._driver = import_module(self.cfg.headwater_db2_driver)
        return self._driver

    def connect(self) -> Any:
        conn = connect_qmark(self.driver, **self.cfg.connect_kwargs())
        if hasattr(conn, "set_autocommit"):
            conn.set_autocommit(False)
        for statement in self.cfg.database_initial_statements:
            execute(conn, statement)
        return conn

    def captured_tables(self) -> list[TableId]:
        conn = self.connect()
        try:
            tables = [t.table for t in change_tables(conn, self.cfg)]
            conn.rollback()
        finally:
            conn.close()
        return tables
