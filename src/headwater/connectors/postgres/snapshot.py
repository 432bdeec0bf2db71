"""The initial snapshot: every captured row as a READ event, at the replication slot's start.

The slot is created with an exported snapshot; this source imports it (`SET TRANSACTION
SNAPSHOT`) into a REPEATABLE READ, READ ONLY transaction, so it sees exactly the data as of the
slot's consistent point and streaming from that point continues with no gap and no overlap.
Tables are read with `COPY (SELECT ...) TO STDOUT` in text format: the same output functions
pgoutput uses, so one set of converters serves both, and COPY streams rows without a cursor
round trip per fetch.  The steps, their logs and the events' markers are the relational base's
(relational/snapshot.py); this module supplies PostgreSQL's part of each.

With `snapshot.max.threads` > 1 the tables are split into block-range chunks
(snapshot_chunks.py) read by worker processes (snapshot_workers.py, engine/parallel.py), each
importing the same exported snapshot; this connection still imports it first, takes the locks,
and keeps its transaction open until every chunk is read.  See docs/snapshots-parallel.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from headwater.connectors.postgres.catalog import TableInfo
from headwater.connectors.postgres.columnar_kinds import kernels_installed
from headwater.connectors.postgres.config import PostgresConnectorConfig
from headwater.connectors.postgres.connection import qualified, quote_ident, snapshot_connection
from headwater.connectors.postgres.copy_text import ChunkedCopySink, CopySink, parse_copy_line
from headwater.connectors.postgres.pgoutput import format_lsn
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.snapshot_chunks import TableSize, plan_chunks, table_sizes
from headwater.connectors.postgres.tables import TableCodec
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.source import SourceRunContext
from headwater.model.record import SourceContext, SourceEvent
from headwater.model.schema import TableSchema
from headwater.model.topic import TopicBatch
from headwater.relational.snapshot import RelationalSnapshotSource, RowSink, SnapshotEmitter

if TYPE_CHECKING:  # snapshot_columnar (numpy) loads only when a snapshot reads column-wise
    from headwater.connectors.postgres.snapshot_columnar import ColumnarTable, TableTemplate

log = logging.getLogger("headwater.connectors.postgres.snapshot")

# Rows per column-wise chunk: ~3 KB per event with schemas, so a few MB of events in flight.
COLUMNAR_CHUNK_ROWS = 1024
# Tables of fewer heap blocks (8 KB each; 1 MB, a few thousand rows) are read row-wise.  The
# threshold was set when the kernels were numba's (loading them cost a capture process about a
# second, more than such a table's whole read); the C kernels cost numpy's import (~0.1 s), so
# it could come down, which has not been measured yet.
COLUMNAR_MIN_BLOCKS = 128

def copy_sql(info: TableInfo, codec: TableCodec, where: str) -> str:
    cols = ", ".join(quote_ident(c.name) for c in codec.incoming)
    select = f"SELECT {cols} FROM {qualified(info.schema, info.name)}"
    return f"COPY ({select}{' WHERE ' + where if where else ''}) TO STDOUT"


def columnar_table(renderer: Any, codec: TableCodec, context: SourceContext, position: Any,
                   name: str, enabled: bool) -> ColumnarTable | None:
    """The table's column-wise reader (snapshot_columnar.py), None to read it row-wise."""
    if not enabled:
        return None
    if not getattr(renderer, "splices_values", False):
        log.info("snapshot step: read %s row-wise: the output format (transforms, "
                 "converters or the Datastream format) is not rendered column-wise", name)
        return None
    if not kernels_installed():  # (it said why, once)
        return None
    from headwater.connectors.postgres.snapshot_columnar import ColumnarTable, table_template

    if table_template(renderer, codec, context, position, 0) is None:
        log.warning("snapshot step: read %s row-wise: its events are not values spliced "
                    "between constant bytes", name)
        return None
    return ColumnarTable(codec, name)


def copy_rows(cur: Any, sql: str, codec: TableCodec, rows: RowSink, columns: ColumnarTable | None,
              renderer: Any, context: SourceContext, batch_size: int) -> None:
    """The rows of `COPY ... TO STDOUT` to `rows`: row-wise, or with `columns` column-wise,
    where a table's first row and each piece's last go row-wise (for their markers) and the
    rows between are rendered by the kernels."""
    add, convert = rows.add, codec.convert

    def on_row(fields: list[str | None]) -> None:
        add(convert(fields))

    if columns is None:
        cur.copy_expert(sql, CopySink(on_row), size=1 << 16)
        return
    from headwater.connectors.postgres.snapshot_columnar import table_template

    templates: dict[int, TableTemplate] = {}

    def on_chunk(data: bytes) -> None:
        if not rows.table_rows:
            end = data.index(b"\n")
            on_row(parse_copy_line(data[:end].decode("utf-8")))
            data = data[end + 1:]
        last = data.rfind(b"\n", 0, len(data) - 1) + 1
        if not last:
            if data:
                on_row(parse_copy_line(data[:-1].decode("utf-8")))
            return
        now = rows.now_ms
        template = templates.get(now)
        if template is None:
            templates.clear()
            template = table_template(renderer, codec, context, rows.position, now)
            assert template is not None  # the same renderer cut it before
            templates[now] = template
        records = columns.render(data[:last], template)
        rows.add_rendered({template.topic: records}, len(records),
                          convert(parse_copy_line(data[last:-1].decode("utf-8"))))

    sink = ChunkedCopySink(on_chunk, min(batch_size, COLUMNAR_CHUNK_ROWS))
    cur.copy_expert(sql, sink, size=1 << 16)
    sink.close()
    if columns.slow_values:
        log.info("snapshot step: read %s: %d values of kernel columns were not in a form "
                 "their kernel takes and went through their converter",
                 columns.name, columns.slow_values)


class PostgresSnapshotSource(RelationalSnapshotSource[tuple[TableInfo, TableCodec]]):
    """The snapshot's steps (relational.snapshot) with PostgreSQL's part of each."""

    log = log

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
        self.max_threads = max_threads
        self.config = config  # the workers rebuild the codecs from it
        self.snapshot_delay_ms = config.snapshot_delay_ms if config is not None else 0
        self.database = database
        # Column-wise chunks (snapshot_columnar.py) where the output format allows; False
        # keeps every row on the row-wise path (the reference the column-wise one is tested
        # against).
        self.columnar = columnar
        self.columnar_min_blocks = columnar_min_blocks
        self.conn: Any = None
        self.sizes: dict[int, TableSize] = {}

    # -- the steps' PostgreSQL part ----------------------------------------------------------------
    def begin(self, ctx: SourceRunContext) -> None:
        """Imports the slot's exported snapshot into a REPEATABLE READ, READ ONLY transaction."""
        self.conn, cur = snapshot_connection(self.dsn, self.snapshot_name, "headwater-snapshot")
        self.cur = cur
        cur.execute("SELECT txid_snapshot_xmin(txid_current_snapshot())")
        self.tx_id = int(cur.fetchone()[0])

    def captured_tables(self) -> list[tuple[TableInfo, TableCodec]]:
        return self.tables

    def table_name(self, table: tuple[TableInfo, TableCodec]) -> str:
        return f"{table[0].schema}.{table[0].name}"

    def schema_of(self, table: tuple[TableInfo, TableCodec]) -> TableSchema:
        return table[1].schema

    def lock(self, tables: list[tuple[TableInfo, TableCodec]]) -> str:
        self.cur.execute(f"SET LOCAL lock_timeout = {int(self.lock_timeout_ms)}")
        for info, _ in tables:
            self.cur.execute(f"LOCK TABLE {qualified(info.schema, info.name)} "
                             "IN ACCESS SHARE MODE")
        return f"{len(tables)} tables in ACCESS SHARE mode"

    def read_position(self) -> tuple[PostgresPosition, str]:
        lsn = self.consistent_lsn
        return (PostgresPosition(lsn, lsn, None, self.tx_id),
                f"LSN {format_lsn(lsn)}, of the exported snapshot {self.snapshot_name}")

    def capture_schema(self, tables: list[tuple[TableInfo, TableCodec]],
                       position: Any) -> tuple[list[SourceEvent], str]:
        return [], f"{len(tables)} tables, described from the catalog at start"

    def release(self) -> str:
        return "ACCESS SHARE locks are kept until the snapshot transaction ends"

    def estimates(self, tables: list[tuple[TableInfo, TableCodec]], parallel: bool) -> list[int]:
        self.sizes = table_sizes(self.cur, [info.oid for info, _ in tables])
        return [size.estimated_rows if (size := self.sizes.get(info.oid)) is not None else -1
                for info, _ in tables]

    def parallel_possible(self) -> bool:
        return self.config is not None

    def commit(self) -> dict[str, Any]:
        self.conn.commit()
        return {"lsn": self.consistent_lsn, "snapshot_completed": True, "txId": self.tx_id}

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def read_table(self, table: tuple[TableInfo, TableCodec], emitter: SnapshotEmitter) -> None:
        info, codec = table
        name = f"{info.schema}.{info.name}"
        size = self.sizes.get(info.oid)
        small = size is not None and size.blocks < self.columnar_min_blocks
        columns = None if small else columnar_table(
            self.ctx.renderer, codec, self.context, emitter.position, name, self.columnar)
        copy_rows(self.cur, copy_sql(info, codec, ""), codec, emitter, columns,
                  self.ctx.renderer, self.context, self.batch_size)

    def read_in_workers(self, ctx: SourceRunContext, tables: list[tuple[TableInfo, TableCodec]],
                        release: Callable[[], None]) -> TopicBatch | None:
        """Every block-range chunk (snapshot_chunks.py) in worker processes, each importing
        the same exported snapshot; this connection keeps its transaction open meanwhile."""
        from headwater.connectors.postgres.snapshot_workers import ReaderSpec, open_reader

        assert self.config is not None
        infos = tuple(info for info, _ in tables)
        chunks = plan_chunks([self.sizes.get(i.oid, TableSize(0, -1, False)) for i in infos],
                             self.max_threads)
        return self.workers(ctx, tables, open_reader, ReaderSpec(
            self.dsn, self.snapshot_name, self.config, self.database, infos, self.context,
            self.position, self.columnar), chunks)
