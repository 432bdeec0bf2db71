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
from typing import Any, NamedTuple

from headwater.model.record import ChangeRecord
from headwater.model.schema import INT32, INT64, STRING, ConnectSchema
from headwater.model.source_block import common_source_values, source_field, source_schema


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
    source_field("table", STRING, True),
    source_field("server_id", INT64, False),
    source_field("gtid", STRING, True),
    source_field("file", STRING, False),
    source_field("pos", INT64, False),
    source_field("row", INT32, False),
    source_field("thread", INT64, True),
    source_field("query", STRING, True),
)


class MySqlSourceBlock:
    """`io.debezium.connector.mysql.Source` (`mariadb.Source` for the MariaDB connector class)
    for a record with a MySqlPosition."""

    def __init__(self, kind: str = "mysql") -> None:
        self.kind = kind
        self.schema = binlog_source_schema(kind)
        # id(table) -> (table, context, the block with its table's and context's values set):
        # those are rendered once per table version; per record only the position's values
        # are set into a copy (the key order is the template's, so the JSON is the same).
        self._templates: dict[int, tuple[Any, Any, dict[str, Any]]] = {}

    def __reduce__(self) -> tuple[Any, ...]:  # to snapshot workers: without the templates
        return (MySqlSourceBlock, (self.kind,))

    def _template(self, record: ChangeRecord) -> dict[str, Any]:
        table, context = record.table, record.context
        cached = self._templates.get(id(table))
        if cached is not None and cached[0] is table and cached[1] is context:
            return cached[2]
        tid = table.id
        template: dict[str, Any] = {
            "version": context.connector_version,
            "connector": context.kind,  # "mysql", or "mariadb" for the MariaDB class
            "name": context.server_name,
            "ts_ms": None,
            "snapshot": None,
            "db": tid.database,
            "sequence": None,
            # Debezium 3.x: the binlog event's time (whole seconds) in µs and ns
            "ts_us": None,
            "ts_ns": None,
            "table": tid.table,
            "server_id": None,
            "gtid": None,
            "file": None,
            "pos": None,
            "row": None,
            "thread": None,
            "query": None,
        }
        if len(self._templates) >= 1024:  # table versions come and go (DDL)
            self._templates.clear()
        self._templates[id(table)] = (table, context, template)
        return template

    def payload(self, record: ChangeRecord) -> dict[str, Any]:
        block = self._template(record).copy()
        pos: MySqlPosition = record.position
        ts = record.source_ts_ms
        block["ts_ms"] = ts
        block["snapshot"] = record.snapshot
        block["ts_us"] = ts * 1000
        block["ts_ns"] = ts * 1_000_000
        (block["server_id"], block["gtid"], block["file"], block["pos"], block["row"],
         block["thread"], block["query"]) = (
            pos.server_id, pos.gtid, pos.file, pos.pos, pos.row, pos.thread, pos.query)
        return block

    def schema_change_payload(
        self, context: Any, database: str, position: MySqlPosition, ts_ms: int, snapshot: Any
    ) -> dict[str, Any]:
        """The same block for a schema change event (no table)."""
        block = common_source_values(context, ts_ms, snapshot, database)
        block.update(table=None, server_id=position.server_id, gtid=position.gtid,
                     file=position.file, pos=position.pos, row=position.row,
                     thread=position.thread, query=None)
        return block
