"""The PostgreSQL chunk reader that runs in each snapshot worker process.

Each worker opens its own connection and imports the same exported snapshot as the parent
(`SET TRANSACTION SNAPSHOT` in a REPEATABLE READ, READ ONLY transaction), so every chunk is
read at the slot's consistent point however many processes read.  It keeps that one
transaction for all its chunks.  Rows come from `COPY (SELECT ... WHERE <ctid range>) TO
STDOUT` and are converted by codecs the worker builds itself from the catalog description
(codecs hold closures that cannot be pickled; the same inputs give the same codec).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from headwater.connectors.postgres.catalog import TableInfo
from headwater.connectors.postgres.columnar_kinds import kernels_installed
from headwater.connectors.postgres.config import PostgresConnectorConfig
from headwater.connectors.postgres.connection import connect, qualified, quote_ident
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.snapshot import (
    COLUMNAR_CHUNK_ROWS,
    CopySink,
    parse_copy_line,
)
from headwater.connectors.postgres.snapshot_chunks import Chunk
from headwater.connectors.postgres.tables import TableCodec, incoming_from_catalog
from headwater.engine.parallel import ChunkEmitter
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext

if TYPE_CHECKING:  # numba loads with snapshot_columnar, only when a snapshot reads column-wise
    from headwater.connectors.postgres.snapshot_columnar import ColumnarTable

log = logging.getLogger("headwater.connectors.postgres.snapshot")


class ReaderSpec(NamedTuple):
    """What a worker needs to read chunks (pickled to the spawned process)."""

    dsn: dict[str, Any]
    snapshot_name: str
    config: PostgresConnectorConfig
    database: str
    tables: tuple[TableInfo, ...]
    context: SourceContext
    position: PostgresPosition
    columnar: bool = True  # PostgresSnapshotSource.columnar


def open_reader(spec: ReaderSpec) -> PostgresChunkReader:
    """The worker factory: connects and imports the snapshot."""
    return PostgresChunkReader(spec)


def copy_sql(info: TableInfo, codec: TableCodec, chunk: Chunk) -> str:
    cols = ", ".join(quote_ident(c.name) for c in codec.incoming)
    where = chunk.where()
    select = f"SELECT {cols} FROM {qualified(info.schema, info.name)}"
    return f"COPY ({select}{' WHERE ' + where if where else ''}) TO STDOUT"


class PostgresChunkReader:
    def __init__(self, spec: ReaderSpec) -> None:
        from headwater.connectors.postgres.connector import PostgresConnector

        self.spec = spec
        self._codecs: dict[int, TableCodec] = {}
        self._tables: dict[int, ColumnarTable] = {}
        # The connector builds codecs from the configuration exactly as the parent did.
        self._connector = PostgresConnector(spec.config)
        self._connector.database = spec.database
        self.conn = connect(spec.dsn, application_name="headwater-snapshot-worker")
        self.conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
        self.cur = self.conn.cursor()
        self.cur.execute("SET TRANSACTION SNAPSHOT %s", (spec.snapshot_name,))

    def _codec(self, table: int) -> TableCodec:
        codec = self._codecs.get(table)
        if codec is None:
            info = self.spec.tables[table]
            codec = self._connector._codec_for(info, incoming_from_catalog(info))
            self._codecs[table] = codec
        return codec

    def read(self, chunk: Chunk, emitter: ChunkEmitter) -> None:
        codec = self._codec(chunk.table)
        convert = codec.convert
        schema = codec.schema
        context = self.spec.context
        position = self.spec.position
        read_op, true = Op.READ, SnapshotMarker.TRUE
        add = emitter.add
        batch = emitter.batch_size
        now_ms = int(time.time() * 1000)
        count = 0

        def on_row(fields: list[str | None]) -> None:
            nonlocal now_ms, count
            count += 1
            if count % batch == 0:
                now_ms = int(time.time() * 1000)
            add(ChangeRecord(
                context, schema, read_op, None, convert(fields), now_ms, now_ms, true, position,
            ))

        sql = copy_sql(self.spec.tables[chunk.table], codec, chunk)
        columnar = self._columnar(chunk.table, codec, emitter, on_row)
        if columnar is None:
            self.cur.copy_expert(sql, CopySink(on_row), size=1 << 16)
            return
        from headwater.connectors.postgres.snapshot_columnar import ChunkedCopySink

        sink = ChunkedCopySink(columnar, min(batch, COLUMNAR_CHUNK_ROWS))
        self.cur.copy_expert(sql, sink, size=1 << 16)
        sink.close()

    def _columnar(self, table: int, codec: TableCodec, emitter: ChunkEmitter,
                  on_row: Callable[[list[str | None]], None]) -> Callable[[bytes], None] | None:
        """The column-wise chunk handler (snapshot_columnar.py), None to read row-wise: the
        chunk's first row goes through `on_row`, the rows up to each piece's last line are
        rendered column-wise and its last line is held back (it may be the chunk's last)."""
        renderer = emitter.renderer
        if (not self.spec.columnar or not getattr(renderer, "splices_values", False)
                or not kernels_installed()):  # (the main process said why)
            return None
        from headwater.connectors.postgres.snapshot_columnar import table_template

        info = self.spec.tables[table]
        context, position = self.spec.context, self.spec.position
        name = f"{info.schema}.{info.name}"
        if table_template(renderer, codec, context, position, 0) is None:
            log.warning("snapshot step: read %s row-wise: its events are not values spliced "
                        "between constant bytes", name)
            return None
        columnar = self._tables.get(table)
        if columnar is None:
            from headwater.connectors.postgres.snapshot_columnar import ColumnarTable

            columnar = self._tables[table] = ColumnarTable(codec, name)
        convert, schema = codec.convert, codec.schema
        started = [False]

        def on_chunk(data: bytes) -> None:
            if not started[0]:
                started[0] = True
                end = data.index(b"\n")
                on_row(parse_copy_line(data[:end].decode("utf-8")))
                data = data[end + 1:]
            last = data.rfind(b"\n", 0, len(data) - 1) + 1
            if not last:
                if data:
                    on_row(parse_copy_line(data[:-1].decode("utf-8")))
                return
            now_ms = int(time.time() * 1000)
            template = table_template(renderer, codec, context, position, now_ms)
            assert template is not None  # the same renderer cut it above
            records = columnar.render(data[:last], template)
            held = ChangeRecord(context, schema, Op.READ, None,
                                convert(parse_copy_line(data[last:-1].decode("utf-8"))),
                                now_ms, now_ms, SnapshotMarker.TRUE, position)
            emitter.add_rendered({template.topic: records}, len(records), held)

        return on_chunk

    def close(self) -> None:
        try:
            self.conn.rollback()
        finally:
            self.conn.close()
