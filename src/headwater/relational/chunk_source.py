"""The chunk source PostgreSQL and MySQL share: the engine's `ChunkSource`
(headwater.engine.incremental) in SQL, for a connector that reads its own log (WAL, binlog)
and writes its watermarks into a signal table with SQL.

Why one base: the two differ only in dialect, as Debezium's RelationalSnapshotChangeEventSource
dialects do.  A connector subclasses `RelationalChunkSource` and supplies its pieces:

* `_open_rw` / `_open_ro`: its two connections, opened on first use and closed together: an
  autocommit one (catalog, maximum key, watermarks) and one for chunk reads in REPEATABLE READ;
* `_canonical`: the (namespace, table) a signal's name means (existence, capture filters);
  `_lookup`: a table as its chunks read it (`ChunkTable`);
* `_chunk_begin` / `_chunk_end`: what a chunk read takes around its query, in its transaction
  (the snapshot it saw; read-only, the high watermark); `_blocking_begin`: a blocking
  snapshot's transaction and the position of its READ records;
* `_rows`: a query's rows (fetched as the driver reads them; PostgreSQL: COPY text, the
  format its stream sends);
* `_refusal`: whether a driver error is the server refusing the table (Debezium's
  SQL_EXCEPTION: the table is skipped) rather than a lost connection (the capture ends);
* as data: `quote`, `same_name` (names compared as the server folds them), `column_prefix`
  (a table alias), `key_output` (how the maximum key is selected), `row_comparison` and
  `cache_tables`.

Everything else is here once: resolving a table, choosing its chunk key (primary key,
`message.key.columns`, or the signal's surrogate key), the keyset WHERE with the signal's
condition, the maximum key, the chunk read and its keys in offsets (`encode_key_value`), the
watermark rows, and a blocking snapshot's reading.  The change-table connectors' source
(relational.changetables.chunks: a connection per database, `?` markers, committed watermark
rows with Debezium's window metadata) shares the key choice and `transaction`.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

from headwater.config.signals import SignalConfig
from headwater.engine.incremental import (
    BlockingSnapshotBatches,
    ChunkRead,
    IncrementalSnapshotError,
    RawKey,
    SnapshotTable,
)
from headwater.engine.signals import WINDOW_CLOSE, WINDOW_OPEN
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import TableSchema
from headwater.relational.incremental import decode_key_value, encode_key_value, keyset_where

log = logging.getLogger("headwater.relational.chunk_source")

Row = Sequence[Any]
StaleIf = Callable[[Sequence[Any], bool], bool] | None


class ChunkTable(NamedTuple):
    """A table as its chunks are read: what `_lookup` says, and the chunk key the base chose."""

    target: str  # the FROM clause: qualified name (and alias)
    columns: tuple[str, ...]  # a row's columns, in the order `select` reads them
    select: str  # the select list of a row
    schema: TableSchema
    convert: Callable[[Row], tuple[Any, ...]]  # a row read to the schema's values
    primary_key: tuple[str, ...]  # or message.key.columns
    casts: Mapping[str, str] = {}  # key column -> what follows its placeholder (a cast)
    keys: tuple[str, ...] = ()
    key_index: tuple[int, ...] = ()  # the keys' positions in a row


@contextlib.contextmanager
def transaction(conn: Any) -> Iterator[Any]:
    """A cursor of `conn` whose work is committed when the block ends, rolled back when it
    raises; closed either way."""
    cur = conn.cursor()
    try:
        yield cur
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    finally:
        cur.close()


def key_positions(keys: Sequence[str], columns: Sequence[str],
                  same: Callable[[str, str], bool]) -> tuple[int, ...] | None:
    """Where `keys` sit among `columns` (None: one of them is not there)."""
    out: list[int] = []
    for key in keys:
        at = [i for i, c in enumerate(columns) if same(c, key)]
        if not at:
            return None
        out.append(at[0])
    return tuple(out)


def chunk_key(table: SnapshotTable, columns: Sequence[str], primary_key: tuple[str, ...],
              same: Callable[[str, str], bool]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A table's chunk key (the signal's surrogate key, else its primary key), as `columns`
    spell it, and its positions there."""
    keys = (table.surrogate_key,) if table.surrogate_key else primary_key
    if not keys:
        raise IncrementalSnapshotError(
            f"table {table.name} has no primary key: name a unique, non-null column in the "
            "signal's surrogate-key (or set message.key.columns)", "NO_PRIMARY_KEY")
    index = key_positions(keys, columns, same)
    if index is None:
        raise IncrementalSnapshotError(
            f"surrogate key {table.surrogate_key!r} is not a column of {table.name}"
            if table.surrogate_key else f"table {table.name}: key column(s) {', '.join(keys)} "
            f"not all among the columns it is read with ({', '.join(columns)})")
    return tuple(columns[i] for i in index), index


class RelationalChunkSource:
    """Chunk, max-key, watermark and blocking-snapshot queries; subclasses supply the dialect
    (the methods that raise NotImplementedError, and the class attributes)."""

    cache_tables: ClassVar[bool] = True  # False: a table is looked up again for each chunk
    column_prefix: ClassVar[str] = ""  # PostgreSQL reads `_hw.column` from `table _hw`
    key_output: ClassVar[str] = "{}"  # the maximum key's select expression per column
    row_comparison: ClassVar[bool] = False  # keyset as `(a, b) > (x, y)`, else spelled out

    signals: SignalConfig
    context: SourceContext
    batch_size: int
    signal_table: tuple[str, ...] | None

    def __init__(self) -> None:
        self._rw: Any = None
        self._ro: Any = None
        self._tables: dict[SnapshotTable, ChunkTable] = {}

    # -- the connector's dialect ---------------------------------------------------------------
    def _open_rw(self) -> Any:
        raise NotImplementedError

    def _open_ro(self) -> Any:
        raise NotImplementedError

    def _canonical(self, collection: tuple[str, ...]) -> tuple[str, ...]:
        """The table a signal names; IncrementalSnapshotError if there is none to snapshot."""
        raise NotImplementedError

    def _lookup(self, table: SnapshotTable) -> ChunkTable:
        raise NotImplementedError

    def _chunk_begin(self, cur: Any) -> Any:
        """Before the chunk query, in its transaction: what `_chunk_end` needs."""
        raise NotImplementedError

    def _chunk_end(self, cur: Any, begun: Any) -> tuple[Any, StaleIf]:
        """After the chunk query, in its transaction: the read-only high watermark and
        `stale_if`."""
        raise NotImplementedError

    def _blocking_begin(self, cur: Any) -> Any:
        """Starts a blocking snapshot's transaction; the position of its READ records."""
        raise NotImplementedError

    def _rows(self, cur: Any, sql: str, params: Sequence[Any]) -> Sequence[Row]:
        """The rows of a query, as the driver fetches them (PostgreSQL reads COPY text)."""
        cur.execute(sql, params)
        rows: Sequence[Row] = cur.fetchall()
        return rows

    def _refusal(self, exc: Exception) -> str | None:
        """The server's words if `exc` refuses the table (not the connection), else None."""
        raise NotImplementedError

    def _first_column(self, cur: Any, target: str) -> str:
        """The signal table's first column, quoted (the driver describes an empty result)."""
        cur.execute(f"SELECT * FROM {target} WHERE 1 = 0")
        return self.quote(str(cur.description[0][0]))

    def quote(self, name: str) -> str:
        raise NotImplementedError

    def same_name(self, a: str, b: str) -> bool:
        """Whether two column names name the same column (exact by default)."""
        return a == b

    # -- connections ---------------------------------------------------------------------------
    @property
    def read_only(self) -> bool:
        """``read.only``: no watermark writes (the read-only watermarking variant)."""
        return self.signals.read_only

    def _conn(self) -> Any:
        if self._rw is None:
            self._rw = self._open_rw()
        return self._rw

    def _read_conn(self) -> Any:
        if self._ro is None:
            self._ro = self._open_ro()
        return self._ro

    def close(self) -> None:
        for c in (self._rw, self._ro):
            if c is not None:
                try:
                    c.close()
                except Exception as exc:  # already gone
                    log.debug("close: %s", exc)
        self._rw = self._ro = None

    # -- tables --------------------------------------------------------------------------------
    def resolve(self, table: SnapshotTable) -> SnapshotTable:
        resolved = SnapshotTable(self._canonical(table.collection), table.condition,
                                 table.surrogate_key)
        self._tables.pop(resolved, None)  # described afresh
        self._describe(resolved)
        return resolved

    def _describe(self, table: SnapshotTable) -> ChunkTable:
        known = self._tables.get(table)
        if known is not None:
            return known
        found = self._lookup(table)
        keys, index = chunk_key(table, found.columns, found.primary_key, self.same_name)
        described = found._replace(keys=keys, key_index=index)
        if self.cache_tables:
            self._tables[table] = described
        return described

    def key_columns(self, table: SnapshotTable) -> tuple[str, ...]:
        return self._describe(table).keys

    def key_index(self, table: SnapshotTable, columns: Sequence[str]) -> tuple[int, ...] | None:
        """Where `table`'s chunk key sits among a stream's `columns` (None: a key column is
        gone, or the table is)."""
        try:
            keys = self._describe(table).keys
        except IncrementalSnapshotError:
            return None
        return key_positions(keys, columns, self.same_name)

    def _where(self, table: SnapshotTable, t: ChunkTable, after: RawKey | None,
               maximum: RawKey | None) -> tuple[str, list[Any]]:
        return keyset_where(
            [self.column_prefix + self.quote(k) for k in t.keys],
            ["%s" + t.casts.get(k, "") for k in t.keys],
            [decode_key_value(v) for v in after] if after is not None else None,
            [decode_key_value(v) for v in maximum] if maximum is not None else None,
            table.condition, row_comparison=self.row_comparison)

    @contextlib.contextmanager
    def _table_refused(self, table: SnapshotTable) -> Iterator[None]:
        """The engine skips such a table (Debezium's SQL_EXCEPTION) and goes on streaming;
        connection errors still end the capture, which restarts from its offsets."""
        try:
            yield
        except Exception as exc:
            detail = self._refusal(exc)
            if detail is None:
                raise
            raise IncrementalSnapshotError(
                f"table {table.name}: the server refused the chunk query: {detail}",
                "SQL_EXCEPTION") from exc

    # -- keys and chunks -----------------------------------------------------------------------
    def max_key(self, table: SnapshotTable) -> RawKey | None:
        t = self._describe(table)
        where, params = self._where(table, t, None, None)
        refs = [self.column_prefix + self.quote(k) for k in t.keys]
        out = ", ".join(self.key_output.format(r) for r in refs)
        order = ", ".join(f"{r} DESC" for r in refs)
        with self._conn().cursor() as cur, self._table_refused(table):
            cur.execute(f"SELECT {out} FROM {t.target}{where} ORDER BY {order} LIMIT 1",
                        params)
            row = cur.fetchone()
        return [encode_key_value(v) for v in row] if row is not None else None

    def read_chunk(
        self, table: SnapshotTable, after: RawKey | None, maximum: RawKey, limit: int
    ) -> ChunkRead:
        t = self._describe(table)
        where, params = self._where(table, t, after, maximum)
        order = ", ".join(self.column_prefix + self.quote(k) for k in t.keys)
        sql = f"SELECT {t.select} FROM {t.target}{where} ORDER BY {order} LIMIT {int(limit)}"
        with transaction(self._read_conn()) as cur:
            begun = self._chunk_begin(cur)
            with self._table_refused(table):
                rows = self._rows(cur, sql, params)
            high, stale_if = self._chunk_end(cur, begun)
        convert = t.convert
        idx = t.key_index
        out = [(tuple([r[i] for i in idx]), convert(r)) for r in rows]
        last = [encode_key_value(rows[-1][i]) for i in idx] if rows else None
        return ChunkRead(t.schema, out, last, high, stale_if)

    # -- watermarks ----------------------------------------------------------------------------
    def write_watermark(self, chunk_id: str, opening: bool) -> None:
        if self.signal_table is None:
            raise IncrementalSnapshotError(
                "incremental snapshots need signal.data.collection (or read.only=true)")
        target = ".".join(self.quote(p) for p in self.signal_table)
        with self._conn().cursor() as cur:
            if not opening and self.signals.watermarking_strategy == "insert_delete":
                cur.execute(f"DELETE FROM {target} WHERE {self._first_column(cur, target)} = %s",
                            (f"{chunk_id}-open",))
                return
            cur.execute(f"INSERT INTO {target} VALUES (%s, %s, NULL)",
                        (f"{chunk_id}-{'open' if opening else 'close'}",
                         WINDOW_OPEN if opening else WINDOW_CLOSE))

    # -- blocking snapshot ---------------------------------------------------------------------
    def blocking_snapshot(
        self, tables: Sequence[SnapshotTable], emit: Callable[[list[ChangeRecord]], None]
    ) -> None:
        batches = BlockingSnapshotBatches(emit, self.batch_size)
        with transaction(self._read_conn()) as cur:
            position = self._blocking_begin(cur)
            for table in tables:
                t = self._describe(table)
                where, params = self._where(table, t, None, None)
                log.info("blocking snapshot step: read %s", table.name)
                rows = self._rows(cur, f"SELECT {t.select} FROM {t.target}{where}", params)
                now = int(time.time() * 1000)
                for r in rows:
                    batches.add(ChangeRecord(self.context, t.schema, Op.READ, None, t.convert(r),
                                             now, now, SnapshotMarker.TRUE, position))
                log.info("blocking snapshot step: read %s done, %d rows", table.name, len(rows))
        batches.finish()
