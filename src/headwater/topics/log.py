"""The local topic log: Headwater's embedded default destination for change events.

It is a tiny single-partition Kafka on local disk, shaped so that Spark's JSON file source can
read it directly.

Layout
======
::

    <root>/.lock                                     flock'ed by the one writer of this root
    <root>/.headwater-format.json                    the layout's format (headwater.state_format)
    <root>/<topic>/00000000000000000000.jsonl        sealed segment, records 0..41
    <root>/<topic>/00000000000000000042.jsonl        sealed segment, records 42..99
    <root>/<topic>/.00000000000000000100.jsonl.inprogress   segment being appended to

A topic (e.g. `inventory.public.customers`) is one directory.  A segment is named after the
offset of its first record, zero-padded to 20 digits, so names sort in offset order.

Record format
=============
One record per line (JSON lines, UTF-8, `\\n`-terminated), keys always in this order::

    {"offset":N,"timestamp":T,"key":K,"value":V,"crc":"C"}
    {"offset":N,"timestamp":T,"key":K,"value":V,"headers":{"name":H,...},"crc":"C"}

* `offset` - per-topic, 0, 1, 2, ... without gaps; never reused, also across restarts/crashes.
* `timestamp` - int, milliseconds since the epoch (the event time the caller chose).
* `key`, `value` - the caller's JSON documents spliced in *raw* (not re-encoded, not escaped);
  `null` for a missing key / a tombstone value.  The writer only replaces raw CR/LF bytes by
  spaces (in valid JSON they can only be insignificant whitespace) so a record stays one line.
* `headers` - present only when the record has headers; names are JSON strings, each value the
  header's bytes (UTF-8 text, as Kafka Connect's header converters write them) as a JSON string,
  or `null` for a null value.  Logs written before Headwater honoured `header.converter` hold
  JsonConverter envelopes spliced in raw (`{"schema":...,"payload":...}`); their readers take
  that raw JSON text as the header's bytes (`headwater.topics.record`).
* `crc` - the CRC-32C of the line's bytes before `,"crc":`, 8 lower-case hex digits
  (`headwater.topics.checksum`); every reader checks it.  Lines written before checksums
  (format 1, below) have no `crc` member and are read unchecked.

Spark reads a topic with `spark.read.schema("offset LONG, timestamp LONG, key STRING,
value STRING, headers MAP<STRING,STRING>").json("<root>/<topic>")`: declaring key/value as STRING
yields their raw JSON text for objects, arrays and numbers (checked with Spark 4: whitespace and
big integers survive), but the unquoted content for a JSON string - so a header reads as its
bytes' text, in new and old logs alike.  Spark and Hadoop skip the
hidden in-progress files.  Consequence of the JSON form: a key or value whose bytes are the JSON
document `null` is indistinguishable from None.

Visibility contract
===================
Readers never see a half-written file.  Records go to the hidden in-progress file; a segment is
*sealed* - fsync, atomic `os.rename` to its visible name, fsync of the directory - when it holds
`segment_bytes` or more, or when it is non-empty and older than `segment_ms`.  Rolling by time
happens inside `append` (for every open segment, not only the touched topics) and in
`maintain()`, which the capture loop calls when idle; `close()` seals everything.  So a record
becomes visible to Spark at most about `segment_ms` after it was appended, provided the caller
keeps calling `append` or `maintain`.  In-process readers (`headwater.topics.reader`) may also
read in-progress files, ignoring a torn last line.

Durability contract
===================
When `append` returns, every record of the batch has been written *and* fsync'ed (one fsync per
touched topic per call, plus a directory fsync when a segment file was created or renamed), so
the caller may acknowledge the source database.  The offsets it returns are final.

If `append` raises `TypeError`/`ValueError` (a record that cannot be encoded), nothing of the
batch was written and the log stays usable.  If it raises `OSError` (disk full, I/O error), the
log is unusable (`TopicLogFailedError` afterwards): part of the batch may be on disk, the page
cache can no longer be trusted after a failed fsync; reopen the root, which recovers, and resend
the batch (at-least-once, like any CDC pipeline after a failure).

Crash recovery
==============
Opening a root recovers every topic: an in-progress file left by a crash may end with a torn line
(the crash hit mid-write); it is truncated to its last complete, valid line, fsync'ed and sealed
(sealing rather than reopening it for append means a follower that has it open never sees bytes
rewritten under it).  An in-progress file with no complete line is removed.  The next offset is
the last offset on disk + 1, found by reading only the tail of the last segment (or the end of
its range, in the name of a segment compaction rewrote; what a compaction pass killed midway
left is removed first: `compaction_files.remove_leftovers`).  This is correct
wherever the process was killed: records are written before they are fsync'ed, fsync'ed before
the rename, and the rename is atomic; if it was lost (power cut before the directory fsync), the
file is still an in-progress file and recovery seals it again.  Records never acknowledged by
`append` may be lost after a power cut (not after a process crash); their offsets can then be
given again, as in Kafka after an unclean leader election.

Only one writer per root: `<root>/.lock` is held with `fcntl.flock` for the writer's lifetime.

Format version
==============
The writer stamps the root with the layout's format (`<root>/.headwater-format.json`,
`headwater.state_format`) once it holds the lock, and refuses a root a newer Headwater
stamped before touching anything in it; the readers check the same stamp.  Format 2 added
the checksum member: a writer opening a format 1 root (or an unstamped one) stamps it 2
before it appends, so that a format 1 release refuses it by name instead of calling every new
record damaged.  The format 1 segments stay as they are and are read unchecked; recovery
seals the in-progress segment, so every segment written after the upgrade is checksummed.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

import orjson

from headwater.dirlock import LockHeld, hold
from headwater.fsync import fsync_dir, raise_with_path
from headwater.model.topic import (
    HeaderBytes,
    PackedRecords,
    RecordChain,
    TopicRecord,
    record_parts,
)
from headwater.state_format import TOPIC_LOG, open_state_dir, write_stamp
from headwater.topics.check import segment_end
from headwater.topics.checksum import TAIL_FORMAT as _TAIL
from headwater.topics.checksum import crc32c, crc32c_extend_address, extend
from headwater.topics.compaction_files import remove_leftovers
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.segment import (
    CorruptSegmentError,
    InvalidTopicNameError,
    inprogress_name,
    list_segments,
    list_topic_names,
    recoverable_end,
    sealed_name,
    validate_topic_name,
)

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "DEFAULT_SEGMENT_MS",
    "CorruptSegmentError",
    "InvalidTopicNameError",
    "OutRecord",
    "PartitionRefused",
    "TopicLog",
    "TopicLogDamaged",
    "TopicLogError",
    "TopicLogFailedError",
    "TopicLogLockedError",
    "lock_root",
]

log = logging.getLogger(__name__)

DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
DEFAULT_SEGMENT_MS = 1000

# A line is written as three parts: prefix (offset, timestamp, key), the value bytes untouched,
# suffix.  Formatting only the small prefix and letting one b"".join copy the value is the
# cheapest way to build the segment bytes in CPython (about half the cost of formatting the
# whole line with %b, which copies the value twice).
# The suffix is the headers member (if any) and the checksum member (`checksum.tail`).
# The batch encoder ends each line with the same bytes, the checksum member with a placeholder
# for its digits (`_PLACEHOLDER`), joins the batch once and has the compiled
# `_crcfill.checksum_lines` write the digits in place (one C call per batch instead of two or
# three C calls and a formatting per record); where that module was not built, the per-record
# encoder writes the same bytes (`_batch_checksummer`).
_PREFIX = b'{"offset":%d,"timestamp":%d,"key":%b,"value":'
_HEADERS = b',"headers":{%b}'
# The prefix's constant pieces, for the compiled packer of PackedRecords (`_pack_into`).
_OFFSET_HEAD, _TS_HEAD, _KEY_VALUE = _PREFIX.split(b"%d")
_KEY_HEAD, _VALUE_HEAD = _KEY_VALUE.split(b"%b")
_PARTS = 3  # parts per record in an encoded batch
_NULL = b"null"
_NEVER = 1 << 62


# A record to append: key/value are JSON documents as bytes (None: null key, tombstone).
OutRecord = TopicRecord


class PartitionRefused(ValueError):
    """A record carries a partition other than 0: a topic here has exactly one."""


class TopicLogError(RuntimeError):
    """Base class of the topic log's own errors."""


class TopicLogLockedError(TopicLogError):
    """Another writer holds the root."""


class TopicLogFailedError(TopicLogError):
    """The log hit an I/O error or was closed; reopen the root to recover."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# The most one write(2) of a batch hands the kernel.  A batch is one buffer (a few MB with
# schemas: max.batch.size records of ~4 KB).  One write(2) of a whole 7.5 MB buffer cost
# 0.3-2 ms of system CPU per MB, mostly 1.2-1.8, pieces of 256 KB-1 MB a steady ~0.25 (2 MB
# pieces ~0.9; ext4, kernel 6.18, 2 vCPUs, loaded).  In bench/capture_vs_pg_recvlogical.py
# (200k events, schemas on) the log's writes took 1.06-1.81 s whole, 0.28-0.44 s in pieces
# (once 1.06).  The bytes written are the same.
_WRITE_PIECE = 256 * 1024


def _write_all(fd: int, data: bytes | bytearray) -> None:
    size = len(data)
    if size <= _WRITE_PIECE:
        n = os.write(fd, data)
        if n == size:
            return
    else:
        n = 0
    with memoryview(data) as view:
        while n < size:
            n += os.write(fd, view[n:n + _WRITE_PIECE])


def _json_field(doc: bytes | None, what: str) -> bytes:
    """Slow path for a falsy key/value: None is JSON null, empty bytes is not JSON at all."""
    if doc is None:
        return _NULL
    raise ValueError(f"record {what} is {doc!r}, which is not a JSON document (use None)")


def _headers_json(headers: HeaderBytes) -> bytes:
    """The headers member's content: each value's bytes as a JSON string (null for None)."""
    parts = []
    for name, raw in headers:
        if not isinstance(name, str):
            raise TypeError(f"header name must be a str, got {type(name).__name__}")
        if raw is None:
            text = b"null"
        else:
            try:
                text = orjson.dumps(bytes(raw).decode("utf-8"))
            except UnicodeDecodeError:
                raise ValueError(f"header {name!r} value {bytes(raw)[:40]!r} is not UTF-8 text "
                                 "(Kafka Connect's header converters write text)") from None
        parts.append(orjson.dumps(name) + b":" + text)
    return b",".join(parts)


def _clean(doc: bytes) -> bytes:
    # In valid JSON a raw CR or LF can only be insignificant whitespace, so a space is
    # equivalent, and it keeps the record on one line.
    return bytes(doc).replace(b"\n", b" ").replace(b"\r", b" ")


def _encode_slow(
    offset: int,
    key: bytes | None,
    value: bytes | None,
    ts: int,
    headers: HeaderBytes,
) -> tuple[bytes, bytes, bytes]:
    """The prefix, value and headers member (b"" for none) of a record with headers, a
    null/empty key or value, or CR/LF bytes: the checksum member is the caller's."""
    k = _clean(key) if key else _json_field(key, "key")
    v = _clean(value) if value else _json_field(value, "value")
    member = _HEADERS % _clean(_headers_json(headers)) if headers else b""
    return _PREFIX % (offset, ts, k), v, member


# What the batch encoder ends each line with: the checksum member, 8 placeholder bytes for its
# digits (written by `_crcfill.checksum_lines`), `"}` and the newline.
_PLACEHOLDER = _TAIL % 0


def _pack_into(data: bytearray, first: int, records: PackedRecords) -> bool:
    """Appends the lines of `records` (offsets from `first`) to `data` with the compiled
    `_crcfill.pack_lines`, the bytes `_lines` writes; False (nothing appended) where those
    take its slow path: a CR or LF byte, whose lines `_encode_slow` cleans."""
    from headwater.topics._crcfill import pack_lines

    kp, vp = records.key_prefix, records.value_prefix
    for doc in (kp, records.keys, vp, records.values):
        if 10 in doc or 13 in doc:
            return False
    if not kp:
        return False
    headers = records.headers
    end = (_HEADERS % _clean(_headers_json(headers)) + _PLACEHOLDER) if headers else _PLACEHOLDER
    mid = b"%b%d%b%b" % (_TS_HEAD, records.timestamp, _KEY_HEAD, kp)
    pack_lines(data, first, _OFFSET_HEAD, mid, records.keys, records.key_off,
               _VALUE_HEAD + vp, records.values, records.value_off, end)
    return True


@functools.cache
def _batch_checksummer() -> Callable[[bytearray, int], None] | None:
    """The compiled batch checksummer (`headwater.topics._crcfill.checksum_lines`, built from
    C by `pip install -e .`, i.e. scripts/setup.sh, or ``python setup.py build_ext
    --inplace``), set up on the first append with google-crc32c's `crc32c_extend`; None when
    the module was not built or that function is not found: the per-record encoder then
    writes the same bytes, slower (the capture by about 6%), and a WARNING says why, once."""
    try:
        from headwater.topics import _crcfill
    except ImportError as exc:
        log.warning("topic log: per-record checksums, the slower encoder: the compiled batch "
                    "checksummer headwater.topics._crcfill is not built (%s); build it with "
                    "`pip install -e .` (scripts/setup.sh) or `python setup.py build_ext "
                    "--inplace` in the repository", exc)
        return None
    try:
        address = crc32c_extend_address()
    except (OSError, AttributeError) as exc:
        log.warning("topic log: per-record checksums, the slower encoder: google-crc32c's "
                    "crc32c_extend was not found for the compiled batch checksummer (%s)", exc)
        return None
    _crcfill.set_crc32c_extend(address)
    return _crcfill.checksum_lines


def _encode_error(exc: Exception, index: int) -> Exception:
    """The error `append` raises for record #`index` of a batch that cannot be encoded."""
    cls = TypeError if isinstance(exc, TypeError) else ValueError
    return cls(f"cannot encode record #{index} of the batch: {exc} (key and value must "
               "be bytes holding a JSON document or None, timestamp an int)")


def _partition_refused(partition: int) -> PartitionRefused:
    return PartitionRefused(
        f"partition {partition} chosen by a transform (PartitionRouting): the "
        "local topic log has one partition per topic (use the Kafka topic "
        "store, or partition.topic.num=1)")


def lock_root(root: Path) -> int:
    """Take `<root>/.lock` (the one writer's lock; also `topics verify --repair`'s, which must
    not cut segments under a running writer); the locked fd, closing it releases the lock."""
    try:
        return hold(root / ".lock")
    except LockHeld as exc:
        who = f" (pid {exc.holder})" if exc.holder else ""
        raise TopicLogLockedError(
            f"topic log root {root} is locked by another writer{who}") from None


class _Topic:
    """Writer state of one topic."""

    __slots__ = ("created_ms", "dir", "fd", "name", "next_offset", "seg_base", "size")

    def __init__(self, name: str, directory: Path, next_offset: int) -> None:
        self.name = name
        self.dir = directory
        self.next_offset = next_offset
        self.fd = -1  # open in-progress segment, -1 if none
        self.seg_base = 0
        self.size = 0
        self.created_ms = 0


class TopicLog:
    """Appends records to the topics under `root`.  Not thread-safe; one writer per root.

    See the module docstring for the format and the durability and visibility contracts.
    """

    def __init__(
        self,
        root: Path | str,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        segment_ms: int = DEFAULT_SEGMENT_MS,
        *,
        validate_json: bool = False,
    ) -> None:
        """Open (creating if needed) and lock `root`, then recover every topic in it.

        `validate_json` parses every key/value/header with orjson before writing: a safety net
        for tests and debugging, off by default because it costs about a third of the throughput.
        """
        if segment_bytes <= 0:
            raise ValueError(f"segment_bytes must be positive, got {segment_bytes}")
        if segment_ms <= 0:
            raise ValueError(f"segment_ms must be positive, got {segment_ms}")
        self.root = Path(root)
        self.segment_bytes = segment_bytes
        self.segment_ms = segment_ms
        self.validate_json = validate_json
        self._topics: dict[str, _Topic] = {}
        self._next_due = _NEVER  # earliest time an open segment must be sealed by age
        self._failed: BaseException | None = None
        self._closed = False
        self._lock_fd = -1
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            # Before recovery, which truncates and renames: a newer layout is left untouched.
            if open_state_dir(self.root, TOPIC_LOG, stamp=False) < TOPIC_LOG.current:
                # Format 1 (or unstamped, the same): its records stay as they are and read
                # unchecked; those appended from now on carry checksums, which a format 1
                # release would call damage, so it must refuse the log by its stamp instead.
                write_stamp(self.root, TOPIC_LOG)
            for name in list_topic_names(self.root):
                self._topics[name] = self._recover(name)
        except BaseException:
            self._unlock()
            raise

    # ------------------------------------------------------------------ public API

    def append(self, batch: Mapping[str, Sequence[OutRecord]]) -> dict[str, tuple[int, int]]:
        """Append records to topics; return `{topic: (first offset, last offset)}`.

        Topics with an empty sequence are skipped (absent from the result).  On return all the
        records are fsync'ed (see the durability contract in the module docstring).
        """
        self._check_usable()
        # Encode everything first: an unencodable record must not leave half a batch on disk.
        encoded: list[tuple[_Topic, bytes | bytearray, int]] = []
        for name, records in batch.items():
            if not records:
                continue
            topic = self._topics.get(name)
            if topic is None:
                topic = self._new_topic(name)
            encoded.append((topic, self._encode_batch(topic.next_offset, records),
                            len(records)))
        if not encoded:
            return {}
        where = self.root
        try:
            now = _now_ms()
            if now >= self._next_due:
                self._roll_due(now)
            result: dict[str, tuple[int, int]] = {}
            created_dirs: list[Path] = []
            for topic, data, count in encoded:
                where = topic.dir
                first = topic.next_offset
                if self._write(topic, data, count, now):
                    created_dirs.append(topic.dir)
                result[topic.name] = (first, topic.next_offset - 1)
            for topic, _, _ in encoded:
                where = topic.dir
                if topic.fd >= 0:
                    os.fsync(topic.fd)
            for d in created_dirs:
                where = d
                fsync_dir(d)
        except BaseException as exc:
            self._fail(exc)
            raise_with_path(exc, where)
        return result

    def maintain(self, now_ms: int | None = None) -> None:
        """Seal every non-empty segment older than `segment_ms` (wall-clock ms)."""
        self._check_usable()
        now = _now_ms() if now_ms is None else now_ms
        if now >= self._next_due:
            try:
                self._roll_due(now)
            except BaseException as exc:
                self._fail(exc)
                raise_with_path(exc, self.root)

    def next_offset(self, topic: str) -> int:
        """The offset the next record appended to `topic` will get (0 for an unknown topic)."""
        t = self._topics.get(topic)
        return 0 if t is None else t.next_offset

    def topics(self) -> list[str]:
        """Names of the topics known to this writer (on disk or appended to), sorted."""
        return sorted(self._topics)

    def close(self) -> None:
        """Seal all open segments and release the lock.  Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._failed is None:
                for topic in self._topics.values():
                    if topic.fd >= 0:
                        self._seal(topic)
        finally:
            for topic in self._topics.values():
                if topic.fd >= 0:
                    os.close(topic.fd)
                    topic.fd = -1
            self._unlock()

    def __enter__(self) -> TopicLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TopicLog({str(self.root)!r}, topics={len(self._topics)})"

    # ------------------------------------------------------------------ encoding

    def _encode_batch(self, first: int, records: Sequence[OutRecord]) -> bytes | bytearray:
        """The batch's checksummed record lines (`headwater.topics.checksum`), offsets from
        `first`: built by the batch encoder, or by the per-record encoder where the compiled
        checksummer was not built (the same bytes)."""
        checksummer = _batch_checksummer()
        if checksummer is None:
            data: bytes | bytearray = b"".join(self._encode_per_record(first, records))
        else:
            data = self._encode_lines(first, records, checksummer)
        if self.validate_json:
            self._validate(records)
        return data

    def _encode_lines(self, first: int, records: Sequence[OutRecord],
                      checksummer: Callable[[bytearray, int], None]) -> bytearray:
        """The batch encoder: each record's line with a placeholder for its checksum's digits
        (the per-record Python work of a writer without checksums), joined once; then one
        compiled call writes the digits in place.  PackedRecords (alone or in a RecordChain)
        are laid out by one compiled call each (`_pack_into`), with no per-record Python."""
        if isinstance(records, RecordChain | PackedRecords):
            data = bytearray()
            off = first
            for part in record_parts(records):
                if not (isinstance(part, PackedRecords) and _pack_into(data, off, part)):
                    data += self._lines(off, part)
                off += len(part)
        else:
            data = self._lines(first, records)
        checksummer(data, len(records))
        return data

    def _lines(self, first: int, records: Sequence[OutRecord]) -> bytearray:
        """The records' lines, each ending with the checksum member's placeholder."""
        parts: list[bytes] = []
        add = parts.extend
        prefix = _PREFIX
        end = _PLACEHOLDER
        off = first
        # Most records carry the same headers object (the format's per-run context headers):
        # their encoded member is computed once per distinct object, not once per record.
        headers_seen: HeaderBytes = ()
        headers_end = end
        try:
            for key, value, ts, headers, partition in records:
                if partition:
                    raise _partition_refused(partition)
                # Fast path: non-empty key and value, no raw CR/LF (int `in` bytes is a memchr,
                # ~30 ns per KB).  Anything else takes the checked slow path.  No line may
                # hold a newline but its last byte: the checksummer cuts the lines there.
                if (
                    not key
                    or not value
                    or 10 in value
                    or 13 in value
                    or 10 in key
                    or 13 in key
                ):
                    head, v, member = _encode_slow(off, key, value, ts, headers)
                    add((head, v, member + end))
                elif not headers:
                    add((prefix % (off, ts, key), value, end))
                else:
                    if headers is not headers_seen:
                        headers_end = _HEADERS % _clean(_headers_json(headers)) + end
                        headers_seen = headers
                    add((prefix % (off, ts, key), value, headers_end))
                off += 1
        except PartitionRefused:
            raise
        except (TypeError, ValueError) as exc:
            raise _encode_error(exc, off - first) from exc
        return bytearray().join(parts)

    def _encode_per_record(self, first: int, records: Sequence[OutRecord]) -> list[bytes]:
        """The per-record encoder (where the compiled checksummer was not built): records as a
        flat list of parts, `_PARTS` per record (one line), each line ending with its CRC-32C,
        of the prefix, the value and the headers member, computed on the parts as they are (no
        line is joined twice)."""
        parts: list[bytes] = []
        add = parts.extend
        prefix = _PREFIX
        tail = _TAIL
        crc = crc32c
        ext = extend
        off = first
        headers_seen: HeaderBytes = ()
        headers_member = b""
        try:
            for key, value, ts, headers, partition in records:
                if partition:
                    raise _partition_refused(partition)
                if (
                    not key
                    or not value
                    or 10 in value
                    or 13 in value
                    or 10 in key
                    or 13 in key
                ):
                    head, v, member = _encode_slow(off, key, value, ts, headers)
                    add((head, v, member + tail % ext(ext(crc(head), v), member)))
                elif not headers:
                    head = prefix % (off, ts, key)
                    add((head, value, tail % ext(crc(head), value)))
                else:
                    if headers is not headers_seen:
                        headers_member = _HEADERS % _clean(_headers_json(headers))
                        headers_seen = headers
                    head = prefix % (off, ts, key)
                    add((head, value, headers_member
                         + tail % ext(ext(crc(head), value), headers_member)))
                off += 1
        except PartitionRefused:
            raise
        except (TypeError, ValueError) as exc:
            raise _encode_error(exc, off - first) from exc
        assert len(parts) == _PARTS * len(records)
        return parts

    @staticmethod
    def _validate(records: Sequence[OutRecord]) -> None:
        for i, rec in enumerate(records):
            docs: list[tuple[str, bytes | None]] = [("key", rec.key), ("value", rec.value)]
            for what, doc in docs:
                if doc is None:
                    continue
                try:
                    orjson.loads(doc)
                except orjson.JSONDecodeError as exc:
                    raise ValueError(f"record #{i} {what} is not valid JSON: {exc}") from None

    # ------------------------------------------------------------------ writing

    def _write(self, topic: _Topic, data: bytes | bytearray, count: int, now: int) -> bool:
        """Write `count` encoded lines, rolling by size; True if a segment file was created."""
        if topic.size + len(data) < self.segment_bytes:
            return self._write_chunk(topic, data, count, now)
        # Rare path: the batch fills the open segment; split it at segment boundaries, after
        # the line that brings the segment to `segment_bytes` or more (the line holding the
        # segment's byte `segment_bytes - 1`).
        created = False
        start = 0
        size = topic.size
        while start < len(data):
            cut = data.find(b"\n", max(start, start + self.segment_bytes - size - 1)) + 1
            if cut <= 0:
                break
            created |= self._write_chunk(topic, data[start:cut], data.count(b"\n", start, cut),
                                         now)
            self._seal(topic)
            start = cut
            size = 0
        if start < len(data):
            created |= self._write_chunk(topic, data[start:], data.count(b"\n", start), now)
        return created

    def _write_chunk(self, topic: _Topic, data: bytes | bytearray, count: int,
                     now: int) -> bool:
        created = False
        if topic.fd < 0:
            self._create_segment(topic, now)
            created = True
        _write_all(topic.fd, data)
        topic.size += len(data)
        topic.next_offset += count
        return created

    def _create_segment(self, topic: _Topic, now: int) -> None:
        path = topic.dir / inprogress_name(topic.next_offset)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
        topic.fd = os.open(path, flags, 0o644)
        topic.seg_base = topic.next_offset
        topic.size = 0
        topic.created_ms = now
        due = now + self.segment_ms
        self._next_due = min(self._next_due, due)

    def _seal(self, topic: _Topic) -> None:
        """fsync, rename to the visible name, fsync the directory, close."""
        fd = topic.fd
        os.fsync(fd)
        os.rename(
            topic.dir / inprogress_name(topic.seg_base), topic.dir / sealed_name(topic.seg_base)
        )
        fsync_dir(topic.dir)
        topic.fd = -1
        topic.size = 0
        os.close(fd)

    def _roll_due(self, now: int) -> None:
        next_due = _NEVER
        for topic in self._topics.values():
            if topic.fd < 0:
                continue
            due = topic.created_ms + self.segment_ms
            if now >= due and topic.size > 0:
                self._seal(topic)
            elif due < next_due:
                next_due = due
        self._next_due = next_due

    # ------------------------------------------------------------------ topics and recovery

    def _new_topic(self, name: str) -> _Topic:
        validate_topic_name(name)
        directory = self.root / name
        try:
            directory.mkdir()
        except FileExistsError:
            # Created behind our back since open (we hold the lock, so by hand): recover it.
            topic = self._recover(name)
        else:
            fsync_dir(self.root)
            topic = _Topic(name, directory, 0)
        self._topics[name] = topic
        return topic

    def _recover(self, name: str) -> _Topic:
        directory = self.root / name
        remove_leftovers(directory)  # of a compaction pass killed midway
        segments = list_segments(directory)
        sealed: dict[int, Path] = {s.base: s.path for s in segments if s.sealed}
        next_offset = 0
        changed = False
        for seg in segments:
            if seg.sealed:
                continue
            if seg.base in sealed:
                raise CorruptSegmentError(
                    f"{seg.path} and {sealed[seg.base]} both exist; remove the one that is not "
                    "the complete segment"
                )
            last = self._recover_inprogress(seg.path)
            changed = True
            if last is None:
                seg.path.unlink()
                next_offset = max(next_offset, seg.base)
            else:
                os.rename(seg.path, directory / sealed_name(seg.base))
                sealed[seg.base] = directory / sealed_name(seg.base)
                log.warning("recovered in-progress segment %s up to offset %d", seg.path, last)
        if changed:
            fsync_dir(directory)
        if sealed:
            base = max(sealed)
            path = sealed[base]
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                # Checks its first and last line (raises TopicLogDamaged): appending after a
                # cut or foreign last line would bury the damage in the middle of the topic.
                next_offset = max(next_offset, segment_end(name, path, base, fd,
                                                           os.fstat(fd).st_size))
            finally:
                os.close(fd)
        return _Topic(name, directory, next_offset)

    @staticmethod
    def _recover_inprogress(path: Path) -> int | None:
        """Truncate a crashed in-progress file to its last valid line; its last offset or None."""
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            end, last = recoverable_end(fd, size)
            if end != size:
                # A torn last line, and complete lines that are not records (garbage a power
                # cut left): the crash tail, never acknowledged by `append`.
                log.warning("truncating the crash tail of %s from %d to %d bytes", path, size, end)
                os.ftruncate(fd, end)
            os.fsync(fd)
            return last
        finally:
            os.close(fd)

    # ------------------------------------------------------------------ lock and failure

    def _lock(self) -> None:
        self._lock_fd = lock_root(self.root)

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            fd, self._lock_fd = self._lock_fd, -1
            os.close(fd)  # releases the flock

    def _check_usable(self) -> None:
        if self._failed is not None:
            raise TopicLogFailedError(
                f"topic log {self.root} failed earlier ({self._failed!r}); reopen it to recover"
            )
        if self._closed:
            raise TopicLogFailedError(f"topic log {self.root} is closed")

    def _fail(self, exc: BaseException) -> None:
        self._failed = exc
        self.close()
