"""BinlogClient + RowDecoder against a real MariaDB 10.11.

The module runs its own server (not the session's `maria`): it purges binlogs and needs
larger packet and row-event limits, which other tests must not see.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from headwater.connectors.mysql.binlog.client import BinlogClient, BinlogServerError
from headwater.connectors.mysql.binlog.events import (
    BinlogEvent,
    Heartbeat,
    MariaGtid,
    Rotate,
    RowsEvent,
    TableMap,
    Xid,
)
from headwater.connectors.mysql.binlog.rows import row_decoder
from headwater.testing.localmariadb import LocalMariaDB, _pymysql
from headwater.testing.timeouts import scaled

pytestmark = pytest.mark.integration
_ids = itertools.count(100)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalMariaDB]:
    db = LocalMariaDB(settings={"max_allowed_packet": "64M",
                                "binlog_row_event_max_size": "1048576"}).start()
    try:
        db.create_database("bl")
        yield db
    finally:
        db.cleanup()


def execute(db: LocalMariaDB, *statements: str, params: Any = None) -> list[Any]:
    conn = _pymysql().connect(host="127.0.0.1", port=db.port, user=db.user,
                              password=db.password, database="bl", autocommit=True,
                              charset="utf8mb4", max_allowed_packet=64 << 20)
    try:
        with conn.cursor() as cur:
            out: list[Any] = []
            for sql in statements:
                cur.execute(sql, params)
                out = list(cur.fetchall())
            return out
    finally:
        conn.close()


def master_status(db: LocalMariaDB) -> tuple[str, int]:
    file, pos = execute(db, "SHOW MASTER STATUS")[0][:2]
    return str(file), int(pos)


def client(db: LocalMariaDB, **kw: Any) -> BinlogClient:
    return BinlogClient("127.0.0.1", db.port, db.user, db.password, server_id=next(_ids), **kw)


def read_until(c: BinlogClient, stop: Any, timeout: float = 30) -> list[BinlogEvent]:
    """Events until `stop(event)` is true (inclusive)."""
    out: list[BinlogEvent] = []
    deadline = time.monotonic() + scaled(timeout)
    while True:
        event = c.read_event(timeout=max(0.1, deadline - time.monotonic()))
        assert event is not None, f"no event within {timeout}s; got {out[-5:]}"
        out.append(event)
        if stop(event):
            return out


def decode_all(events: list[BinlogEvent], table: str) -> list[Any]:
    maps: dict[int, TableMap] = {}
    rows: list[Any] = []
    for e in events:
        if isinstance(e.body, TableMap):
            maps[e.body.table_id] = e.body
        elif isinstance(e.body, RowsEvent) and maps[e.body.table_id].table == table:
            rows.extend(row_decoder(maps[e.body.table_id]).decode(e.body))
    return rows


def is_xid(e: BinlogEvent) -> bool:
    return isinstance(e.body, Xid)


def test_stream_from_file_and_position(server: LocalMariaDB) -> None:
    execute(server, "CREATE TABLE fp (id INT PRIMARY KEY, v VARCHAR(10))")
    file, pos = master_status(server)
    execute(server, "INSERT INTO fp VALUES (1, 'a'), (2, 'b')",
            "UPDATE fp SET v = 'c' WHERE id = 2", "DELETE FROM fp WHERE id = 1")
    with client(server) as c:
        c.start(file=file, pos=pos)
        events = read_until(c, lambda e: is_xid(e) and decode_all([e], "fp") == []
                            and e.log_pos >= master_status(server)[1])
    first = next(e for e in events if isinstance(e.body, MariaGtid))
    assert (first.file, first.position) == (file, pos)
    assert decode_all(events, "fp") == [(1, "a"), (2, "b"), ((2, "b"), (2, "c")), (1, "a")]
    assert events[-1].log_pos == master_status(server)[1]


def test_stream_from_gtid_position(server: LocalMariaDB) -> None:
    execute(server, "CREATE TABLE g (id INT PRIMARY KEY)", "INSERT INTO g VALUES (1)")
    position = str(execute(server, "SELECT @@gtid_binlog_pos")[0][0])
    execute(server, "INSERT INTO g VALUES (2)")
    with client(server) as c:
        c.start(gtid_position=position)
        events = read_until(c, is_xid)
    assert isinstance(events[0].body, Rotate) and events[0].file == master_status(server)[0]
    gtids = [e.body for e in events if isinstance(e.body, MariaGtid)]
    domain, server_id, seq = (int(x) for x in position.split("-"))
    assert [(g.domain_id, g.server_id, g.seq_no) for g in gtids] == [(domain, server_id, seq + 1)]
    assert decode_all(events, "g") == [(2,)]


def test_rotate_across_files(server: LocalMariaDB) -> None:
    execute(server, "CREATE TABLE r (id INT PRIMARY KEY)")
    file, pos = master_status(server)
    execute(server, "INSERT INTO r VALUES (1)", "FLUSH BINARY LOGS", "INSERT INTO r VALUES (2)")
    next_file = master_status(server)[0]
    assert next_file != file
    with client(server) as c:
        c.start(file=file, pos=pos)
        events = read_until(c, lambda e: is_xid(e) and e.file == next_file)
    rotate = next(e for e in events if isinstance(e.body, Rotate) and e.log_pos)
    assert rotate.body == Rotate(4, next_file)
    after = events[events.index(rotate) + 1:]
    assert all(e.file == next_file for e in after)
    assert decode_all(events, "r") == [(1,), (2,)]
    xids = [e for e in events if is_xid(e)]
    assert [x.file for x in xids] == [file, next_file]


# What an idle server sends before its first heartbeat: the artificial ROTATE and the
# FORMAT_DESCRIPTION that open every dump, MariaDB's GTID_LIST, and a late BINLOG_CHECKPOINT.
_IDLE_SERVER_EVENTS = {4, 15, 161, 163}


def test_heartbeats_on_an_idle_server(server: LocalMariaDB) -> None:
    file, pos = master_status(server)
    with client(server, heartbeat_interval_s=0.2) as c:
        c.start(file=file, pos=pos)
        events = read_until(c, lambda e: isinstance(e.body, Heartbeat), timeout=10)
    beat = events[-1]
    # The heartbeat names where the server's binlog has got to: the end of the last event
    # it sent, or the start position when it sent none. An idle server may still append:
    # MariaDB writes a Binlog_checkpoint (45 bytes here) asynchronously after a FLUSH
    # BINARY LOGS of an earlier test, so the start position alone is not the answer.
    sent = [e.log_pos for e in events[:-1] if e.file == file and e.log_pos > pos]
    reached = max(sent, default=pos)
    assert beat.body == Heartbeat(file, reached)
    assert (beat.file, beat.position) == (file, reached)
    assert all(e.type_code in _IDLE_SERVER_EVENTS for e in events[:-1])


def test_read_event_times_out_without_heartbeats(server: LocalMariaDB) -> None:
    file, pos = master_status(server)
    with client(server) as c:
        c.start(file=file, pos=pos)
        read_until(c, lambda e: e.type_code == 15)  # the FORMAT_DESCRIPTION
        for _ in range(10):  # late BINLOG_CHECKPOINTs may still come (see above); then silence
            t0 = time.monotonic()
            event = c.read_event(timeout=0.3)
            if event is None:
                break
            assert event.type_code == 161, event
        assert event is None
        assert time.monotonic() - t0 < 5


def test_purged_binlog_is_a_server_error(server: LocalMariaDB) -> None:
    old = master_status(server)[0]
    execute(server, "FLUSH BINARY LOGS")
    current = master_status(server)[0]
    # The server skips files a (lingering) dump thread still reads: retry until it is gone.
    deadline = time.monotonic() + scaled(30)
    while any(row[0] == old for row in execute(server, "SHOW BINARY LOGS")):
        assert time.monotonic() < deadline, "PURGE BINARY LOGS kept the old file"
        execute(server, f"PURGE BINARY LOGS TO '{current}'")
        time.sleep(0.2)
    with client(server) as c:
        c.start(file=old, pos=4)
        with pytest.raises(BinlogServerError) as info:
            c.read_event(timeout=10)
    assert info.value.code == 1236
    assert "Could not find first log file name in binary log index file" in info.value.message


@pytest.mark.parametrize("size", [4 << 20, 20 << 20], ids=["4MB", "20MB-multi-packet"])
def test_big_rows(server: LocalMariaDB, size: int) -> None:
    table = f"big{size}"
    execute(server, f"CREATE TABLE {table} (id INT PRIMARY KEY, b LONGBLOB)")
    blob = bytes(range(256)) * (size // 256)
    file, pos = master_status(server)
    execute(server, f"INSERT INTO {table} VALUES (1, %s)", params=(blob,))
    with client(server) as c:
        c.start(file=file, pos=pos)
        events = read_until(c, is_xid, timeout=60)
    rows_events = [e for e in events if isinstance(e.body, RowsEvent)]
    assert rows_events[0].event_size > size
    assert decode_all(events, table) == [(1, blob)]


def test_thousand_row_event_equals_select(server: LocalMariaDB) -> None:
    execute(server, "CREATE TABLE k (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(12,3),"
                    " born DATE, seen DATETIME(6), dur TIME(3), ratio DOUBLE,"
                    " u BIGINT UNSIGNED, note TEXT, raw VARBINARY(8), e ENUM('x','y','z'))")
    file, pos = master_status(server)
    execute(server, "INSERT INTO k SELECT seq, CONCAT('n\u00e9-', seq), seq * 1.125 - 500,"
                    " DATE_ADD('1999-12-31', INTERVAL seq DAY),"
                    " TIMESTAMPADD(MICROSECOND, seq * 1234567, '2024-01-01'),"
                    " SEC_TO_TIME(seq * 97.123 - 20000), seq / 7, 18446744073709551615 - seq,"
                    " IF(seq % 10 = 0, NULL, REPEAT('t', seq % 50)), UNHEX(HEX(seq)),"
                    " ELT(1 + seq % 3, 'x', 'y', 'z') FROM seq_1_to_1000")
    selected = execute(server, "SELECT * FROM k ORDER BY id")
    with client(server) as c:
        c.start(file=file, pos=pos)
        events = read_until(c, is_xid)
    rows_events = [e for e in events if isinstance(e.body, RowsEvent)]
    assert len(rows_events) == 1  # one event of 1000 rows
    decoded = decode_all(events, "k")
    assert len(decoded) == 1000
    # PyMySQL's values are the natural values for these types.
    assert [tuple(r) for r in selected] == decoded
    assert isinstance(decoded[0][2], Decimal) and isinstance(decoded[0][4], dt.datetime)
    tm = next(e.body for e in events if isinstance(e.body, TableMap))
    assert row_decoder(tm).count(rows_events[0].body) == 1000  # type: ignore[arg-type]
