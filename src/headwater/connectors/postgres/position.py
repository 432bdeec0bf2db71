"""Where a PostgreSQL change sits in the WAL, and the `source` block Debezium derives from it.

Streamed events are ordered by (commit_lsn, lsn): `lsn` alone is not commit order when
transactions interleave in the WAL, but transactions are decoded in commit order and every
event of one transaction shares its commit LSN.  Snapshot events carry the snapshot's
consistent point as both.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from headwater.model.record import ChangeRecord
from headwater.model.schema import INT64, STRING
from headwater.model.source_block import source_field, source_schema


class PostgresPosition(NamedTuple):
    lsn: int  # LSN of the change record (snapshot: consistent point)
    commit_lsn: int  # commit LSN of its transaction (snapshot: consistent point)
    # Debezium's `lastCommitLsn` (sequence[0]): the WAL position the server gave the Commit
    # message of the previous transaction (its end LSN), or of the last non-transactional
    # logical decoding message if that came later
    last_commit_lsn: int | None
    tx_id: int | None
    xmin: int | None = None
    # the transaction's commit time in microseconds since the Unix epoch (streamed events;
    # None: `source.ts_us` is the record's `source_ts_ms` x 1000)
    commit_ts_us: int | None = None

    @property
    def order_key(self) -> tuple[int, int]:
        return (self.commit_lsn, self.lsn)

    def source_fields(self) -> dict[str, Any]:
        """The `source` fields the position makes (headwater.model.position.Position)."""
        last = self.last_commit_lsn
        return {"sequence": f'["{last}","{self.lsn}"]' if last is not None
                else f'[null,"{self.lsn}"]',
                "txId": self.tx_id, "lsn": self.lsn, "xmin": self.xmin}


POSTGRES_SOURCE_SCHEMA = source_schema(
    "io.debezium.connector.postgresql.Source",
    source_field("schema", STRING, False),
    source_field("table", STRING, False),
    source_field("txId", INT64, True),
    source_field("lsn", INT64, True),
    source_field("xmin", INT64, True),
    # Debezium 3.x: the replication origin of the transaction (pgoutput Origin message);
    # Headwater does not decode origins yet, so both are null as for local changes.
    source_field("origin", STRING, True),
    source_field("origin_lsn", INT64, True),
    version=1,
)


class PostgresSourceBlock:
    """`io.debezium.connector.postgresql.Source` for a record with a PostgresPosition."""

    schema = POSTGRES_SOURCE_SCHEMA

    def __init__(self, kind: str = "postgresql") -> None:
        # `kind` (the builder passes every source block its `source.connector`) changes nothing
        # here: the PostgreSQL block has one schema name, and the payload reads the context.
        del kind

    def payload(self, record: ChangeRecord) -> dict[str, Any]:
        pos: PostgresPosition = record.position
        table = record.table.id
        last = pos.last_commit_lsn
        # The stringified JSON array ["<last commit lsn>", "<lsn>"] (an f-string: hot path).
        sequence = (
            f'["{last}","{pos.lsn}"]' if last is not None else f'[null,"{pos.lsn}"]'
        )
        # Debezium 3.x's source.ts_us/ts_ns: the commit time's microseconds (pgoutput sends
        # them); snapshot reads and non-transactional messages have milliseconds only.
        ts_us = pos.commit_ts_us
        if ts_us is None:
            ts_us = record.source_ts_ms * 1000
        return {
            "version": record.context.connector_version,
            "connector": record.context.kind,  # "postgresql"
            "name": record.context.server_name,
            "ts_ms": record.source_ts_ms,
            "snapshot": record.snapshot,  # an Enum: orjson writes its value
            "db": table.database,
            "sequence": sequence,
            "ts_us": ts_us,
            "ts_ns": ts_us * 1000,
            "schema": table.schema,
            "table": table.table,
            "txId": pos.tx_id,
            "lsn": pos.lsn,
            "xmin": pos.xmin,
            "origin": None,
            "origin_lsn": None,
        }
