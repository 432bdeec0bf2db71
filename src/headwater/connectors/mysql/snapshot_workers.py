"""The parallel MySQL/MariaDB snapshot's chunks and the reader each worker process runs.

Chunks are key ranges (relational/key_ranges.py): InnoDB stores a table in its primary key's
order (the clustered index); only a single-column integer primary key is split (`split_key`),
every other table is one chunk.  MySQL has no equivalent of PostgreSQL's block (ctid) ranges.

Why every worker sees the same data: each opens its own `START TRANSACTION WITH CONSISTENT
SNAPSHOT` (REPEATABLE READ) while the parent holds the read lock (`FLUSH TABLES WITH READ
LOCK`, or the captured tables' read locks), so no captured row can change between the parent's
binlog position and any worker's snapshot; the parent releases the lock only after every
worker reported its snapshot open (see snapshot.py).  A worker keeps that one transaction for
all the chunks it reads.

Codecs hold closures and cannot cross the process boundary, so a worker builds them from the
table definitions (`MySqlTable`, parsed from `SHOW CREATE TABLE` by the parent), the type
modes and the configuration, with the same `configured_codec` call `SchemaState` makes: the same
inputs give the same codec.  Rows are read with the natural-value conversions of the serial
path (`snapshot_conversions`, FLOAT read as DOUBLE).
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

import pymysql  # type: ignore[import-untyped]
import pymysql.cursors  # type: ignore[import-untyped]

from headwater.connectors.mysql.columns import MySqlTable
from headwater.connectors.mysql.config import MySqlConnectorConfig
from headwater.connectors.mysql.connection import connect, qualified, quote_ident
from headwater.connectors.mysql.position import MySqlPosition
from headwater.connectors.mysql.tables import MySqlTableCodec, configured_codec
from headwater.connectors.mysql.text_values import select_list, snapshot_conversions
from headwater.connectors.mysql.types import MySqlTypeModes
from headwater.engine.parallel import ChunkEmitter
from headwater.model.record import SourceContext
from headwater.relational.key_ranges import TableSize
from headwater.relational.snapshot import ChunkRows, RangeChunk, RowSink
from headwater.relational.snapshot_splice import ChunkSplicer, chunk_splicer

log = logging.getLogger("headwater.connectors.mysql")

INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "BIGINT"})


def split_key(table: MySqlTable) -> str | None:
    """The column a table's chunks are cut on: its primary key if that is one integer column."""
    if len(table.primary_key) != 1:
        return None
    column = table.column(table.primary_key[0])
    return column.name if column.type_name in INTEGER_TYPES else None


def streams_results(size: TableSize, min_rows: int) -> bool:
    """Debezium's `min.row.count.to.stream.results`: a table estimated to hold more than
    `min_rows` rows is read with a streaming result set (rows arrive as they are fetched, the
    client's memory stays flat), a smaller one buffered whole (one read, faster for small
    tables); 0 streams every table.  An unknown estimate (TABLE_ROWS NULL) is buffered, as in
    Debezium, which streams only when the estimate says the table is large."""
    return min_rows == 0 or size.estimated_rows > min_rows


class ReaderSpec(NamedTuple):
    """What a worker needs to read chunks (pickled to the spawned process)."""

    config: MySqlConnectorConfig
    modes: MySqlTypeModes
    context: SourceContext
    position: MySqlPosition
    tables: tuple[MySqlTable, ...]
    streamed: tuple[bool, ...]  # per table: a streaming result set (streams_results)
    columnar: bool = True  # MySqlSnapshotSource.columnar


def select_rows(conn: Any, sql: str, streamed: bool, codec: MySqlTableCodec, rows: RowSink,
                batch_size: int, columns: ChunkSplicer | None = None) -> None:
    """The rows of `sql` to `rows`, `batch_size` at a time, converted column by column, from a
    streaming or a buffered result set (`streams_results`): a table's in the serial snapshot,
    a chunk's in a worker.  With `columns` (`splicer`) each chunk's records are rendered
    column-wise (relational/snapshot_splice.py), else row-wise by the runtime."""
    cur = conn.cursor(pymysql.cursors.SSCursor if streamed else pymysql.cursors.Cursor)
    try:
        cur.execute(sql)
        if columns is not None:
            while chunk := cur.fetchmany(batch_size):
                columns.add(chunk, rows)
            return
        while chunk := cur.fetchmany(batch_size):
            rows.add_many(codec.convert_rows(chunk))
    finally:
        cur.close()


def splicer(renderer: Any, codec: MySqlTableCodec, context: SourceContext, position: Any,
            enabled: bool) -> ChunkSplicer | None:
    """The table's column-wise renderer, None to read it row-wise (said in the log)."""
    if not enabled or renderer is None:
        return None
    table = codec.table
    return chunk_splicer(renderer, codec.schema, context, position, codec.convert_rows,
                         f"{table.database}.{table.name}", log)


def chunk_sql(table: MySqlTable, chunk: RangeChunk) -> str:
    """The SELECT of a chunk's rows (of the whole table: a chunk open on both sides)."""
    key = split_key(table)
    where = chunk.where(quote_ident(key)) if key is not None else ""
    select = f"SELECT {select_list(table)} FROM {qualified(table.database, table.name)}"
    return f"{select} WHERE {where}" if where else select


class MySqlChunkReader:
    """One worker's connection, inside its consistent snapshot, reading chunk after chunk.
    The class is the worker factory: it connects and opens the consistent snapshot (the
    parent still holds the read lock until every worker's factory has returned)."""

    def __init__(self, spec: ReaderSpec) -> None:
        self.spec = spec
        self._codecs: dict[int, MySqlTableCodec] = {}
        self._splicers: dict[int, ChunkSplicer | None] = {}
        self.conn = connect(spec.config, conv=snapshot_conversions())
        with self.conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")

    def _codec(self, index: int) -> MySqlTableCodec:
        codec = self._codecs.get(index)
        if codec is None:
            codec = configured_codec(self.spec.tables[index], self.spec.modes, self.spec.config)
            self._codecs[index] = codec
        return codec

    def read(self, chunk: RangeChunk, emitter: ChunkEmitter) -> None:
        codec, spec = self._codec(chunk.table), self.spec
        if chunk.table not in self._splicers:
            self._splicers[chunk.table] = splicer(emitter.renderer, codec, spec.context,
                                                  spec.position, spec.columnar)
        select_rows(self.conn, chunk_sql(spec.tables[chunk.table], chunk),
                    spec.streamed[chunk.table], codec,
                    ChunkRows(emitter, spec.context, spec.position, codec.schema),
                    emitter.batch_size, self._splicers[chunk.table])

    def close(self) -> None:
        try:
            self.conn.cursor().execute("COMMIT")
        finally:
            self.conn.close()
