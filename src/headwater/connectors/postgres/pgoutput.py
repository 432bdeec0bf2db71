"""Sans-IO decoder for PostgreSQL's ``pgoutput`` logical replication messages.

Role
----
The streaming source owns the socket: it runs ``START_REPLICATION ... LOGICAL`` over a walsender
connection, unwraps the CopyData/XLogData framing, sends standby status updates and tracks
positions.  What it gets out of each XLogData frame is one pgoutput message (the bytes described
in PostgreSQL's "Logical Replication Message Formats", protocol section 55.9 in the PG 15 docs),
and that is all this module sees: **bytes in, values out**.  It performs no I/O, keeps no state
and knows nothing about connections, which makes it trivially testable from byte fixtures and
reusable by anything that obtains pgoutput bytes (a walsender stream,
``pg_logical_slot_peek_binary_changes``, a recorded file).

The one piece of protocol state a decoder cannot infer from the bytes is whether the message sits
inside a streamed transaction: with ``proto_version`` >= 2 and ``streaming 'on'``, data messages
(Relation, Type, Insert, Update, Delete, Truncate, Message) sent between Stream Start and Stream
Stop carry an extra int32 xid right after the type byte.  The caller tracks that (it is one bool
flipped by `StreamStart`/`StreamStop`) and passes ``in_stream=True``; the decoded message then
exposes the xid in its ``xid`` field, which is ``None`` outside a stream.  That xid may be a
*subtransaction* xid (PostgreSQL sends the xid of the (sub)transaction the change belongs to, so
that a later ``StreamAbort(xid, subxid)`` can discard exactly the changes of a rolled-back
savepoint); `StreamStart.xid` is always the top-level one.  Exception (seen on PostgreSQL 15,
still discussed upstream as a bug): a transactional `LogicalMessage` emitted under a savepoint
carries the *top-level* xid, so ``StreamAbort(xid, subxid)`` cannot tell it belongs to the
rolled-back subtransaction.

Values
------
Row images (`TupleData`) are tuples aligned with the columns of the most recent `Relation`
message for the same oid: ``None`` for SQL NULL ('n'), `UNCHANGED_TOAST` for an unchanged
TOASTed value the server did not send ('u'), `str` for text-format values ('t', decoded as UTF-8:
the walsender converts text to the connection's ``client_encoding``, so the source must connect
with ``client_encoding=UTF8``) and `bytes` for binary-format values ('b', with ``binary 'true'``).
A key-only old tuple (``old_kind == 'K'``) still has one entry per column: the non-key columns
arrive as NULLs, and only `RelationColumn.is_key` tells a real NULL key from an absent value.

Timestamps are converted from PostgreSQL's epoch (2000-01-01) to Unix-epoch microseconds.  LSNs
and xids are plain ints (`format_lsn`/`parse_lsn` convert LSNs to and from the ``16/B374D848``
form).  An empty namespace on the wire means ``pg_catalog`` and is decoded as such, like
PostgreSQL's own reader does.

Performance
-----------
`decode` runs once per row change, so the hot paths (Insert, Update, Delete, Begin, Commit) are
written for CPython speed: dispatch on the first byte through an if-chain ordered by frequency,
precompiled `struct.Struct` readers, ``bytes.find`` for NUL-terminated strings, row images
(TupleData) read by one compiled call each (`_tupledata.read_tuple`, _tupledata.c: ~0.5 us an
Insert of six text columns against ~1.6 in the Python loop, which stays as the fallback and
the reader of malformed bytes) and no intermediate objects; messages are NamedTuples built
through ``tuple.__new__`` directly.  Error checks rely on exceptions (free in CPython 3.11
until raised) and on one final "consumed exactly the whole buffer" comparison.

Errors
------
Truncated, over-long or otherwise malformed input raises `PgOutputError` (a `ValueError`) naming
the message type byte, the offset in the buffer and what was expected there.  Two-phase commit
messages (``two_phase``, protocol version 3) are recognised but not supported and raise too.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final, NamedTuple, TypeAlias

from headwater.model.record import UNCHANGED_TOAST

__all__ = [
    "PG_EPOCH_OFFSET_US",
    "Begin",
    "Commit",
    "Delete",
    "Insert",
    "LogicalMessage",
    "Origin",
    "PgOutputError",
    "PgOutputMessage",
    "Relation",
    "RelationColumn",
    "StreamAbort",
    "StreamCommit",
    "StreamStart",
    "StreamStop",
    "Truncate",
    "TupleData",
    "Type",
    "Update",
    "decode",
    "encode_begin",
    "encode_commit",
    "format_lsn",
    "parse_lsn",
]

# Microseconds between the Unix epoch (1970-01-01) and the PostgreSQL epoch (2000-01-01).
PG_EPOCH_OFFSET_US: Final = 946_684_800_000_000

# One entry per relation column: None | UNCHANGED_TOAST | str | bytes.
TupleData: TypeAlias = tuple[Any, ...]


def _compiled_reader() -> Callable[[bytes, int, int, Any], tuple[TupleData, int] | None] | None:
    """The compiled row image reader (_tupledata.c, built by setup.py); None: the Python
    loops below read every image."""
    try:
        from headwater.connectors.postgres._tupledata import read_tuple
    except ImportError:  # pragma: no cover - the package builds it
        return None
    return read_tuple


_read_tuple = _compiled_reader()


class PgOutputError(ValueError):
    """A pgoutput message could not be decoded (truncated, corrupt or unsupported)."""


# --------------------------------------------------------------------------------------------
# Message types.  `xid` on data messages: the (sub)transaction xid sent inside a streamed
# transaction (decode(..., in_stream=True)), None otherwise.
# --------------------------------------------------------------------------------------------


class Begin(NamedTuple):
    final_lsn: int  # LSN of the commit record; equals Commit.commit_lsn
    commit_ts_us: int  # Unix-epoch microseconds
    xid: int


class Commit(NamedTuple):
    flags: int  # currently always 0
    commit_lsn: int
    end_lsn: int  # end of the commit record: the position to confirm once the tx is durable
    commit_ts_us: int


class Origin(NamedTuple):
    lsn: int  # commit LSN on the origin server
    name: str


class RelationColumn(NamedTuple):
    is_key: bool  # part of the replica identity (every column under REPLICA IDENTITY FULL)
    name: str
    type_oid: int
    type_modifier: int  # atttypmod, -1 if none (varchar(255) -> 259, numeric(10,2) -> 655366)


class Relation(NamedTuple):
    oid: int
    namespace: str
    name: str
    replica_identity: str  # 'd' default, 'n' nothing, 'f' full, 'i' index
    columns: tuple[RelationColumn, ...]
    xid: int | None = None


class Type(NamedTuple):
    oid: int
    namespace: str
    name: str
    xid: int | None = None


class Insert(NamedTuple):
    relation_oid: int
    new: TupleData
    xid: int | None = None


class Update(NamedTuple):
    relation_oid: int
    old: TupleData | None  # None unless the key changed ('K') or REPLICA IDENTITY FULL ('O')
    old_kind: str | None  # 'K' key columns only, 'O' full old row, None
    new: TupleData
    xid: int | None = None


class Delete(NamedTuple):
    relation_oid: int
    old: TupleData
    old_kind: str  # 'K' key columns only (others NULL), 'O' full old row
    xid: int | None = None


class Truncate(NamedTuple):
    relation_oids: tuple[int, ...]
    cascade: bool
    restart_identity: bool
    xid: int | None = None


class LogicalMessage(NamedTuple):
    transactional: bool
    lsn: int
    prefix: str
    content: bytes
    xid: int | None = None


class StreamStart(NamedTuple):
    xid: int  # top-level transaction
    first_segment: bool


class StreamStop(NamedTuple):
    pass


class StreamCommit(NamedTuple):
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


class StreamAbort(NamedTuple):
    xid: int  # top-level transaction
    subxid: int  # == xid when the whole transaction aborted, else the rolled-back subtransaction
    # Only sent with protocol version 4 and streaming 'parallel' (PostgreSQL 16+).
    abort_lsn: int | None = None
    abort_ts_us: int | None = None


PgOutputMessage: TypeAlias = (
    Begin
    | Commit
    | Origin
    | Relation
    | Type
    | Insert
    | Update
    | Delete
    | Truncate
    | LogicalMessage
    | StreamStart
    | StreamStop
    | StreamCommit
    | StreamAbort
)

# --------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------

_new = tuple.__new__
_UTF8: Final = "utf-8"

_U8 = struct.Struct("!B")
_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_U32_U8 = struct.Struct("!IB")  # relation oid + tuple kind byte
_U32_U8_U16 = struct.Struct("!IBH")  # relation oid + 'N' + column count
_U32_U32_U8_U16 = struct.Struct("!IIBH")  # xid + relation oid + 'N' + column count
_BEGIN = struct.Struct("!QqI")
_COMMIT = struct.Struct("!BQQq")
_U64 = struct.Struct("!Q")
_U8_U64 = struct.Struct("!BQ")
_U8_U16 = struct.Struct("!BH")
_U32_U32 = struct.Struct("!II")
_U32_U32_U64_I64 = struct.Struct("!IIQq")
_STREAM_COMMIT = struct.Struct("!IBQQq")
_COLUMN_TAIL = struct.Struct("!Ii")  # type oid + typmod

_u32 = _U32.unpack_from
_u16 = _U16.unpack_from

_NAMES: Final = {
    ord("B"): "Begin",
    ord("C"): "Commit",
    ord("O"): "Origin",
    ord("R"): "Relation",
    ord("Y"): "Type",
    ord("I"): "Insert",
    ord("U"): "Update",
    ord("D"): "Delete",
    ord("T"): "Truncate",
    ord("M"): "Message",
    ord("S"): "Stream Start",
    ord("E"): "Stream Stop",
    ord("c"): "Stream Commit",
    ord("A"): "Stream Abort",
}
_UNSUPPORTED: Final = {
    ord("b"): "Begin Prepare",
    ord("P"): "Prepare",
    ord("K"): "Commit Prepared",
    ord("r"): "Rollback Prepared",
    ord("p"): "Stream Prepare",
}
_REPLICA_IDENTITIES: Final = {ord("d"): "d", ord("n"): "n", ord("f"): "f", ord("i"): "i"}


def _label(msg_type: int) -> str:
    name = _NAMES.get(msg_type) or _UNSUPPORTED.get(msg_type) or "unknown"
    return f"{name} message (type byte {bytes((msg_type,))!r})"


def _error(data: bytes, offset: int, problem: str, hint: str = "") -> PgOutputError:
    return PgOutputError(
        f"pgoutput {_label(data[0])}: {problem} at offset {offset} "
        f"(message is {len(data)} bytes){hint}"
    )


def _truncated(data: bytes, offset: int, what: str) -> PgOutputError:
    return _error(data, offset, f"truncated: expected {what}")


def _bad_tuple_kind(
    data: bytes, pos: int, kind: int, expected: str, in_stream: bool
) -> PgOutputError:
    # A streamed data message decoded without in_stream=True puts the (usually 0x00) high byte of
    # the relation oid where the tuple kind byte should be.
    hint = "" if in_stream or kind else "; is this a streamed message decoded without in_stream?"
    return _error(data, pos, f"expected {expected}, got {bytes((kind,))!r}", hint)


def _check_end(data: bytes, pos: int) -> None:
    if pos != len(data):
        raise _error(data, pos, f"{len(data) - pos} unexpected trailing bytes")


def _cstr(data: bytes, pos: int, what: str) -> tuple[str, int]:
    """Read a NUL-terminated UTF-8 string at `pos`; returns it and the offset after the NUL."""
    end = data.find(b"\0", pos)
    if end < 0:
        raise _truncated(data, pos, f"NUL-terminated {what}")
    try:
        return data[pos:end].decode(_UTF8), end + 1
    except UnicodeDecodeError as exc:
        raise _error(data, pos + exc.start, f"invalid UTF-8 in {what}") from None


def _tuple(data: bytes, pos: int, ncols: int) -> tuple[TupleData, int]:
    """Decode `ncols` TupleData columns starting at `pos` (just after the Int16 count).

    Returns the values and the offset after the last column: the compiled reader's
    (`_tupledata.read_tuple`, the same values), or where it was not built or the bytes are
    malformed this loop's, which names what is wrong.  `decode` carries an inlined copy of
    this loop for the Insert fast path: keep the two in step.
    """
    if _read_tuple is not None:
        read = _read_tuple(data, pos, ncols, UNCHANGED_TOAST)
        if read is not None:
            return read
    values: list[Any] = [None] * ncols  # 'n' columns need no work
    i = start = 0
    try:
        for i in range(ncols):
            kind = data[pos]
            if kind == 116:  # 't' text
                start = pos + 5
                pos = start + _u32(data, pos + 1)[0]
                values[i] = data[start:pos].decode()
            elif kind == 110:  # 'n' null
                pos += 1
            elif kind == 117:  # 'u' unchanged TOAST
                values[i] = UNCHANGED_TOAST
                pos += 1
            elif kind == 98:  # 'b' binary
                start = pos + 5
                pos = start + _u32(data, pos + 1)[0]
                values[i] = data[start:pos]
            else:
                raise _bad_kind(data, pos, kind, i)
    except (IndexError, struct.error):
        raise _tuple_error(data, pos, i, ncols) from None
    except UnicodeDecodeError as exc:
        raise _bad_utf8(data, start, exc, i) from None
    if pos > len(data):
        raise _tuple_error(data, pos, ncols, ncols)
    return tuple(values), pos


def _bad_kind(data: bytes, pos: int, kind: int, col: int) -> PgOutputError:
    return _error(
        data,
        pos,
        f"unknown column kind {bytes((kind,))!r} for column {col} (expected 'n', 'u', 't' or 'b')",
    )


def _bad_utf8(data: bytes, start: int, exc: UnicodeDecodeError, col: int) -> PgOutputError:
    return _error(data, start + exc.start, f"invalid UTF-8 in text value of column {col}")


def _tuple_error(data: bytes, pos: int, col: int, ncols: int) -> PgOutputError:
    n = len(data)
    if pos > n:  # the previous column's declared length ran past the end
        return _error(
            data,
            n,
            f"truncated: value of column {col - 1} of {ncols} declares "
            f"{pos - n} more bytes than the buffer holds",
        )
    if pos >= n:
        return _truncated(data, pos, f"kind byte of column {col} of {ncols}")
    return _truncated(data, pos + 1, f"4-byte value length of column {col} of {ncols}")


# --------------------------------------------------------------------------------------------
# Per-message decoders: (message bytes[, in_stream]) -> message; the type byte is at offset 0
# --------------------------------------------------------------------------------------------


def _header_what(in_stream: bool, rest: str) -> str:
    return ("Int32 xid + " if in_stream else "") + "Int32 relation oid + " + rest


def _insert(data: bytes, in_stream: bool) -> Insert:
    try:
        if in_stream:
            xid, oid, kind, ncols = _U32_U32_U8_U16.unpack_from(data, 1)
            pos = 12
        else:
            oid, kind, ncols = _U32_U8_U16.unpack_from(data, 1)
            xid = None
            pos = 8
    except struct.error:
        raise _truncated(data, 1, _header_what(in_stream, "'N' + Int16 column count")) from None
    if kind != 78:
        raise _bad_tuple_kind(data, pos - 3, kind, "'N' (new tuple)", in_stream)
    new, pos = _tuple(data, pos, ncols)
    if pos != len(data):
        _check_end(data, pos)
    return _new(Insert, (oid, new, xid))


def _update(data: bytes, in_stream: bool) -> Update:
    pos = 5 if in_stream else 1
    try:
        xid = _u32(data, 1)[0] if in_stream else None
        oid, kind = _U32_U8.unpack_from(data, pos)
    except struct.error:
        raise _truncated(data, 1, _header_what(in_stream, "tuple kind byte")) from None
    pos += 4
    old: TupleData | None
    if kind == 78:  # 'N': no old tuple
        old = old_kind = None
    elif kind in {75, 79}:  # 'K' / 'O'
        old_kind = "K" if kind == 75 else "O"
        try:
            (ncols,) = _u16(data, pos + 1)
        except struct.error:
            raise _truncated(data, pos + 1, "Int16 column count of the old tuple") from None
        old, pos = _tuple(data, pos + 3, ncols)
    else:
        raise _bad_tuple_kind(data, pos, kind, "'K', 'O' or 'N'", in_stream)
    try:
        kind, ncols = _U8_U16.unpack_from(data, pos)
    except struct.error:
        raise _truncated(data, pos, "'N' + Int16 column count of the new tuple") from None
    if kind != 78:
        raise _bad_tuple_kind(data, pos, kind, "'N' (new tuple)", True)
    new, pos = _tuple(data, pos + 3, ncols)
    if pos != len(data):
        _check_end(data, pos)
    return _new(Update, (oid, old, old_kind, new, xid))


def _delete(data: bytes, in_stream: bool) -> Delete:
    pos = 5 if in_stream else 1
    try:
        xid = _u32(data, 1)[0] if in_stream else None
        oid, kind = _U32_U8.unpack_from(data, pos)
        (ncols,) = _u16(data, pos + 5)
    except struct.error:
        raise _truncated(data, 1, _header_what(in_stream, "'K'/'O' + Int16 column count")) from None
    if kind == 75:
        old_kind = "K"
    elif kind == 79:
        old_kind = "O"
    else:
        raise _bad_tuple_kind(data, pos + 4, kind, "'K' or 'O'", in_stream)
    old, pos = _tuple(data, pos + 7, ncols)
    if pos != len(data):
        _check_end(data, pos)
    return _new(Delete, (oid, old, old_kind, xid))


def _begin(data: bytes) -> Begin:
    try:
        final_lsn, ts, xid = _BEGIN.unpack_from(data, 1)
    except struct.error:
        raise _truncated(data, 1, "Int64 final LSN + Int64 commit time + Int32 xid") from None
    if len(data) != 21:
        _check_end(data, 21)
    return _new(Begin, (final_lsn, ts + PG_EPOCH_OFFSET_US, xid))


def _commit(data: bytes) -> Commit:
    try:
        flags, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(data, 1)
    except struct.error:
        raise _truncated(
            data, 1, "Int8 flags + Int64 commit LSN + Int64 end LSN + Int64 commit time"
        ) from None
    if len(data) != 26:
        _check_end(data, 26)
    return _new(Commit, (flags, commit_lsn, end_lsn, ts + PG_EPOCH_OFFSET_US))


def encode_begin(final_lsn: int, commit_ts_us: int, xid: int) -> bytes:
    """A Begin message (`_begin`'s inverse; commit time in Unix-epoch µs): a streamed
    transaction's replay starts with one."""
    return b"B" + _BEGIN.pack(final_lsn, commit_ts_us - PG_EPOCH_OFFSET_US, xid)


def encode_commit(commit_lsn: int, end_lsn: int, commit_ts_us: int) -> bytes:
    """A Commit message without flags (`_commit`'s inverse): a replay's end."""
    return b"C" + _COMMIT.pack(0, commit_lsn, end_lsn, commit_ts_us - PG_EPOCH_OFFSET_US)


def _stream_xid(data: bytes, in_stream: bool) -> tuple[int | None, int]:
    if not in_stream:
        return None, 1
    try:
        return _u32(data, 1)[0], 5
    except struct.error:
        raise _truncated(data, 1, "Int32 xid (message inside a streamed transaction)") from None


def _relation(data: bytes, in_stream: bool) -> Relation:
    xid, pos = _stream_xid(data, in_stream)
    try:
        (oid,) = _u32(data, pos)
    except struct.error:
        raise _truncated(data, pos, "Int32 relation oid") from None
    namespace, pos = _cstr(data, pos + 4, "namespace")
    name, pos = _cstr(data, pos, "relation name")
    try:
        ident, ncols = _U8_U16.unpack_from(data, pos)
    except struct.error:
        raise _truncated(data, pos, "Int8 replica identity + Int16 column count") from None
    replica_identity = _REPLICA_IDENTITIES.get(ident)
    if replica_identity is None:
        raise _error(
            data, pos, f"unknown replica identity {bytes((ident,))!r} (expected d, n, f or i)"
        )
    pos += 3
    columns: list[RelationColumn] = []
    for i in range(ncols):
        try:
            (flags,) = _U8.unpack_from(data, pos)
        except struct.error:
            raise _truncated(data, pos, f"Int8 flags of column {i} of {ncols}") from None
        colname, pos = _cstr(data, pos + 1, f"name of column {i}")
        try:
            type_oid, typmod = _COLUMN_TAIL.unpack_from(data, pos)
        except struct.error:
            raise _truncated(
                data, pos, f"Int32 type oid + Int32 type modifier of column {i} of {ncols}"
            ) from None
        pos += 8
        columns.append(RelationColumn(bool(flags & 1), colname, type_oid, typmod))
    _check_end(data, pos)
    return Relation(oid, namespace or "pg_catalog", name, replica_identity, tuple(columns), xid)


def _type(data: bytes, in_stream: bool) -> Type:
    xid, pos = _stream_xid(data, in_stream)
    try:
        (oid,) = _u32(data, pos)
    except struct.error:
        raise _truncated(data, pos, "Int32 type oid") from None
    namespace, pos = _cstr(data, pos + 4, "namespace")
    name, pos = _cstr(data, pos, "type name")
    _check_end(data, pos)
    return Type(oid, namespace or "pg_catalog", name, xid)


def _truncate(data: bytes, in_stream: bool) -> Truncate:
    xid, pos = _stream_xid(data, in_stream)
    try:
        nrels, options = _U32_U8.unpack_from(data, pos)
    except struct.error:
        raise _truncated(data, pos, "Int32 relation count + Int8 options") from None
    pos += 5
    if len(data) - pos < 4 * nrels:
        raise _truncated(data, pos, f"{nrels} Int32 relation oids")
    oids = struct.unpack_from(f"!{nrels}I", data, pos)
    _check_end(data, pos + 4 * nrels)
    return Truncate(oids, bool(options & 1), bool(options & 2), xid)


def _message(data: bytes, in_stream: bool) -> LogicalMessage:
    xid, pos = _stream_xid(data, in_stream)
    try:
        flags, lsn = _U8_U64.unpack_from(data, pos)
    except struct.error:
        raise _truncated(data, pos, "Int8 flags + Int64 LSN") from None
    prefix, pos = _cstr(data, pos + 9, "prefix")
    try:
        (length,) = _u32(data, pos)
    except struct.error:
        raise _truncated(data, pos, "Int32 content length") from None
    pos += 4
    end = pos + length
    if end > len(data):
        raise _truncated(data, pos, f"{length} content bytes, {len(data) - pos} present")
    _check_end(data, end)
    return LogicalMessage(bool(flags & 1), lsn, prefix, data[pos:end], xid)


def _origin(data: bytes) -> Origin:
    try:
        (lsn,) = _U64.unpack_from(data, 1)
    except struct.error:
        raise _truncated(data, 1, "Int64 origin LSN") from None
    name, pos = _cstr(data, 9, "origin name")
    _check_end(data, pos)
    return Origin(lsn, name)


def _stream_start(data: bytes) -> StreamStart:
    try:
        xid, first = _U32_U8.unpack_from(data, 1)
    except struct.error:
        raise _truncated(data, 1, "Int32 xid + Int8 first-segment flag") from None
    _check_end(data, 6)
    return StreamStart(xid, first == 1)


_STREAM_STOP: Final = StreamStop()


def _stream_stop(data: bytes) -> StreamStop:
    _check_end(data, 1)
    return _STREAM_STOP


def _stream_commit(data: bytes) -> StreamCommit:
    try:
        xid, flags, commit_lsn, end_lsn, ts = _STREAM_COMMIT.unpack_from(data, 1)
    except struct.error:
        raise _truncated(
            data,
            1,
            "Int32 xid + Int8 flags + Int64 commit LSN + Int64 end LSN + Int64 commit time",
        ) from None
    _check_end(data, 30)
    return StreamCommit(xid, flags, commit_lsn, end_lsn, ts + PG_EPOCH_OFFSET_US)


def _stream_abort(data: bytes) -> StreamAbort:
    if len(data) == 25:  # protocol version 4, streaming 'parallel'
        xid, subxid, lsn, ts = _U32_U32_U64_I64.unpack_from(data, 1)
        return StreamAbort(xid, subxid, lsn, ts + PG_EPOCH_OFFSET_US)
    try:
        xid, subxid = _U32_U32.unpack_from(data, 1)
    except struct.error:
        raise _truncated(data, 1, "Int32 xid + Int32 subtransaction xid") from None
    _check_end(data, 9)
    return StreamAbort(xid, subxid)


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def decode(data: bytes | memoryview, in_stream: bool = False) -> PgOutputMessage:
    """Decode one pgoutput message (the payload of one XLogData frame).

    `in_stream` must be True between a `StreamStart` and the matching `StreamStop`
    (protocol version >= 2 with ``streaming 'on'``): data messages then carry a leading xid,
    returned in their ``xid`` field (None when `in_stream` is False).

    Raises `PgOutputError` on empty, truncated, over-long, corrupt or unsupported input.
    """
    if type(data) is not bytes:
        data = bytes(data)
    try:
        t = data[0]
    except IndexError:
        raise PgOutputError("pgoutput: empty message (expected a type byte at offset 0)") from None
    # Ordered by frequency: row changes, then transaction boundaries.
    if t == 73:  # 'I'
        if in_stream:
            return _insert(data, True)
        # Inlined Insert + `_tuple` (saves two calls and a pair per row; keep in step).
        try:
            oid, kind, ncols = _U32_U8_U16.unpack_from(data, 1)
        except struct.error:
            raise _truncated(data, 1, _header_what(False, "'N' + Int16 column count")) from None
        if kind != 78:
            raise _bad_tuple_kind(data, 5, kind, "'N' (new tuple)", False)
        if _read_tuple is not None:
            read = _read_tuple(data, 8, ncols, UNCHANGED_TOAST)
            if read is not None and read[1] == len(data):
                return _new(Insert, (oid, read[0], None))
        values: list[Any] = [None] * ncols
        pos = 8
        i = start = 0
        try:
            for i in range(ncols):
                kind = data[pos]
                if kind == 116:  # 't' text
                    start = pos + 5
                    pos = start + _u32(data, pos + 1)[0]
                    values[i] = data[start:pos].decode()
                elif kind == 110:  # 'n' null
                    pos += 1
                elif kind == 117:  # 'u' unchanged TOAST
                    values[i] = UNCHANGED_TOAST
                    pos += 1
                elif kind == 98:  # 'b' binary
                    start = pos + 5
                    pos = start + _u32(data, pos + 1)[0]
                    values[i] = data[start:pos]
                else:
                    raise _bad_kind(data, pos, kind, i)
        except (IndexError, struct.error):
            raise _tuple_error(data, pos, i, ncols) from None
        except UnicodeDecodeError as exc:
            raise _bad_utf8(data, start, exc, i) from None
        if pos != len(data):
            if pos > len(data):
                raise _tuple_error(data, pos, ncols, ncols)
            _check_end(data, pos)
        return _new(Insert, (oid, tuple(values), None))
    if t == 85:  # 'U'
        if not in_stream and _read_tuple is not None and len(data) >= 8 and data[5] == 78:
            # The common Update (no old tuple), read in one compiled call; else `_update`.
            read = _read_tuple(data, 8, _u16(data, 6)[0], UNCHANGED_TOAST)
            if read is not None and read[1] == len(data):
                return _new(Update, (_u32(data, 1)[0], None, None, read[0], None))
        return _update(data, in_stream)
    if t == 68:  # 'D'
        return _delete(data, in_stream)
    if t == 66:  # 'B'
        return _begin(data)
    if t == 67:  # 'C'
        return _commit(data)
    if t == 82:  # 'R'
        return _relation(data, in_stream)
    if t == 83:  # 'S'
        return _stream_start(data)
    if t == 69:  # 'E'
        return _stream_stop(data)
    if t == 99:  # 'c'
        return _stream_commit(data)
    if t == 65:  # 'A'
        return _stream_abort(data)
    if t == 77:  # 'M'
        return _message(data, in_stream)
    if t == 84:  # 'T'
        return _truncate(data, in_stream)
    if t == 89:  # 'Y'
        return _type(data, in_stream)
    if t == 79:  # 'O'
        return _origin(data)
    if t in _UNSUPPORTED:
        raise _error(data, 0, "two-phase commit messages are not supported (two_phase is off)")
    raise _error(data, 0, "unknown message type")


def format_lsn(lsn: int) -> str:
    """Format an LSN the way PostgreSQL prints ``pg_lsn`` values: ``16/B374D848``."""
    if not 0 <= lsn <= 0xFFFF_FFFF_FFFF_FFFF:
        raise ValueError(f"LSN out of range for uint64: {lsn}")
    return f"{lsn >> 32:X}/{lsn & 0xFFFF_FFFF:X}"


def parse_lsn(text: str) -> int:
    """Parse the ``16/B374D848`` form (1-8 hex digits on each side of the slash) to an int."""
    hi, sep, lo = text.partition("/")
    if (
        not sep
        or not 0 < len(hi) <= 8
        or not 0 < len(lo) <= 8
        or not all(c in "0123456789abcdefABCDEF" for c in hi + lo)
    ):
        raise ValueError(f"invalid LSN {text!r}: expected 'XXXXXXXX/XXXXXXXX' (hexadecimal)")
    return (int(hi, 16) << 32) | int(lo, 16)
