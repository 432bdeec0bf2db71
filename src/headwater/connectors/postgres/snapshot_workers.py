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
from typing import Any, NamedTuple

from headwater.connectors.postgres.catalog import TableInfo
from headwater.connectors.postgres.config import PostgresConnectorConfig
from headwater.connectors.postgres.connection import connect, qualified, quote_ident
from headwater.connectors.postgres.position import PostgresPosition
from headwater.connectors.postgres.snapshot import CopySink
from headwater.connectors.postgres.snapshot_chunks import Chunk
from headwater.connectors.postgres.tables import TableCodec, incoming_from_catalog
from headwater.engine.parallel import ChunkEmitter
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext

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
        self.cur.copy_expert(sql, CopySink(on_row), size=1 << 16)

    def close(self) -> None:
        try:
            self.conn.rollback()
        finally:
            self.conn.close()
