"""Starting the binlog stream from a GTID set (Datastream's `mysqlGtidPosition {gtidSet}`).

The two flavours write different things: MySQL a set of intervals per server UUID
(`uuid:1-42[:50-60],...`, Datastream's documented format, @@gtid_executed); MariaDB one GTID
per replication domain, `domain-server-sequence` (`0-1-42,1-2-7`, @@gtid_binlog_pos), meaning
every transaction of that domain up to and including it.  The MariaDB form is what Debezium's
MariaDB connector stores as the `gtids` offset and what `@slave_connect_state` takes, so it is
the set a MariaDB stream accepts.

Why locate a file and position as well: the offset's `file`/`pos` bound the schema history's
replay on resume and are where a first start's rebuilt history is recorded; so the start is
found as the server itself finds it (the newest binlog whose Gtid_list the set covers, then
the first transaction there not in the set), and the same rule tells a purged set: no binlog
on the server starts at or before it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from headwater.connectors.mysql.binlog.gtid import MARIADB_GTID, MYSQL_GTID, GtidSetError
from headwater.connectors.mysql.binlog.gtid import GtidSet as MySqlGtidSet

__all__ = ["MARIADB_GTID", "MYSQL_GTID", "GtidSet", "GtidSetError", "GtidUnavailable",
           "mariadb_start", "parse_gtid_set"]

_EVENT_PAGE: Final = 1000  # SHOW BINLOG EVENTS rows per query while looking for the start
_UINT32: Final = 2**32 - 1
_UINT64: Final = 2**64 - 1


class GtidUnavailable(Exception):
    """The set names transactions the server's binlogs do not (or no longer) hold."""


@dataclass(frozen=True, slots=True)
class GtidSet:
    flavour: str  # "mariadb" or "mysql"
    text: str  # normalized: parts without spaces or newlines, joined by ","
    # MariaDB: domain -> (server id, sequence number); empty for MySQL.
    domains: dict[int, tuple[int, int]]

    def contains(self, domain: int, seq: int) -> bool:
        """Whether MariaDB transaction `domain-*-seq` is in the set (so is not streamed)."""
        have = self.domains.get(domain)
        return have is not None and seq <= have[1]


def parse_gtid_set(text: str) -> GtidSet:
    """A MariaDB GTID position or a MySQL GTID set (not both in one set)."""
    parts = [p.strip() for p in text.replace("\n", " ").split(",")]
    if not any(parts):
        raise GtidSetError("empty")
    if all(MARIADB_GTID.fullmatch(p) for p in parts):
        return _mariadb(parts)
    if all(MYSQL_GTID.fullmatch(p) for p in parts):
        return _mysql(parts)
    if "" in parts:
        raise GtidSetError("an empty part between commas")
    for part in parts:
        if not (MARIADB_GTID.fullmatch(part) or MYSQL_GTID.fullmatch(part)):
            raise GtidSetError(f"'{part}' is neither a MariaDB GTID (domain-server-sequence, "
                               "e.g. 0-1-42) nor a MySQL GTID set (uuid:interval, e.g. "
                               "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-42)")
    raise GtidSetError("mixes MariaDB GTIDs (domain-server-sequence) and MySQL GTIDs "
                       "(uuid:interval)")


def _mariadb(parts: list[str]) -> GtidSet:
    domains: dict[int, tuple[int, int]] = {}
    for part in parts:
        match = MARIADB_GTID.fullmatch(part)
        assert match is not None
        domain, server, seq = (int(g) for g in match.groups())
        if domain > _UINT32 or server > _UINT32 or seq > _UINT64:
            raise GtidSetError(f"'{part}' is out of range (domain and server are 32-bit, the "
                               "sequence number 64-bit)")
        if domain in domains:
            raise GtidSetError(f"names domain {domain} twice (give one GTID per domain, as "
                               "@@gtid_binlog_pos does)")
        domains[domain] = (server, seq)
    return GtidSet("mariadb", ",".join(parts), domains)


def _mysql(parts: list[str]) -> GtidSet:
    seen: set[str] = set()
    for part in parts:
        uuid = part.split(":", 1)[0]
        if uuid.lower() in seen:
            raise GtidSetError(f"names server {uuid} twice (give all its intervals in one part, "
                               "uuid:1-5:7-9)")
        seen.add(uuid.lower())
        MySqlGtidSet.parse(part)  # its intervals' checks (GtidSetError naming the part)
    return GtidSet("mysql", ",".join(parts), {})


def _gtid_list(text: str) -> list[tuple[int, int, int]]:
    """A Gtid_list event's SHOW BINLOG EVENTS info, "[0-1-7,1-2-3]"."""
    out = []
    for part in text.strip().strip("[]").split(","):
        match = MARIADB_GTID.fullmatch(part.strip())
        if match:
            domain, server, seq = (int(g) for g in match.groups())
            out.append((domain, server, seq))
    return out


def _starts_after(wanted: GtidSet, listed: list[tuple[int, int, int]]) -> str | None:
    """Why a binlog whose Gtid_list is `listed` starts too late for `wanted` (transactions
    the set lacks were written before it), else None: MariaDB's contains_all_slave_gtid."""
    for domain, server, seq in listed:
        have = wanted.domains.get(domain)
        if have is None:
            return (f"starts after transactions of domain {domain} (up to "
                    f"{domain}-{server}-{seq}), and the set names none of that domain")
        if have[0] == server and have[1] < seq:
            return f"starts after {domain}-{server}-{seq}"
    return None


@contextlib.contextmanager
def _binary_results(cur: Any) -> Iterator[None]:
    """Text columns as bytes while the binlogs are searched, the session's setting given back.

    Why: an Annotate_rows or Query event's info is the statement as the client sent it, binary
    literals included, so decoding it as UTF-8 in the driver failed (a UnicodeDecodeError on a
    server where another client had written bytes); only the event type and the GTID text are
    read here, and those are ASCII."""
    cur.execute("SELECT @@session.character_set_results")
    before = cur.fetchone()[0]
    cur.execute("SET SESSION character_set_results = binary")
    try:
        yield
    finally:
        if before is None:
            cur.execute("SET SESSION character_set_results = NULL")
        else:
            cur.execute("SET SESSION character_set_results = %s", (str(before),))


def _events(cur: Any, file: str, pos: int, limit: int) -> list[tuple[Any, ...]]:
    """SHOW BINLOG EVENTS under _binary_results, its bytes decoded leniently."""
    cur.execute(f"SHOW BINLOG EVENTS IN '{file}' FROM {int(pos)} LIMIT {int(limit)}")
    return [tuple(v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else v
                  for v in row) for row in cur.fetchall()]


def mariadb_start(cur: Any, wanted: GtidSet, logs: Sequence[tuple[str, int]]) -> tuple[str, int]:
    """The binlog file and position of the first transaction not in `wanted` (the end of the
    newest binlog if there is none yet); GtidUnavailable if the server cannot stream from it.

    `cur`: a cursor on the server; `logs`: SHOW BINARY LOGS, oldest first."""
    cur.execute("SELECT @@global.gtid_binlog_state")
    state_text = str(cur.fetchone()[0] or "")
    state = {(d, s): n for d, s, n in _gtid_list(state_text)}
    for domain, (server, seq) in sorted(wanted.domains.items()):
        if state.get((domain, server), -1) < seq:
            raise GtidUnavailable(
                f"{domain}-{server}-{seq} is not in the server's binary logs "
                f"(@@gtid_binlog_state={state_text or 'empty'}): no such transaction was "
                "written there yet")
    with _binary_results(cur):
        return _search(cur, wanted, logs)


def _search(cur: Any, wanted: GtidSet, logs: Sequence[tuple[str, int]]) -> tuple[str, int]:
    """mariadb_start's scan: the newest binlog whose Gtid_list the set reaches, then its
    first transaction not in the set."""
    why = ""
    start_index = None
    for index in range(len(logs) - 1, -1, -1):
        head = _events(cur, logs[index][0], 4, 3)
        listed = next((str(r[5]) for r in head if str(r[2]) == "Gtid_list"), None)
        too_late = _starts_after(wanted, _gtid_list(listed)) if listed is not None else None
        if too_late is None:
            start_index = index
            break
        why = too_late
    if start_index is None:
        oldest = logs[0][0] if logs else "none"
        raise GtidUnavailable(
            f"transactions after it were purged: the oldest binary log on the server, "
            f"{oldest}, {why} (SHOW BINARY LOGS)")
    end = (logs[-1][0], logs[-1][1])
    for file, _ in logs[start_index:]:
        pos = 4
        while True:
            rows = _events(cur, file, pos, _EVENT_PAGE)
            for row in rows:
                if str(row[2]) == "Gtid":
                    match = MARIADB_GTID.search(str(row[5]))
                    if match and not wanted.contains(int(match.group(1)),
                                                     int(match.group(3))):
                        return file, int(row[1])
                end = (file, int(row[4]))
            if len(rows) < _EVENT_PAGE:
                break
            pos = int(rows[-1][4])
    return end
