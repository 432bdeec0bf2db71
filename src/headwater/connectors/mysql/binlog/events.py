"""Sans-IO parsing of binlog events: one event's bytes in, one typed value out.

Role
----
`client.BinlogClient` owns the socket and hands each replication packet (the bytes after the
OK byte) to a `BinlogParser`; a binlog *file* (tests, fixtures) is split by
`split_binlog_file`.  The parser keeps the little state the stream needs and the bytes cannot
give on their own: whether events end in a CRC32 (announced by FORMAT_DESCRIPTION), the
post-header lengths it declares, and the current file name and position (ROTATE, including the
artificial ROTATE at the start of a dump, changes the file; each event's `log_pos` is the
position of the next one).

Row events are parsed only down to their column bitmaps: the row images are decoded by a
`rows.RowDecoder` compiled for the table, which is where the time goes.

Event layouts follow MariaDB's `log_event.h` / MySQL's "Binlog Event" reference: a 19-byte
header (timestamp, type, server id, event size, next position, flags), a post-header whose
length FORMAT_DESCRIPTION declares per type, a body and, with ``binlog_checksum=CRC32``, a
4-byte CRC32 of everything before it.  Unknown event types are returned as `UnknownEvent` and
skipped by size, which is how a replica tolerates newer servers.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final, NamedTuple, TypeAlias

__all__ = [
    "ANNOTATE_ROWS_EVENT",
    "BINLOG_CHECKPOINT_EVENT",
    "DELETE_ROWS",
    "DELETE_ROWS_EVENT_V1",
    "DELETE_ROWS_EVENT_V2",
    "FORMAT_DESCRIPTION_EVENT",
    "GTID_LIST_EVENT",
    "HEARTBEAT_LOG_EVENT",
    "MARIADB_GTID_EVENT",
    "QUERY",
    "QUERY_EVENT",
    "ROTATE_EVENT",
    "STOP_EVENT",
    "TABLE_MAP_EVENT",
    "UPDATE_ROWS",
    "UPDATE_ROWS_EVENT_V1",
    "UPDATE_ROWS_EVENT_V2",
    "WRITE_ROWS",
    "WRITE_ROWS_EVENT_V1",
    "WRITE_ROWS_EVENT_V2",
    "XA_PREPARE_LOG_EVENT",
    "XID_EVENT",
    "AnnotateRows",
    "BinlogCheckpoint",
    "BinlogEvent",
    "BinlogFormatError",
    "BinlogParser",
    "EventBody",
    "FormatDescription",
    "GtidList",
    "Heartbeat",
    "MariaGtid",
    "MySqlGtid",
    "Query",
    "Rotate",
    "RowsEvent",
    "Stop",
    "TableMap",
    "UnknownEvent",
    "XaPrepare",
    "Xid",
    "split_binlog_file",
]

# ---- event type codes ------------------------------------------------------------------------
STOP_EVENT: Final = 3
QUERY_EVENT: Final = 2
ROTATE_EVENT: Final = 4
FORMAT_DESCRIPTION_EVENT: Final = 15
XID_EVENT: Final = 16
TABLE_MAP_EVENT: Final = 19
WRITE_ROWS_EVENT_V1: Final = 23
UPDATE_ROWS_EVENT_V1: Final = 24
DELETE_ROWS_EVENT_V1: Final = 25
HEARTBEAT_LOG_EVENT: Final = 27
WRITE_ROWS_EVENT_V2: Final = 30
UPDATE_ROWS_EVENT_V2: Final = 31
DELETE_ROWS_EVENT_V2: Final = 32
MYSQL_GTID_EVENT: Final = 33
MYSQL_ANONYMOUS_GTID_EVENT: Final = 34
XA_PREPARE_LOG_EVENT: Final = 38
PARTIAL_UPDATE_ROWS_EVENT: Final = 39
TRANSACTION_PAYLOAD_EVENT: Final = 40
ANNOTATE_ROWS_EVENT: Final = 160
BINLOG_CHECKPOINT_EVENT: Final = 161
MARIADB_GTID_EVENT: Final = 162
GTID_LIST_EVENT: Final = 163
START_ENCRYPTION_EVENT: Final = 164
QUERY_COMPRESSED_EVENT: Final = 165
WRITE_ROWS_COMPRESSED_EVENT_V1: Final = 166
UPDATE_ROWS_COMPRESSED_EVENT_V1: Final = 167
DELETE_ROWS_COMPRESSED_EVENT_V1: Final = 168
WRITE_ROWS_COMPRESSED_EVENT: Final = 169
UPDATE_ROWS_COMPRESSED_EVENT: Final = 170
DELETE_ROWS_COMPRESSED_EVENT: Final = 171

# The rows events' codes by kind, MariaDB's compressed forms (`log_bin_compress`) included:
# what the streaming reader and the incremental snapshot hook dispatch on (the parser gives a
# compressed event's rows uncompressed, so the two forms are handled alike).
WRITE_ROWS: Final = frozenset({WRITE_ROWS_EVENT_V1, WRITE_ROWS_EVENT_V2,
                               WRITE_ROWS_COMPRESSED_EVENT_V1, WRITE_ROWS_COMPRESSED_EVENT})
UPDATE_ROWS: Final = frozenset({UPDATE_ROWS_EVENT_V1, UPDATE_ROWS_EVENT_V2,
                                UPDATE_ROWS_COMPRESSED_EVENT_V1, UPDATE_ROWS_COMPRESSED_EVENT})
DELETE_ROWS: Final = frozenset({DELETE_ROWS_EVENT_V1, DELETE_ROWS_EVENT_V2,
                                DELETE_ROWS_COMPRESSED_EVENT_V1, DELETE_ROWS_COMPRESSED_EVENT})
# A statement's codes (MariaDB writes a long one compressed under `log_bin_compress`).
QUERY: Final = frozenset({QUERY_EVENT, QUERY_COMPRESSED_EVENT})

# Rows events by type code: (kind, version, compressed); kind is "insert"/"update"/"delete".
_ROWS_KINDS: Final = {
    WRITE_ROWS_EVENT_V1: ("insert", 1, False),
    UPDATE_ROWS_EVENT_V1: ("update", 1, False),
    DELETE_ROWS_EVENT_V1: ("delete", 1, False),
    WRITE_ROWS_EVENT_V2: ("insert", 2, False),
    UPDATE_ROWS_EVENT_V2: ("update", 2, False),
    DELETE_ROWS_EVENT_V2: ("delete", 2, False),
    WRITE_ROWS_COMPRESSED_EVENT_V1: ("insert", 1, True),
    UPDATE_ROWS_COMPRESSED_EVENT_V1: ("update", 1, True),
    DELETE_ROWS_COMPRESSED_EVENT_V1: ("delete", 1, True),
    WRITE_ROWS_COMPRESSED_EVENT: ("insert", 2, True),
    UPDATE_ROWS_COMPRESSED_EVENT: ("update", 2, True),
    DELETE_ROWS_COMPRESSED_EVENT: ("delete", 2, True),
}

# MySQL events that carry rows in a form this reader does not decode, with the server setting
# that writes them: they raise (naming it), since passing over them would lose their rows.
_UNREAD_DATA: Final = {
    PARTIAL_UPDATE_ROWS_EVENT: "MySQL's partial JSON updates (PARTIAL_UPDATE_ROWS_EVENT) are "
    "not supported: set binlog_row_value_options='' on the server",
    TRANSACTION_PAYLOAD_EVENT: "MySQL's compressed transactions (TRANSACTION_PAYLOAD_EVENT) are "
    "not supported: set binlog_transaction_compression=OFF on the server",
}

LOG_EVENT_ARTIFICIAL_F: Final = 0x20
BINLOG_MAGIC: Final = b"\xfebin"
HEADER_SIZE: Final = 19
CHECKSUM_OFF: Final = 0
CHECKSUM_CRC32: Final = 1

# MariaDB GTID event flags.
FL_STANDALONE: Final = 1
FL_GROUP_COMMIT_ID: Final = 2
FL_TRANSACTIONAL: Final = 4
FL_ALLOW_PARALLEL: Final = 8
FL_WAITED: Final = 16
FL_DDL: Final = 32
FL_PREPARED_XA: Final = 64
FL_COMPLETED_XA: Final = 128

_HEADER: Final = struct.Struct("<IBIIIH")
_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_U64: Final = struct.Struct("<Q")
_QUERY_POST: Final = struct.Struct("<IIBHH")
_GTID: Final = struct.Struct("<QIB")
_GTID_ENTRY: Final = struct.Struct("<IIQ")


class BinlogFormatError(ValueError):
    """An event could not be parsed (truncated, corrupt, bad checksum or unsupported)."""


# ---- event bodies ----------------------------------------------------------------------------


class FormatDescription(NamedTuple):
    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes  # index i: post-header length of event type i + 1
    checksum_alg: int  # 0 off, 1 CRC32


class Rotate(NamedTuple):
    position: int
    next_file: str


MODE_ANSI_QUOTES: Final = 4  # sql_mode's ANSI_QUOTES bit (also set by the ANSI combination)


class Query(NamedTuple):
    thread_id: int
    exec_time: int
    error_code: int
    database: str  # the default database ('' if none)
    sql: str
    sql_mode: int | None
    # (character_set_client, collation_connection, collation_server) collation ids, if sent.
    charset: tuple[int, int, int] | None
    time_zone: str | None


class Xid(NamedTuple):
    xid: int


class MariaGtid(NamedTuple):
    """MariaDB's GTID event, which starts every event group (transaction or DDL)."""

    seq_no: int
    domain_id: int
    server_id: int  # from the event header
    flags: int
    commit_id: int | None  # group commit id (FL_GROUP_COMMIT_ID)
    xa_xid: bytes | None  # formatID(4) + gtrid + bqual of an XA transaction

    @property
    def standalone(self) -> bool:
        """True for a group without BEGIN/COMMIT (DDL): it ends at its own QUERY event."""
        return bool(self.flags & FL_STANDALONE)

    @property
    def gtid(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


class GtidList(NamedTuple):
    """The GTID state at the start of a binlog file: (domain, server, seq_no) per domain."""

    gtids: tuple[tuple[int, int, int], ...]
    flags: int


class BinlogCheckpoint(NamedTuple):
    file: str


class AnnotateRows(NamedTuple):
    sql: str  # the statement that produced the following rows events


class Heartbeat(NamedTuple):
    file: str  # MariaDB sends the current file name ('' from MySQL's v1 heartbeat)
    position: int


class Stop(NamedTuple):
    pass


class XaPrepare(NamedTuple):
    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes


class MySqlGtid(NamedTuple):
    flags: int
    uuid: str
    gno: int  # 0 for an anonymous GTID

    @property
    def gtid(self) -> str:
        return f"{self.uuid}:{self.gno}"


class TableMap(NamedTuple):
    """TABLE_MAP: the column types of a table id, for the rows events that follow.

    `column_meta` holds one int per column, as the row decoder needs it: VARCHAR max byte
    length, BLOB/JSON/GEOMETRY length-prefix size, FLOAT/DOUBLE size, temporal fsp,
    NEWDECIMAL ``precision << 8 | scale``, BIT ``bytes * 8 + bits``, STRING/ENUM/SET
    ``real_type << 8 | length byte``.  The optional metadata (``binlog_row_metadata=FULL``)
    is None when absent; lists are aligned with all columns (None for columns the kind does not
    apply to).
    """

    table_id: int
    flags: int
    database: str
    table: str
    column_types: bytes
    column_meta: tuple[int, ...]
    nullable: tuple[bool, ...]
    unsigned: tuple[bool, ...] | None
    collations: tuple[int | None, ...] | None  # character, ENUM and SET columns
    column_names: tuple[str, ...] | None
    enum_values: tuple[tuple[str, ...] | None, ...] | None
    set_values: tuple[tuple[str, ...] | None, ...] | None
    geometry_types: tuple[int | None, ...] | None
    primary_key: tuple[int, ...] | None  # column indexes
    primary_key_prefixes: tuple[int, ...] | None  # 0 = whole column
    visibility: tuple[bool, ...] | None
    signature: bytes  # the body without the table id: equal for equal table definitions


class RowsEvent(NamedTuple):
    """WRITE/UPDATE/DELETE_ROWS (v1, v2, MariaDB compressed): rows still as bytes."""

    kind: str  # "insert", "update" or "delete"
    table_id: int
    flags: int
    column_count: int
    columns_present: int  # bitmap as an int, bit i = column i
    columns_present_after: int | None  # UPDATE: the after image's columns
    data: bytes  # holds the row images in data[rows_start:rows_end]
    rows_start: int
    rows_end: int

    @property
    def statement_end(self) -> bool:
        return bool(self.flags & 1)


class UnknownEvent(NamedTuple):
    payload: bytes  # body after the header, checksum stripped


EventBody: TypeAlias = (
    FormatDescription | Rotate | Query | Xid | MariaGtid | GtidList | BinlogCheckpoint
    | AnnotateRows | Heartbeat | Stop | XaPrepare | MySqlGtid | TableMap | RowsEvent
    | UnknownEvent
)


class BinlogEvent(NamedTuple):
    timestamp: int  # seconds since the epoch
    type_code: int
    server_id: int
    event_size: int
    log_pos: int  # end position: where the next event starts (0 for artificial events)
    flags: int
    position: int  # where this event starts in `file`
    file: str
    body: EventBody


# ---- small readers ---------------------------------------------------------------------------


def read_packed_int(data: bytes, pos: int) -> tuple[int, int]:
    """A length-encoded integer at `pos`: (value, next position)."""
    first = data[pos]
    if first < 251:
        return first, pos + 1
    if first == 252:
        return data[pos + 1] | data[pos + 2] << 8, pos + 3
    if first == 253:
        return int.from_bytes(data[pos + 1:pos + 4], "little"), pos + 4
    if first == 254:
        return int.from_bytes(data[pos + 1:pos + 9], "little"), pos + 9
    raise BinlogFormatError(f"invalid length-encoded integer 0x{first:02x} at offset {pos}")


def _packed_ints(data: bytes) -> list[int]:
    out = []
    pos = 0
    while pos < len(data):
        value, pos = read_packed_int(data, pos)
        out.append(value)
    return out


def _packed_strings(data: bytes, pos: int, end: int) -> tuple[list[str], int]:
    out = []
    while pos < end:
        n, pos = read_packed_int(data, pos)
        out.append(data[pos:pos + n].decode("utf-8", "replace"))
        pos += n
    return out, pos


def _cstr(data: bytes) -> str:
    nul = data.find(b"\0")
    return (data if nul < 0 else data[:nul]).decode("utf-8", "replace")


# ---- column type helpers (shared with rows.py) -----------------------------------------------

T_DECIMAL, T_TINY, T_SHORT, T_LONG, T_FLOAT, T_DOUBLE, T_NULL, T_TIMESTAMP = range(8)
T_LONGLONG, T_INT24, T_DATE, T_TIME, T_DATETIME, T_YEAR, T_NEWDATE, T_VARCHAR = range(8, 16)
T_BIT, T_TIMESTAMP2, T_DATETIME2, T_TIME2 = 16, 17, 18, 19
T_JSON, T_NEWDECIMAL, T_ENUM, T_SET = 245, 246, 247, 248
T_TINY_BLOB, T_MEDIUM_BLOB, T_LONG_BLOB, T_BLOB = 249, 250, 251, 252
T_VAR_STRING, T_STRING, T_GEOMETRY = 253, 254, 255

_META_1: Final = frozenset({T_FLOAT, T_DOUBLE, T_BLOB, T_GEOMETRY, T_JSON, T_TIMESTAMP2,
                            T_DATETIME2, T_TIME2, T_TINY_BLOB, T_MEDIUM_BLOB, T_LONG_BLOB})
_NUMERIC: Final = frozenset({T_TINY, T_SHORT, T_INT24, T_LONG, T_LONGLONG, T_FLOAT, T_DOUBLE,
                             T_NEWDECIMAL, T_DECIMAL})
_CHARACTER: Final = frozenset({T_STRING, T_VARCHAR, T_VAR_STRING, T_BLOB, T_TINY_BLOB,
                               T_MEDIUM_BLOB, T_LONG_BLOB})
# MariaDB counts YEAR as numeric (unsigned) and GEOMETRY as a character column (binary) in the
# optional metadata; MySQL does neither (checked against MariaDB 10.11's TABLE_MAP bytes).
_NUMERIC_MARIADB: Final = _NUMERIC | {T_YEAR}
_CHARACTER_MARIADB: Final = _CHARACTER | {T_GEOMETRY}


def real_type(type_code: int, meta: int) -> int:
    """The type a STRING column really has (ENUM and SET hide in STRING's metadata)."""
    if type_code == T_STRING and meta >> 8 in (T_ENUM, T_SET):
        return meta >> 8
    return type_code


def _column_meta(types: bytes, data: bytes) -> tuple[int, ...]:
    out = []
    pos = 0
    for t in types:
        if t in _META_1:
            out.append(data[pos])
            pos += 1
        elif t in (T_VARCHAR, T_VAR_STRING):
            out.append(data[pos] | data[pos + 1] << 8)
            pos += 2
        elif t == T_BIT:
            out.append(data[pos + 1] * 8 + data[pos])
            pos += 2
        elif t in (T_NEWDECIMAL, T_STRING, T_ENUM, T_SET):
            out.append(data[pos] << 8 | data[pos + 1])
            pos += 2
        else:
            out.append(0)
    if pos != len(data):
        raise BinlogFormatError(f"TABLE_MAP metadata: {len(data)} bytes, types use {pos}")
    return tuple(out)


def _bits_msb(data: bytes, count: int) -> list[bool]:
    return [bool(data[i >> 3] & (0x80 >> (i & 7))) for i in range(count)]


# ---- the parser ------------------------------------------------------------------------------


class BinlogParser:
    """Turns event bytes into `BinlogEvent`s, tracking checksum, file and position.

    `checksum`: whether events carry a CRC32 before the first FORMAT_DESCRIPTION arrives (the
    client knows it from ``@@global.binlog_checksum``; the artificial ROTATE at the start of a
    dump is checksummed like the rest).  FORMAT_DESCRIPTION then says it for the events after
    it.  `verify`: check each CRC32 (cheap: zlib's CRC runs at GB/s); otherwise just strip it.
    """

    def __init__(self, *, checksum: bool = False, verify: bool = True, file: str = "",
                 position: int = 4) -> None:
        self.checksum = checksum
        self.verify = verify
        self.file = file
        self.position = position
        # Post-header lengths as MariaDB 10.x / MySQL 5.6+ write them, until an FDE says.
        self.rows_post_header = {1: 8, 2: 10}
        self.table_map_post_header = 8
        self.format_description: FormatDescription | None = None
        self.mariadb = True  # until an FDE names another server

    def parse(self, data: bytes) -> BinlogEvent:
        """One event (header + body [+ CRC32]) -> a `BinlogEvent`."""
        try:
            timestamp, type_code, server_id, size, log_pos, flags = _HEADER.unpack_from(data)
        except struct.error:
            raise BinlogFormatError(f"event of {len(data)} bytes is shorter than a header") \
                from None
        if size != len(data):
            raise BinlogFormatError(
                f"event type {type_code}: header says {size} bytes, got {len(data)}")
        if type_code == FORMAT_DESCRIPTION_EVENT:
            body: EventBody = self._format_description(data)
            end = size - 4 if self.checksum else size
        else:
            end = size
            if self.checksum:
                end -= 4
                if self.verify and zlib.crc32(data[:end]) != _U32.unpack_from(data, end)[0]:
                    raise BinlogFormatError(
                        f"event type {type_code} at {self.file}:{log_pos - size}: "
                        "CRC32 mismatch")
            unread = _UNREAD_DATA.get(type_code)
            if unread is not None:  # rows this reader cannot decode: never passed over
                raise BinlogFormatError(
                    f"event type {type_code} at {self.file}:{log_pos - size}: {unread}")
            try:
                body = self._body(type_code, data, end, server_id)
            except (IndexError, struct.error, UnicodeDecodeError) as exc:
                raise BinlogFormatError(
                    f"event type {type_code} at {self.file}:{log_pos - size}: "
                    f"truncated or corrupt ({exc})") from None
        artificial = log_pos == 0 or flags & LOG_EVENT_ARTIFICIAL_F
        if type_code == ROTATE_EVENT:
            assert isinstance(body, Rotate)
            if artificial:
                self.file = body.next_file
                self.position = body.position
                position = body.position
            else:
                position = log_pos - size
            event = BinlogEvent(timestamp, type_code, server_id, size, log_pos, flags,
                                position, self.file, body)
            self.file = body.next_file
            self.position = body.position
            return event
        if type_code == HEARTBEAT_LOG_EVENT:
            assert isinstance(body, Heartbeat)
            return BinlogEvent(timestamp, type_code, server_id, size, log_pos, flags,
                               log_pos, body.file or self.file, body)
        if artificial or log_pos < size:
            position = self.position
        else:
            position = log_pos - size
            self.position = log_pos
        return BinlogEvent(timestamp, type_code, server_id, size, log_pos, flags, position,
                           self.file, body)

    # -- bodies ---------------------------------------------------------------------------------
    def _format_description(self, data: bytes) -> FormatDescription:
        # Checksum-aware servers always end the FDE with the algorithm byte and 4 CRC bytes
        # (present even with binlog_checksum=NONE).
        size = len(data)
        alg = data[size - 5]
        if alg not in (CHECKSUM_OFF, CHECKSUM_CRC32):
            raise BinlogFormatError(f"FORMAT_DESCRIPTION: unknown checksum algorithm {alg}")
        if alg == CHECKSUM_CRC32 and self.verify:
            # The server computes this CRC with LOG_EVENT_BINLOG_IN_USE_F clear: it sets and
            # clears that flag in place in an open file's first FDE.
            flags = _U16.unpack_from(data, 17)[0] & ~1
            crc = zlib.crc32(data[19:size - 4], zlib.crc32(_U16.pack(flags), zlib.crc32(data[:17])))
            if crc != _U32.unpack_from(data, size - 4)[0]:
                raise BinlogFormatError("FORMAT_DESCRIPTION: CRC32 mismatch")
        p = HEADER_SIZE
        version = _U16.unpack_from(data, p)[0]
        server_version = _cstr(data[p + 2:p + 52])
        create_ts = _U32.unpack_from(data, p + 52)[0]
        header_len = data[p + 56]
        post = bytes(data[p + 57:size - 5])
        if header_len != HEADER_SIZE:
            raise BinlogFormatError(f"FORMAT_DESCRIPTION: header length {header_len}")
        self.checksum = alg == CHECKSUM_CRC32
        if len(post) >= TABLE_MAP_EVENT:
            self.table_map_post_header = post[TABLE_MAP_EVENT - 1]
        if len(post) >= WRITE_ROWS_EVENT_V1:
            self.rows_post_header[1] = post[WRITE_ROWS_EVENT_V1 - 1]
        if len(post) >= WRITE_ROWS_EVENT_V2:
            self.rows_post_header[2] = post[WRITE_ROWS_EVENT_V2 - 1]
        self.mariadb = "mariadb" in server_version.lower()
        fde = FormatDescription(version, server_version, create_ts, header_len, post, alg)
        self.format_description = fde
        return fde

    def _body(self, type_code: int, data: bytes, end: int, server_id: int) -> EventBody:
        p = HEADER_SIZE
        kind = _ROWS_KINDS.get(type_code)
        if kind is not None:
            return self._rows(kind, data, end)
        if type_code == TABLE_MAP_EVENT:
            return self._table_map(data, end)
        if type_code == XID_EVENT:
            return Xid(_U64.unpack_from(data, p)[0])
        if type_code == MARIADB_GTID_EVENT:
            seq_no, domain, gflags = _GTID.unpack_from(data, p)
            q = p + 13
            commit_id = None
            xa = None
            if gflags & FL_GROUP_COMMIT_ID:
                commit_id = _U64.unpack_from(data, q)[0]
                q += 8
            if gflags & (FL_PREPARED_XA | FL_COMPLETED_XA):
                glen, blen = data[q + 4], data[q + 5]
                xa = bytes(data[q:q + 4]) + bytes(data[q + 6:q + 6 + glen + blen])
            return MariaGtid(seq_no, domain, server_id, gflags, commit_id, xa)
        if type_code in (QUERY_EVENT, QUERY_COMPRESSED_EVENT):
            return self._query(type_code, data, end)
        if type_code == ANNOTATE_ROWS_EVENT:
            return AnnotateRows(data[p:end].decode("utf-8", "replace"))
        if type_code == ROTATE_EVENT:
            return Rotate(_U64.unpack_from(data, p)[0],
                          data[p + 8:end].decode("utf-8", "replace"))
        if type_code == GTID_LIST_EVENT:
            word = _U32.unpack_from(data, p)[0]
            count = word & 0x0FFFFFFF
            gtids = tuple((d, s, n) for d, s, n in
                          (_GTID_ENTRY.unpack_from(data, p + 4 + 16 * i) for i in range(count)))
            if p + 4 + 16 * count > end:
                raise BinlogFormatError(f"GTID_LIST: {count} entries do not fit")
            return GtidList(gtids, word >> 28)
        if type_code == BINLOG_CHECKPOINT_EVENT:
            n = _U32.unpack_from(data, p)[0]
            return BinlogCheckpoint(data[p + 4:p + 4 + n].decode("utf-8", "replace"))
        if type_code == HEARTBEAT_LOG_EVENT:
            return Heartbeat(data[p:end].decode("utf-8", "replace"),
                             _U32.unpack_from(data, 13)[0])
        if type_code == STOP_EVENT:
            return Stop()
        if type_code == XA_PREPARE_LOG_EVENT:
            fmt, glen, blen = struct.unpack_from("<iII", data, p + 1)
            xid = data[p + 13:p + 13 + glen + blen]
            return XaPrepare(bool(data[p]), fmt, bytes(xid[:glen]), bytes(xid[glen:]))
        if type_code in (MYSQL_GTID_EVENT, MYSQL_ANONYMOUS_GTID_EVENT):
            sid = data[p + 1:p + 17].hex()
            uuid = f"{sid[:8]}-{sid[8:12]}-{sid[12:16]}-{sid[16:20]}-{sid[20:]}"
            return MySqlGtid(data[p], uuid, _U64.unpack_from(data, p + 17)[0])
        if type_code == START_ENCRYPTION_EVENT:
            raise BinlogFormatError("encrypted binlogs are not supported (START_ENCRYPTION)")
        return UnknownEvent(bytes(data[p:end]))

    def _query(self, type_code: int, data: bytes, end: int) -> Query:
        p = HEADER_SIZE
        thread_id, exec_time, db_len, error_code, status_len = _QUERY_POST.unpack_from(data, p)
        status = data[p + 13:p + 13 + status_len]
        sql_mode, charset, time_zone = _status_vars(status)
        q = p + 13 + status_len
        database = data[q:q + db_len].decode("utf-8", "replace")
        text = data[q + db_len + 1:end]
        if type_code == QUERY_COMPRESSED_EVENT:
            text = _uncompress(text)
        return Query(thread_id, exec_time, error_code, database,
                     text.decode("utf-8", "replace"), sql_mode, charset, time_zone)

    def _table_map(self, data: bytes, end: int) -> TableMap:
        p = HEADER_SIZE
        if self.table_map_post_header == 6:
            table_id, flags = _U32.unpack_from(data, p)[0], _U16.unpack_from(data, p + 4)[0]
        else:
            table_id = int.from_bytes(data[p:p + 6], "little")
            flags = _U16.unpack_from(data, p + 6)[0]
        q = p + self.table_map_post_header
        sig_start = q
        n = data[q]
        database = data[q + 1:q + 1 + n].decode("utf-8", "replace")
        q += n + 2
        n = data[q]
        table = data[q + 1:q + 1 + n].decode("utf-8", "replace")
        q += n + 2
        count, q = read_packed_int(data, q)
        types = bytes(data[q:q + count])
        q += count
        meta_len, q = read_packed_int(data, q)
        meta = _column_meta(types, data[q:q + meta_len])
        q += meta_len
        nbytes = (count + 7) >> 3
        nullable = tuple(bool(data[q + (i >> 3)] >> (i & 7) & 1) for i in range(count))
        q += nbytes
        if q > end:
            raise BinlogFormatError("TABLE_MAP: truncated")
        opt = _parse_optional_metadata(types, meta, data, q, end, self.mariadb)
        return TableMap(table_id, flags, database, table, types, meta, nullable, *opt,
                        signature=bytes(data[sig_start:end]))

    def _rows(self, kind: tuple[str, int, bool], data: bytes, end: int) -> RowsEvent:
        name, version, compressed = kind
        p = HEADER_SIZE
        post = self.rows_post_header[version]
        if post == 6:
            table_id = _U32.unpack_from(data, p)[0]
            flags = _U16.unpack_from(data, p + 4)[0]
        else:
            table_id = int.from_bytes(data[p:p + 6], "little")
            flags = _U16.unpack_from(data, p + 6)[0]
        q = p + post
        if version == 2:  # extra row info (length includes its own 2 bytes)
            q += _U16.unpack_from(data, p + 8)[0] - 2
        count, q = read_packed_int(data, q)
        nbytes = (count + 7) >> 3
        present = int.from_bytes(data[q:q + nbytes], "little")
        q += nbytes
        after = None
        if name == "update":
            after = int.from_bytes(data[q:q + nbytes], "little")
            q += nbytes
        if q > end:
            raise BinlogFormatError("rows event: truncated before the row images")
        if compressed:
            rows = _uncompress(data[q:end])
            return RowsEvent(name, table_id, flags, count, present, after, rows, 0, len(rows))
        return RowsEvent(name, table_id, flags, count, present, after, data, q, end)


def _uncompress(data: bytes) -> bytes:
    """MariaDB's compressed event payload: a header byte, the uncompressed length, zlib data."""
    head = data[0]
    lenlen = head & 0x07
    if head & 0x70 or not 1 <= lenlen <= 4:
        raise BinlogFormatError(f"compressed event: unsupported header byte 0x{head:02x}")
    size = int.from_bytes(data[1:1 + lenlen], "big")
    try:
        out = zlib.decompress(data[1 + lenlen:])
    except zlib.error as exc:
        raise BinlogFormatError(f"compressed event: {exc}") from None
    if len(out) != size:
        raise BinlogFormatError(f"compressed event: {len(out)} bytes, header says {size}")
    return out


# QUERY status variables: (code -> fixed size) for the ones we skip.
_STATUS_FIXED: Final = {0: 4, 1: 8, 3: 4, 4: 6, 7: 2, 8: 2, 9: 8, 10: 4, 13: 3, 14: 4, 16: 1,
                        17: 8, 18: 2, 19: 1, 20: 1, 128: 3, 129: 8, 130: 1}


def _status_vars(data: bytes) -> tuple[int | None, tuple[int, int, int] | None, str | None]:
    """(sql_mode, charset triple, time zone) from QUERY status variables.

    Stops quietly at an unknown code: the SQL text and database do not depend on it (the
    post-header gives the status block's length).
    """
    sql_mode = charset = time_zone = None
    pos = 0
    n = len(data)
    while pos < n:
        code = data[pos]
        pos += 1
        if code == 1:
            sql_mode = _U64.unpack_from(data, pos)[0]
        elif code == 4:
            a, b, c = struct.unpack_from("<HHH", data, pos)
            charset = (a, b, c)
        elif code == 5:
            time_zone = data[pos + 1:pos + 1 + data[pos]].decode("ascii", "replace")
            pos += 1 + data[pos]
            continue
        if code in _STATUS_FIXED:
            pos += _STATUS_FIXED[code]
        elif code == 2:  # catalog: length, name, NUL
            pos += data[pos] + 2
        elif code == 6:  # catalog without NUL
            pos += data[pos] + 1
        elif code == 11:  # invoker: user, host
            pos += data[pos] + 1
            pos += data[pos] + 1
        elif code == 12:  # updated db names
            count = data[pos]
            pos += 1
            if count != 254:
                for _ in range(count):
                    pos = data.index(b"\0", pos) + 1
        else:
            break
    return sql_mode, charset, time_zone


_Optional: TypeAlias = tuple[
    tuple[bool, ...] | None, tuple[int | None, ...] | None, tuple[str, ...] | None,
    tuple[tuple[str, ...] | None, ...] | None, tuple[tuple[str, ...] | None, ...] | None,
    tuple[int | None, ...] | None, tuple[int, ...] | None, tuple[int, ...] | None,
    tuple[bool, ...] | None]


def _parse_optional_metadata(
    types: bytes, meta: tuple[int, ...], data: bytes, pos: int, end: int, mariadb: bool
) -> _Optional:
    """The TLV fields binlog_row_metadata=MINIMAL/FULL appends to TABLE_MAP."""
    count = len(types)
    real = [real_type(t, m) for t, m in zip(types, meta, strict=True)]
    numeric_types = _NUMERIC_MARIADB if mariadb else _NUMERIC
    character_types = _CHARACTER_MARIADB if mariadb else _CHARACTER
    numeric = [i for i, t in enumerate(real) if t in numeric_types]
    character = [i for i, t in enumerate(real) if t in character_types]
    enum_set = [i for i, t in enumerate(real) if t in (T_ENUM, T_SET)]
    unsigned: list[bool] | None = None
    collations: list[int | None] | None = None
    names: tuple[str, ...] | None = None
    enums: list[tuple[str, ...] | None] | None = None
    sets: list[tuple[str, ...] | None] | None = None
    geoms: list[int | None] | None = None
    pk: tuple[int, ...] | None = None
    pk_prefix: tuple[int, ...] | None = None
    visibility: tuple[bool, ...] | None = None
    while pos < end:
        field = data[pos]
        length, pos = read_packed_int(data, pos + 1)
        value = data[pos:pos + length]
        pos += length
        if field == 1:  # SIGNEDNESS: one bit per numeric column, MSB first; 1 = unsigned
            unsigned = [False] * count
            for i, flag in zip(numeric, _bits_msb(value, len(numeric)), strict=True):
                unsigned[i] = flag
        elif field in (2, 3, 10, 11):  # (ENUM/SET) DEFAULT_CHARSET or COLUMN_CHARSET
            cols = character if field in (2, 3) else enum_set
            if collations is None:
                collations = [None] * count
            ints = _packed_ints(value)
            if field in (3, 11):
                for i, coll in zip(cols, ints, strict=False):
                    collations[i] = coll
            else:
                for i in cols:
                    collations[i] = ints[0]
                for k in range(1, len(ints) - 1, 2):
                    collations[cols[ints[k]]] = ints[k + 1]
        elif field == 4:  # COLUMN_NAME
            names = tuple(_packed_strings(value, 0, len(value))[0])
        elif field in (5, 6):  # SET_STR_VALUE, ENUM_STR_VALUE
            lists: list[tuple[str, ...] | None] = [None] * count
            want = T_SET if field == 5 else T_ENUM
            idx = [i for i, t in enumerate(real) if t == want]
            q = 0
            for i in idx:
                n, q = read_packed_int(value, q)
                members = []
                for _ in range(n):
                    ln, q = read_packed_int(value, q)
                    members.append(value[q:q + ln].decode("utf-8", "replace"))
                    q += ln
                lists[i] = tuple(members)
            if field == 5:
                sets = lists
            else:
                enums = lists
        elif field == 7:  # GEOMETRY_TYPE
            geoms = [None] * count
            gi = [i for i, t in enumerate(real) if t == T_GEOMETRY]
            for i, g in zip(gi, _packed_ints(value), strict=False):
                geoms[i] = g
        elif field == 8:  # SIMPLE_PRIMARY_KEY
            pk = tuple(_packed_ints(value))
            pk_prefix = (0,) * len(pk)
        elif field == 9:  # PRIMARY_KEY_WITH_PREFIX
            ints = _packed_ints(value)
            pk, pk_prefix = tuple(ints[0::2]), tuple(ints[1::2])
        elif field == 12:  # COLUMN_VISIBILITY (MySQL 8)
            visibility = tuple(_bits_msb(value, count))
    return (None if unsigned is None else tuple(unsigned),
            None if collations is None else tuple(collations), names,
            None if enums is None else tuple(enums), None if sets is None else tuple(sets),
            None if geoms is None else tuple(geoms), pk, pk_prefix, visibility)


def split_binlog_file(data: bytes) -> list[bytes]:
    """A binlog file's bytes -> its events' bytes (after the 4-byte magic)."""
    if data[:4] != BINLOG_MAGIC:
        raise BinlogFormatError("not a binlog file (bad magic)")
    out = []
    pos = 4
    while pos < len(data):
        if pos + HEADER_SIZE > len(data):
            raise BinlogFormatError(f"truncated event header at {pos}")
        size = _U32.unpack_from(data, pos + 9)[0]
        if size < HEADER_SIZE or pos + size > len(data):
            raise BinlogFormatError(f"event at {pos}: bad size {size}")
        out.append(data[pos:pos + size])
        pos += size
    return out
