"""The replication client: the only part of the binlog reader that touches a socket.

PyMySQL does the connection handshake and authentication (every auth plugin, TLS); after
that the client takes over the socket and speaks the replication protocol itself:

1. session variables that make the server a cooperative master: ``@master_binlog_checksum``
   (we verify CRC32s), ``@mariadb_slave_capability=4`` (MariaDB GTID events and annotate rows
   are sent as such), for a GTID start ``@slave_connect_state`` with strict mode and
   ignore-duplicates off, and optionally ``@master_heartbeat_period`` (nanoseconds);
2. COM_REGISTER_SLAVE, then COM_BINLOG_DUMP from a file and position, or (MariaDB GTID mode)
   from file '' position 4, the server resolving ``@slave_connect_state``; on MySQL a GTID
   start is COM_BINLOG_DUMP_GTID with the set of transactions not to send (MySQL has no
   ``@slave_connect_state``);
3. a stream of packets: 0x00 + one event, 0xFF + an error, 0xFE at the end (non-blocking dump
   only).  Events of 16 MB and more span several packets, which are concatenated.

Reads use the client's own buffer and `select`-style socket timeouts, so `read_event(timeout)`
can return None without losing a partly received packet.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from typing import Any, Final

from headwater.connectors.mysql.binlog.events import BinlogEvent, BinlogParser
from headwater.connectors.mysql.binlog.gtid import GtidSet

__all__ = ["BinlogClient", "BinlogServerError", "binlog_dump_gtid_payload"]

COM_BINLOG_DUMP: Final = 0x12
COM_BINLOG_DUMP_GTID: Final = 0x1E
COM_REGISTER_SLAVE: Final = 0x15
BINLOG_SEND_ANNOTATE_ROWS_EVENT: Final = 2  # MariaDB: send ANNOTATE_ROWS (the SQL of rows)
MAX_PACKET: Final = 0xFFFFFF
ER_MASTER_FATAL_ERROR_READING_BINLOG: Final = 1236
_RECV_SIZE: Final = 1 << 20


class BinlogServerError(Exception):
    """An error packet from the server, e.g. 1236 when the requested binlog was purged."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"({code}) {message}")
        self.code = code
        self.message = message


def _pymysql() -> Any:
    try:
        import pymysql  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - an install problem
        raise ImportError("PyMySQL is missing: pip install 'headwater[spark]'") from exc
    return pymysql


def binlog_dump_gtid_payload(server_id: int, gtids: GtidSet, file: str = "",
                             pos: int = 4) -> bytes:
    """MySQL's COM_BINLOG_DUMP_GTID: flags u16 (0: blocking), server_id u32, the file name's
    length u32 and the name ('' : wherever the set leads), pos u64, then the set's encoding
    with its length u32.  The server (rpl_source.cc com_binlog_dump_gtid) reads the set
    whatever the flags, and sends every transaction not in it."""
    name = file.encode("utf-8")
    block = gtids.encoded()
    return (struct.pack("<BHII", COM_BINLOG_DUMP_GTID, 0, server_id, len(name)) + name
            + struct.pack("<QI", pos, len(block)) + block)


def _error(payload: bytes) -> BinlogServerError:
    code = struct.unpack_from("<H", payload, 1)[0]
    msg = payload[3:]
    if msg[:1] == b"#":
        msg = msg[6:]
    return BinlogServerError(code, msg.decode("utf-8", "replace"))


class BinlogClient:
    """Streams binlog events from a MariaDB or MySQL server."""

    def __init__(
        self,
        host: str,
        port: int,
        user: str,
        password: str,
        server_id: int,
        *,
        connect_timeout: float = 30.0,
        heartbeat_interval_s: float | None = None,
        ssl: dict[str, Any] | None = None,
    ) -> None:
        # Where and as whom to connect: the keyword arguments of pymysql.connect.
        self.login: dict[str, Any] = {
            "host": host, "port": port, "user": user, "password": password,
            "connect_timeout": connect_timeout, "ssl": ssl}
        self.server_id = server_id
        self.heartbeat_interval_s = heartbeat_interval_s
        self.parser = BinlogParser()
        self.server_version = ""
        self.checksum = False
        self._conn: Any = None
        self._sock: socket.socket | None = None
        self._buf = bytearray()
        self._start = 0

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, *, file: str | None = None, pos: int = 4,
              gtid_position: str | None = None, gtid_set: GtidSet | None = None) -> None:
        """Connects and asks for the binlog from (file, pos), from a MariaDB GTID position or
        (MySQL) after a GTID set; a GTID start of the other server's flavour is refused."""
        if sum(x is not None for x in (file, gtid_position, gtid_set)) != 1:
            raise ValueError("give exactly one of file (with pos), gtid_position or gtid_set")
        if self._conn is not None:
            raise RuntimeError("the client is already started")
        pymysql = _pymysql()
        conn = pymysql.connect(**self.login, autocommit=True, charset="utf8mb4")
        self._conn = conn
        try:
            self.server_version = conn.get_server_info()
            mariadb = "mariadb" in self.server_version.lower()
            with conn.cursor() as cur:
                cur.execute("SELECT @@global.binlog_checksum")
                self.checksum = str(cur.fetchone()[0]).upper() == "CRC32"
                cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
                if mariadb:
                    cur.execute("SET @mariadb_slave_capability = 4")
                if gtid_set is not None and mariadb:
                    raise ValueError(
                        f"a MySQL GTID set (uuid:interval) to start from, but the server is "
                        f"MariaDB ({self.server_version}): MariaDB starts from a GTID "
                        "position, domain-server-sequence")
                if gtid_position is not None:
                    if not mariadb:
                        raise ValueError(
                            f"a MariaDB GTID position (domain-server-sequence) to start from, "
                            f"but the server is MySQL ({self.server_version}): MySQL starts "
                            "from a GTID set, uuid:interval")
                    cur.execute("SET @slave_connect_state = %s", (gtid_position,))
                    cur.execute("SET @slave_gtid_strict_mode = 0")
                    cur.execute("SET @slave_gtid_ignore_duplicates = 0")
                if self.heartbeat_interval_s is not None:
                    cur.execute("SET @master_heartbeat_period = %s",
                                (int(self.heartbeat_interval_s * 1e9),))
            sock: socket.socket = conn._sock
            self._sock = sock
            sock.settimeout(self.login["connect_timeout"])
            self._command(self._register_slave_payload())
            payload = self._read_packet_blocking()
            if payload[0] == 0xFF:
                raise _error(payload)
            name = file if file is not None else ""
            if gtid_set is not None:
                self._command(binlog_dump_gtid_payload(self.server_id, gtid_set))
            else:
                self._command(struct.pack("<BIHI", COM_BINLOG_DUMP,
                                          pos if file is not None else 4,
                                          BINLOG_SEND_ANNOTATE_ROWS_EVENT, self.server_id)
                              + name.encode("utf-8"))
            self.parser = BinlogParser(checksum=self.checksum, file=name, position=pos)
            sock.settimeout(None)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        conn, self._conn, self._sock = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):  # already gone
                conn._force_close()

    def __enter__(self) -> BinlogClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- protocol -------------------------------------------------------------------------------
    def _register_slave_payload(self) -> bytes:
        host = socket.gethostname().encode()[:60]
        user = str(self.login["user"]).encode()[:60]
        return (struct.pack("<BI", COM_REGISTER_SLAVE, self.server_id)
                + bytes([len(host)]) + host + bytes([len(user)]) + user + b"\x00"
                + struct.pack("<HII", 0, 0, 0))

    def _command(self, payload: bytes) -> None:
        assert self._sock is not None
        self._sock.sendall(struct.pack("<I", len(payload))[:3] + b"\x00" + payload)

    def _read_packet_blocking(self) -> bytes:
        payload = self._next_packet()
        while payload is None:
            self._fill()
            payload = self._next_packet()
        return payload

    def _fill(self) -> None:
        assert self._sock is not None
        if self._start and self._start > len(self._buf) // 2:
            del self._buf[:self._start]
            self._start = 0
        chunk = self._sock.recv(_RECV_SIZE)
        if not chunk:
            raise ConnectionResetError("the server closed the replication connection")
        self._buf += chunk

    def _next_packet(self) -> bytes | None:
        """The next complete (possibly multi-packet) payload in the buffer, else None."""
        buf = self._buf
        start = self._start
        avail = len(buf) - start
        if avail < 4:
            return None
        n = buf[start] | buf[start + 1] << 8 | buf[start + 2] << 16
        if n < MAX_PACKET:
            if avail < 4 + n:
                return None
            with memoryview(buf) as mv:
                payload = bytes(mv[start + 4:start + 4 + n])
            self._start = start + 4 + n
            return payload
        # A payload of 16 MB or more: packets of MAX_PACKET bytes, then a shorter one.
        parts = []
        pos = start
        while True:
            if len(buf) - pos < 4:
                return None
            n = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
            if len(buf) - pos < 4 + n:
                return None
            parts.append((pos + 4, pos + 4 + n))
            pos += 4 + n
            if n < MAX_PACKET:
                break
        with memoryview(buf) as mv:
            payload = b"".join(bytes(mv[a:b]) for a, b in parts)
        self._start = pos
        return payload

    def read_event(self, timeout: float | None = None) -> BinlogEvent | None:
        """The next event; None if none arrived within `timeout` seconds (None: wait).

        Raises `BinlogServerError` for an error packet, `ConnectionError` when the connection
        is lost or the server ends the stream.
        """
        sock = self._sock
        if sock is None:
            raise ConnectionError("the binlog client is not started (or closed)")
        payload = self._next_packet()
        if payload is None:
            sock.settimeout(timeout)
            try:
                while payload is None:
                    self._fill()
                    payload = self._next_packet()
            except TimeoutError:
                return None
            except OSError as exc:
                if isinstance(exc, ConnectionError):
                    raise
                raise ConnectionError(f"binlog connection lost: {exc}") from exc
        first = payload[0]
        if first == 0:
            return self.parser.parse(payload[1:])
        if first == 0xFF:
            raise _error(payload)
        if first == 0xFE and len(payload) < 9:
            raise ConnectionAbortedError("the server ended the binlog stream (EOF)")
        raise ConnectionError(f"unexpected replication packet 0x{first:02x}")
