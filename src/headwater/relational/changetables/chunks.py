"""The chunk source the SQL Server and Db2 connectors share: the engine's `ChunkSource`
(headwater.engine.incremental) in SQL, for tables captured through change tables.

Why one base: Debezium runs both connectors' incremental snapshots through the same
SignalBasedIncrementalSnapshotChangeEventSource; only the SQL dialect differs.  A connector
subclasses `ChangeTableChunkSource` and supplies that dialect (how it connects to a database,
finds its captured tables, quotes names, limits a query and reads its current maximum LSN);
everything else is here, once:

* **Tables** are named as the connector names them in signals (`collection`): SQL Server
  `<database>.<schema>.<table>`, Db2 `<schema>.<table>`.  A table is resolved against the
  captured tables of its database (the newest capture instance), so the chunk reads exactly
  the columns its change table carries, in that order: one codec serves chunk rows and change
  rows, and the window compares the same raw key values on both sides.
* **Chunks** are read by keyset pagination in key order (the primary key, `message.key.columns`,
  or the signal's `surrogate-key`), the key spelled out lexicographically (neither T-SQL nor Db2
  compares row values), the bounds and the signal's additional condition in the WHERE clause.
* **Watermarks** are rows inserted into the signal table of the chunked table's database and
  committed (Debezium's `INSERT INTO <signal table> VALUES (?, ?, ?)`, `data` the 3.x window
  metadata), seen back through the signal table's change table (`insert_delete`: the close is
  the delete of the open row).  A database without a signal table cannot have its tables
  snapshotted incrementally: its watermarks would be in another database's log.
* **Blocking snapshots** read the listed tables under `snapshot.isolation.mode`, each
  database's READ events at its maximum LSN, as the initial snapshot does.
* **Keys in offsets** are JSON lists (`encode_key_value`), as MySQL's.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from headwater.config.signals import SignalConfig
from headwater.engine.incremental import (
    BlockingSnapshotBatches,
    ChunkRead,
    IncrementalSnapshotError,
    RawKey,
    SnapshotTable,
)
from headwater.engine.signals import WINDOW_CLOSE, WINDOW_OPEN
from headwater.model.collection import format_collection
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import TableId
from headwater.relational.changetables.adhoc_steps import step
from headwater.relational.chunk_source import chunk_key, key_positions, transaction
from headwater.relational.config import RelationalConnectorConfig
from headwater.relational.incremental import (
    decode_key_value,
    encode_key_value,
    keyset_where,
)

Emit = Callable[[list[ChangeRecord]], None]


class Chunked(NamedTuple):
    """A resolved table: its change-table handle (`table`, `columns`, `codec`) and chunk key."""

    handle: Any
    keys: tuple[str, ...]  # key column names, as the handle's columns spell them
    key_index: tuple[int, ...]  # their positions in the handle's columns


def instant(moment: datetime) -> str:
    """Java's Instant.toString: ISO-8601 in UTC with 0, 3 or 6 fraction digits."""
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    micros = moment.microsecond
    if micros:
        text += f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return text + "Z"


class ChangeTableChunkSource:
    """The engine's ChunkSource for a change-table connector; subclasses supply the dialect
    (the methods that raise NotImplementedError)."""

    read_only = False  # read.only is refused at configuration (signal_config.check_read_only)

    def __init__(self, cfg: RelationalConnectorConfig, context: SourceContext) -> None:
        self.cfg = cfg
        self.context = context
        self.signals: SignalConfig = cfg.signals
        self.log = logging.getLogger(f"headwater.connectors.{context.kind}")
        # The table of the chunk in flight (set by the streaming hook: the controller's chunk),
        # whose database's signal table gets the watermarks.
        self.chunk_table: Callable[[], SnapshotTable | None] = lambda: None
        self._conns: dict[tuple[str, str], Any] = {}
        self._tables: dict[SnapshotTable, Chunked] = {}
        self._opened: dict[str, datetime] = {}  # chunk id -> when its window opened
        self._signal_handles: dict[str, Any] = {}  # database -> its signal table's handle
        self.signal_tables: dict[str, TableId] = {t.database: t
                                                  for t in self.signal_table_ids()}

    # -- the connector's dialect ---------------------------------------------------------------
    def signal_table_ids(self) -> list[TableId]:
        """The configured signal tables."""
        raise NotImplementedError

    def connect(self, database: str) -> Any:
        """A new connection to `database`, not in autocommit."""
        raise NotImplementedError

    def handles(self, conn: Any, database: str) -> list[Any]:
        """The captured tables of `database` (each with `table`, `columns`, `codec`), a table's
        newest change table last."""
        raise NotImplementedError

    def table_id(self, collection: tuple[str, ...]) -> TableId:
        """The table a signal names; IncrementalSnapshotError when the name has the wrong form."""
        raise NotImplementedError

    def collection(self, table: TableId) -> tuple[str, ...]:
        """The name parts signals and offsets use for `table`."""
        raise NotImplementedError

    def quote(self, name: str) -> str:
        raise NotImplementedError

    def qualified(self, table: TableId) -> str:
        raise NotImplementedError

    def select(self, columns: str, table: TableId, where: str, order: str | None,
               limit: int | None) -> str:
        """`SELECT columns FROM table where [ORDER BY order] [first `limit` rows]`."""
        raise NotImplementedError

    def snapshot_position(self, conn: Any, database: str) -> Any:
        """The position of a blocking snapshot's READ events: the database's maximum LSN."""
        raise NotImplementedError

    def isolation_statement(self) -> str:
        """The statement that sets `snapshot.isolation.mode` (blocking snapshots)."""
        raise NotImplementedError

    def same_name(self, a: str, b: str) -> bool:
        """Whether two name parts name the same object (exact by default)."""
        return a == b

    # -- connections ---------------------------------------------------------------------------
    def _conn(self, database: str, role: str = "rw") -> Any:
        """The database's connection for `role`: "rw" (catalog, keys, watermarks) or "ro"
        (chunk reads), opened on first use."""
        key = (database, role)
        if key not in self._conns:
            self._conns[key] = self.connect(database)
        return self._conns[key]

    def close(self) -> None:
        for conn in self._conns.values():
            try:
                conn.close()
            except Exception as exc:  # already gone with the server
                self.log.debug("close: %s", exc)
        self._conns.clear()

    def forget(self) -> None:
        """Capture instances changed: describe the tables again on their next chunk."""
        self._tables.clear()

    # -- tables --------------------------------------------------------------------------------
    def _handle(self, table: TableId) -> Any:
        conn = self._conn(table.database)
        try:
            found = [h for h in self.handles(conn, table.database)
                     if self.same_name(h.table.schema or "", table.schema or "")
                     and self.same_name(h.table.table, table.table)]
        finally:
            conn.rollback()
        if not found:
            raise IncrementalSnapshotError(
                f"table {format_collection(self.collection(table))} is not captured (no change "
                "table, or left out by the include/exclude lists)")
        return found[-1]

    def resolve(self, table: SnapshotTable) -> SnapshotTable:
        table_id = self.table_id(table.collection)
        if self.signal_tables and table_id.database not in self.signal_tables:
            named = ", ".join(format_collection(self.collection(t))
                              for t in self.signal_tables.values())
            raise IncrementalSnapshotError(
                f"{table.name}: database {table_id.database} has no signal table "
                f"(signal.data.collection names {named}); its watermarks must be in its own log")
        handle = self._handle(table_id)
        resolved = SnapshotTable(self.collection(handle.table), table.condition,
                                 table.surrogate_key)
        self._describe(resolved, handle)
        step(self.log, 1, f"{resolved.name} queued"
                          + (f", filter {resolved.condition}" if resolved.condition else ""))
        return resolved

    def _describe(self, table: SnapshotTable, handle: Any = None) -> Chunked:
        known = self._tables.get(table)
        if known is not None and handle is None:
            return known
        if handle is None:
            handle = self._handle(self.table_id(table.collection))
        columns: tuple[str, ...] = handle.columns
        keys, index = chunk_key(table, columns, handle.codec.schema.key_columns, self.same_name)
        chunked = Chunked(handle, keys, index)
        self._tables[table] = chunked
        return chunked

    def columns_of(self, table: SnapshotTable) -> tuple[str, ...]:
        """The columns `table`'s chunks are read with (its newest change table's)."""
        columns: tuple[str, ...] = self._describe(table).handle.columns
        return columns

    def key_index(self, table: SnapshotTable, columns: Sequence[str]) -> tuple[int, ...] | None:
        """Where `table`'s chunk key sits in a change table of `columns` (None: a key column is
        not there)."""
        return key_positions(self._describe(table).keys, columns, self.same_name)

    def _where(self, table: SnapshotTable, keys: Sequence[str], after: RawKey | None,
               maximum: RawKey | None) -> tuple[str, list[Any]]:
        """The chunk's WHERE clause with `?` markers; the signal's condition is SQL of the
        source, passed on as written."""
        where, params = keyset_where(
            [self.quote(k) for k in keys], ["?"] * len(keys),
            [decode_key_value(v) for v in after] if after is not None else None,
            [decode_key_value(v) for v in maximum] if maximum is not None else None,
            None, row_comparison=False)
        if table.condition:
            where = f"{where} AND ({table.condition})" if where else f" WHERE ({table.condition})"
        return where, params

    def _query(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cur = conn.cursor()
        try:
            cur.execute(sql, tuple(params))
            return list(cur.fetchall())
        finally:
            cur.close()

    # -- keys and chunks -----------------------------------------------------------------------
    def max_key(self, table: SnapshotTable) -> RawKey | None:
        chunked = self._describe(table)
        table_id = chunked.handle.table
        where, params = self._where(table, chunked.keys, None, None)
        columns = ", ".join(self.quote(k) for k in chunked.keys)
        conn = self._conn(table_id.database)
        try:
            ends = []
            for direction in ("ASC", "DESC"):
                order = ", ".join(f"{self.quote(k)} {direction}" for k in chunked.keys)
                rows = self._query(conn, self.chunk_sql(self.select(columns, table_id, where,
                                                                    order, 1)), params)
                ends.append(list(rows[0]) if rows else None)
        finally:
            conn.rollback()
        first, last = ends
        step(self.log, 2, f"{table.name}: first {first}, last {last}"
                          if last is not None else f"{table.name}: no rows")
        return [encode_key_value(v) for v in last] if last is not None else None

    def read_chunk(self, table: SnapshotTable, after: RawKey | None, maximum: RawKey,
                   limit: int) -> ChunkRead:
        chunked = self._describe(table)
        handle = chunked.handle
        where, params = self._where(table, chunked.keys, after, maximum)
        order = ", ".join(self.quote(k) for k in chunked.keys)
        columns = ", ".join(self.quote(c) for c in handle.columns)
        sql = self.select(columns, handle.table, where, order, limit)
        conn = self._conn(handle.table.database, "ro")
        try:
            rows = self._query(conn, self.chunk_sql(sql), params)
        finally:
            conn.rollback()  # the read's transaction ends here, as a new one starts next chunk
        convert = handle.codec.convert
        index = chunked.key_index
        out = [(tuple([r[i] for i in index]), convert(r)) for r in rows]
        last = [encode_key_value(rows[-1][i]) for i in index] if rows else None
        step(self.log, 4, f"{table.name} after key {after}: {len(rows)} rows")
        return ChunkRead(handle.codec.schema, out, last)

    def chunk_sql(self, sql: str) -> str:
        """A chunk or key query as sent (SQL Server adds its query hint here)."""
        return sql

    # -- watermarks ----------------------------------------------------------------------------
    def write_watermark(self, chunk_id: str, opening: bool) -> None:
        table = self.chunk_table()
        if table is None:
            raise IncrementalSnapshotError(f"chunk {chunk_id}: no table in flight")
        database = self.table_id(table.collection).database
        signal = self.signal_tables.get(database)
        if signal is None:
            raise IncrementalSnapshotError(
                f"{table.name}: incremental snapshots need a signal table in database "
                f"{database} (signal.data.collection)")
        if database not in self._signal_handles:  # the catalog's spelling of its names
            self._signal_handles[database] = self._handle(signal)
        handle = self._signal_handles[database]
        target = self.qualified(handle.table)
        with transaction(self._conn(database)) as cur:
            if not opening and self.signals.watermarking_strategy == "insert_delete":
                first = handle.columns[0]
                cur.execute(f"DELETE FROM {target} WHERE {self.quote(first)} = ?",
                            (f"{chunk_id}-open",))
            else:
                cur.execute(f"INSERT INTO {target} VALUES (?, ?, ?)",
                            (f"{chunk_id}-{'open' if opening else 'close'}",
                             WINDOW_OPEN if opening else WINDOW_CLOSE,
                             self._metadata(chunk_id, table, opening)))
        if opening:
            step(self.log, 3, f"{table.name}, watermark {chunk_id}-open")

    def _metadata(self, chunk_id: str, table: SnapshotTable, opening: bool) -> str:
        """Debezium 3.x's SignalMetadata: when the window opened (and closed), and the table."""
        now = datetime.now(UTC)
        if opening:
            self._opened = {chunk_id: now}
        doc = {"openWindowTimestamp": instant(self._opened.get(chunk_id, now))}
        if not opening:
            doc["closeWindowTimestamp"] = instant(now)
        doc["dataCollectionId"] = table.name
        return json.dumps(doc)

    # -- blocking snapshots --------------------------------------------------------------------
    def blocking_snapshot(self, tables: Sequence[SnapshotTable], emit: Emit) -> None:
        batch_size = self.cfg.max_batch_size
        batches = BlockingSnapshotBatches(emit, batch_size)
        databases = list(dict.fromkeys(self._describe(t).handle.table.database for t in tables))
        for database in databases:
            conn = self.connect(database)  # its own: the isolation level is the session's
            try:
                conn.rollback()
                cur = conn.cursor()
                cur.execute(self.isolation_statement())
                cur.close()
                position = self.snapshot_position(conn, database)
                for table in tables:
                    chunked = self._describe(table)
                    handle = chunked.handle
                    if handle.table.database != database:
                        continue
                    where, params = self._where(table, (), None, None)
                    columns = ", ".join(self.quote(c) for c in handle.columns)
                    self.log.info("blocking snapshot step: read %s", table.name)
                    cur = conn.cursor()
                    cur.execute(self.select(columns, handle.table, where, None, None),
                                tuple(params))
                    count = 0
                    while rows := cur.fetchmany(batch_size):
                        now = int(time.time() * 1000)
                        for row in rows:
                            batches.add(ChangeRecord(
                                self.context, handle.codec.schema, Op.READ, None,
                                handle.codec.convert(row), now, now, SnapshotMarker.TRUE,
                                position))
                        count += len(rows)
                    cur.close()
                    self.log.info("blocking snapshot step: read %s done, %d rows", table.name,
                                  count)
                conn.commit()
            finally:
                conn.close()
        batches.finish()
