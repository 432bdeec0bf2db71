"""PostgreSQL's side of signals and incremental snapshots: its dialect of the relational chunk
source (headwater.relational.chunk_source) and the pgoutput streaming loop's hook.

* Chunks compare keys as row values, ``(k1, k2) > (%s::t1, %s::t2)`` (the index order), and
  are read inside a REPEATABLE READ READ ONLY transaction with ``COPY ... TO STDOUT`` text
  output, the format pgoutput sends (one set of converters).  Keys travel in offsets as their
  text output and come back as ``'text'::type`` literals.
* The window compares keys as the text the server prints, in the chunk and in the stream alike,
  so the comparison does not depend on value conversion, and a surrogate key needs no codec.
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

import logging
import time
from collections.abc import Callable, Sequence
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
from headwater.connectors.postgres.copy_text import CopySink
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.tables import TableCodec
from headwater.engine.incremental import IncrementalSnapshotError, SnapshotTable
from headwater.engine.metrics import CaptureMetrics
from headwater.model.collection import split_collection
from headwater.model.record import UNCHANGED_TOAST, ChangeRecord, SourceContext
from headwater.relational.chunk_source import ChunkTable, RelationalChunkSource, StaleIf
from headwater.relational.incremental import LogIncrementalHook

log = logging.getLogger("headwater.connectors.postgres.incremental")

CodecFor = Callable[[TableInfo], TableCodec]
_XID_MASK = 0xFFFFFFFF
_WAL_PAGE = 8192

# The server's answers that concern the table, not the connection: undefined table (42P01),
# undefined column (42703), insufficient privilege (42501).
_TABLE_ERRORS: Final = frozenset({"42P01", "42703", "42501"})


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


class PostgresChunkSource(RelationalChunkSource):
    """PostgreSQL's dialect of `RelationalChunkSource`: keys compared as row values, with
    typed placeholders, and read as their text output (COPY's, pgoutput's)."""

    column_prefix = "_hw."
    key_output = "{}::text"
    row_comparison = True
    quote = staticmethod(quote_ident)

    def __init__(
        self, *, dsn: dict[str, Any], database: str, context: SourceContext,
        signals: SignalConfig, codec_for: CodecFor,
        key_override: Callable[[str, str], tuple[str, ...] | None],
        batch_size: int = 2048,
        captured: Callable[[str, str], bool] = lambda schema, table: True,
    ) -> None:
        super().__init__()
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

    def _canonical(self, collection: tuple[str, ...]) -> tuple[str, ...]:
        schema, name = _schema_table(collection, self.database)
        with self._conn().cursor() as cur:
            _oid(cur, schema, name)
        if not self.captured(schema, name):
            raise IncrementalSnapshotError(
                f"table {schema}.{name} is not captured (table and schema include and exclude "
                "lists)")
        return schema, name

    def _lookup(self, table: SnapshotTable) -> ChunkTable:
        schema, name = table.collection
        with self._conn().cursor() as cur:
            oid = _oid(cur, schema, name)
            info = describe_tables(cur, [oid])[oid]
        codec = self.codec_for(info)
        columns = tuple(c.name for c in codec.incoming)
        return ChunkTable(
            f"{qualified(schema, name)} _hw", columns,
            ", ".join(f"_hw.{quote_ident(c)}" for c in columns), codec.schema, codec.convert,
            self.key_override(schema, name) or info.primary_key,
            {c.name: f"::{c.formatted_type}" for c in info.columns})

    def _refusal(self, exc: Exception) -> str | None:
        if isinstance(exc, psycopg2.Error) and exc.pgcode in _TABLE_ERRORS:
            return " ".join(str(exc).split())
        return None

    def _rows(self, cur: Any, sql: str, params: Sequence[Any]) -> list[list[str | None]]:
        lines: list[list[str | None]] = []
        cur.copy_expert(f"COPY ({cur.mogrify(sql, params).decode()}) TO STDOUT",
                        CopySink(lines.append), size=1 << 16)
        return lines

    def _chunk_begin(self, cur: Any) -> XidSnapshot:
        cur.execute("SELECT txid_current_snapshot()::text")
        return XidSnapshot(cur.fetchone()[0])

    def _chunk_end(self, cur: Any, begun: XidSnapshot) -> tuple[Any, StaleIf]:
        cur.execute(f"SELECT {VISIBLE_WAL_POSITION_SQL}")
        insert_lsn = pgoutput.parse_lsn(cur.fetchone()[0])
        return high_watermark(insert_lsn), begun.stale_if

    def _blocking_begin(self, cur: Any) -> PostgresPosition:
        cur.execute(f"SELECT txid_snapshot_xmin(txid_current_snapshot()), "
                    f"{VISIBLE_WAL_POSITION_SQL}")
        xmin, lsn_text = cur.fetchone()
        lsn = pgoutput.parse_lsn(lsn_text)
        return PostgresPosition(lsn, lsn, None, int(xmin))



def _oid(cur: Any, schema: str, name: str) -> int:
    cur.execute(
        "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p')", (schema, name))
    row = cur.fetchone()
    if row is None:
        raise IncrementalSnapshotError(f"table {schema}.{name} does not exist")
    return int(row[0])


def _schema_table(parts: tuple[str, ...], database: str) -> tuple[str, str]:
    if len(parts) == 1:
        return "public", parts[0]
    if len(parts) == 3 and parts[0] != database:
        raise IncrementalSnapshotError(
            f"data collection {'.'.join(parts)} names database {parts[0]!r}, not {database!r}")
    return parts[-2], parts[-1]


# ----------------------------------------------------------------------------------------------
# The streaming loop's hook


class PostgresIncrementalHook(LogIncrementalHook):
    """What the pgoutput streaming loop calls: relations, rows of watched ones, boundaries."""

    def __init__(self, source: PostgresChunkSource, context: SourceContext,
                 metrics: CaptureMetrics | None = None) -> None:
        super().__init__(source, context, metrics)
        self.source: PostgresChunkSource = source
        self._columns: dict[int, tuple[str, ...]] = {}
        self._keys: dict[int, tuple[int, ...]] = {}  # the window's oid -> its key positions
        self._last_reply = 0.0

    def start(self, offset: dict[str, Any] | None) -> None:
        self._columns.clear()
        self._start(offset)

    def relation(self, oid: int, namespace: str, name: str, columns: tuple[str, ...]) -> None:
        old = self._columns.get(oid)
        self._columns[oid] = columns
        self._keys.pop(oid, None)
        self._announce(oid, (namespace, name))
        if old is not None and oid in self._window_ids and old != columns:
            self._ctl().schema_changed()
            self._refresh()

    def _refresh(self) -> None:
        self._keys.clear()
        super()._refresh()

    def row(self, m: Any, kind: type, position: Callable[[], PostgresPosition]
            ) -> list[ChangeRecord]:
        """A row of a watched relation; returns READ records when it closes a window."""
        oid = m.relation_oid
        if oid in self._window_ids:
            self._window_row(m, kind)
        if oid not in self._signal_ids or kind not in (pgoutput.Insert, pgoutput.Delete):
            return []
        inserted = kind is pgoutput.Insert
        return self._signal_row(m.new if inserted else m.old, inserted, position)

    def _window_row(self, m: Any, kind: type) -> None:
        ctl = self._ctl()
        oid = m.relation_oid
        positions = self._keys.get(oid)
        if positions is None:  # () when a key column is gone: no row names its key
            chunk = ctl.chunk
            index = self.source.key_index(chunk.table, self._columns[oid]) if chunk else None
            positions = self._keys[oid] = index or ()
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
        if self._window_ids.intersection(oids):
            self._ctl().truncated()

    def committed(self, xid: int | None) -> None:
        if xid is not None:
            self._ctl().committed(xid)

    def boundary(self, emit_blocking: Callable[[list[ChangeRecord]], None],
                 before_blocking: Callable[[], None]) -> None:
        self._next_chunk(emit_blocking, before_blocking)

    def begin(self, final_lsn: int, position: Callable[[], PostgresPosition]
              ) -> list[ChangeRecord]:
        """Read-only: a transaction committing at or after the high watermark closes first."""
        return self._close_past(lambda high: final_lsn >= high, position)

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

