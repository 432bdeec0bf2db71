"""The PostgreSQL chunk reader that runs in each snapshot worker process.

Each worker opens its own connection and imports the same exported snapshot as the parent
(`SET TRANSACTION SNAPSHOT` in a REPEATABLE READ, READ ONLY transaction), so every chunk is
read at the slot's consistent point however many processes read.  It keeps that one
transaction for all its chunks.  Rows come from `COPY (SELECT ... WHERE <ctid range>) TO
STDOUT` and are converted by codecs the worker builds itself from the catalog description
(codecs hold closures that cannot be pickled; the same inputs give the same codec), and go
through the serial snapshot's reading code (snapshot.copy_rows), row-wise or column-wise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from headwater.connectors.postgres.catalog import TableInfo
from headwater.connectors.postgres.config import PostgresConnectorConfig
from headwater.connectors.postgres.connection import snapshot_connection
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.snapshot import columnar_table, copy_rows, copy_sql
from headwater.connectors.postgres.snapshot_chunks import tid
from headwater.connectors.postgres.tables import TableCodec, incoming_from_catalog
from headwater.engine.parallel import ChunkEmitter
from headwater.model.record import SourceContext
from headwater.relational.snapshot import ChunkRows, RangeChunk

if TYPE_CHECKING:  # snapshot_columnar (numpy) loads only when a snapshot reads column-wise
    from headwater.connectors.postgres.snapshot_columnar import ColumnarTable

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


class PostgresChunkReader:
    def __init__(self, spec: ReaderSpec) -> None:
        from headwater.connectors.postgres.connector import PostgresConnector

        self.spec = spec
        self._codecs: dict[int, TableCodec] = {}
        self._tables: dict[int, ColumnarTable | None] = {}  # None: read row-wise
        # The connector builds codecs from the configuration exactly as the parent did.
        self._connector = PostgresConnector(spec.config)
        self._connector.database = spec.database
        self.conn, self.cur = snapshot_connection(spec.dsn, spec.snapshot_name,
                                                  "headwater-snapshot-worker")

    def _codec(self, table: int) -> TableCodec:
        codec = self._codecs.get(table)
        if codec is None:
            info = self.spec.tables[table]
            codec = self._connector._codec_for(info, incoming_from_catalog(info))
            self._codecs[table] = codec
        return codec

    def read(self, chunk: RangeChunk, emitter: ChunkEmitter) -> None:
        """The chunk's rows, read as the serial snapshot reads a table (snapshot.copy_rows)."""
        spec, codec = self.spec, self._codec(chunk.table)
        info = spec.tables[chunk.table]
        columns = self._tables.get(chunk.table)
        if columns is None and chunk.table not in self._tables:
            columns = self._tables[chunk.table] = columnar_table(
                emitter.renderer, codec, spec.context, spec.position,
                f"{info.schema}.{info.name}", spec.columnar)
        copy_rows(self.cur, copy_sql(info, codec, chunk.where("ctid", tid)), codec,
                  ChunkRows(emitter, spec.context, spec.position, codec.schema), columns,
                  emitter.renderer, spec.context, emitter.batch_size)

    def close(self) -> None:
        try:
            self.conn.rollback()
        finally:
            self.conn.close()
