"""PostgreSQL's side of signals and incremental snapshots: chunk queries, watermarks, stream hook.

Why this module: the engine's controller (`headwater.engine.incremental`) knows no SQL and no
WAL; here is everything PostgreSQL-specific about it.

* Chunks are read by keyset pagination, ``WHERE (k1, k2) > (last) AND (k1, k2) <= (max)
  [AND (filter)] ORDER BY k1, k2 LIMIT n``, with PostgreSQL's row comparison (the index order),
  inside a REPEATABLE READ READ ONLY transaction on a connection of its own, with ``COPY ... TO
  STDOUT`` text output, the format pgoutput sends (one set of converters).  Keys travel in
  offsets as their text output and come back as ``'text'::type`` literals.
* The window compares keys as the text the server prints, in the chunk and in the stream alike,
  so the comparison does not depend on value conversion, and a surrogate key needs no codec.
* Watermarks (default): ``INSERT`` of ``<chunk>-open`` / ``<chunk>-close`` rows into the signal
  table on an autocommit connection, seen back in the stream (``insert_delete``: the close is
  the ``DELETE`` of the open row).
* Read-only (``read.only=true``): nothing is written.  The window opens at the stream position
  where the chunk is read; the chunk transaction also returns its snapshot (xmin, xmax,
  in-progress xids) and afterwards ``pg_current_wal_insert_lsn()`` (on a hot standby
  ``pg_last_wal_replay_lsn()``: a standby makes a commit visible when it replays it; see
  ``connection.VISIBLE_WAL_POSITION_SQL``): every transaction the chunk saw has its commit
  record before that position, so the window closes before the first transaction whose
  commit lies at or after it (or, idle, once the server says it has sent that far).
* The snapshot also tells whether a transaction the stream delivered before the window opened
  was still invisible to the chunk (a commit is in the WAL a moment before it becomes visible):
  then the chunk is read again.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

import psycopg2

from headwater.config.signals import SignalConfig
from headwater.connectors.postgres import pgoutput
from headwater.connectors.postgres.catalog import TableInfo, describe_tables
from headwater.connectors.postgres.connection import (
    VISIBLE_WAL_POSITION_SQL,
    connect,
    qualified,
    quote_ident,
)
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.snapshot import parse_copy_line
from headwater.connectors.postgres.tables import TableCodec
from headwater.engine.incremental import (
    ChunkRead,
    IncrementalSnapshotError,
    RawKey,
    SnapshotTable,
)
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.signals import WINDOW_CLOSE, WINDOW_OPEN, signal_from_row
from headwater.model.collection import split_collection
from headwater.model.record import UNCHANGED_TOAST, ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.relational.incremental import ChunkConnections, IncrementalHookBase, keyset_where

log = logging.getLogger("headwater.connectors.postgres.incremental")

CodecFor = Callable[[TableInfo], TableCodec]
_XID_MASK = 0xFFFFFFFF
_WAL_PAGE = 8192



# The server's answers that concern the table, not the connection: undefined table (42P01),
# undefined column (42703), insufficient privilege (42501).
_TABLE_ERRORS: Final = frozenset({"42P01", "42703", "42501"})


@contextlib.contextmanager
def _table_refused(table: SnapshotTable, conn: Any) -> Iterator[None]:
    """The engine skips such a table (Debezium's SQL_EXCEPTION) and goes on streaming;
    connection errors still end the capture, which restarts from its offsets."""
    try:
        yield
    except psycopg2.Error as exc:
        if exc.pgcode not in _TABLE_ERRORS:
            raise
        conn.rollback()
        detail = " ".join(str(exc).split())
        raise IncrementalSnapshotError(
            f"table {table.name}: the server refused the chunk query: {detail}",
            "SQL_EXCEPTION") from exc


class XidSnapshot:
    """A ``txid_current_snapshot()`` value, asked about pgoutput's 32-bit xids."""

    def __init__(self, text: str) -> None:
        xmin, xmax, xip = text.split(":")
        self.xmin = int(xmin) & _XID_MASK
        self.span = (int(xmax) - int(xmin)) & _XID_MASK
        self.xip = frozenset(int(x) & _XID_MASK for x in xip.split(",") if x)

    def invisible(self, xid: int) -> bool:
        """True if a transaction `xid` that committed is not visible in this snapshot."""
        delta = (xid - self.xmin) & _XID_MASK
        if delta >= 1 << 31:  # before xmin: finished when the snapshot was taken
            return False
        return xid in self.xip or delta >= self.span

    def stale_if(self, committed_before: Sequence[Any], _truncated: bool) -> bool:
        # The commit-to-visibility gap is microseconds: the controller's recent commits reach
        # far enough back, so a truncated list is no reason for a re-read.
        return any(self.invisible(int(x)) for x in committed_before)


def high_watermark(insert_lsn: int) -> int:
    """The WAL position that every commit seen by a read taken before `insert_lsn` precedes.

    An insert position right after a page header means the records end at the page boundary
    (records never occupy the header), and the server reports its sent position there."""
    offset = insert_lsn % _WAL_PAGE
    return insert_lsn - offset if offset in (24, 40) else insert_lsn


class PostgresChunkSource(ChunkConnections):
    """Chunk, max-key and watermark queries (`headwater.engine.incremental.ChunkSource`)."""

    def __init__(
        self, *, dsn: dict[str, Any], database: str, context: SourceContext,
        signals: SignalConfig, codec_for: CodecFor,
        key_override: Callable[[str, str], tuple[str, ...] | None],
        batch_size: int = 2048,
        captured: Callable[[str, str], bool] = lambda schema, table: True,
    ) -> None:
        self.dsn = dsn
        # the connector's table filter (include and exclude lists): a table outside it is
        # refused, as the MySQL and MongoDB connectors refuse it (Debezium warns and skips it)
        self.captured = captured
        self.database = database
        self.context = context
        self.signals = signals
        self.codec_for = codec_for
        self.key_override = key_override
        self.batch_size = batch_size
        super().__init__()
        self._tables: dict[SnapshotTable, tuple[TableInfo, TableCodec, tuple[str, ...]]] = {}
        self.signal_table = (
            _schema_table(split_collection(signals.data_collection), database)
            if signals.data_collection else None
        )

    def _open_rw(self) -> Any:
        conn = connect(self.dsn, application_name="headwater-incremental")
        conn.autocommit = True
        return conn

    def _open_ro(self) -> Any:
        conn = connect(self.dsn, application_name="headwater-chunks")
        conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
        return conn

    # -- tables --------------------------------------------------------------------------------
    def resolve(self, table: SnapshotTable) -> SnapshotTable:
        schema, name = _schema_table(table.collection, self.database)
        cur = self._conn().cursor()
        cur.execute(
            "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')",
            (schema, name))
        row = cur.fetchone()
        if row is None:
            raise IncrementalSnapshotError(f"table {schema}.{name} does not exist")
        if not self.captured(schema, name):
            raise IncrementalSnapshotError(
                f"table {schema}.{name} is not captured (table and schema include and exclude "
                "lists)")
        info = describe_tables(cur, [int(row[0])])[int(row[0])]
        resolved = SnapshotTable((schema, name), table.condition, table.surrogate_key)
        self._describe(resolved, info)
        return resolved

    def _describe(
        self, table: SnapshotTable, info: TableInfo | None = None
    ) -> tuple[TableInfo, TableCodec, tuple[str, ...]]:
        known = self._tables.get(table)
        if known is not None and info is None:
            return known
        schema, name = table.collection
        if info is None:
            cur = self._conn().cursor()
            cur.execute(
                "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relname = %s", (schema, name))
            row = cur.fetchone()
            if row is None:
                raise IncrementalSnapshotError(f"table {schema}.{name} does not exist")
            info = describe_tables(cur, [int(row[0])])[int(row[0])]
        columns = {c.name for c in info.columns}
        if table.surrogate_key:
            if table.surrogate_key not in columns:
                raise IncrementalSnapshotError(
                    f"surrogate key {table.surrogate_key!r} is not a column of {schema}.{name}")
            keys: tuple[str, ...] = (table.surrogate_key,)
        else:
            keys = self.key_override(schema, name) or info.primary_key
            if not keys:
                raise IncrementalSnapshotError(
                    f"table {schema}.{name} has no primary key: name a unique, non-null column "
                    "in the signal's surrogate-key (or set message.key.columns)",
                    "NO_PRIMARY_KEY")
        codec = self.codec_for(info)
        self._tables[table] = (info, codec, keys)
        return info, codec, keys

    def key_columns(self, table: SnapshotTable) -> tuple[str, ...]:
        return self._describe(table)[2]

    def _where(self, table: SnapshotTable, info: TableInfo, keys: tuple[str, ...],
               after: RawKey | None, maximum: RawKey | None) -> tuple[str, list[Any]]:
        types = {c.name: c.formatted_type for c in info.columns}
        return keyset_where(
            [f"_hw.{quote_ident(k)}" for k in keys], [f"%s::{types[k]}" for k in keys],
            after, maximum, table.condition, row_comparison=True)

    def max_key(self, table: SnapshotTable) -> RawKey | None:
        info, _, keys = self._describe(table)
        where, params = self._where(table, info, keys, None, None)
        # Qualified names: ORDER BY must sort by the columns, not by their text output.
        order = ", ".join(f"_hw.{quote_ident(k)} DESC" for k in keys)
        texts = ", ".join(f"_hw.{quote_ident(k)}::text" for k in keys)
        conn = self._conn()
        cur = conn.cursor()
        with _table_refused(table, conn):
            cur.execute(f"SELECT {texts} FROM {qualified(info.schema, info.name)} _hw{where} "
                        f"ORDER BY {order} LIMIT 1", params)
        row = cur.fetchone()
        return list(row) if row is not None else None

    def read_chunk(
        self, table: SnapshotTable, after: RawKey | None, maximum: RawKey, limit: int
    ) -> ChunkRead:
        info, codec, keys = self._describe(table)
        where, params = self._where(table, info, keys, after, maximum)
        conn = self._read_conn()
        cur = conn.cursor()
        try:
            cur.execute("SELECT txid_current_snapshot()::text")
            snapshot = XidSnapshot(cur.fetchone()[0])
            cols = ", ".join(f"_hw.{quote_ident(c.name)}" for c in codec.incoming)
            key_cols = ", ".join(f"_hw.{quote_ident(k)}" for k in keys)
            sql = cur.mogrify(
                f"SELECT {cols}, {key_cols} FROM {qualified(info.schema, info.name)} _hw{where} "
                f"ORDER BY {key_cols} LIMIT {int(limit)}", params).decode()
            lines: list[list[str | None]] = []
            sink = _Lines(lines)
            with _table_refused(table, conn):
                cur.copy_expert(f"COPY ({sql}) TO STDOUT", sink, size=1 << 16)
            cur.execute(f"SELECT {VISIBLE_WAL_POSITION_SQL}")
            insert_lsn = pgoutput.parse_lsn(cur.fetchone()[0])
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        n = len(codec.incoming)
        rows = [(tuple(f[n:]), codec.convert(f[:n])) for f in lines]
        last: RawKey | None = list(lines[-1][n:]) if lines else None
        return ChunkRead(codec.schema, rows, last, high_watermark(insert_lsn), snapshot.stale_if)

    # -- watermarks ----------------------------------------------------------------------------
    def write_watermark(self, chunk_id: str, opening: bool) -> None:
        if self.signal_table is None:
            raise IncrementalSnapshotError(
                "incremental snapshots need signal.data.collection (or read.only=true)")
        target = qualified(*self.signal_table)
        cur = self._conn().cursor()
        if not opening and self.signals.watermarking_strategy == "insert_delete":
            cur.execute(f"DELETE FROM {target} WHERE {_first_column(self)} = %s",
                        (f"{chunk_id}-open",))
            return
        cur.execute(f"INSERT INTO {target} VALUES (%s, %s, NULL)",
                    (f"{chunk_id}-{'open' if opening else 'close'}",
                     WINDOW_OPEN if opening else WINDOW_CLOSE))

    # -- blocking snapshot ---------------------------------------------------------------------
    def blocking_snapshot(
        self, tables: Sequence[SnapshotTable], emit: Callable[[list[ChangeRecord]], None]
    ) -> None:
        conn = self._read_conn()
        cur = conn.cursor()
        try:
            cur.execute("SELECT txid_snapshot_xmin(txid_current_snapshot()), "
                        f"{VISIBLE_WAL_POSITION_SQL}")
            xmin, lsn_text = cur.fetchone()
            lsn = pgoutput.parse_lsn(lsn_text)
            position = PostgresPosition(lsn, lsn, None, int(xmin))
            held: ChangeRecord | None = None
            batch: list[ChangeRecord] = []
            for table in tables:
                info, codec, _ = self._describe(table)
                where, params = self._where(table, info, (), None, None)
                cols = ", ".join(f"_hw.{quote_ident(c.name)}" for c in codec.incoming)
                sql = cur.mogrify(
                    f"SELECT {cols} FROM {qualified(info.schema, info.name)} _hw{where}",
                    params).decode()
                lines: list[list[str | None]] = []
                log.info("blocking snapshot step: read %s", table.name)
                cur.copy_expert(f"COPY ({sql}) TO STDOUT", _Lines(lines), size=1 << 16)
                now = int(time.time() * 1000)
                for fields in lines:
                    if held is not None:
                        batch.append(held)
                        if len(batch) >= self.batch_size:
                            emit(batch)
                            batch = []
                    held = ChangeRecord(self.context, codec.schema, Op.READ, None,
                                        codec.convert(fields), now, now, SnapshotMarker.TRUE,
                                        position)
                log.info("blocking snapshot step: read %s done, %d rows", table.name,
                         len(lines))
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        if held is not None:
            batch.append(held._replace(snapshot=SnapshotMarker.LAST))
        if batch:
            emit(batch)


def _first_column(source: PostgresChunkSource) -> str:
    assert source.signal_table is not None
    cur = source._conn().cursor()
    cur.execute(
        "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = %s "
        "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum LIMIT 1",
        source.signal_table)
    return quote_ident(cur.fetchone()[0])


class _Lines:
    """copy_expert target collecting parsed COPY text lines."""

    def __init__(self, out: list[list[str | None]]) -> None:
        self.out = out
        self.partial = ""

    def write(self, data: str | bytes) -> int:
        text = self.partial + (data.decode("utf-8") if isinstance(data, bytes) else data)
        *complete, self.partial = text.split("\n")
        self.out.extend(parse_copy_line(line) for line in complete)
        return len(data)


def _schema_table(parts: tuple[str, ...], database: str) -> tuple[str, str]:
    if len(parts) == 1:
        return "public", parts[0]
    if len(parts) == 3 and parts[0] != database:
        raise IncrementalSnapshotError(
            f"data collection {'.'.join(parts)} names database {parts[0]!r}, not {database!r}")
    return parts[-2], parts[-1]


# ----------------------------------------------------------------------------------------------
# The streaming loop's hook


class PostgresIncrementalHook(IncrementalHookBase):
    """What the pgoutput streaming loop calls: signal rows, window events, boundaries.

    The loop asks `watched` (relation oids whose rows must be shown to `row`) on every row,
    so it is a plain set, recomputed when a relation arrives or a window starts or ends.
    """

    def __init__(self, source: PostgresChunkSource, context: SourceContext,
                 metrics: CaptureMetrics | None = None) -> None:
        super().__init__(source, context, metrics)
        self.source: PostgresChunkSource = source
        self._relations: dict[int, tuple[str, str, tuple[str, ...]]] = {}
        self._signal_oid: int | None = None
        self._window_oid: int | None = None
        self._window_keys: tuple[int, ...] = ()
        self._window_shape: tuple[str, ...] | None = None
        self._last_reply = 0.0

    # -- session -------------------------------------------------------------------------------
    def start(self, offset: dict[str, Any] | None) -> None:
        self._start_controller(offset)
        self._relations.clear()
        self._signal_oid = self._window_oid = None
        self._refresh()

    def relation(self, oid: int, namespace: str, name: str, columns: tuple[str, ...]) -> None:
        old = self._relations.get(oid)
        self._relations[oid] = (namespace, name, columns)
        if (self.source.signal_table == (namespace, name)
                and self.source.signals.source_channel):
            self._signal_oid = oid
        if old is not None and oid == self._window_oid and old[2] != columns:
            self._ctl().schema_changed()
        self._refresh()

    def _refresh(self) -> None:
        ctl = self._ctl()
        table = ctl.window_table
        self._window_oid = None
        self._window_keys = ()
        if table is not None:
            keys = self.source.key_columns(ctl.chunk.table) if ctl.chunk else ()
            for oid, (ns, name, columns) in self._relations.items():
                if (ns, name) == table:
                    self._window_oid = oid
                    self._window_keys = tuple(columns.index(k) for k in keys if k in columns)
                    if len(self._window_keys) != len(keys):  # key column dropped: no keys
                        self._window_keys = ()
        oids = {o for o in (self._signal_oid, self._window_oid) if o is not None}
        self.watched = frozenset(oids)

    # -- rows ----------------------------------------------------------------------------------
    def row(self, m: Any, kind: type, position: Callable[[], PostgresPosition]
            ) -> list[ChangeRecord]:
        """A row of a watched relation; returns READ records when it closes a window."""
        ctl = self._ctl()
        oid = m.relation_oid
        if oid == self._window_oid:
            self._window_row(m, kind)
        if oid != self._signal_oid:
            return []
        if kind is pgoutput.Delete:
            ident = m.old[0] if m.old else None
            if isinstance(ident, str) and ctl.watermark(ident, False):
                return self._close(position())
            return []
        if kind is not pgoutput.Insert:
            return []
        sig = signal_from_row(m.new)
        if sig.type in (WINDOW_OPEN, WINDOW_CLOSE):
            if ctl.watermark(sig.id, sig.type == WINDOW_OPEN):
                return self._close(position())
            if sig.type == WINDOW_OPEN:
                log.debug("incremental snapshot step: window %s open", sig.id)
            return []
        ctl.signal(sig)
        return []

    def _window_row(self, m: Any, kind: type) -> None:
        ctl = self._ctl()
        positions = self._window_keys
        old = m.old if kind is not pgoutput.Insert else None
        images = [m.new] if kind is not pgoutput.Delete else []
        if old is not None:
            images.append(old)
        keys = []
        for image in images:
            key = tuple(image[i] for i in positions) if positions else None
            if key is None or None in key or UNCHANGED_TOAST in key:
                if image is not old and old is not None:
                    continue  # the old image names the key
                # The key cannot be told (no old image, key columns not sent): every row of
                # the chunk may be the one changed.
                ctl.truncated()
                return
            keys.append(key)
        ctl.key_changed(*keys)

    def truncate(self, oids: Sequence[int]) -> None:
        if self._window_oid is not None and self._window_oid in oids:
            self._ctl().truncated()

    # -- boundaries ----------------------------------------------------------------------------
    def committed(self, xid: int | None) -> None:
        if xid is not None:
            self._ctl().committed(xid)

    def boundary(self, emit_blocking: Callable[[list[ChangeRecord]], None],
                 before_blocking: Callable[[], None]) -> None:
        """Between transactions: actions, file channel, next chunk."""
        ctl = self._ctl()
        if ctl.idle:
            return
        ctl.boundary(emit_blocking, before_blocking)
        self._refresh()

    def begin(self, final_lsn: int, position: Callable[[], PostgresPosition]
              ) -> list[ChangeRecord]:
        """Read-only: a transaction committing at or after the high watermark closes first."""
        high = self._ctl().read_only_high
        if high is not None and final_lsn >= high:
            return self._close(position())
        return []

    def idle(self, cur: Any, in_tx: bool, position: Callable[[], PostgresPosition]
             ) -> list[ChangeRecord]:
        """Read-only, nothing received: close once the server has sent past the watermark."""
        high = self._ctl().read_only_high
        if high is None or in_tx:
            return []
        wal_end = int(getattr(cur, "wal_end", 0) or 0)
        if wal_end >= high:
            return self._close(position())
        now = time.monotonic()
        if now - self._last_reply > 0.2:  # ask for a keepalive: it carries the sent position
            self._last_reply = now
            try:
                cur.send_feedback(reply=True)
            except Exception as exc:
                log.debug("keepalive request not sent: %s", exc)
        return []

