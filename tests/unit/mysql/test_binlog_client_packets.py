"""The client's packet framing over a socket pair standing in for the server: events,
multi-packet (>= 16 MB) events, error and EOF packets, timeouts mid-packet, lost connections."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from headwater.connectors.mysql.binlog import client as client_module
from headwater.connectors.mysql.binlog.client import (
    BinlogClient,
    BinlogServerError,
    binlog_dump_gtid_payload,
)
from headwater.connectors.mysql.binlog.events import BinlogParser, UnknownEvent, Xid
from headwater.connectors.mysql.binlog.gtid import GtidSet

MAX = 0xFFFFFF


def event(type_code: int, body: bytes, log_pos: int) -> bytes:
    size = 19 + len(body)
    return struct.pack("<IBIIIH", 1, type_code, 1, size, log_pos, 0) + body


def frame(payload: bytes, seq: int = 1) -> bytes:
    """Splits a payload into protocol packets (a MAX-sized packet continues in the next)."""
    out = bytearray()
    while True:
        chunk, payload = payload[:MAX], payload[MAX:]
        out += struct.pack("<I", len(chunk))[:3] + bytes([seq & 0xFF]) + chunk
        seq += 1
        if len(chunk) < MAX:
            return bytes(out)


@pytest.fixture
def pair() -> Iterator[tuple[BinlogClient, socket.socket]]:
    ours, server = socket.socketpair()
    client = BinlogClient("127.0.0.1", 1, "u", "p", 1)
    client._sock = ours
    client.parser = BinlogParser(file="b.000001")
    yield client, server
    ours.close()
    server.close()


def send_async(sock: socket.socket, data: bytes) -> threading.Thread:
    t = threading.Thread(target=sock.sendall, args=(data,))
    t.start()
    return t


def test_events_and_positions(pair: tuple[BinlogClient, socket.socket]) -> None:
    client, server = pair
    server.sendall(frame(b"\x00" + event(16, struct.pack("<Q", 5), 131)))
    got = client.read_event(timeout=5)
    assert got is not None and got.body == Xid(5)
    assert (got.file, got.position, got.log_pos) == ("b.000001", 104, 131)


def test_multi_packet_event_over_16mb(pair: tuple[BinlogClient, socket.socket]) -> None:
    client, server = pair
    body = bytes(range(256)) * (MAX // 256 + 10)
    payload = b"\x00" + event(200, body, 0)
    assert len(payload) > MAX
    sender = send_async(server, frame(payload) + frame(b"\x00" + event(16, bytes(8), 0)))
    big = client.read_event(timeout=30)
    small = client.read_event(timeout=30)
    sender.join()
    assert big is not None and isinstance(big.body, UnknownEvent) and big.body.payload == body
    assert small is not None and small.body == Xid(0)


def test_exact_multiple_of_max_ends_with_empty_packet(
        pair: tuple[BinlogClient, socket.socket]) -> None:
    client, server = pair
    payload = b"\x00" + event(200, bytes(MAX - 20), 0)
    assert len(payload) == MAX
    wire = frame(payload)
    assert wire.endswith(b"\x00\x00\x00\x02")  # the empty terminating packet
    sender = send_async(server, wire)
    got = client.read_event(timeout=30)
    sender.join()
    assert got is not None and len(got.body.payload) == MAX - 20  # type: ignore[union-attr]


def test_timeout_keeps_a_partial_packet(pair: tuple[BinlogClient, socket.socket]) -> None:
    client, server = pair
    wire = frame(b"\x00" + event(16, struct.pack("<Q", 9), 0))
    server.sendall(wire[:10])
    assert client.read_event(timeout=0.05) is None
    server.sendall(wire[10:])
    got = client.read_event(timeout=5)
    assert got is not None and got.body == Xid(9)


def test_error_packet_raises_server_error(pair: tuple[BinlogClient, socket.socket]) -> None:
    client, server = pair
    msg = b"Could not find first log file name in binary log index file"
    server.sendall(frame(b"\xff" + struct.pack("<H", 1236) + b"#HY000" + msg))
    with pytest.raises(BinlogServerError) as info:
        client.read_event(timeout=5)
    assert info.value.code == 1236 and info.value.message == msg.decode()


def test_eof_and_closed_connection(pair: tuple[BinlogClient, socket.socket]) -> None:
    client, server = pair
    server.sendall(frame(b"\xfe\x00\x00\x02\x00"))
    with pytest.raises(ConnectionAbortedError):
        client.read_event(timeout=5)
    server.close()
    with pytest.raises(ConnectionError):
        client.read_event(timeout=5)


def test_start_arguments_are_checked() -> None:
    client = BinlogClient("127.0.0.1", 1, "u", "p", 1)
    with pytest.raises(ValueError, match="exactly one"):
        client.start()
    with pytest.raises(ValueError, match="exactly one"):
        client.start(file="a.000001", gtid_position="0-1-1")
    with pytest.raises(ValueError, match="exactly one"):
        client.start(gtid_position="0-1-1", gtid_set=GtidSet.parse(f"{U1}:1"))
    with pytest.raises(ConnectionError, match="not started"):
        client.read_event(timeout=0)


U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


def test_binlog_dump_gtid_packet_bytes() -> None:
    """COM_BINLOG_DUMP_GTID computed by hand from MySQL's layout (rpl_source.cc)."""
    payload = binlog_dump_gtid_payload(0x1234, GtidSet.parse(f"{U1}:1-5:7"))
    assert payload == bytes.fromhex(
        "1e"  # COM_BINLOG_DUMP_GTID
        "0000"  # flags: blocking
        "34120000"  # server_id 0x1234
        "00000000"  # file name length: none, the set says where
        "0400000000000000"  # pos 4
        "40000000"  # the set's bytes: 8 + 16 + 8 + 2 * 16 = 64
        "0100000000000000"  # one uuid
        "3e11fa4771ca11e19e33c80aa9429562"
        "0200000000000000"  # two intervals
        "0100000000000000" "0600000000000000"  # 1-5 as [1, 6)
        "0700000000000000" "0800000000000000")  # 7 as [7, 8)
    named = binlog_dump_gtid_payload(1, GtidSet(), "mysql-bin.000003", 157)
    assert named == (b"\x1e\x00\x00\x01\x00\x00\x00\x10\x00\x00\x00mysql-bin.000003"
                     + (157).to_bytes(8, "little") + (8).to_bytes(4, "little") + bytes(8))


class _FakeServerConnection:
    """What the client uses of a PyMySQL connection: the version, a cursor, the socket."""

    def __init__(self, version: str, sock: socket.socket) -> None:
        self.version = version
        self._sock = sock
        self.statements: list[str] = []

    def get_server_info(self) -> str:
        return self.version

    def cursor(self) -> _FakeServerConnection:
        return self

    def __enter__(self) -> _FakeServerConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def execute(self, sql: str, args: object = None) -> None:
        self.statements.append(sql)

    def fetchone(self) -> tuple[str]:
        return ("CRC32",)

    def _force_close(self) -> None:
        pass


def _started(monkeypatch: pytest.MonkeyPatch, version: str, **start: object
             ) -> tuple[list[bytes], _FakeServerConnection]:
    """The packets a client sends to a server of `version` when started with `start`."""
    ours, server = socket.socketpair()
    conn = _FakeServerConnection(version, ours)

    class _Driver:
        @staticmethod
        def connect(**kwargs: object) -> _FakeServerConnection:
            return conn

    monkeypatch.setattr(client_module, "_pymysql", lambda: _Driver)
    server.sendall(frame(b"\x00\x00\x00\x02\x00\x00\x00", seq=1))  # COM_REGISTER_SLAVE: OK
    client = BinlogClient("127.0.0.1", 1, "u", "p", 77)
    try:
        client.start(**start)  # type: ignore[arg-type]
        ours.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := server.recv(65536):
            data += chunk
    finally:
        client.close()
        ours.close()
        server.close()
    packets = []
    while data:
        n = int.from_bytes(data[:3], "little")
        packets.append(data[4:4 + n])
        data = data[4 + n:]
    return packets, conn


def test_a_mysql_gtid_start_sends_com_binlog_dump_gtid(monkeypatch: pytest.MonkeyPatch) -> None:
    gtids = GtidSet.parse(f"{U1}:1-5:7")
    packets, conn = _started(monkeypatch, "8.0.36", gtid_set=gtids)
    assert [p[0] for p in packets] == [0x15, 0x1E]  # COM_REGISTER_SLAVE, COM_BINLOG_DUMP_GTID
    assert packets[1] == binlog_dump_gtid_payload(77, gtids)
    assert not any("slave_connect_state" in s or "mariadb" in s for s in conn.statements)


def test_a_gtid_start_of_the_other_flavour_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"MySQL GTID set .* the server is MariaDB"):
        _started(monkeypatch, "10.11.6-MariaDB", gtid_set=GtidSet.parse(f"{U1}:1"))
    with pytest.raises(ValueError, match=r"MariaDB GTID position .* the server is MySQL"):
        _started(monkeypatch, "8.0.36", gtid_position="0-1-5")


def test_a_mariadb_gtid_start_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    packets, conn = _started(monkeypatch, "10.11.6-MariaDB", gtid_position="0-1-5")
    assert "SET @slave_connect_state = %s" in conn.statements
    assert packets[1] == struct.pack("<BIHI", 0x12, 4, 2, 77)  # COM_BINLOG_DUMP, file ''
