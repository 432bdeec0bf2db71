"""The initial snapshot: every captured row as a READ event, at the replication slot's start.

The slot is created with an exported snapshot; this source imports it (`SET TRANSACTION
SNAPSHOT`) into a REPEATABLE READ, READ ONLY transaction, so it sees exactly the data as of the
slot's consistent point and streaming from that point continues with no gap and no overlap.
Tables are read with `COPY (SELECT ...) TO STDOUT` in text format: the same output functions
pgoutput uses, so one set of converters serves both, and COPY streams rows without a cursor
round trip per fetch.  The last record is held back so it can be marked `snapshot=last`.

With `snapshot.max.threads` > 1 the tables are split into block-range chunks
(snapshot_chunks.py) read by worker processes (snapshot_workers.py, engine/parallel.py), each
importing the same exported snapshot; this connection still imports it first, takes the locks,
and keeps its transaction open until every chunk is read.  See docs/snapshots-parallel.md.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from headwater.connectors.postgres.catalog import TableInfo
from headwater.connectors.postgres.columnar_kinds import kernels_installed
from headwater.connectors.postgres.config import PostgresConnectorConfig
from headwater.connectors.postgres.connection import connect, qualified, quote_ident
from headwater.connectors.postgres.pgoutput import format_lsn
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.snapshot_chunks import TableSize, plan_chunks, table_sizes
from headwater.connectors.postgres.tables import TableCodec
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.parallel import (
    SnapshotStopped,
    WorkerSpec,
    read_in_workers,
)
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.topic import TopicBatch

if TYPE_CHECKING:  # numba loads with snapshot_columnar, only when a snapshot reads column-wise
    from headwater.connectors.postgres.snapshot_columnar import ColumnarTable, TableTemplate

log = logging.getLogger("headwater.connectors.postgres.snapshot")

# Rows per column-wise chunk: ~3 KB per event with schemas, so a few MB of events in flight.
COLUMNAR_CHUNK_ROWS = 1024
# Tables of fewer heap blocks (8 KB each; 1 MB, a few thousand rows) are read row-wise: loading
# numba and its compiled kernels costs a capture process about a second, more than such a
# table's whole read row-wise, and a snapshot that small is the one a restart most often redoes.
COLUMNAR_MIN_BLOCKS = 128

_COPY_ESCAPE = re.compile(r"\\(.)")
_COPY_UNESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape_match(m: re.Match[str]) -> str:
    ch = m.group(1)
    return _COPY_UNESCAPES.get(ch, ch)


def parse_copy_line(line: str) -> list[str | None]:
    """One line of COPY text format (without its newline) into field texts (None for \\N)."""
    fields: list[str | None] = []
    for f in line.split("\t"):
        if f == "\\N":
            fields.append(None)
        elif "\\" in f:
            fields.append(_COPY_ESCAPE.sub(_unescape_match, f))
        else:
            fields.append(f)
    return fields


class _Aborted(Exception):
    pass


class CopySink:
    """File-like target of psycopg2's copy_expert: parses rows and emits batches."""

    def __init__(self, on_row: Callable[[list[str | None]], None]) -> None:
        self._on_row = on_row
        self._partial = ""

    def write(self, data: str | bytes) -> int:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        if self._partial:
            text = self._partial + text
            self._partial = ""
        start = 0
        while True:
            nl = text.find("\n", start)
            if nl < 0:
                self._partial = text[start:]
                break
            self._on_row(parse_copy_line(text[start:nl]))
            start = nl + 1
        return len(data)


class _Emitter:
    """Turns COPY rows into READ records, in batches, holding back the last one.

    The held-back record is emitted once the next row arrives, or marked `snapshot=last` by
    `finish` when no row follows it in any table.  Holding it back also gives Debezium 3.x's
    other markers: `first` (the snapshot's first record), `first_in_data_collection`, and
    `last_in_data_collection` when the next row belongs to another table.
    """

    def __init__(
        self, ctx: SourceRunContext, context: SourceContext, position: PostgresPosition,
        batch_size: int, rows_scanned: dict[str, int],
    ) -> None:
        self.ctx = ctx
        self.rows_scanned = rows_scanned  # the metric, updated per batch for progress
        self.name = ""
        self.context = context
        self.position = position
        self.batch_size = batch_size
        self.pending: list[ChangeRecord] = []
        self.held: ChangeRecord | None = None
        self.held_first_in_snapshot = False
        self.held_first_in_table = False
        self.codec: TableCodec | None = None
        self.scanned = 0
        self.now_ms = int(time.time() * 1000)

    def begin_table(self, name: str, codec: TableCodec) -> None:
        self.name = name
        self.codec = codec
        self.scanned = 0
        self.now_ms = int(time.time() * 1000)

    def on_row(self, fields: list[str | None]) -> None:
        codec = self.codec
        assert codec is not None
        held = self.held
        first_in_table = held is None or held.table is not codec.schema
        if held is not None:
            if first_in_table:  # the held row was the last of its table
                held = held._replace(snapshot=SnapshotMarker.resolve(
                    self.held_first_in_snapshot, False, self.held_first_in_table, True))
            self.pending.append(held)
            if len(self.pending) >= self.batch_size:
                self.ctx.emit(Batch(self.pending))
                self.pending = []
                self.rows_scanned[self.name] = self.scanned
                self.now_ms = int(time.time() * 1000)
                if self.ctx.stopping.is_set():
                    raise _Aborted
        first_in_snapshot = held is None
        self.held = ChangeRecord(
            self.context, codec.schema, Op.READ, None, codec.convert(fields), self.now_ms,
            self.now_ms,
            SnapshotMarker.resolve(first_in_snapshot, False, first_in_table, False)
            if first_in_table else SnapshotMarker.TRUE,
            self.position,
        )
        self.held_first_in_snapshot = first_in_snapshot
        self.held_first_in_table = first_in_table
        self.scanned += 1

    def on_chunk(self, table: ColumnarTable, template: TableTemplate, data: bytes) -> None:
        """Whole COPY lines of the current table: its first row, the chunk's last row (held
        back) and any row that follows the held one within the table take the row-wise path,
        for their markers; the rows between are rendered column-wise."""
        if self.held is None or self.held.table is not table.codec.schema:
            end = data.index(b"\n")
            self.on_row(parse_copy_line(data[:end].decode("utf-8")))
            data = data[end + 1:]
        if not data:
            return
        last = data.rfind(b"\n", 0, len(data) - 1) + 1
        if last:
            held = self.held
            assert held is not None
            records = table.render(data[:last], template)
            self.pending.append(held)
            self.ctx.emit(Batch(self.pending, rendered={template.topic: records}))
            self.pending = []
            self.scanned += len(records)
            self.rows_scanned[self.name] = self.scanned
            self.now_ms = int(time.time() * 1000)
            if self.ctx.stopping.is_set():
                raise _Aborted
            self.held = None  # on_row must not emit it again; it is the table's row, not first
            self.held_first_in_snapshot = self.held_first_in_table = False
            self._hold(parse_copy_line(data[last:-1].decode("utf-8")), SnapshotMarker.TRUE)
        else:
            self.on_row(parse_copy_line(data[:-1].decode("utf-8")))

    def _hold(self, fields: list[str | None], marker: SnapshotMarker) -> None:
        codec = self.codec
        assert codec is not None
        self.held = ChangeRecord(
            self.context, codec.schema, Op.READ, None, codec.convert(fields), self.now_ms,
            self.now_ms, marker, self.position)
        self.scanned += 1

    def finish(self) -> list[ChangeRecord]:
        if self.held is not None:
            self.pending.append(self.held._replace(snapshot=SnapshotMarker.LAST))
            self.held = None
        return self.pending


class PostgresSnapshotSource:
    def __init__(
        self,
        *,
        dsn: dict[str, Any],
        context: SourceContext,
        snapshot_name: str,
        consistent_lsn: int,
        tables: list[tuple[TableInfo, TableCodec]],
        fetch_size: int,
        lock_timeout_ms: int,
        metrics: CaptureMetrics,
        final_offset: dict[str, Any],
        max_threads: int = 1,
        config: PostgresConnectorConfig | None = None,
        database: str = "",
        columnar: bool = True,
        columnar_min_blocks: int = COLUMNAR_MIN_BLOCKS,
    ) -> None:
        self.dsn = dsn
        self.context = context
        self.snapshot_name = snapshot_name
        self.consistent_lsn = consistent_lsn
        self.tables = tables
        self.batch_size = max(1, fetch_size)
        self.lock_timeout_ms = lock_timeout_ms
        self.metrics = metrics
        self.final_offset = final_offset
        self.max_threads = max_threads
        self.config = config  # the workers rebuild the codecs from it
        self.database = database
        # Column-wise chunks (snapshot_columnar.py) where the output format allows; False
        # keeps every row on the row-wise path (the reference the column-wise one is tested
        # against).
        self.columnar = columnar
        self.columnar_min_blocks = columnar_min_blocks

    def execute(self, ctx: SourceRunContext) -> dict[str, Any] | None:
        conn = connect(self.dsn, application_name="headwater-snapshot")
        try:
            return self._run(conn, ctx)
        except _Aborted:
            log.info("snapshot aborted by stop request; it restarts from the beginning next "
                     "run, which deletes the rows this one read that are gone by then")
            return None
        finally:
            conn.close()

    def _run(self, conn: Any, ctx: SourceRunContext) -> dict[str, Any] | None:
        conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
        cur = conn.cursor()
        cur.execute("SET TRANSACTION SNAPSHOT %s", (self.snapshot_name,))
        cur.execute("SELECT txid_snapshot_xmin(txid_current_snapshot())")
        tx_id = int(cur.fetchone()[0])
        log.info(
            "snapshot step: import exported snapshot %s at LSN %s (%d tables)",
            self.snapshot_name, format_lsn(self.consistent_lsn), len(self.tables),
        )
        cur.execute(f"SET LOCAL lock_timeout = {int(self.lock_timeout_ms)}")
        for info, _ in self.tables:
            log.info("snapshot step: lock %s.%s in ACCESS SHARE mode", info.schema, info.name)
            cur.execute(f"LOCK TABLE {qualified(info.schema, info.name)} IN ACCESS SHARE MODE")
        sizes = table_sizes(cur, [info.oid for info, _ in self.tables])
        self._start_metrics(sizes)

        position = PostgresPosition(self.consistent_lsn, self.consistent_lsn, None, tx_id)
        parallel = self.max_threads > 1 and ctx.renderer is not None and self.config is not None
        last: TopicBatch | None = None
        pending: list[ChangeRecord] = []
        if parallel and self.tables:
            last = self._read_parallel(ctx, position, sizes)
        else:
            pending = self._read_serial(cur, ctx, position, sizes)
        conn.commit()
        offset = dict(self.final_offset)
        offset["txId"] = tx_id
        ctx.emit(Batch(pending, offset=offset, rendered=last))
        log.info("snapshot step: completed; streaming continues from its consistent point")
        return offset

    def _start_metrics(self, sizes: dict[int, TableSize]) -> None:
        m = self.metrics
        m.total_table_count = m.remaining_table_count = len(self.tables)
        for info, _ in self.tables:
            name = f"{info.schema}.{info.name}"
            m.rows_scanned[name] = 0
            size = sizes.get(info.oid)
            m.rows_estimated[name] = size.estimated_rows if size is not None else -1

    def _read_serial(
        self, cur: Any, ctx: SourceRunContext, position: PostgresPosition,
        sizes: dict[int, TableSize],
    ) -> list[ChangeRecord]:
        emitter = _Emitter(ctx, self.context, position, self.batch_size, self.metrics.rows_scanned)
        for info, codec in self.tables:
            if ctx.stopping.is_set():
                raise _Aborted
            name = f"{info.schema}.{info.name}"
            started = time.monotonic()
            emitter.begin_table(name, codec)
            self.metrics.table_started(name)
            cols = ", ".join(quote_ident(c.name) for c in codec.incoming)
            sql = f"COPY (SELECT {cols} FROM {qualified(info.schema, info.name)}) TO STDOUT"
            log.info("snapshot step: read %s", name)
            size = sizes.get(info.oid)
            small = size is not None and size.blocks < self.columnar_min_blocks
            columnar = None if small else self._columnar(ctx, codec, name, position, emitter)
            if columnar is None:
                cur.copy_expert(sql, CopySink(emitter.on_row), size=1 << 16)
            else:
                from headwater.connectors.postgres.snapshot_columnar import ChunkedCopySink

                table, on_chunk = columnar
                sink = ChunkedCopySink(on_chunk, min(self.batch_size, COLUMNAR_CHUNK_ROWS))
                cur.copy_expert(sql, sink, size=1 << 16)
                sink.close()
                if table.slow_values:
                    log.info("snapshot step: read %s: %d values of kernel columns were not in "
                             "a form their kernel takes and went through their converter",
                             name, table.slow_values)
            self.metrics.rows_scanned[name] = emitter.scanned
            self.metrics.table_done(name)
            log.info(
                "snapshot step: read %s done, %d rows in %.1fs",
                name, emitter.scanned, time.monotonic() - started,
            )
        return emitter.finish()

    def _columnar(self, ctx: SourceRunContext, codec: TableCodec, name: str,
                  position: PostgresPosition, emitter: _Emitter
                  ) -> tuple[ColumnarTable, Callable[[bytes], None]] | None:
        """The column-wise reader of the table and its chunk handler, None to read it
        row-wise."""
        if not self.columnar:
            return None
        if not getattr(ctx.renderer, "splices_values", False):
            log.info("snapshot step: read %s row-wise: the output format (transforms, "
                     "converters or the Datastream format) is not rendered column-wise", name)
            return None
        if not kernels_installed():
            log.warning("snapshot step: read %s row-wise: numba, which compiles the "
                        "column-wise kernels, is not installed (pip install numba, or "
                        "'headwater[spark]')", name)
            return None
        from headwater.connectors.postgres.snapshot_columnar import ColumnarTable, table_template

        renderer = ctx.renderer
        if table_template(renderer, codec, self.context, position, emitter.now_ms) is None:
            log.warning("snapshot step: read %s row-wise: its events are not values spliced "
                        "between constant bytes", name)
            return None
        table = ColumnarTable(codec, name)
        templates: dict[int, TableTemplate] = {}

        def on_chunk(data: bytes) -> None:
            now = emitter.now_ms
            template = templates.get(now)
            if template is None:
                templates.clear()
                template = table_template(renderer, codec, self.context, position, now)
                assert template is not None  # the same renderer cut it above
                templates[now] = template
            emitter.on_chunk(table, template, data)

        return table, on_chunk

    def _read_parallel(
        self, ctx: SourceRunContext, position: PostgresPosition, sizes: dict[int, TableSize]
    ) -> TopicBatch | None:
        """Reads every chunk in worker processes; returns the snapshot's `last` event."""
        from headwater.connectors.postgres.snapshot_workers import ReaderSpec, open_reader

        assert self.config is not None
        infos = tuple(info for info, _ in self.tables)
        names = [f"{i.schema}.{i.name}" for i in infos]
        chunks = plan_chunks([sizes.get(i.oid, TableSize(0, -1, False)) for i in infos],
                             self.max_threads)
        spec = WorkerSpec(
            open_reader,
            ReaderSpec(self.dsn, self.snapshot_name, self.config, self.database, infos,
                       self.context, position, self.columnar),
            ctx.renderer,
            self.batch_size,
        )
        try:
            return read_in_workers(ctx.emit, ctx.stopping, spec, chunks, names,
                                   self.max_threads, self.metrics)
        except SnapshotStopped:
            raise _Aborted from None
