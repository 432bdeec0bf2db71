"""The ``set-binlog-position`` signal (Debezium 3.x, MySQL and MariaDB): move the stream.

Debezium's SetBinlogPositionSignal takes ``{"binlog_filename": ..., "binlog_position": ...}``
or ``{"gtid_set": ...}`` (never both), writes the position into the offset and leaves the
connector to be restarted.  Headwater does the restart itself: the signal's transaction is the
last one read at the old position, the offset after it is the new position, and streaming
reconnects there (docs/compatibility.md).

Why check the position on the server first: Debezium only checks the shape (its messages are
kept), so a misspelled file or a position inside an event becomes a stored offset the next start
cannot use.  Here a file the server does not list, a position past its end or not at the start
of an event, or one inside a transaction (the rows after it would have no table map), rejects
the signal with an error naming it, and streaming goes on where it was.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from headwater.connectors.mysql.gtid_start import MARIADB_GTID, MYSQL_GTID
from headwater.connectors.mysql.position import restart_offset
from headwater.engine.signals import Signal, signal_data
from headwater.model.collection import SignalError

log = logging.getLogger("headwater.connectors.mysql.incremental")

NAME = "set-binlog-position"
# The offset key of the last set-binlog-position signal carried out.
MOVED_BY = "binlog_position_signal"

_FILENAME = re.compile(r"[a-zA-Z0-9_-]+\.\d{6}")  # Debezium's isValidBinlogFilename
# Events that only occur inside a transaction: starting at one reads rows without their
# transaction's table maps (SHOW BINLOG EVENTS' Event_type names).
_INSIDE_TRANSACTION = ("Table_map", "Write_rows", "Update_rows", "Delete_rows", "Xid",
                       "Annotate_rows", "Rows_query", "Intvar", "Rand", "User var")
FIRST_EVENT = 4  # a binlog file's magic number comes before its first event


@dataclass(frozen=True, slots=True)
class BinlogReposition:
    """Where a set-binlog-position signal moves the stream: a file position or a GTID set."""

    signal_id: str
    file: str | None = None
    pos: int | None = None
    gtids: str | None = None

    def describe(self) -> str:
        return f"GTID set {self.gtids}" if self.gtids else f"{self.file}:{self.pos}"

    def offset(self, current: dict[str, Any]) -> dict[str, Any]:
        """The restart offset.  A file position drops the stored GTIDs (a start prefers them);
        a GTID set keeps the current file name until the server's first rotate names it."""
        server_id = int(current.get("server_id", 0))
        if self.gtids:
            return restart_offset(str(current["file"]), int(current["pos"]), self.gtids,
                                  server_id=server_id)
        assert self.file is not None and self.pos is not None
        return restart_offset(self.file, self.pos, None, server_id=server_id)


class Repositioned(Exception):
    """A set-binlog-position signal moved the stream: the session ends, the next starts at
    `offset` (already handed to the runtime)."""

    def __init__(self, offset: dict[str, Any], describe: str) -> None:
        super().__init__(describe)
        self.offset = offset
        self.describe = describe


class PositionSignals:
    """A streaming session's set-binlog-position signals (the handler of the signal type):
    checked on the server when read, carried out by the streaming loop (`reposition`).  The
    last one carried out is remembered in the offsets: a move back to before its own row reads
    that row again, which must not move the stream again (and again)."""

    def __init__(self, conn: Callable[[], Any]) -> None:
        self._conn = conn  # a connection to check the position on
        self.reposition: BinlogReposition | None = None  # where the loop moves the stream
        self.moved_by: str | None = None  # the id of the last one carried out

    def start(self, offset: dict[str, Any]) -> None:
        self.moved_by = offset.get(MOVED_BY) or None

    def __call__(self, signal: Signal) -> None:
        if signal.id and signal.id == self.moved_by:
            log.info("signal %r (set-binlog-position): already carried out (read again after "
                     "the stream moved back); ignored", signal.id)
            return
        target = parse_reposition(signal)
        with self._conn().cursor() as cur:
            check_on_server(cur, target)
        log.info("signal %r: the stream moves to %s", signal.id, target.describe())
        self.reposition = target
        self.moved_by = signal.id

    def offset_fields(self) -> dict[str, Any]:
        return {MOVED_BY: self.moved_by} if self.moved_by else {}


def parse_reposition(signal: Signal) -> BinlogReposition:
    """The signal's data, checked as Debezium checks it (its messages, with the value)."""
    where = f"signal {signal.id!r} ({NAME})"
    doc = signal_data(signal)
    if not doc:
        raise SignalError(f"{where}: no data; give binlog_filename and binlog_position, "
                          "or gtid_set")
    filename = doc.get("binlog_filename")
    position = doc.get("binlog_position")
    gtids = doc.get("gtid_set")
    has_file = bool(filename) or position is not None
    has_gtid = bool(gtids)
    if has_file and has_gtid:
        raise SignalError(f"{where}: Cannot specify both binlog file/position and GTID set")
    if not has_file and not has_gtid:
        raise SignalError(f"{where}: Must specify either binlog file/position or GTID set")
    if has_gtid:
        if not isinstance(gtids, str):
            raise SignalError(f"{where}: Invalid GTID set format: {gtids!r}")
        text = ",".join(p.strip() for p in gtids.replace("\n", "").replace("\r", "").split(","))
        if not all(MARIADB_GTID.fullmatch(p) or MYSQL_GTID.fullmatch(p)
                   for p in text.split(",")):
            raise SignalError(f"{where}: Invalid GTID set format: {gtids}")
        return BinlogReposition(signal.id, gtids=text)
    if not filename:
        raise SignalError(f"{where}: Binlog filename must be specified when position is "
                          "provided")
    if position is None:
        raise SignalError(f"{where}: Binlog position must be specified when filename is "
                          "provided")
    if isinstance(position, bool) or not isinstance(position, int):
        raise SignalError(f"{where}: binlog_position must be an integer, not {position!r}")
    if position < 0:
        raise SignalError(f"{where}: Binlog position must be non-negative "
                          f"(binlog_position={position})")
    if not isinstance(filename, str) or not _FILENAME.fullmatch(filename):
        raise SignalError(f"{where}: Invalid binlog filename format: {filename}")
    return BinlogReposition(signal.id, file=filename, pos=position)


def check_on_server(cur: Any, target: BinlogReposition) -> None:
    """A SignalError unless the server can stream from `target` (cursor of a connection)."""
    where = f"signal {target.signal_id!r} ({NAME})"
    if target.gtids:
        _check_gtids(cur, target.gtids, where)
        return
    assert target.file is not None and target.pos is not None
    cur.execute("SHOW BINARY LOGS")
    sizes = {str(row[0]): int(row[1]) for row in cur.fetchall()}
    if target.file not in sizes:
        listed = f"{min(sizes)} .. {max(sizes)}" if sizes else "none"
        raise SignalError(f"{where}: binlog_filename={target.file} is not on the server "
                          f"(SHOW BINARY LOGS: {listed})")
    size = sizes[target.file]
    if target.pos < FIRST_EVENT or target.pos > size:
        raise SignalError(f"{where}: binlog_position={target.pos} is outside the events of "
                          f"{target.file} ({FIRST_EVENT} .. {size})")
    if target.pos == size:
        return  # the end of the file: the next event written
    try:
        cur.execute(f"SHOW BINLOG EVENTS IN '{target.file}' FROM {target.pos} LIMIT 1")
        rows = cur.fetchall()
    except Exception as exc:  # the server's "Wrong offset or I/O error"
        raise SignalError(f"{where}: binlog_position={target.pos} is not the start of an "
                          f"event in {target.file} ({exc})") from exc
    if not rows or int(rows[0][1]) != target.pos:
        raise SignalError(f"{where}: binlog_position={target.pos} is not the start of an "
                          f"event in {target.file}")
    kind, info = str(rows[0][2]), str(rows[0][5] or "")
    ends_transaction = kind == "Query" and info.upper().startswith(("COMMIT", "ROLLBACK"))
    if kind.startswith(_INSIDE_TRANSACTION) or ends_transaction:
        raise SignalError(f"{where}: binlog_position={target.pos} of {target.file} is inside "
                          f"a transaction (a {kind} event); give the position of a "
                          "transaction's first event (its GTID or BEGIN) or of a statement")


def _check_gtids(cur: Any, gtids: str, where: str) -> None:
    """MariaDB GTIDs only (Headwater starts from GTIDs there), each at most the domain's last
    GTID in the binlog (a later one would wait for transactions that do not exist)."""
    cur.execute("SELECT VERSION(), @@global.gtid_binlog_pos")
    version, binlog_pos = cur.fetchone()
    if "mariadb" not in str(version).lower() or not all(
            MARIADB_GTID.fullmatch(p) for p in gtids.split(",")):
        raise SignalError(f"{where}: gtid_set={gtids}: Headwater starts from a GTID set on "
                          "MariaDB only (domain-server-sequence); on MySQL give "
                          "binlog_filename and binlog_position")
    current = {int(p.split("-")[0]): int(p.split("-")[2])
               for p in str(binlog_pos or "").split(",") if p.strip()}
    seen: set[int] = set()
    for part in gtids.split(","):
        domain, _, seq = (int(x) for x in part.split("-"))
        if domain in seen:
            raise SignalError(f"{where}: gtid_set={gtids} names domain {domain} twice")
        seen.add(domain)
        if domain not in current or seq > current[domain]:
            raise SignalError(f"{where}: gtid_set={gtids}: {part} is not in the binlog "
                              f"(gtid_binlog_pos={binlog_pos or 'empty'})")


__all__ = ["NAME", "BinlogReposition", "check_on_server", "parse_reposition"]
