"""MySQL/MariaDB's side of signals and incremental snapshots: chunk queries, watermarks, hook.

Why this module: the engine's controller (`headwater.engine.incremental`) knows no SQL and no
binlog; here is everything MySQL-specific about it, in the shape of the PostgreSQL module
(`headwater.connectors.postgres.incremental`).

* Chunks are read by keyset pagination, ``WHERE key > (last) AND key <= (max) [AND (filter)]
  ORDER BY key LIMIT n`` (a composite key is compared lexicographically, spelled out so the
  optimizer sees a range on the first column), in a ``START TRANSACTION WITH CONSISTENT
  SNAPSHOT`` on a connection of its own, with the snapshot's converters (natural values; FLOAT
  read as DOUBLE, see snapshot.py), so one table codec serves chunk rows and binlog rows.
* The window compares keys as natural values, which the binlog decoder and the snapshot reader
  both produce (columns.py).  In offsets a key is a JSON list; values JSON cannot hold travel
  tagged (``{"decimal": "1.5"}``, ``{"hex": ...}``, ``{"datetime": ...}``, ...) and come back
  as the Python values PyMySQL turns into literals of the right type.
* Watermarks (default): ``INSERT`` of ``<chunk>-open`` / ``<chunk>-close`` rows into the signal
  table on an autocommit connection, recognised when their rows come back in the binlog
  (``insert_delete``: the close is the ``DELETE`` of the open row).  MariaDB makes commits
  visible in binlog order, so a chunk read after the open row committed sees everything the
  binlog has before it.
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

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, NamedTuple

import pymysql  # type: ignore[import-untyped]

from headwater.config.signals import SignalConfig
from headwater.connectors.mysql import position_signal
from headwater.connectors.mysql.binlog.rows import row_decoder
from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.connection import (
    binlog_status_statement,
    connect,
    qualified,
    quote_ident,
    show_create_table,
)
from headwater.connectors.mysql.ddl import SchemaChange
from headwater.connectors.mysql.position import MySqlPosition, binlog_order
from headwater.connectors.mysql.position_signal import BinlogReposition
from headwater.connectors.mysql.schema_catalog import MySqlSchema
from headwater.connectors.mysql.schema_state import SchemaState
from headwater.connectors.mysql.snapshot_values import select_list, snapshot_conversions
from headwater.connectors.mysql.tables import MySqlTableCodec
from headwater.engine.incremental import (
    BlockingSnapshotBatches,
    ChunkRead,
    IncrementalSnapshotError,
    RawKey,
    SnapshotTable,
)
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.signals import WINDOW_CLOSE, WINDOW_OPEN, Signal, signal_from_row
from headwater.model.collection import same_collection, split_collection
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.relational.incremental import (
    ChunkConnections,
    IncrementalHookBase,
    decode_key_value,
    encode_key_value,
    keyset_where,
)

log = logging.getLogger("headwater.connectors.mysql.incremental")

# The offset key of the last set-binlog-position signal carried out.
MOVED_BY = "binlog_position_signal"

WRITE_ROWS = frozenset({23, 30})
UPDATE_ROWS = frozenset({24, 31})
DELETE_ROWS = frozenset({25, 32})

Order = tuple[int, int]  # binlog_order(file, pos)
Emit = Callable[[list[ChangeRecord]], None]



# ----------------------------------------------------------------------------------------------
# The chunk source



# The server's answers that concern the table, not the connection: the table was dropped
# (1146), a column of the key or the filter is gone (1054), or the grant was revoked (1142).
_TABLE_ERRORS: Final = frozenset({1054, 1142, 1146})


@contextlib.contextmanager
def _table_refused(table: SnapshotTable) -> Iterator[None]:
    """The engine skips such a table (Debezium's SQL_EXCEPTION) and goes on streaming;
    connection errors still end the capture, which restarts from its offsets."""
    try:
        yield
    except pymysql.err.MySQLError as exc:
        code = exc.args[0] if exc.args else None
        if code not in _TABLE_ERRORS:
            raise
        raise IncrementalSnapshotError(
            f"table {table.name}: the server refused the chunk query: {exc.args[-1]}",
            "SQL_EXCEPTION") from exc


class ReadOnlyHigh(NamedTuple):
    """Read-only high watermark: the binlog position and GTID position after the chunk read."""

    order: Order
    gtids: dict[int, int]  # MariaDB domain -> sequence number; empty on MySQL
    low: str | None  # @@gtid_binlog_pos before the read, for the logs

    def passed_by(self, gtid: str | None, start: Order) -> bool:
        """True if a transaction starting at `start` with `gtid` was written after the read."""
        if start >= self.order:
            return True
        if gtid is None or not self.gtids or ":" in gtid:
            return False
        domain, _, seq = gtid.split("-", 2)
        high = self.gtids.get(int(domain))
        return high is None or int(seq) > high


def _parse_gtids(text: str | None) -> dict[int, int]:
    out: dict[int, int] = {}
    for part in (text or "").split(","):
        bits = part.strip().split("-")
        if len(bits) == 3:
            out[int(bits[0])] = int(bits[2])
    return out


class _Table(NamedTuple):
    codec: MySqlTableCodec
    keys: tuple[str, ...]
    key_index: tuple[int, ...]  # positions of the key columns in the table's column order


class MySqlChunkSource(ChunkConnections):
    """Chunk, max-key and watermark queries (`headwater.engine.incremental.ChunkSource`)."""

    def __init__(
        self, cfg: MySqlConnectorConfig, state: SchemaState, context: SourceContext
    ) -> None:
        self.cfg = cfg
        self.state = state
        self.context = context
        self.signals: SignalConfig = cfg.signals
        super().__init__()
        self._mariadb: bool | None = None
        self.signal_table: tuple[str, ...] | None = None
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
            cur.execute("SELECT VERSION()")
            self._mariadb = "mariadb" in str(cur.fetchone()[0]).lower()
        return conn

    # -- tables --------------------------------------------------------------------------------
    def resolve(self, table: SnapshotTable) -> SnapshotTable:
        parts = table.collection
        if len(parts) == 3:
            raise IncrementalSnapshotError(
                f"{table.name}: MySQL tables are named <database>.<table>")
        if len(parts) == 1:
            found = [t for t in self.state.schema.tables()
                     if t.name == parts[0] and self.state.captured(t.database, t.name)]
            if len(found) != 1:
                raise IncrementalSnapshotError(
                    f"{table.name}: name the table as <database>.<table> "
                    f"({'no captured table has that name' if not found else 'ambiguous'})")
            parts = (found[0].database, found[0].name)
        definition = self.state.schema.table(*parts)
        if definition is None:
            raise IncrementalSnapshotError(f"table {'.'.join(parts)} does not exist")
        resolved = SnapshotTable((definition.database, definition.name), table.condition,
                                 table.surrogate_key)
        self._describe(resolved)
        return resolved

    def _describe(self, table: SnapshotTable) -> _Table:
        db, name = table.collection
        codec = self.state.codec(db, name)
        if codec is None:
            if self.state.schema.table(db, name) is None:  # dropped since it was queued
                raise IncrementalSnapshotError(f"table {db}.{name} does not exist (any more)")
            raise IncrementalSnapshotError(
                f"table {db}.{name} is not captured (database/table include and exclude lists)")
        definition = codec.table
        if table.surrogate_key:
            try:
                keys: tuple[str, ...] = (definition.column(table.surrogate_key).name,)
            except KeyError:
                raise IncrementalSnapshotError(
                    f"surrogate key {table.surrogate_key!r} is not a column of {db}.{name}"
                ) from None
        else:
            keys = codec.schema.key_columns
            if not keys:
                raise IncrementalSnapshotError(
                    f"table {db}.{name} has no primary key: name a unique, non-null column "
                    "in the signal's surrogate-key (or set message.key.columns)",
                    "NO_PRIMARY_KEY")
        index = tuple(definition.column_index[k.lower()] for k in keys)
        return _Table(codec, keys, index)

    def key_index(self, table: SnapshotTable, definition: MySqlTable) -> tuple[int, ...] | None:
        """Where the chunk key columns sit in `definition` (None: a key column is gone)."""
        keys = ((table.surrogate_key,) if table.surrogate_key
                else key_names(self.state, table))
        try:
            return tuple(definition.column_index[k.lower()] for k in keys)
        except KeyError:
            return None

    def _where(self, table: SnapshotTable, keys: Sequence[str], after: RawKey | None,
               maximum: RawKey | None) -> tuple[str, list[Any]]:
        cols = [quote_ident(k) for k in keys]
        return keyset_where(
            cols, ["%s"] * len(cols),
            [decode_key_value(v) for v in after] if after is not None else None,
            [decode_key_value(v) for v in maximum] if maximum is not None else None,
            table.condition, row_comparison=False)

    def max_key(self, table: SnapshotTable) -> RawKey | None:
        t = self._describe(table)
        where, params = self._where(table, t.keys, None, None)
        order = ", ".join(f"{quote_ident(k)} DESC" for k in t.keys)
        cols = ", ".join(quote_ident(k) for k in t.keys)
        with self._conn().cursor() as cur, _table_refused(table):
            cur.execute(f"SELECT {cols} FROM {qualified(*table.collection)}{where} "
                        f"ORDER BY {order} LIMIT 1", params)
            row = cur.fetchone()
        return [encode_key_value(v) for v in row] if row is not None else None

    def read_chunk(
        self, table: SnapshotTable, after: RawKey | None, maximum: RawKey, limit: int
    ) -> ChunkRead:
        t = self._describe(table)
        where, params = self._where(table, t.keys, after, maximum)
        conn = self._read_conn()
        order = ", ".join(quote_ident(k) for k in t.keys)
        sql = (f"SELECT {select_list(t.codec.table)} FROM {qualified(*table.collection)}"
               f"{where} ORDER BY {order} LIMIT {int(limit)}")
        cur = conn.cursor()
        try:
            low = None
            if self.read_only and self._mariadb:
                cur.execute("SELECT @@gtid_binlog_pos")
                low = str(cur.fetchone()[0] or "")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            snapshot = self._snapshot_position(cur)
            with _table_refused(table):
                cur.execute(sql, params)
            rows = cur.fetchall()
            cur.execute("COMMIT")
            high = self._high(cur, low) if self.read_only else None
        except BaseException:
            try:
                cur.execute("ROLLBACK")
            finally:
                cur.close()
            raise
        cur.close()
        convert = t.codec.convert
        idx = t.key_index
        out = [(tuple([r[i] for i in idx]), convert(r)) for r in rows]
        last = [encode_key_value(rows[-1][i]) for i in idx] if rows else None

        def stale_if(committed_before: Sequence[Any], _truncated: bool) -> bool:
            # Binlog ends of the transactions the stream delivered before the window opened;
            # the commit-to-visibility gap is microseconds, so older ones do not matter.
            return snapshot is not None and any(end > snapshot for end in committed_before)

        return ChunkRead(t.codec.schema, out, last, high, stale_if)

    def _snapshot_point(self, cur: Any) -> tuple[str, int] | None:
        """MariaDB: the binlog (file, position) the consistent snapshot matches (None on
        MySQL)."""
        if not self._mariadb:
            return None
        cur.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {str(k).lower(): v for k, v in cur.fetchall()}
        file = status.get("binlog_snapshot_file")
        if not file:
            return None
        return str(file), int(status.get("binlog_snapshot_position") or 0)

    def _snapshot_position(self, cur: Any) -> Order | None:
        point = self._snapshot_point(cur)
        return binlog_order(*point) if point is not None else None

    def _high(self, cur: Any, low: str | None) -> ReadOnlyHigh:
        cur.execute("SELECT VERSION()")
        cur.execute(binlog_status_statement(str(cur.fetchone()[0])))
        row = cur.fetchone()
        if row is None:
            raise IncrementalSnapshotError("the server has no binary log")
        order = binlog_order(str(row[0]), int(row[1]))
        gtids: dict[int, int] = {}
        if self._mariadb:
            cur.execute("SELECT @@gtid_binlog_pos")
            gtids = _parse_gtids(str(cur.fetchone()[0] or ""))
        return ReadOnlyHigh(order, gtids, low)

    # -- watermarks ----------------------------------------------------------------------------
    def write_watermark(self, chunk_id: str, opening: bool) -> None:
        if self.signal_table is None:
            raise IncrementalSnapshotError(
                "incremental snapshots need signal.data.collection (or read.only=true)")
        target = qualified(*self.signal_table)
        with self._conn().cursor() as cur:
            if not opening and self.signals.watermarking_strategy == "insert_delete":
                cur.execute(f"SHOW COLUMNS FROM {target}")
                first = quote_ident(str(cur.fetchone()[0]))
                cur.execute(f"DELETE FROM {target} WHERE {first} = %s", (f"{chunk_id}-open",))
                return
            cur.execute(f"INSERT INTO {target} VALUES (%s, %s, NULL)",
                        (f"{chunk_id}-{'open' if opening else 'close'}",
                         WINDOW_OPEN if opening else WINDOW_CLOSE))

    # -- blocking snapshot ---------------------------------------------------------------------
    def blocking_snapshot(self, tables: Sequence[SnapshotTable], emit: Emit) -> None:
        conn = self._read_conn()
        batch_size = self.cfg.max_batch_size
        cur = conn.cursor()
        try:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("SELECT @@server_id")
            server_id = int(cur.fetchone()[0])
            point = self._snapshot_point(cur)
            if point is None:
                cur.execute("SELECT VERSION()")
                cur.execute(binlog_status_statement(str(cur.fetchone()[0])))
                row = cur.fetchone()
                point = (str(row[0]), int(row[1])) if row else ("", 0)
            file, pos = point
            position = MySqlPosition(file, pos, 0, server_id, None, None, None, int(time.time()))
            batches = BlockingSnapshotBatches(emit, batch_size)
            for table in tables:
                t = self._describe(table)
                where, params = self._where(table, (), None, None)
                log.info("blocking snapshot step: read %s", table.name)
                cur.execute(f"SELECT {select_list(t.codec.table)} FROM "
                            f"{qualified(*table.collection)}{where}", params)
                count = 0
                while True:
                    rows = cur.fetchmany(batch_size)
                    if not rows:
                        break
                    now = int(time.time() * 1000)
                    for r in rows:
                        batches.add(ChangeRecord(self.context, t.codec.schema, Op.READ, None,
                                                 t.codec.convert(r), now, now,
                                                 SnapshotMarker.TRUE, position))
                    count += len(rows)
                log.info("blocking snapshot step: read %s done, %d rows", table.name, count)
            cur.execute("COMMIT")
        except BaseException:
            try:
                cur.execute("ROLLBACK")
            finally:
                cur.close()
            raise
        cur.close()
        batches.finish()


def key_names(state: SchemaState, table: SnapshotTable) -> tuple[str, ...]:
    codec = state.codec(*table.collection)
    return codec.schema.key_columns if codec is not None else ()


# ----------------------------------------------------------------------------------------------
# The streaming loop's hook


class MySqlIncrementalHook(IncrementalHookBase):
    """What the binlog streaming loop calls: table maps, rows of watched tables, boundaries.

    The loop asks `watched` (table ids whose rows events must be shown to `rows`) on every
    rows event, so it is a plain set, recomputed when a table map arrives or a window starts or
    ends.  The stream position (`position`) is the end of the last event group read, in
    `binlog_order` form; the read-only window closes against it.
    """

    def __init__(self, source: MySqlChunkSource, context: SourceContext,
                 metrics: CaptureMetrics | None = None) -> None:
        super().__init__(source, context, metrics)
        self.source: MySqlChunkSource = source
        self.state = source.state
        self.position: Order = (0, 0)
        self._maps: dict[int, Any] = {}  # table id -> TABLE_MAP body
        self._signal_ids: set[int] = set()
        self._window_ids: set[int] = set()
        self._signal_definition: MySqlTable | None = None
        # where a set-binlog-position signal moves the stream (the loop takes it), and the id
        # of the last one carried out
        self.reposition: BinlogReposition | None = None
        self.moved_by: str | None = None

    def connector_signals(self) -> dict[str, Callable[[Signal], None]]:
        return {position_signal.NAME: self._set_binlog_position}

    def _set_binlog_position(self, signal: Signal) -> None:
        """set-binlog-position: checked on the server now, carried out by the loop.  The last
        one carried out is remembered in the offsets: a move back to before its own row reads
        that row again, which must not move the stream again (and again)."""
        if signal.id and signal.id == self.moved_by:
            log.info("signal %r (set-binlog-position): already carried out (read again after "
                     "the stream moved back); ignored", signal.id)
            return
        target = position_signal.parse_reposition(signal)
        with self.source._conn().cursor() as cur:
            position_signal.check_on_server(cur, target)
        log.info("signal %r: the stream moves to %s", signal.id, target.describe())
        self.reposition = target
        self.moved_by = signal.id

    def offset_fields(self) -> dict[str, Any]:
        out = super().offset_fields()
        if self.moved_by:
            out[MOVED_BY] = self.moved_by
        return out

    # -- session -------------------------------------------------------------------------------
    def start(self, offset: dict[str, Any], file: str, pos: int) -> None:
        self._start_controller(offset)
        self.moved_by = offset.get(MOVED_BY) or None
        self.position = binlog_order(file, pos)
        self._maps.clear()
        self._signal_definition = None
        self._refresh()

    def _is_signal(self, database: str, table: str) -> bool:
        st = self.source.signal_table
        return (st is not None and self.source.signals.source_channel
                and same_collection(st, (database, table)))

    def table_map(self, body: Any) -> None:
        self._maps[body.table_id] = body
        if self._is_signal(body.database, body.table):
            self._signal_ids.add(body.table_id)
        else:
            self._signal_ids.discard(body.table_id)
        window = self._ctl().window_table
        if window is not None and (body.database, body.table) == tuple(window):
            self._window_ids.add(body.table_id)
        else:
            self._window_ids.discard(body.table_id)
        self.watched = frozenset(self._signal_ids | self._window_ids)

    def _refresh(self) -> None:
        window = self._ctl().window_table
        self._window_ids = {i for i, b in self._maps.items()
                            if window is not None and (b.database, b.table) == tuple(window)}
        self.watched = frozenset(self._signal_ids | self._window_ids)

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
                ddl, ansi_quotes = show_create_table(cur, database, table)
            schema = MySqlSchema()
            schema.apply(ddl, database, ansi_quotes)
            return schema.table(database, table)
        except Exception as exc:
            log.warning("signal table %s.%s: definition not read (%s); decoding without it",
                        database, table, exc)
            return None

    def rows(self, event: Any, position: MySqlPosition) -> list[ChangeRecord]:
        """A rows event of a watched table; returns READ records when it closes a window."""
        body = event.body
        table_map = self._maps.get(body.table_id)
        if table_map is None:
            return []
        tid = body.table_id
        code = event.type_code
        if tid in self._window_ids:
            self._window_rows(table_map, body, code)
        if tid not in self._signal_ids:
            return []
        ctl = self._ctl()
        decoder = row_decoder(table_map, self._definition(table_map, True))
        out: list[ChangeRecord] = []
        if code in DELETE_ROWS:
            for row in decoder.decode(body):
                ident = _text(row[0]) if row else None
                if ident is not None and ctl.watermark(ident, False):
                    out.extend(self._close(position))
            return out
        if code not in WRITE_ROWS:
            return out
        for row in decoder.decode(body):
            sig = signal_from_row([_text(v) for v in row])
            if sig.type in (WINDOW_OPEN, WINDOW_CLOSE):
                if ctl.watermark(sig.id, sig.type == WINDOW_OPEN):
                    out.extend(self._close(position))
                elif sig.type == WINDOW_OPEN:
                    log.debug("incremental snapshot step: window %s open", sig.id)
                continue
            ctl.signal(sig)
        return out

    def _window_rows(self, table_map: Any, body: Any, code: int) -> None:
        ctl = self._ctl()
        chunk = ctl.chunk
        definition = self._definition(table_map, False)
        if chunk is None or definition is None:
            return
        index = self.source.key_index(chunk.table, definition)
        rows = row_decoder(table_map, definition).decode(body)
        if index is None:  # a key column is gone: every row of the chunk may be changed
            ctl.truncated()
            return
        for row in rows:
            images = row if code in UPDATE_ROWS else (row,)
            ctl.key_changed(*(tuple([image[i] for i in index]) for image in images))

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
        high = self._ctl().read_only_high
        if isinstance(high, ReadOnlyHigh) and high.passed_by(gtid, binlog_order(file, pos)):
            return self._close(position())
        return []

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
        ctl = self._ctl()
        out = self._reached(position)
        if ctl.idle:
            return out
        ctl.boundary(emit_blocking, before_blocking)
        self._refresh()
        # Read-only, the stream already at the high watermark (nothing written meanwhile).
        return out + self._reached(position)

    def _reached(self, position: Callable[[], MySqlPosition]) -> list[ChangeRecord]:
        high = self._ctl().read_only_high
        if isinstance(high, ReadOnlyHigh) and self.position >= high.order:
            return self._close(position())
        return []



def _text(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return value


def boundary_position(file: str, pos: int, server_id: int, ts_sec: int) -> MySqlPosition:
    """Where READ records emitted between transactions sit."""
    return MySqlPosition(file, pos, 0, server_id, None, None, None, ts_sec)


__all__ = [
    "MySqlChunkSource",
    "MySqlIncrementalHook",
    "ReadOnlyHigh",
    "boundary_position",
    "decode_key_value",
    "encode_key_value",
]
