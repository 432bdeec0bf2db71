"""MySQL/MariaDB's side of signals and incremental snapshots: its dialect of the relational
chunk source (headwater.relational.chunk_source) and the binlog streaming loop's hook.

* A composite key is compared lexicographically, spelled out so the optimizer sees a range on
  the first column.  Chunks are read in a ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` with
  the snapshot's converters (natural values; FLOAT read as DOUBLE, see snapshot.py), so one
  table codec serves chunk rows and binlog rows.
* The window compares keys as natural values, which the binlog decoder and the snapshot reader
  both produce (columns.py).  In offsets a key is a JSON list (`encode_key_value`).
* MariaDB makes commits visible in binlog order, so a chunk read after the open watermark
  committed sees everything the binlog has before it.
* Read-only (``read.only=true``, Debezium's MySQL property): nothing is written.  The window
  opens at the stream position where the chunk is read; ``@@gtid_binlog_pos`` is read before
  the chunk query (low) and, with the binlog position, after it (high).  Every transaction the
  read could see is in the binlog before both, so the window closes when the stream passes
  them: at a transaction whose GTID is beyond the high GTID position or which starts at or
  after the high binlog position, or once the stream has read up to that position.
* A guard both variants share: MariaDB reports the binlog position its consistent snapshot
  matches (``binlog_snapshot_file/position``).  A transaction the stream delivered before the
  window opened but which ends after that position was not visible to the read (a commit is
  in the binlog a moment before it is visible): the chunk is then read again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import pymysql  # type: ignore[import-untyped]

from headwater.connectors.mysql import position_signal
from headwater.connectors.mysql.binlog.events import DELETE_ROWS, UPDATE_ROWS, WRITE_ROWS
from headwater.connectors.mysql.binlog.gtid import MariadbGtid, MariaGtidPosition
from headwater.connectors.mysql.binlog.rows import row_decoder
from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.connection import connect, qualified, quote_ident
from headwater.connectors.mysql.ddl import SchemaChange
from headwater.connectors.mysql.position import MySqlPosition, binlog_order
from headwater.connectors.mysql.schema_catalog import read_definition
from headwater.connectors.mysql.schema_state import SchemaState
from headwater.connectors.mysql.server import MySqlServer, server_of
from headwater.connectors.mysql.snapshot import consistent_point
from headwater.connectors.mysql.text_values import select_list, snapshot_conversions
from headwater.engine.incremental import IncrementalSnapshotError, SnapshotTable
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.signals import Signal
from headwater.model.collection import format_collection, split_collection
from headwater.model.record import ChangeRecord, SourceContext
from headwater.relational.chunk_source import ChunkTable, RelationalChunkSource, StaleIf
from headwater.relational.incremental import LogIncrementalHook

log = logging.getLogger("headwater.connectors.mysql.incremental")

Order = tuple[int, int]  # binlog_order(file, pos)
Emit = Callable[[list[ChangeRecord]], None]

# The server's answers that concern the table, not the connection: the table was dropped
# (1146), a column of the key or the filter is gone (1054), or the grant was revoked (1142).
_TABLE_ERRORS: Final = frozenset({1054, 1142, 1146})


class ReadOnlyHigh(NamedTuple):
    """Read-only high watermark: the binlog position and GTID position after the chunk read."""

    order: Order
    gtids: MariaGtidPosition  # MariaDB's @@gtid_binlog_pos; empty on MySQL
    low: str | None  # @@gtid_binlog_pos before the read, for the logs

    def passed_by(self, gtid: str | None, start: Order) -> bool:
        """True if a transaction starting at `start` with `gtid` was written after the read."""
        if start >= self.order:
            return True
        if gtid is None or not self.gtids.gtids or ":" in gtid:
            return False
        seen = MariadbGtid.parse(gtid)
        high = self.gtids.get(seen.domain_id)
        return high is None or seen.seq_no > high.seq_no


class MySqlChunkSource(RelationalChunkSource):
    """MySQL's dialect of `RelationalChunkSource`: a composite key spelled out, names compared
    as the server folds column names, the table's current codec for every chunk (the schema
    follows the binlog's DDL)."""

    cache_tables = False
    quote = staticmethod(quote_ident)

    def __init__(
        self, cfg: MySqlConnectorConfig, state: SchemaState, context: SourceContext
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.state = state
        self.context = context
        self.signals = cfg.signals
        self.batch_size = cfg.max_batch_size
        self._server = MySqlServer("")  # the chunk connection's, once it is open
        self.signal_table = None
        if self.signals.data_collection:
            parts = split_collection(self.signals.data_collection)
            if len(parts) != 2:
                raise IncrementalSnapshotError(
                    f"signal.data.collection={self.signals.data_collection!r}: name the signal "
                    "table as <database>.<table>")
            self.signal_table = parts

    def _open_rw(self) -> Any:
        return connect(self.cfg, conv=snapshot_conversions())

    def _open_ro(self) -> Any:
        conn = connect(self.cfg, conv=snapshot_conversions())
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        self._server = server_of(conn)
        return conn

    def same_name(self, a: str, b: str) -> bool:
        return a.lower() == b.lower()

    def _canonical(self, collection: tuple[str, ...]) -> tuple[str, ...]:
        parts = collection
        if len(parts) == 3:
            raise IncrementalSnapshotError(
                f"{format_collection(parts)}: MySQL tables are named <database>.<table>")
        if len(parts) == 1:
            found = [t for t in self.state.schema.tables()
                     if t.name == parts[0] and self.state.captured(t.database, t.name)]
            if len(found) != 1:
                raise IncrementalSnapshotError(
                    f"{format_collection(parts)}: name the table as <database>.<table> "
                    f"({'no captured table has that name' if not found else 'ambiguous'})")
            parts = (found[0].database, found[0].name)
        definition = self.state.schema.table(*parts)
        if definition is None:
            raise IncrementalSnapshotError(f"table {'.'.join(parts)} does not exist")
        return definition.database, definition.name

    def _lookup(self, table: SnapshotTable) -> ChunkTable:
        db, name = table.collection
        codec = self.state.codec(db, name)
        if codec is None:
            if self.state.schema.table(db, name) is None:  # dropped since it was queued
                raise IncrementalSnapshotError(f"table {db}.{name} does not exist (any more)")
            raise IncrementalSnapshotError(
                f"table {db}.{name} is not captured (database/table include and exclude lists)")
        return ChunkTable(qualified(db, name), tuple(c.name for c in codec.table.columns),
                          select_list(codec.table), codec.schema, codec.convert,
                          codec.schema.key_columns)

    def _refusal(self, exc: Exception) -> str | None:
        if (isinstance(exc, pymysql.err.MySQLError) and exc.args
                and exc.args[0] in _TABLE_ERRORS):
            return str(exc.args[-1])
        return None

    def _chunk_begin(self, cur: Any) -> tuple[str | None, Order | None]:
        low = self._server.gtid_position(cur) if self.read_only else None
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        point = self._server.snapshot_point(cur)
        return low, binlog_order(*point) if point is not None else None

    def _chunk_end(self, cur: Any, begun: tuple[str | None, Order | None]
                   ) -> tuple[Any, StaleIf]:
        low, snapshot = begun
        # The binlog's end and GTID position are the server's, not the snapshot's: read in the
        # chunk's transaction, they are still after everything the read saw.
        high = self._high(cur, low) if self.read_only else None

        def stale_if(committed_before: Sequence[Any], _truncated: bool) -> bool:
            # Binlog ends of the transactions the stream delivered before the window opened;
            # the commit-to-visibility gap is microseconds, so older ones do not matter.
            return snapshot is not None and any(end > snapshot for end in committed_before)

        return high, stale_if

    def _blocking_begin(self, cur: Any) -> MySqlPosition:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        point = consistent_point(cur, locked=False)
        return MySqlPosition(point.file, point.pos, 0, point.server_id, None, None, None,
                             int(time.time()))

    def _high(self, cur: Any, low: str | None) -> ReadOnlyHigh:
        end = self._server.binlog_end(cur)
        if end is None:
            raise IncrementalSnapshotError("the server has no binary log")
        gtids = self._server.gtid_position(cur)
        return ReadOnlyHigh(binlog_order(str(end[0]), int(end[1])),
                            MariaGtidPosition.parse(gtids or ""), low)


# ----------------------------------------------------------------------------------------------
# The streaming loop's hook


class MySqlIncrementalHook(LogIncrementalHook):
    """What the binlog streaming loop calls: table maps, rows of watched tables, boundaries.

    The stream position (`position`) is the end of the last event group read, in
    `binlog_order` form; the read-only window closes against it.
    """

    def __init__(self, source: MySqlChunkSource, context: SourceContext,
                 metrics: CaptureMetrics | None = None) -> None:
        super().__init__(source, context, metrics)
        self.source: MySqlChunkSource = source
        self.state = source.state
        self.position: Order = (0, 0)
        self._signal_definition: MySqlTable | None = None
        # set-binlog-position signals (the streaming loop carries them out)
        self.positions = position_signal.PositionSignals(source._conn)

    def connector_signals(self) -> dict[str, Callable[[Signal], None]]:
        return {position_signal.NAME: self.positions}

    def offset_fields(self) -> dict[str, Any]:
        return {**super().offset_fields(), **self.positions.offset_fields()}

    # -- session -----------------------------------------------------------------------------
    def start(self, offset: dict[str, Any], file: str, pos: int) -> None:
        self.positions.start(offset)
        self.position = binlog_order(file, pos)
        self._signal_definition = None
        self._start(offset)

    def table_map(self, body: Any) -> None:
        self._announce(body.table_id, (body.database, body.table))

    # -- rows ----------------------------------------------------------------------------------
    def _definition(self, body: Any, signal: bool) -> MySqlTable | None:
        definition = self.state.schema.table(body.database, body.table)
        if definition is None and signal:
            if self._signal_definition is None:
                self._signal_definition = self._fetch_definition(body.database, body.table)
            definition = self._signal_definition
        return definition

    def _fetch_definition(self, database: str, table: str) -> MySqlTable | None:
        """The signal table of a database the connector does not capture: SHOW CREATE TABLE."""
        try:
            with self.source._conn().cursor() as cur:
                return read_definition(cur, database, table)
        except Exception as exc:
            log.warning("signal table %s.%s: definition not read (%s); decoding without it",
                        database, table, exc)
            return None

    def rows(self, event: Any, table_map: Any, position: MySqlPosition) -> list[ChangeRecord]:
        """A rows event of a watched table (and its TABLE_MAP); returns READ records when it
        closes a window."""
        body = event.body
        code = event.type_code
        if body.table_id in self._window_ids:
            self._window_rows(table_map, body, code)
        inserted = code in WRITE_ROWS
        if body.table_id not in self._signal_ids or not (inserted or code in DELETE_ROWS):
            return []
        out: list[ChangeRecord] = []
        for row in row_decoder(table_map, self._definition(table_map, True)).decode(body):
            out.extend(self._signal_row(row, inserted, lambda: position))
        return out

    def _window_rows(self, table_map: Any, body: Any, code: int) -> None:
        ctl = self._ctl()
        chunk = ctl.chunk
        definition = self._definition(table_map, False)
        if chunk is None or definition is None:
            return
        index = self.source.key_index(chunk.table, [c.name for c in definition.columns])
        for row in row_decoder(table_map, definition).decode(body):
            self._keys_changed(row if code in UPDATE_ROWS else (row,), index)

    def ddl(self, changes: Sequence[SchemaChange]) -> None:
        """DDL read from the binlog: a change of the chunked table inside its window."""
        ctl = self._ctl()
        window = ctl.window_table
        if window is None:
            return
        for change in changes:
            names = {(change.database, change.table)}
            if change.previous is not None:
                names.add((change.previous.database, change.previous.name))
            if tuple(window) not in names:
                continue
            if change.kind in ("TRUNCATE", "DROP", "RENAME"):
                ctl.truncated()  # the rows the chunk read are gone
            else:
                ctl.schema_changed()
        self._refresh()

    # -- boundaries ----------------------------------------------------------------------------
    def begin(self, gtid: str | None, file: str, pos: int,
              position: Callable[[], MySqlPosition]) -> list[ChangeRecord]:
        """Read-only: a transaction written after the chunk read closes the window first."""
        return self._close_past(
            lambda high: bool(high.passed_by(gtid, binlog_order(file, pos))), position)

    def committed(self, file: str, end: int) -> None:
        """An event group ended at (file, end): the stream position moves there."""
        self.position = binlog_order(file, end)
        self._ctl().committed(self.position)

    def moved(self, file: str, end: int) -> None:
        """An event outside any transaction (binlog checkpoint, GTID list...) was read."""
        if end:
            self.position = max(self.position, binlog_order(file, end))

    def boundary(self, emit_blocking: Emit, before_blocking: Callable[[], None],
                 position: Callable[[], MySqlPosition]) -> list[ChangeRecord]:
        """Between transactions: read-only close, actions, file channel, next chunk."""
        out = self._reached(position)
        self._next_chunk(emit_blocking, before_blocking)
        # Read-only, the stream already at the high watermark (nothing written meanwhile).
        return out + self._reached(position)

    def _reached(self, position: Callable[[], MySqlPosition]) -> list[ChangeRecord]:
        return self._close_past(lambda high: bool(self.position >= high.order), position)


__all__ = [
    "MySqlChunkSource",
    "MySqlIncrementalHook",
    "ReadOnlyHigh",
]
