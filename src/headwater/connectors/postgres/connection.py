"""Connections to PostgreSQL with the session settings our value conversion relies on.

Values are converted from PostgreSQL's text output, so every connection (the snapshot's COPY
and the walsender that runs pgoutput's output functions) must print them the same way: ISO
dates, UTC, shortest-exact floats, hex bytea, UTF-8.
"""

from __future__ import annotations

from typing import Any

import psycopg2
import psycopg2.extensions
import psycopg2.extras

SESSION_OPTIONS = (
    "-c DateStyle=ISO,MDY -c TimeZone=UTC -c extra_float_digits=3 "
    "-c IntervalStyle=postgres -c bytea_output=hex -c client_encoding=UTF8 -c lc_monetary=C"
)


def connect(dsn: dict[str, Any], *, replication: bool = False, application_name: str = "headwater"
            ) -> Any:
    """A psycopg2 connection (a LogicalReplicationConnection when `replication`)."""
    kwargs = dict(dsn)
    kwargs.setdefault("application_name", application_name)
    kwargs["options"] = SESSION_OPTIONS
    kwargs.setdefault("connect_timeout", 30)
    if replication:
        return psycopg2.connect(
            connection_factory=psycopg2.extras.LogicalReplicationConnection, **kwargs
        )
    conn = psycopg2.connect(**kwargs)
    return conn


def snapshot_connection(dsn: dict[str, Any], snapshot_name: str, application_name: str
                        ) -> tuple[Any, Any]:
    """A connection and cursor inside a REPEATABLE READ, READ ONLY transaction that imports
    the exported snapshot `snapshot_name`: the slot's consistent point, however many
    processes read it (the snapshot and each of its workers)."""
    conn = connect(dsn, application_name=application_name)
    conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
    cur = conn.cursor()
    cur.execute("SET TRANSACTION SNAPSHOT %s", (snapshot_name,))
    return conn, cur


def server_version(conn: Any) -> int:
    return int(conn.server_version)


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def qualified(schema: str, table: str) -> str:
    return f"{quote_ident(schema)}.{quote_ident(table)}"


# The WAL position up to which this server's committed transactions are visible, as text: on a
# primary the insert position; on a hot standby (where pg_current_wal_insert_lsn() fails with
# "recovery is in progress") the end of the last record replayed, since a standby makes a
# commit visible when it replays the commit record.  Every commit a snapshot taken before this
# query can see ends at or before the position it returns.
VISIBLE_WAL_POSITION_SQL = (
    "CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
    "ELSE pg_current_wal_insert_lsn() END::text"
)
