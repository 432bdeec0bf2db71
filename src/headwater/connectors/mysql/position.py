"""Where a MySQL change sits in the binlog, the offsets a restart resumes from, and the `source`
block Debezium derives from both.

Binlog events are in commit order, so (file number, position of the row event, row number in
the event) orders every change; snapshot events carry the snapshot's binlog position and row 0.

Offsets follow Debezium's MySQL offsets: the restart point is the *start of the transaction*
being read (`file`, `pos`, and `gtids` = the GTID set of transactions completed before it),
plus `event` (row events of that transaction already emitted) and `row` (rows of the next row
event already emitted).  Resuming re-reads the transaction and skips that many events and rows,
so a restart in the middle of a multi-row event or a multi-statement transaction emits every
row exactly once.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

from headwater.connectors.mysql.binlog.gtid import GtidSet, GtidSetError
from headwater.connectors.mysql.server import server_for
from headwater.model.record import ChangeRecord, SourceContext
from headwater.model.schema import ConnectSchema, TableSchema
from headwater.model.source_block import (
    common_source_values,
    json_constant,
    json_head,
    snapshot_json,
    source_fields,
    source_schema,
)

log = logging.getLogger("headwater.connectors.mysql")


def binlog_file_number(name: str) -> int:
    """The numeric suffix of a binlog file name ("mysql-bin.000012" -> 12)."""
    _, _, suffix = name.rpartition(".")
    try:
        return int(suffix)
    except ValueError:
        raise ValueError(f"'{name}' is not a binlog file name (<base>.<number>)") from None


def binlog_order(file: str, pos: int) -> tuple[int, int]:
    return (binlog_file_number(file), pos)


class MySqlPosition(NamedTuple):
    file: str  # binlog file of the event
    pos: int  # position of the row event in `file` (snapshot: the snapshot's position)
    row: int  # row number within the event
    server_id: int
    gtid: str | None  # GTID of the transaction (MariaDB "domain-server-seq", MySQL "uuid:n")
    thread: int | None
    query: str | None
    ts_sec: int = 0

    @property
    def order_key(self) -> tuple[int, int, int]:
        return (binlog_file_number(self.file), self.pos, self.row)

    def source_fields(self) -> dict[str, Any]:
        """The `source` fields the position makes (headwater.model.position.Position)."""
        return {"server_id": self.server_id, "gtid": self.gtid, "file": self.file,
                "pos": self.pos, "row": self.row, "thread": self.thread, "query": self.query}


class TxStart(NamedTuple):
    """Where a transaction starts: a restart in it re-reads it from there, with the GTIDs of
    the transactions completed before it."""

    file: str
    pos: int
    gtids: str | None


def gtid_set_text(state: dict[int, str]) -> str:
    return ",".join(state[d] for d in sorted(state))


def parse_gtid_state(text: str | None) -> dict[int, str]:
    """MariaDB GTID position "0-1-10,1-2-5" as {domain: gtid}."""
    state: dict[int, str] = {}
    for raw in (text or "").split(","):
        part = raw.strip()
        if part:
            state[int(part.split("-", 1)[0])] = part
    return state


def mysql_gtid_set(text: str | None) -> GtidSet | None:
    """The offset's `gtids` when they are a MySQL GTID set (`uuid:1-5,...`, the executed set
    a MySQL snapshot stores), else None (none, or MariaDB's `domain-server-seq` position)."""
    if not text or ":" not in text:
        return None
    try:
        return GtidSet.parse(text)
    except GtidSetError as exc:
        raise GtidSetError(f"the offset's gtids {text!r}: {exc}") from None


Keep = Callable[[str], bool]  # gtid.source.includes/excludes: whether a source's GTIDs count


class MariaDbGtids:
    """MariaDB's offset `gtids`: the last GTID per replication domain, each committed
    transaction's replacing its domain's.  Kept only when the start offset had them: a
    position built from the GTIDs seen since a file/pos start would miss the other domains."""

    def __init__(self, text: str | None) -> None:
        self.offset_text = text
        self.state = parse_gtid_state(text)
        self.tracked = bool(self.state)

    def start(self, keep: Keep, connect: Callable[[], Any], offset: dict[str, Any]
              ) -> dict[str, Any]:
        """The binlog client's start: the GTIDs of accepted sources (MariaDB sources are
        "domain-server"); none (the offset's file/pos) if no GTID is left."""
        kept = ",".join(g.strip() for g in str(self.offset_text or "").split(",")
                        if g.strip() and keep(g.strip().rsplit("-", 1)[0]))
        return {"gtid_position": kept} if kept else {}

    def committed(self, gtid: str | None) -> None:
        if self.tracked and gtid is not None and "-" in gtid and ":" not in gtid:
            self.state[int(gtid.split("-", 1)[0])] = gtid

    def text(self) -> str | None:
        return gtid_set_text(self.state) or None


class MySqlGtids:
    """MySQL's offset `gtids`: the executed set, each committed transaction's GTID added (as
    Debezium's offset)."""

    def __init__(self, executed: GtidSet) -> None:
        self.executed = executed

    def start(self, keep: Keep, connect: Callable[[], Any], offset: dict[str, Any]
              ) -> dict[str, Any]:
        """The binlog client's start (COM_BINLOG_DUMP_GTID), as Debezium's
        MySqlConnection.filterGtidSet: the set, of the uuids `keep` keeps, over the server's
        @@gtid_purged (which the server requires a replica to have); none (the offset's
        file/pos) when the server does not run gtid_mode=ON.  The server is asked, not guessed
        from the set's text: a MariaDB server with a MySQL set is an error."""
        conn = connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT VERSION()")
                server = server_for(str(cur.fetchone()[0]))
                if server.mariadb:
                    raise GtidSetError(
                        f"the offset's gtids are a MySQL GTID set ({self.executed}), but the "
                        f"server is MariaDB ({server.version}), whose GTIDs are "
                        "domain-server-sequence: the offset is from another server")
                cur.execute("SELECT @@global.gtid_mode, @@global.gtid_purged")
                mode, purged = cur.fetchone()
        finally:
            conn.close()
        if str(mode).upper() != "ON":
            log.info("streaming: the offset has a MySQL GTID set but the server runs "
                     "gtid_mode=%s: from its file/pos %s:%s", mode, offset["file"],
                     offset["pos"])
            return {}
        kept = self.executed.retain(keep)
        return {"gtid_set": GtidSet.parse(str(purged or "")).overridden_by(kept)}

    def committed(self, gtid: str | None) -> None:
        if gtid is not None and ":" in gtid:
            self.executed = self.executed.add_gtid(gtid)

    def text(self) -> str | None:
        return str(self.executed)


def offset_gtids(text: str | None) -> MySqlGtids | MariaDbGtids:
    """The offset's `gtids` in their flavour (what the stream advances at each commit)."""
    executed = mysql_gtid_set(text)
    return MariaDbGtids(text) if executed is None else MySqlGtids(executed)


def restart_offset(
    file: str,
    pos: int,
    gtids: str | None,
    *,
    event: int = 0,
    row: int = 0,
    server_id: int = 0,
    ts_sec: int = 0,
) -> dict[str, Any]:
    """Debezium's MySQL offset keys: restart at (file, pos) / gtids, skip `event` row events and
    `row` rows of the next one."""
    offset: dict[str, Any] = {"file": file, "pos": pos, "event": event, "row": row,
                              "server_id": server_id, "ts_sec": ts_sec}
    if gtids:
        offset["gtids"] = gtids
    return offset


def binlog_source_schema(kind: str) -> ConnectSchema:
    """`io.debezium.connector.<kind>.Source`: Debezium 3.x names the binlog source block after
    the connector (`mysql`, or `mariadb` for its MariaDB connector class); same fields."""
    if kind == "mysql":
        return MYSQL_SOURCE_SCHEMA
    return dataclasses.replace(MYSQL_SOURCE_SCHEMA, name=f"io.debezium.connector.{kind}.Source")


MYSQL_SOURCE_SCHEMA = source_schema(
    "io.debezium.connector.mysql.Source",
    *source_fields("table: string?, server_id: int64, gtid: string?, file: string, pos: int64, "
                   "row: int32, thread: int64?, query: string?"),
)


class MySqlSourceBlock:
    """`io.debezium.connector.mysql.Source` (`mariadb.Source` for the MariaDB connector class)
    for a record with a MySqlPosition."""

    def __init__(self, kind: str = "mysql") -> None:
        self.schema = binlog_source_schema(kind)

    def payload(self, record: ChangeRecord) -> dict[str, Any]:
        pos: MySqlPosition = record.position
        table = record.table.id
        # Debezium 3.x's ts_us/ts_ns: the binlog event's time (whole seconds) in µs and ns
        block = common_source_values(record.context, record.source_ts_ms, record.snapshot,
                                     table.database)
        block.update(table=table.table, server_id=pos.server_id, gtid=pos.gtid, file=pos.file,
                     pos=pos.pos, row=pos.row, thread=pos.thread, query=pos.query)
        return block

    def json_renderer(self, table: TableSchema, context: SourceContext
                      ) -> Callable[[ChangeRecord], bytes]:
        """`payload`'s JSON for the records of `table` in `context`, with what depends only on
        them (version, connector, name, db, table) rendered once, and what depends on the
        row event (times, snapshot marker, server id, GTID, file, position, thread, query)
        once per run of records sharing it: per record only its row number is formatted
        between those bytes (the capture's hot path; the same bytes as
        `orjson.dumps(payload(record))`, tests/unit/mysql/test_binlog_streaming_cost.py).
        The rows of one rows event differ in `row` alone."""
        const = json_constant
        tid = table.id
        # The payload's JSON is `up_to_row`, the row number, `tail`: `%` templates of the
        # event's values.
        up_to_row = (
            json_head(context, tid.database)
            + b',"sequence":null,"ts_us":%d,"ts_ns":%d,"table":' + const(tid.table)
            + b',"server_id":%d,"gtid":%s,"file":%s,"pos":%d,"row":')
        tail = b',"thread":%s,"query":%s}'
        line = b"%b%d%b"
        snapshots = snapshot_json()
        dumps = orjson.dumps
        null = b"null"
        # (the event's values, its two parts): one object, replaced in one assignment, so
        # that a renderer shared by threads never pairs values and parts of two events
        last_seen: tuple[tuple[Any, ...], bytes, bytes] = ((), b"", b"")

        def render(record: ChangeRecord) -> bytes:
            nonlocal last_seen
            pos: MySqlPosition = record.position
            key = (record.source_ts_ms, record.snapshot, pos[:2], pos[3:])
            seen = last_seen
            if key != seen[0]:
                ts, gtid, thread, query = record.source_ts_ms, pos.gtid, pos.thread, pos.query
                seen = last_seen = (
                    key,
                    up_to_row % (ts, snapshots[record.snapshot._value_], ts * 1000,
                                 ts * 1_000_000, pos.server_id,
                                 null if gtid is None else dumps(gtid), dumps(pos.file),
                                 pos.pos),
                    tail % (null if thread is None else b"%d" % thread,
                            null if query is None else dumps(query)))
            return line % (seen[1], pos.row, seen[2])

        return render

    def schema_change_payload(
        self, context: Any, database: str, position: MySqlPosition, ts_ms: int, snapshot: Any
    ) -> dict[str, Any]:
        """The same block for a schema change event (no table)."""
        block = common_source_values(context, ts_ms, snapshot, database)
        block.update(table=None, server_id=position.server_id, gtid=position.gtid,
                     file=position.file, pos=position.pos, row=position.row,
                     thread=position.thread, query=None)
        return block
