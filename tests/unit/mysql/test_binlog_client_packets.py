"""The client's packet framing over a socket pair standing in for the server: events,
multi-packet (>= 16 MB) events, error and EOF packets, timeouts mid-packet, lost connections."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from headwater.connectors.mysql.binlog.client import BinlogClient, BinlogServerError
from headwater.connectors.mysql.binlog.events import BinlogParser, UnknownEvent, Xid

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
    with pytest.raises(ConnectionError, match="not started"):
        client.read_event(timeout=0)
