"""SQL Server streaming: every `poll.interval.ms`, each database's change tables are read from
the last processed LSN to the current maximum (or `max.iteration.transactions` further), merged
in (commit LSN, change LSN, serial) order by the change-table poller and dispatched.

Offsets are Debezium's three values per database (`commit_lsn`, `change_lsn`,
`event_serial_no`); a stored change LSN means the transaction may be unfinished, so the next
read starts at its commit LSN and the poller replays what was written.  The transaction id of
the metadata events is the commit LSN, as Debezium's SQL Server connector sets it.
The loop and the offset bookkeeping are the change-table base's
(relational.changetables.streaming); this module supplies SQL Server's reads.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from headwater.connectors.sqlserver import queries
from headwater.connectors.sqlserver.catalog import (
    CaptureInstance,
    capture_instances,
    change_tables,
)
from headwater.connectors.sqlserver.config import SqlServerConnectorConfig
from headwater.connectors.sqlserver.lsn import lsn_bytes, lsn_text
from headwater.connectors.sqlserver.position import SqlServerPosition
from headwater.connectors.sqlserver.types import definition_mapping
from headwater.model.schema import TableId
from headwater.relational.changetables import streaming as base
from headwater.relational.changetables.codecs import CodecCache
from headwater.relational.changetables.poller import ChangeRow
from headwater.relational.changetables.schema import ChangeTableSchema
from headwater.relational.changetables.schema_follower import SchemaFollower
from headwater.relational.changetables.streaming import LsnStream, LsnStreaming, epoch_us

__all__ = ["DatabaseStream", "SqlServerStreaming", "collection_name", "epoch_us", "fetched",
           "scalar"]

log = logging.getLogger("headwater.connectors.sqlserver")


def scalar(conn: Any, sql: str, database: str, params: tuple[Any, ...] = ()) -> Any:
    """`sql` in `database` (queries.with_db), its first value."""
    return base.scalar(conn, queries.with_db(sql, database), params)


def fetched(cur: Any, size: int) -> Iterator[Any]:
    """The rows of `cur`'s result, `size` at a time from the driver (`streaming.fetch.size`,
    Debezium's JDBC fetch size of the change-table query: DB-API's fetchmany); 0 is no
    limit (fetchall)."""
    if size <= 0:
        yield from cur.fetchall()
        return
    while batch := cur.fetchmany(size):
        yield from batch


def collection_name(table: TableId) -> str:
    """`database.schema.table`: Debezium's SQL Server table ids carry the database (its
    catalog), in transaction metadata and in signals."""
    return f"{table.database}.{table.schema}.{table.table}"


class DatabaseStream(LsnStream):
    """One database's position and change tables; with a `schema`, its table definitions
    come from the schema history and follow its capture instances (schema_follower)."""

    position_class = SqlServerPosition

    def __init__(self, cfg: SqlServerConnectorConfig, database: str, conn: Any,
                 offset: dict[str, Any] | None, schema: ChangeTableSchema | None = None) -> None:
        self.cfg = cfg
        self.database = database
        self.instances: list[CaptureInstance] = capture_instances(conn, cfg, database)
        self.known = change_tables(conn, database)
        super().__init__(conn, offset, lsn_bytes, lsn_text)
        if schema is not None:
            schema.recover(database, offset or {})
            self.follower = SchemaFollower(schema, CodecCache(cfg, definition_mapping(cfg)),
                                           self.current_position)
            self.follower.track(self.instances, self.commit)

    def to_lsn(self) -> bytes | None:
        n = self.cfg.max_iteration_transactions
        if n <= 0:
            value = scalar(self.conn, queries.GET_MAX_LSN, self.database)
        elif self.commit is None:
            value = scalar(self.conn, queries.GET_NTH_TRANSACTION_LSN_FROM_BEGINNING,
                           self.database, (n,))
        else:
            value = scalar(self.conn, queries.GET_NTH_TRANSACTION_LSN_FROM_LAST, self.database,
                           (n + 1, self.commit))
        return None if value is None else bytes(value)

    def tables(self) -> list[Any]:
        return list(self.instances)

    def increment(self, lsn: bytes) -> bytes:
        """sys.fn_cdc_increment_lsn on the server."""
        return bytes(scalar(self.conn, queries.INCREMENT_LSN, self.database, (lsn,)))

    def first_lsn(self, to_lsn: bytes) -> bytes:
        return bytes(10)

    def rows(self, instance: CaptureInstance, from_lsn: bytes, to_lsn: bytes) -> list[ChangeRow]:
        template = (queries.CHANGES_FUNCTION if self.cfg.data_query_mode == "function"
                    else queries.CHANGES_DIRECT)
        prefix = "cdc_data." if self.cfg.data_query_mode == "direct" else ""
        columns = ", ".join(prefix + queries.quote(c) for c in instance.columns)
        sql = template.replace("#columns", columns).replace("#ci", instance.name)
        start = max(from_lsn, instance.start_lsn)
        cur = self.conn.cursor()
        try:
            cur.execute(queries.with_db(sql, self.database), (start, to_lsn))
            out = []
            stop = instance.stop_lsn
            for row in fetched(cur, self.cfg.streaming_fetch_size):
                commit = bytes(row[0])
                if stop is not None and commit >= stop:
                    continue  # the newer capture instance has it
                out.append(ChangeRow(commit, bytes(row[1]), int(row[2]), tuple(row[4:-1]),
                                     row[-1]))
            return out
        finally:
            cur.close()

    def refresh(self) -> None:
        """Reloads the capture instances when the change tables changed: Debezium reads the
        change tables every iteration, so a second capture instance created after a schema
        change is read from its start LSN on (the older one up to it)."""
        current = change_tables(self.conn, self.database)
        if current != self.known:
            self.instances = capture_instances(self.conn, self.cfg, self.database)
            self.known = current
            if self.follower is not None:
                self.follower.track(self.instances, self.commit)
            log.info("database %s: capture instances now %s", self.database,
                     ", ".join(str(i) for i in self.instances))


class SqlServerStreaming(LsnStreaming[DatabaseStream]):
    """The streaming source: all databases, one dispatcher."""

    LABEL = "SQL Server"
    POSITION = SqlServerPosition
    cfg: SqlServerConnectorConfig

    def open_streams(self, offset: dict[str, Any]) -> list[DatabaseStream]:
        stored = offset.get("databases", {})
        schema = self.table_schema
        return [DatabaseStream(self.cfg, db, self.connect(db), stored.get(db),
                               schema() if schema is not None else None)
                for db in self.cfg.database_names]

    def stored_offset(self, streams: list[DatabaseStream]) -> dict[str, Any]:
        return {"snapshot_completed": True,
                "databases": {s.database: s.offset() for s in streams}}

    def collection_name(self, table: TableId) -> str:
        return collection_name(table)
