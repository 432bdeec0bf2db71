"""The binlog loop's `gtids` over scripted events, no server: a MySQL GTID set in the offset
is advanced at each commit (DDL included) and MariaDB's per-domain position is kept as before;
and what a MySQL stream is started from (COM_BINLOG_DUMP_GTID's set, or the file/pos)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from headwater.connectors.mysql import position, streaming
from headwater.connectors.mysql.binlog import events as ev
from headwater.connectors.mysql.binlog.gtid import GtidSet, GtidSetError
from headwater.connectors.mysql.config import validate_mysql_config
from headwater.connectors.mysql.streaming import MySqlStreamingSource, _Loop
from headwater.engine.metrics import CaptureMetrics
from headwater.engine.queue import Batch
from headwater.engine.source import SourceRunContext
from headwater.model.record import SourceContext

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "5e11fa47-71ca-11e1-9e33-c80aa9429562"
FILE = "mysql-bin.000003"


def _config(**props: str) -> Any:
    cfg, _ = validate_mysql_config({"topic.prefix": "m", "database.hostname": "h",
                                    "database.user": "u", "database.server.id": "3", **props})
    return cfg


class _State:
    """The schema state as the loop uses it for statements that change nothing captured."""

    last_changes: list[Any] = []

    def apply(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []


def _source(cfg: Any) -> MySqlStreamingSource:
    source = MySqlStreamingSource.__new__(MySqlStreamingSource)
    source.cfg, source.state = cfg, _State()  # type: ignore[assignment]
    source.metrics, source.context = CaptureMetrics(), SourceContext("mysql", "m", "test")
    source.incremental = None
    source.heartbeat_action = None
    source._client = None
    return source


class _Script:
    """A binlog client that hands out scripted events, then stops the session."""

    def __init__(self, ctx: SourceRunContext) -> None:
        self.ctx = ctx
        self.events: list[ev.BinlogEvent] = []
        self.pos = 200

    def read_event(self, timeout: float | None = None) -> ev.BinlogEvent | None:
        if self.events:
            return self.events.pop(0)
        self.ctx.stopping.set()
        return None

    def add(self, code: int, body: Any) -> None:
        start, self.pos = self.pos, self.pos + 50
        self.events.append(ev.BinlogEvent(1_764_500_000, code, 1, 50, self.pos, 0, start, FILE,
                                          body))

    def query(self, sql: str) -> None:
        self.add(ev.QUERY_EVENT, ev.Query(9, 0, 0, "shop", sql, 0, None, None))

    def mysql_tx(self, uuid: str, gno: int, *, commit: bool = True) -> None:
        self.add(ev.MYSQL_GTID_EVENT, ev.MySqlGtid(1, uuid, gno))
        self.query("BEGIN")
        if commit:
            self.add(ev.XID_EVENT, ev.Xid(gno))

    def mysql_ddl(self, uuid: str, gno: int) -> None:
        self.add(ev.MYSQL_GTID_EVENT, ev.MySqlGtid(1, uuid, gno))
        self.query("CREATE TABLE other (id INT)")

    def mariadb_tx(self, domain: int, server: int, seq: int, *, ddl: bool = False) -> None:
        flags = ev.FL_STANDALONE if ddl else 0
        self.add(ev.MARIADB_GTID_EVENT, ev.MariaGtid(seq, domain, server, flags, None, None))
        if ddl:
            self.query("CREATE TABLE other (id INT)")
        else:
            self.query("BEGIN")
            self.add(ev.XID_EVENT, ev.Xid(seq))


class _Session:
    """A _Loop over a scripted client from `gtids`; `run()` reads what was scripted and
    returns the offset a restart would then start from (the last one handed over)."""

    def __init__(self, gtids: str | None) -> None:
        self.batches: list[Batch] = []
        self.ctx = SourceRunContext(self.batches.append, threading.Event())
        self.client = _Script(self.ctx)
        offset: dict[str, Any] = {"file": FILE, "pos": 200, "server_id": 1}
        if gtids is not None:
            offset["gtids"] = gtids
        self.loop = _Loop(_source(_config()), self.ctx, self.client,  # type: ignore[arg-type]
                          offset)

    def read(self) -> None:
        self.ctx.stopping.clear()
        self.loop.run()

    def run(self) -> dict[str, Any]:
        self.read()
        offsets = [b.offset for b in self.batches if b.offset is not None]
        assert offsets, "no offset handed over"
        return offsets[-1]


def test_a_mysql_set_is_advanced_at_each_commit_ddl_included() -> None:
    session = _Session(f"{U1}:1-5,\n{U2}:1-2")  # as SHOW MASTER STATUS printed it
    script = session.client
    script.mysql_tx(U1, 6)
    assert session.run()["gtids"] == f"{U1}:1-6,{U2}:1-2"
    script.mysql_ddl(U1, 7)  # no BEGIN: the statement is the transaction
    offset = session.run()
    assert offset["gtids"] == f"{U1}:1-7,{U2}:1-2"
    assert offset["pos"] == script.pos and offset["event"] == 0
    script.mysql_tx(U2, 5)  # a gap: U2's 3-4 ran elsewhere
    script.mysql_tx(U2, 3)
    assert session.run()["gtids"] == f"{U1}:1-7,{U2}:1-3:5"
    script.mysql_tx(U2, 4)  # fills the gap
    assert session.run()["gtids"] == f"{U1}:1-7,{U2}:1-5"
    script.mysql_tx(U1, 8, commit=False)  # read up to its BEGIN: not committed
    assert session.run()["gtids"] == f"{U1}:1-7,{U2}:1-5"
    assert session.loop.in_tx and session.loop.resume.start.gtids == f"{U1}:1-7,{U2}:1-5"
    assert session.loop._mid_offset(0, 0)["gtids"] == f"{U1}:1-7,{U2}:1-5"


def test_a_mysql_transaction_with_begin_ends_at_its_commit_not_at_a_statement() -> None:
    session = _Session(f"{U1}:1-5")
    script = session.client
    script.add(ev.MYSQL_GTID_EVENT, ev.MySqlGtid(1, U1, 6))
    script.query("BEGIN")
    script.query("CREATE TEMPORARY TABLE scratch (id INT)")  # inside the transaction
    session.read()
    assert session.loop.in_tx and session.loop.last_offset["gtids"] == f"{U1}:1-5"
    script.add(ev.XID_EVENT, ev.Xid(6))
    assert session.run()["gtids"] == f"{U1}:1-6"


def test_mariadb_positions_are_kept_per_domain_as_before() -> None:
    session = _Session("0-1-5,1-2-7")
    script = session.client
    script.mariadb_tx(0, 1, 6)
    script.mariadb_tx(1, 3, 8, ddl=True)
    script.mariadb_tx(2, 1, 1)
    assert session.run()["gtids"] == "0-1-6,1-3-8,2-1-1"
    assert isinstance(session.loop.gtids, position.MariaDbGtids)


def test_no_gtids_in_the_offset_none_stored() -> None:
    session = _Session(None)
    session.client.mysql_tx(U1, 6)
    session.client.mariadb_tx(0, 1, 6)
    assert "gtids" not in session.run()


class _Cursor:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows
        self.sql: list[str] = []

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str) -> None:
        self.sql.append(sql)

    def fetchone(self) -> tuple[Any, ...]:
        return self.rows.pop(0)


class _Conn:
    def __init__(self, *rows: tuple[Any, ...]) -> None:
        self.cur = _Cursor(list(rows))
        self.closed = False

    def cursor(self) -> _Cursor:
        return self.cur

    def close(self) -> None:
        self.closed = True


class _Client:
    def __init__(self) -> None:
        self.started: dict[str, Any] = {}

    def start(self, **kwargs: Any) -> None:
        self.started = kwargs

    def read_event(self, timeout: float | None = None) -> None:
        return None

    def close(self) -> None:
        pass


def _start(monkeypatch: pytest.MonkeyPatch, gtids: str, conn: _Conn | None,
           **props: str) -> dict[str, Any]:
    """How `stream` starts the client from an offset with `gtids` (server: `conn`)."""
    client = _Client()
    monkeypatch.setattr(streaming, "binlog_client", lambda cfg: client)

    def connect(cfg: Any) -> _Conn:
        assert conn is not None, "the server was asked"
        return conn

    monkeypatch.setattr(streaming, "connect", connect)
    stopped = threading.Event()
    stopped.set()
    _source(_config(**props)).stream(SourceRunContext(lambda batch: None, stopped),
                                     {"file": FILE, "pos": 400, "gtids": gtids})
    return client.started


def test_a_mysql_set_starts_after_the_offset_set_over_the_purged_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _Conn(("8.0.36",), ("ON", f"{U1}:1-3,\n{U2}:1-9"))
    started = _start(monkeypatch, f"{U1}:1-7,{U2}:1-12", conn)
    assert started == {"gtid_set": GtidSet.parse(f"{U1}:1-7,{U2}:1-12")}
    assert conn.closed and conn.cur.sql[1] == "SELECT @@global.gtid_mode, @@global.gtid_purged"


def test_gtid_source_filters_keep_uuids_of_a_mysql_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """An excluded uuid's transactions are not the offset's to skip; the purged ones the
    server requires (Debezium's filterGtidSet)."""
    conn = _Conn(("8.0.36",), ("ON", f"{U2}:1-9"))
    started = _start(monkeypatch, f"{U1}:1-7,{U2}:1-12", conn,
                     **{"gtid.source.excludes": "5e11fa47-.*"})
    assert str(started["gtid_set"]) == f"{U1}:1-7,{U2}:1-9"
    conn = _Conn(("8.0.36",), ("ON", ""))
    started = _start(monkeypatch, f"{U1}:1-7,{U2}:1-12", conn,
                     **{"gtid.source.includes": "5E11.*"})
    assert str(started["gtid_set"]) == f"{U2}:1-12"


def test_a_mysql_set_without_gtid_mode_starts_from_the_file_position(
        monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _Conn(("8.0.36",), ("OFF_PERMISSIVE", ""))
    assert _start(monkeypatch, f"{U1}:1-7", conn) == {"file": FILE, "pos": 400}


def test_a_mysql_set_on_a_mariadb_server_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _Conn(("10.11.6-MariaDB",))
    with pytest.raises(GtidSetError, match=r"MySQL GTID set .* the server is MariaDB"):
        _start(monkeypatch, f"{U1}:1-7", conn)
    assert conn.closed


def test_a_mariadb_position_starts_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _start(monkeypatch, "0-1-5,1-2-7", None, **{"gtid.source.includes": "0-.*"})
    assert started == {"gtid_position": "0-1-5"}


def test_a_bad_mysql_set_in_the_offset_names_its_part() -> None:
    with pytest.raises(GtidSetError, match=f"offset's gtids .*'{U1}:0'"):
        position.mysql_gtid_set(f"{U1}:0")
