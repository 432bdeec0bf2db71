"""Where a PostgreSQL change sits in the WAL, and the `source` block Debezium derives from it.

Streamed events are ordered by (commit_lsn, lsn): `lsn` alone is not commit order when
transactions interleave in the WAL, but transactions are decoded in commit order and every
event of one transaction shares its commit LSN.  Snapshot events carry the snapshot's
consistent point as both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from headwater.model.record import ChangeRecord, SourceContext
from headwater.model.schema import TableSchema
from headwater.model.source_block import (
    common_source_values,
    json_constant,
    json_head,
    snapshot_json,
    source_fields,
    source_schema,
)


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

    @property
    def sequence(self) -> str:
        """`source.sequence`: the stringified JSON array ["<last commit lsn>", "<lsn>"]."""
        last = self.last_commit_lsn
        return f'["{last}","{self.lsn}"]' if last is not None else f'[null,"{self.lsn}"]'

    def source_fields(self) -> dict[str, Any]:
        """The `source` fields the position makes (headwater.model.position.Position)."""
        return {"sequence": self.sequence, "txId": self.tx_id, "lsn": self.lsn, "xmin": self.xmin}


POSTGRES_SOURCE_SCHEMA = source_schema(
    "io.debezium.connector.postgresql.Source",
    # origin, origin_lsn: Debezium 3.x's replication origin of the transaction (pgoutput
    # Origin message); Headwater does not decode origins yet, so both are null as for local
    # changes.
    *source_fields("schema: string, table: string, txId: int64?, lsn: int64?, xmin: int64?, "
                   "origin: string?, origin_lsn: int64?"),
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
        # Debezium 3.x's source.ts_us/ts_ns: the commit time's microseconds (pgoutput sends
        # them); snapshot reads and non-transactional messages have milliseconds only (None).
        block = common_source_values(record.context, record.source_ts_ms, record.snapshot,
                                     table.database, pos.commit_ts_us)
        block["sequence"] = pos.sequence
        block.update(schema=table.schema, table=table.table, txId=pos.tx_id, lsn=pos.lsn,
                     xmin=pos.xmin, origin=None, origin_lsn=None)
        return block

    def json_renderer(self, table: TableSchema, context: SourceContext
                      ) -> Callable[[ChangeRecord], bytes]:
        """`payload`'s JSON for the records of `table` in `context`, with what depends only on
        them (version, connector, name, db, schema, table) rendered once, and what depends on
        the transaction (times, snapshot marker, last commit LSN, txId, xmin) once per run of
        records sharing it: per event only the change's LSN is formatted, twice, between
        those bytes (the capture's hot path; the same bytes as `orjson.dumps(payload(record))`,
        tests/unit/test_debezium_format.py).  Formatting the nine numbers per event cost
        ~1.5 us, the LSN alone ~0.5 (bench/capture_vs_pg_recvlogical.py's profile)."""
        const = json_constant
        tid = table.id
        # The payload's JSON is `up_to_lsn`, the LSN (in `sequence`, a stringified array
        # ["<last commit lsn>","<lsn>"] inside a JSON string), `between`, the LSN again
        # (`lsn`), `tail`: the three parts are `%` templates of the transaction's numbers.
        up_to_lsn = json_head(context, tid.database) + b',"sequence":"[%s,\\"'
        between = (b'\\"]","ts_us":%d,"ts_ns":%d,"schema":' + const(tid.schema)
                   + b',"table":' + const(tid.table) + b',"txId":%s,"lsn":')
        tail = b',"xmin":%s,"origin":null,"origin_lsn":null}'
        line = b"%b%d%b%d%b"
        snapshots = snapshot_json()
        null = b"null"
        # (the transaction's numbers, its three parts): one object, replaced in one
        # assignment, so that a renderer shared by threads never pairs numbers and parts of
        # two transactions
        last_seen: tuple[tuple[Any, ...], bytes, bytes, bytes] = ((), b"", b"", b"")

        def render(record: ChangeRecord) -> bytes:
            nonlocal last_seen
            pos: PostgresPosition = record.position
            key = (record.source_ts_ms, record.snapshot, pos.last_commit_lsn, pos.commit_ts_us,
                   pos.tx_id, pos.xmin)
            seen = last_seen
            if key != seen[0]:
                ts_ms, snapshot, last, ts_us, tx_id, xmin = key
                if ts_us is None:
                    ts_us = ts_ms * 1000
                seen = last_seen = (
                    key,
                    up_to_lsn % (ts_ms, snapshots[snapshot._value_],
                                 null if last is None else b'\\"%d\\"' % last),
                    between % (ts_us, ts_us * 1000, null if tx_id is None else b"%d" % tx_id),
                    tail % (null if xmin is None else b"%d" % xmin,))
            lsn = pos.lsn
            return line % (seen[1], lsn, seen[2], lsn, seen[3])

        return render
