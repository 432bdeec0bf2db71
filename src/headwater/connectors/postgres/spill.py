"""On-disk buffers for streamed in-progress transactions (pgoutput protocol 2, ``streaming 'on'``).

Why
---
With protocol version 2 the server sends a large transaction while it is still running, in
segments (Stream Start ... Stream Stop), possibly many of them, interleaved with other complete
transactions and with the segments of other streamed transactions; the outcome comes later as
Stream Commit or Stream Abort.  Nothing of such a transaction may be emitted before its commit,
and an aborted one must leave no trace, so its messages are kept until then - on disk, one file
per top-level transaction, so that memory stays bounded whatever the transaction's size.  In
memory there is only a small record per open transaction (path, size, count) and one write
buffer, for the segment being received.

File format
-----------
``<xid>.spill`` holds one record per data message of the transaction, in arrival order::

    header:  uint32 n | uint32 subxid | uint64 data_start
    body:    n bytes: message
    trailer: uint8 type | uint32 subxid | uint32 n

``message`` is the pgoutput message with the in-stream xid removed (type byte + body): exactly
what the server sends for the same change outside a stream, so the replay decodes it with the
protocol 1 fast path.  ``subxid`` is that xid - the (sub)transaction the change belongs to -
and ``data_start`` the message's WAL position.  The trailer repeats type, subxid and length so
that a subtransaction abort can walk the file backwards.  Integers are big-endian.  The files
are scratch data, never fsynced: after a crash the server sends every transaction that was not
committed and durable again, from its start, so stale files are only deleted (`open`).

Subtransaction aborts
---------------------
``Stream Abort(xid, subxid)`` with ``subxid != xid`` (ROLLBACK TO SAVEPOINT, an exception block
in PL/pgSQL) must discard the changes of that subtransaction and of its own subtransactions,
and nothing else.  They are always a *suffix* of the file made of xids that do not precede
``subxid``, because PostgreSQL

- runs a transaction in one backend, so once a subtransaction has started, every change until it
  ends belongs to it or to its descendants;
- assigns a parent its xid before its children, and a subtransaction that started later a later
  xid, so every change written before the subtransaction started carries a preceding xid (its
  ancestors', or those of earlier siblings that had xids before it started);
- sends the abort when it decodes the abort record, before any later change.

When an ancestor rolls back, its descendants' aborts come first, one by one: the walk for a
descendant may stop early at a change of the ancestor (made after the descendant was released),
but the ancestor's own abort, which follows, removes the whole subtree.  So `abort` drops
trailing records while their subxid does not precede ``subxid`` (xid order is modulo 2**32)
and stops at the first one that does.  Its cost is proportional to what it drops.

Relation messages found in the dropped part are kept (moved to the new end of the file): the
server tracks per top-level transaction which relations it described, so a later change of the
same table in the surviving part may come without a Relation message of its own.  If the
aborted subtransaction had changed the table's definition, the server re-sends the Relation
before its next use, and the later message wins at replay.

Logical decoding messages
-------------------------
A transactional message (``pg_logical_emit_message(true, ...)``) emitted under a savepoint
arrives with the *top-level* xid (seen on PostgreSQL 15; pgoutput sends the xid of the
top-level transaction it is called with).  Written under that xid it would stop the backwards
walk of a later subtransaction abort, and keep that subtransaction's earlier changes.  So a
message is filed under the subxid of the change written just before it in the transaction (the
top-level xid if none): a message emitted before a savepoint is kept when it rolls back, one
emitted inside it after one of its changes is dropped with it.  What cannot be told apart is a
message emitted inside a subtransaction before its first change: it is filed under the parent
and kept if the subtransaction rolls back (docs/compatibility.md).

Lifecycle
---------
`open` takes an exclusive lock on the directory (one capture process per directory) and deletes
stale files; `start`/`append`/`stop` write a segment; `abort` handles Stream Abort; `replay`
reads a committed transaction back once and deletes its file; `close` deletes what is left,
then the directory if it is empty.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import struct
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

log = logging.getLogger("headwater.connectors.postgres.spill")

__all__ = ["SpillBuffer", "SpillError", "default_spill_root"]

SUFFIX = ".spill"
LOCK_NAME = ".lock"

_HEAD = struct.Struct("!IIQB")  # n, subxid, data_start, then the message's type byte
_HEAD_SIZE = 16  # the message (counted by n) starts with the type byte packed by _HEAD
_HEAD_PEEK = _HEAD.size  # 17
_TAIL = struct.Struct("!BII")  # type, subxid, n
_TAIL_SIZE = _TAIL.size
_FRAME = _HEAD_SIZE + _TAIL_SIZE  # record size = n + _FRAME
_XID_TYPE = struct.Struct("!BI")  # type byte + in-stream xid at the start of a streamed message
_RELATION = ord("R")
_MESSAGE = ord("M")


def default_spill_root() -> Path:
    """Where spill directories go when the connector names none: the system temp directory."""
    return Path(tempfile.gettempdir()) / "headwater-spill"


def _precedes(a: int, b: int) -> bool:
    """PostgreSQL's TransactionIdPrecedes for normal xids: a < b modulo 2**32."""
    return ((a - b) & 0xFFFF_FFFF) >= 0x8000_0000


class SpillError(RuntimeError):
    """The spill directory is unusable, or the stream broke the segment protocol."""


_head = _HEAD.pack
_tail = _TAIL.pack
_xid_type = _XID_TYPE.unpack_from


class _Spilled:
    """What memory keeps of one streamed transaction."""

    __slots__ = ("last_sub", "path", "size")

    def __init__(self, path: Path, xid: int) -> None:
        self.path = path
        self.size = 0  # bytes in the file (updated at the end of each segment)
        # The subxid of the last change written: a logical decoding message is filed under it
        # (see "Logical decoding messages" above).
        self.last_sub = xid


class SpillBuffer:
    """Spill files of the streamed transactions of one replication session."""

    def __init__(
        self,
        directory: Path,
        *,
        write_buffer_size: int = 256 * 1024,
        read_chunk_size: int = 1024 * 1024,
    ) -> None:
        self.directory = directory
        self.write_buffer_size = write_buffer_size
        self.read_chunk_size = read_chunk_size
        self._txs: dict[int, _Spilled] = {}
        self._writer: IO[bytes] | None = None
        self._write: Callable[[bytes], object] = self._no_segment
        self._current: _Spilled | None = None
        self._lock_fd: int | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def open(self) -> int:
        """Lock the directory and delete stale spill files; returns how many were deleted."""
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SpillError(
                    f"spill directory {self.directory} is in use by another capture process"
                ) from None
            raise
        self._lock_fd = fd
        removed = 0
        for path in self.directory.glob(f"*{SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
        if removed:
            log.info("spill: deleted %d stale file(s) in %s (the server sends those "
                     "transactions again)", removed, self.directory)
        return removed

    def close(self) -> None:
        """Delete every spill file of this session and release the directory."""
        if self._writer is not None:
            with contextlib.suppress(OSError):
                self._writer.close()
            self._writer = None
            self._write = self._no_segment
            self._current = None
        for tx in self._txs.values():
            with contextlib.suppress(FileNotFoundError):
                tx.path.unlink()
        self._txs.clear()
        if self._lock_fd is not None:
            # Leave no empty directory behind (a new one per slot and server would pile up in
            # the temp directory); the lock file goes first, while still held.
            with contextlib.suppress(OSError):
                (self.directory / LOCK_NAME).unlink()
                self.directory.rmdir()
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    # -- state ----------------------------------------------------------------------------------
    @property
    def transactions(self) -> int:
        """Streamed transactions with a spill file (neither committed nor aborted yet)."""
        return len(self._txs)

    @property
    def bytes_on_disk(self) -> int:
        return sum(tx.size for tx in self._txs.values())

    def size(self, xid: int) -> int:
        """Bytes spilled for `xid` (0 if none)."""
        tx = self._txs.get(xid)
        return tx.size if tx is not None else 0

    def path(self, xid: int) -> Path:
        return self.directory / f"{xid}{SUFFIX}"

    # -- writing a segment ----------------------------------------------------------------------
    def start(self, xid: int, first_segment: bool) -> None:
        """Stream Start: open `xid`'s file for the segment's messages."""
        if self._writer is not None:
            raise SpillError("Stream Start inside a stream segment")
        tx = self._txs.get(xid)
        if tx is None and not first_segment:
            raise SpillError(
                f"Stream Start continues transaction {xid}, whose earlier segments were not "
                "received in this session"
            )
        if tx is None or first_segment:
            tx = self._txs[xid] = _Spilled(self.path(xid), xid)
            mode = "wb"
        else:
            mode = "ab"
        self._writer = open(tx.path, mode, buffering=self.write_buffer_size)  # noqa: SIM115
        self._write = self._writer.write
        self._current = tx

    def append(self, data: bytes, data_start: int) -> None:
        """One data message of the segment, as received (with its in-stream xid)."""
        kind, subxid = _xid_type(data)
        tx = self._current
        if tx is not None:
            if kind == _MESSAGE:
                subxid = tx.last_sub
            else:
                tx.last_sub = subxid
        n = len(data) - 4
        # One write of one bytes object is the fastest way through a BufferedWriter.
        self._write(_head(n, subxid, data_start, kind) + data[5:] + _tail(kind, subxid, n))

    @staticmethod
    def _no_segment(data: bytes) -> object:
        raise SpillError("streamed message outside a stream segment")

    def stop(self) -> None:
        """Stream Stop: flush and close the segment's file (no fsync: scratch data)."""
        writer, tx = self._writer, self._current
        if writer is None or tx is None:
            raise SpillError("Stream Stop outside a stream segment")
        try:
            tx.size = writer.tell()
            writer.close()
        finally:
            self._writer = None
            self._write = self._no_segment
            self._current = None

    # -- outcome --------------------------------------------------------------------------------
    def discard(self, xid: int) -> int:
        """The whole transaction aborted: delete its file; returns the bytes dropped."""
        if self._current is not None and self._current is self._txs.get(xid):
            raise SpillError("Stream Abort inside a stream segment")
        tx = self._txs.pop(xid, None)
        if tx is None:
            return 0
        with contextlib.suppress(FileNotFoundError):
            tx.path.unlink()
        return tx.size

    def abort(self, xid: int, subxid: int) -> int:
        """Stream Abort(xid, subxid): drop what the (sub)transaction wrote.

        Returns the number of records dropped (a whole transaction: the bytes dropped)."""
        if subxid == xid:
            return self.discard(xid)
        tx = self._txs.get(xid)
        if tx is None or tx.size == 0:
            return 0
        if self._current is tx:
            raise SpillError("Stream Abort inside a stream segment")
        fd = os.open(tx.path, os.O_RDWR)
        try:
            return self._drop_suffix(fd, tx, xid, subxid)
        finally:
            os.close(fd)

    def _drop_suffix(self, fd: int, tx: _Spilled, xid: int, subxid: int) -> int:
        end = tx.size
        pos = end
        buf = b""
        buf_start = pos
        block = self.read_chunk_size
        dropped = 0
        kept: list[tuple[int, int]] = []  # Relation records in the dropped part (start, end)
        while pos > 0:
            if pos - _TAIL_SIZE < buf_start:
                buf_start = max(0, pos - block)
                buf = os.pread(fd, pos - buf_start, buf_start)
            kind, sub, n = _TAIL.unpack_from(buf, pos - _TAIL_SIZE - buf_start)
            if _precedes(sub, subxid):
                tx.last_sub = sub
                break
            start = pos - n - _FRAME
            if kind == _RELATION:
                kept.append((start, pos))
            else:
                dropped += 1
            pos = start
        if pos == 0:
            tx.last_sub = xid
        if not dropped:
            return 0
        saved = [os.pread(fd, stop - start, start) for start, stop in reversed(kept)]
        os.ftruncate(fd, pos)
        for record in saved:
            os.pwrite(fd, record, pos)
            pos += len(record)
        tx.size = pos
        return dropped

    def replay(self, xid: int) -> Iterator[tuple[int, bytes]]:
        """(data_start, message without xid) of a committed transaction, in order; then the
        file is deleted.  Reads in chunks: memory stays bounded by the largest message."""
        if self._current is not None and self._current is self._txs.get(xid):
            raise SpillError("Stream Commit inside a stream segment")
        tx = self._txs.pop(xid, None)
        if tx is None:
            return iter(())
        return self._read(tx)

    def _read(self, tx: _Spilled) -> Iterator[tuple[int, bytes]]:
        head = _HEAD.unpack_from
        chunk_size = self.read_chunk_size
        try:
            with open(tx.path, "rb", buffering=0) as f:
                buf = b""
                while True:
                    chunk = f.read(chunk_size)
                    if not chunk:
                        break
                    buf = buf + chunk if buf else chunk
                    pos = 0
                    end = len(buf)
                    while pos + _HEAD_PEEK <= end:
                        n, _sub, lsn, _kind = head(buf, pos)
                        stop = pos + n + _FRAME
                        if stop > end:
                            break
                        yield lsn, buf[pos + _HEAD_SIZE:pos + _HEAD_SIZE + n]
                        pos = stop
                    buf = buf[pos:]
                if buf:
                    raise SpillError(f"spill file {tx.path} ends with a partial record")
        finally:
            with contextlib.suppress(FileNotFoundError):
                tx.path.unlink()
