"""A GTID set as a start position: both flavours parsed (one line naming the bad part), and on
MariaDB the start located as the server locates it (the newest binlog whose Gtid_list the set
covers, then the first transaction not in the set), a set ahead of the binlog state or behind
the oldest binlog refused."""

from __future__ import annotations

import re
from typing import Any

import pytest

from headwater.connectors.mysql.gtid_start import (
    GtidSetError,
    GtidUnavailable,
    mariadb_start,
    parse_gtid_set,
)

UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_parse_mariadb_position() -> None:
    s = parse_gtid_set(" 0-1-42 ,\n1-2-7")
    assert (s.flavour, s.text, s.domains) == ("mariadb", "0-1-42,1-2-7",
                                              {0: (1, 42), 1: (2, 7)})
    assert s.contains(0, 42) and not s.contains(0, 43) and not s.contains(2, 1)


def test_parse_mysql_set() -> None:
    s = parse_gtid_set(f"{UUID}:1-42:50,\n{UUID.replace('3e11', '4e11')}:7")
    assert s.flavour == "mysql" and s.domains == {}
    assert s.text == f"{UUID}:1-42:50,{UUID.replace('3e11', '4e11')}:7"


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ("0-1-x", "'0-1-x' is neither a MariaDB GTID (domain-server-sequence"),
    ("0-1", "'0-1' is neither"),
    (f"{UUID}", f"'{UUID}' is neither"),
    ("0-1-5,,1-1-2", "an empty part between commas"),
    (f"0-1-5,{UUID}:1-3", "mixes MariaDB GTIDs"),
    ("0-1-5,0-2-9", "names domain 0 twice"),
    ("4294967296-1-1", "out of range"),
    (f"{UUID}:5-3", "interval 5-3 is not n or n-m with 1 <= n <= m"),
    (f"{UUID}:0", "interval 0 is not"),
    (f"{UUID}:1-3,{UUID.upper()}:7", "names server"),
])
def test_malformed_sets(text: str, message: str) -> None:
    with pytest.raises(GtidSetError, match=re.escape(message)):
        parse_gtid_set(text)


class FakeServer:
    """A cursor over binlogs given as SHOW BINLOG EVENTS rows (Log_name, Pos, Event_type,
    Server_id, End_log_pos, Info); counts the event queries."""

    def __init__(self, state: str, files: dict[str, list[tuple[str, str]]]) -> None:
        self.state = state
        self.events: dict[str, list[tuple[Any, ...]]] = {}
        for name, events in files.items():
            rows, pos = [], 4
            for kind, info in events:
                rows.append((name, pos, kind, 1, pos + 10, info))
                pos += 10
            self.events[name] = rows
        self.queries: list[str] = []
        self._result: list[tuple[Any, ...]] = []

    def logs(self) -> list[tuple[str, int]]:
        return [(name, rows[-1][4]) for name, rows in self.events.items()]

    binary = False  # character_set_results: text columns come as bytes, undecoded

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.queries.append(sql)
        if sql == "SELECT @@global.gtid_binlog_state":
            self._result = [(self.state,)]
            return
        if sql == "SELECT @@session.character_set_results":
            self._result = [("utf8mb4",)]
            return
        if sql.startswith("SET SESSION character_set_results"):
            self.binary = sql.endswith("= binary")
            assert self.binary or params == ("utf8mb4",), (sql, params)
            return
        m = re.fullmatch(r"SHOW BINLOG EVENTS IN '(.+)' FROM (\d+) LIMIT (\d+)", sql)
        assert m, sql
        rows = [r for r in self.events[m.group(1)] if r[1] >= int(m.group(2))]
        if self.binary:
            rows = [tuple(v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v
                          for v in r) for r in rows]
        else:  # as PyMySQL decodes: bytes that are not UTF-8 fail
            for r in rows:
                str(r[5]).encode("utf-8")
        self._result = rows[:int(m.group(3))]

    def fetchone(self) -> tuple[Any, ...]:
        return self._result[0]

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._result


def _head(listed: str) -> list[tuple[str, str]]:
    return [("Format_desc", "Server ver"), ("Gtid_list", listed), ("Binlog_checkpoint", "x")]


def _tx(gtid: str) -> list[tuple[str, str]]:
    return [("Gtid", f"BEGIN GTID {gtid}"), ("Table_map", "t"), ("Write_rows_v1", "r"),
            ("Xid", "COMMIT")]


def _server() -> FakeServer:
    return FakeServer("0-1-9,1-2-3", {
        "b.000003": _head("[0-1-4]") + _tx("0-1-5") + _tx("0-1-6") + [("Rotate", "b.000004")],
        "b.000004": _head("[0-1-6]") + _tx("0-1-7") + _tx("1-2-3") + [("Gtid", "GTID 0-1-8"),
                                                                      ("Query", "CREATE")]
        + _tx("0-1-9"),
    })


def test_start_is_the_first_transaction_not_in_the_set() -> None:
    srv = _server()
    # 0-1-7 is in file 4, whose Gtid_list [0-1-6] the set covers; 1-2-3 is of a domain the
    # set lacks, so it is the first transaction streamed (at position 4 + 7 * 10).
    assert mariadb_start(srv, parse_gtid_set("0-1-7"), srv.logs()) == ("b.000004", 74)
    assert mariadb_start(srv, parse_gtid_set("0-1-7,1-2-3"), srv.logs()) == ("b.000004", 114)
    # In the older file: the newest covered file is 3, whose first transaction is in the set.
    assert mariadb_start(srv, parse_gtid_set("0-1-5,1-2-0"), srv.logs()) == ("b.000003", 74)
    # Everything is in the set: the end of the newest binlog.
    assert mariadb_start(srv, parse_gtid_set("0-1-9,1-2-3"), srv.logs()) == srv.logs()[-1]


def test_the_scan_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    from headwater.connectors.mysql import gtid_start

    monkeypatch.setattr(gtid_start, "_EVENT_PAGE", 2)
    srv = _server()
    assert mariadb_start(srv, parse_gtid_set("0-1-8,1-2-3"), srv.logs()) == ("b.000004", 134)
    pages = [q for q in srv.queries if q.endswith("LIMIT 2")]
    assert len(pages) > 3 and "FROM 24 " in pages[1]


@pytest.mark.parametrize(("text", "message"), [
    ("0-1-10", "0-1-10 is not in the server's binary logs (@@gtid_binlog_state=0-1-9,1-2-3): "
               "no such transaction was written there yet"),
    ("0-1-9,7-1-1", "7-1-1 is not in the server's binary logs"),
    ("0-5-1", "0-5-1 is not in the server's binary logs"),
    ("0-1-3", "transactions after it were purged: the oldest binary log on the server, "
              "b.000003, starts after 0-1-4 (SHOW BINARY LOGS)"),
])
def test_unavailable(text: str, message: str) -> None:
    srv = _server()
    with pytest.raises(GtidUnavailable, match=re.escape(message)):
        mariadb_start(srv, parse_gtid_set(text), srv.logs())


def test_a_domain_missing_from_the_set_before_the_oldest_binlog_is_purged() -> None:
    srv = FakeServer("0-1-9,1-2-3", {"b.000005": _head("[0-1-4,1-2-2]") + _tx("0-1-5")})
    with pytest.raises(GtidUnavailable, match=re.escape(
            "the oldest binary log on the server, b.000005, starts after transactions of "
            "domain 1 (up to 1-2-2), and the set names none of that domain")):
        mariadb_start(srv, parse_gtid_set("0-1-5"), srv.logs())
    assert mariadb_start(srv, parse_gtid_set("0-1-4,1-2-2"), srv.logs()) == ("b.000005", 34)


def test_statements_holding_bytes_that_are_not_utf8_are_read_past() -> None:
    """An Annotate_rows event's info is the statement as sent, binary literals included: the
    search reads the events as bytes (as text, PyMySQL's decoding failed on a real server)."""
    bad = "INSERT INTO b VALUES (_binary'" + b"\x80\xff".decode("utf-8", "surrogateescape") + "')"
    srv = FakeServer("0-1-3", {"b.1": [*_head("[0-1-1]"), ("Annotate_rows", bad),
                                       *_tx("0-1-2"), *_tx("0-1-3")]})
    assert mariadb_start(srv, parse_gtid_set("0-1-2"), srv.logs())[1] > 4
    assert srv.binary is False  # the session's character set given back
