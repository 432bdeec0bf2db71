"""Column-at-a-time reading, decoding and netting of one topic's batch for the SCD1 Delta path.

Decoding event by event costs ~25 µs: every record is a 2.5 KB line whose embedded Connect
schema is three quarters of its bytes and identical for all events of a table version.  Here the
schema is checked by a byte comparison against the first line's (never parsed again), only the
key and value *payloads* are cut out of the lines, and pyarrow's JSON reader parses them all at
once into columns typed from the schema; values are then converted column by column, the
sequence strings are built with numpy, and the net change per key is an Arrow sort and group-by.

It covers the common shape of a batch and raises `NotColumnar` for anything else, in which
case the caller takes the event-by-event path of `decode` and `net`, which is the reference
(tests compare the two): a schema change inside the batch, keyless tables, truncates, record
headers, nested column types, values the JSON reader cannot type (e.g. "NaN" floats), or
anything that fails to parse.  Unchanged-TOAST placeholders are resolved here too, by the same
rule as `net` (`_toast_sources`).  Both paths produce the same net rows
and sequences, so batches may alternate between them.
"""

from __future__ import annotations

import binascii
import contextlib
import copy
import functools
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from headwater.connectors.registry import EventOrder, event_order
from headwater.connectors.sequence_columns import NotColumnar as NotColumnar  # noqa: PLC0414 (re-exported)
from headwater.pipeline import scan_kernel as kernel
from headwater.pipeline.connect_types import field_type
from headwater.pipeline.decode import (
    PLACEHOLDERS,
    ChangeEvent,
    Column,
    TableChanges,
    source_order,
)
from headwater.topics import check
from headwater.topics.damage import TopicLogDamaged
from headwater.topics.retention import log_start
from headwater.topics.segment import (
    Segment,
    compacted_end,
    covers,
    live_segments,
    open_segment,
)

SEQ = "__hw_sequence"
OP = "__hw_op"
TOAST_FLAG = "__hw_u_"  # + column: true where the target's value of the column is kept
CARRY_SEQ = "__hw_s_"  # + column: a part's sequence of the value (`decode_net(carry=True)`)
DELETED = "__hw_del"  # a part's newest delete of the key (`decode_net(carry=True)`)
_OFFSET_HEAD = b'{"offset":'
_VALUE_SCHEMA = b'},"value":{"schema":'
_PAYLOAD = b',"payload":'


@dataclass
class Positions:
    """Byte position of the next unread offset per segment, kept by the driver between batches
    so that following a growing segment reads only its new tail.  Keyed by the topic
    directory, the base and the file's inode: sealing renames a file (its positions hold),
    compaction replaces it with other bytes (they do not)."""

    at: dict[tuple[str, int, int], tuple[int, int]] = field(default_factory=dict)

    def get(self, path: Path, base: int, offset: int, inode: int = 0) -> int:
        hit = self.at.get((str(path), base, inode))
        return hit[1] if hit is not None and hit[0] == offset else 0

    def put(self, path: Path, base: int, offset: int, pos: int, inode: int = 0) -> None:
        if len(self.at) > 4096:
            self.at.clear()
        self.at[(str(path), base, inode)] = (offset, pos)


POSITIONS = Positions()


@dataclass
class Lines:
    """The key and value payloads of a range of records that all share one key schema and one
    value schema (`key_head`/`value_head`: the document text before the payload), each set as
    newline-separated JSON lines in one buffer, as pyarrow's JSON reader takes them.  The
    buffers are reused by the next `scan`."""

    key_head: bytes = b""
    value_head: bytes = b""
    offsets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    key_lines: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint8))
    value_lines: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint8))

    @property
    def count(self) -> int:
        return len(self.offsets)

    def values(self) -> list[bytes]:
        """The value payloads one by one (for tests and messages; the path uses the buffer)."""
        return self.value_lines.tobytes().split(b"\n")[:-1]


class _Chunk(NamedTuple):
    """A mapped segment file holding part of a range (see `_chunks`)."""

    data: mmap.mmap | bytes  # (bytes: an empty compacted segment, which cannot be mapped)
    pos: int  # where to start: the line of offset `start` when known, else that of `base`
    known: bool  # whether `pos` is the line of offset `start` (from `Positions`)
    path: Path  # the name it was opened under (sealed or not, compacted or not)
    base: int  # the listed segment's (a merged file holding it since starts lower)
    expect: int | None  # offset its first line must have (None: the previous was not read)
    next: Segment | None  # the next listed segment it does not hold, if any
    inode: int

    @property
    def limit(self) -> int:
        """A compacted segment's range end (its offsets may skip ahead below it), else -1."""
        end = compacted_end(self.path)
        return -1 if end is None else end


def _chunks(root: Path, topic: str, start: int, end: int, positions: Positions,
            stack: contextlib.ExitStack) -> Iterator[_Chunk]:
    """The segments that hold the range, mapped; the maps stay open until `stack` closes.

    Mapped rather than read: reading copies every byte out of the page cache once more, which
    costs as much as the whole scan (bench/pipeline_delta.py prints both)."""
    first_kept = log_start(root / topic)
    if start < first_kept:
        from headwater.pipeline.source import behind_log_start

        raise behind_log_start(root, topic, start, first_kept)
    segments = live_segments(root / topic)
    last: Path | None = None  # the file mapped last
    for i, seg in enumerate(segments):
        if last is not None and covers(last, seg):
            continue  # merged since the listing into the file mapped last: read in it
        nxt = segments[i + 1].base if i + 1 < len(segments) else None
        if (nxt is not None and nxt <= start) or seg.base >= end:
            continue
        opened = open_segment(seg)
        if opened is None:
            raise FileNotFoundError(f"topic {topic}: segment {seg.path} disappeared")
        f, path, at = opened
        last = path
        data: mmap.mmap | bytes = b""
        with f:
            st = os.fstat(f.fileno())
            if st.st_size == 0:
                if compacted_end(path) is None:
                    continue  # an in-progress segment just created
            else:
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if isinstance(data, mmap.mmap):
            stack.callback(_unmap, data)
        pos = positions.get(path.parent, seg.base, start, st.st_ino) if start > seg.base else 0
        head = _OFFSET_HEAD + b"%d," % start
        if pos and data[pos:pos + len(head)] != head:
            pos = 0
        expect = first_kept if i == 0 else None
        after = next((s for s in segments[i + 1:] if not covers(path, s)), None)
        yield _Chunk(data, pos or at, pos > 0, path, seg.base, expect, after, st.st_ino)


def _unmap(data: mmap.mmap) -> None:
    # An array may still point into the map (numba's first compilation keeps its arguments
    # for a while): then the map is unmapped when that array is freed.
    with contextlib.suppress(BufferError):
        data.close()


_STATUS = {
    kernel.LAYOUT: "record layout",
    kernel.NO_SCHEMA: "value without an embedded schema",
    kernel.OTHER_SHAPE: "another schema or a null key",
}


def _heads(data: mmap.mmap | bytes, line: int, k: int) -> tuple[bytes, bytes]:
    """The key and value heads (document text before the payloads) of the record line at
    `line` whose key document starts at `k`."""
    stop = data.find(b"\n", line)
    v = data.find(_VALUE_SCHEMA, k, stop)
    kp = data.find(_PAYLOAD, k, v)
    vp = data.find(_PAYLOAD, v, stop)
    if v < 0 or kp < 0 or vp < 0 or not data[k:k + 10] == b'{"schema":':
        raise NotColumnar("document layout")
    return data[k:kp + len(_PAYLOAD)], data[v:vp + len(_PAYLOAD)]


def scan(root: Path, topic: str, start: int, end: int,
         positions: Positions = POSITIONS) -> Lines:
    """The payloads of the records start <= offset < end of a topic (tombstones skipped).

    Two passes: positions of every segment's records first, then the payloads copied once
    into buffers of the final size (joining per-segment buffers cost as much as the scan).
    The kernel checks the offsets' continuity and the framing on the way; a damaged place
    raises `TopicLogDamaged` (described by `headwater.topics.check`), a crash tail of an
    in-progress segment ends the read, as in `source.read_range`."""
    out = Lines()
    kh = vh = np.empty(0, np.uint8)
    found_parts: list[tuple[np.ndarray, np.ndarray]] = []
    view: np.ndarray | None = None
    expect: int | None = None  # where the previous chunk ended
    with contextlib.ExitStack() as stack:
        for chunk in _chunks(root, topic, start, end, positions, stack):
            first = chunk.expect if expect is None else expect
            if first is None or chunk.known:
                first = chunk.base
            if chunk.base != first:
                raise check.start_mismatch(topic, chunk.path, chunk.base, first)
            view = np.frombuffer(chunk.data, np.uint8)
            if not len(kh):
                status, line, k = kernel.first_record(view, chunk.pos, start, end)
                if status not in (kernel.OK, kernel.CHECKSUM):  # (damage: the scan reports it)
                    raise NotColumnar(_STATUS[status])
                if status == kernel.OK and line >= 0:
                    out.key_head, out.value_head = _heads(chunk.data, line, k)
                    kh = np.frombuffer(out.key_head, np.uint8)
                    vh = np.frombuffer(out.value_head, np.uint8)
            # every stored line holds both heads: a bound on the number of records
            bound = (len(view) - chunk.pos) // max(1, len(kh) + len(vh)) + 1 if len(kh) else 1
            found = np.empty((bound, 5), np.int64)
            limit = chunk.limit
            status, count, pos, last, expect = kernel.scan_records(
                view, chunk.pos, start, end, start if chunk.known else chunk.base, limit, kh, vh,
                found)
            if status == kernel.TORN and not check.is_sealed(chunk.path):
                status = kernel.OK  # the last line of an in-progress segment, still being written
            if status == kernel.OK and limit >= 0 and pos >= len(view):
                expect = limit  # read to its end: the next segment starts at its range's end
            if status in (kernel.GAP, kernel.TORN, kernel.CHECKSUM):
                damage = check.diagnose(topic, chunk.path, chunk.base, first)
                if damage is not None:
                    raise damage
                raise TopicLogDamaged(  # pragma: no cover - the checker is the reference
                    topic, chunk.path, expect, pos,
                    "offsets, framing or checksum broken (compiled scan)")
            if status != kernel.OK:
                raise NotColumnar(_STATUS[status])
            if last >= 0:
                positions.put(chunk.path.parent, chunk.base, expect, pos, chunk.inode)
            if count:
                found_parts.append((view, found[:count]))
            if pos < len(view) and expect >= end:
                break  # the range ended inside this segment
            if chunk.next is not None and chunk.next.base != expect:
                raise check.start_mismatch(topic, chunk.next.path, chunk.next.base, expect)
        if found_parts:
            out.offsets = np.concatenate([f[:, kernel.OFFSET] for _, f in found_parts])
            out.key_lines = _gather_all(found_parts, kernel.KEY_BEGIN, kernel.KEY_END,
                                        _KEY_SCRATCH)
            out.value_lines = _gather_all(found_parts, kernel.VALUE_BEGIN, kernel.VALUE_END,
                                          _VALUE_SCRATCH)
        found_parts.clear()  # the views point into the maps, which close on leaving
        view = None
    return out


class Scratch:
    """A buffer kept from batch to batch.  The payload buffers of a 500k-record batch are
    ~170 MB; fresh memory of that size costs 0.1-0.6 s of page faults here every batch (the
    kernel zeroes each page on first touch), more than the scan itself."""

    def __init__(self) -> None:
        self.buffer = np.empty(0, np.uint8)

    def take(self, size: int) -> np.ndarray:
        if size > len(self.buffer) or size < len(self.buffer) // 8:
            self.buffer = np.empty(size + size // 4, np.uint8)  # shrinks after a huge batch
        return self.buffer[:size]


# The payload buffers of `Lines`: valid until the next scan (the path decodes a batch before
# scanning the next; pyarrow copies what it reads).
_KEY_SCRATCH = Scratch()
_VALUE_SCRATCH = Scratch()


def _gather_all(parts: list[tuple[np.ndarray, np.ndarray]], begin: int, end: int,
                scratch: Scratch) -> np.ndarray:
    """The byte ranges [begin, end) of every part's records, each followed by a newline."""
    size = sum(int((f[:, end] - f[:, begin]).sum()) + len(f) for _, f in parts)
    out = scratch.take(size)
    at = 0
    for view, f in parts:
        at += kernel.gather_into(view, f[:, begin], f[:, end], out[at:])
    return out


# -- types: the JSON form pyarrow reads, and the column conversion to the target type ---------

Convert = Callable[[pa.Array], pa.Array]

_INT = {"int8", "int16", "int32", "int64"}
# JsonConverter writes FLOAT32/FLOAT64 as "float"/"double"; the Connect names are accepted too.
_FLOATS = {"float", "double", "float32", "float64"}


def _per_value(schema: dict[str, Any]) -> Convert:
    decode = field_type(schema).decode
    arrow = field_type(schema).arrow

    def convert(col: pa.Array) -> pa.Array:
        return pa.array([None if v is None else decode(v) for v in col.to_pylist()], arrow)

    return convert


def _bytes(col: pa.Array) -> pa.Array:
    a2b = binascii.a2b_base64
    return pa.array([None if v is None else a2b(v) for v in col.to_pylist()], pa.binary())


def _decimal(precision: int, scale: int) -> Convert:
    arrow = pa.decimal128(precision, scale)
    limit = 10 ** precision

    def convert(col: pa.Array) -> pa.Array:
        a2b, from_bytes = binascii.a2b_base64, int.from_bytes
        ints = [0 if v is None else from_bytes(a2b(v), "big", signed=True)
                for v in col.to_pylist()]
        if ints and (max(ints) >= min(limit, 1 << 63) or min(ints) <= -min(limit, 1 << 63)):
            raise NotColumnar("decimal beyond int64")  # the per-value path checks precision
        lo = np.asarray(ints, dtype=np.int64)
        words = np.empty((len(ints), 2), dtype=np.int64)
        words[:, 0] = lo
        words[:, 1] = lo >> 63
        arr = pa.Array.from_buffers(arrow, len(ints), [None, pa.py_buffer(words)])
        if col.null_count:
            arr = pc.if_else(pc.is_valid(col), arr, pa.scalar(None, arrow))
        return arr

    return convert


def _cast(arrow: pa.DataType, via: pa.DataType | None = None) -> Convert:
    def convert(col: pa.Array) -> pa.Array:
        if via is not None:
            col = col.cast(via)
        return col.cast(arrow)

    return convert


def _nano_timestamp(col: pa.Array) -> pa.Array:
    ns = pc.fill_null(col, 0).to_numpy()  # (with nulls, to_numpy would give float64)
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    us = np.floor_divide(ns, 1000)
    return pa.array(us, pa.int64(), mask=~valid).cast(pa.timestamp("us"))


def json_form(schema: dict[str, Any]) -> tuple[pa.DataType, Convert | None]:
    """(type pyarrow reads the JSON value as, conversion to the column type or None = as is)."""
    name = schema.get("name")
    literal = schema.get("type")
    if name in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return pa.int32(), _cast(pa.date32())
    if name in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
        return pa.int64(), _cast(pa.timestamp("ms"))
    if name == "io.debezium.time.MicroTimestamp":
        return pa.int64(), _cast(pa.timestamp("us"))
    if name == "io.debezium.time.NanoTimestamp":
        return pa.int64(), _nano_timestamp
    if name == "org.apache.kafka.connect.data.Decimal":
        arrow = field_type(schema).arrow
        assert isinstance(arrow, pa.Decimal128Type)
        return pa.string(), _decimal(arrow.precision, arrow.scale)
    if name == "io.debezium.data.VariableScaleDecimal":
        return (pa.struct([("scale", pa.int32()), ("value", pa.string())]),
                _per_value(schema))
    if literal in _INT or literal in _FLOATS or literal in ("boolean", "string"):
        arrow = field_type(schema).arrow
        if name is not None and arrow != field_type({"type": literal}).arrow:
            # a semantic type with its own form (times, zoned timestamps): per value
            return (pa.int64() if literal in _INT else pa.string()), _per_value(schema)
        if literal in _FLOATS:
            return pa.float64(), _cast(arrow)
        return arrow, None
    if literal == "bytes":
        return pa.string(), _bytes
    raise NotColumnar(f"type {literal} {name}")


@dataclass
class Shape:
    """What one value schema and one key schema make of the payloads."""

    columns: list[Column]
    forms: list[tuple[pa.DataType, Convert | None]]
    key_columns: tuple[str, ...]
    key_forms: list[tuple[pa.DataType, Convert | None]]
    value_schema: pa.Schema
    key_schema: pa.Schema


_SHAPES: dict[tuple[bytes, bytes, tuple[tuple[str, str], ...]], Shape] = {}

# The `source` fields read for every connector; a batch's connector adds its position fields
# (`EventOrder.columnar_position`), the changelog its bookkeeping fields.
_COMMON_SOURCE = (
    ("connector", pa.string()), ("snapshot", pa.string()), ("sequence", pa.string()),
    ("schema", pa.string()), ("db", pa.string()), ("table", pa.string()),
)
_CHANGELOG_SOURCE = (
    ("ts_ms", pa.int64()), ("lsn", pa.int64()), ("txId", pa.int64()), ("gtid", pa.string()),
)


@functools.cache
def source_struct(position: tuple[tuple[str, str], ...],
                  extra: tuple[tuple[str, pa.DataType], ...] = ()) -> pa.StructType:
    """The `source` struct the JSON reader parses: the common fields, `extra`, then the
    connector's declared position fields (a name already there must have the same type: one
    field cannot be read as two)."""
    fields = dict(_COMMON_SOURCE + extra)
    for name, alias in position:
        try:
            arrow = pa.type_for_alias(alias)
        except ValueError:
            raise ValueError(f"source field {name!r}: unknown Arrow type {alias!r} in the "
                             "connector's EventOrder.columnar_position") from None
        if fields.setdefault(name, arrow) != arrow:
            raise ValueError(f"source field {name!r}: the connector's EventOrder."
                             f"columnar_position declares {alias}, the column-wise reader "
                             f"reads it as {fields[name]}")
    return pa.struct(list(fields.items()))


def _first_line(buffer: np.ndarray) -> bytes:
    """The first newline-terminated line of a payload buffer, searched in growing prefixes
    (the buffer may be hundreds of MB)."""
    size = 1 << 12
    while True:
        ends = np.flatnonzero(buffer[:size] == 10)
        if len(ends) or size >= len(buffer):
            return buffer[:int(ends[0]) if len(ends) else len(buffer)].tobytes()
        size <<= 2


def lines_order(topic: str, lines: Lines) -> EventOrder:
    """The registered order of the first event's `source.connector`, read from that one
    payload before the batch is parsed: its position fields shape the source struct the whole
    batch is parsed with (`batch_order` then checks every event has that order).  An
    unregistered connector is an error naming the event's offset; a connector without a
    column-wise builder is `NotColumnar`."""
    try:
        source = orjson.loads(_first_line(lines.value_lines)).get("source")
    except (orjson.JSONDecodeError, AttributeError) as exc:
        raise NotColumnar(f"first payload: {exc}") from exc
    if not isinstance(source, dict):
        raise NotColumnar("no source block")
    order = source_order(source, f"topic {topic} offset {int(lines.offsets[0])}")
    if order.columnar is None or not order.columnar_position:
        raise NotColumnar("the connector has no column-wise order")
    return order


def shape(key_head: bytes, value_head: bytes,
          position: tuple[tuple[str, str], ...]) -> Shape:
    """What the heads make of the payloads, their source parsed with a connector's
    `position` fields (`EventOrder.columnar_position`)."""
    cached = _SHAPES.get((key_head, value_head, position))
    if cached is not None:
        return cached
    value_schema = orjson.loads(value_head[len(b'},"value":{"schema":'):-len(_PAYLOAD)])
    key_schema = orjson.loads(key_head[len(b'{"schema":'):-len(_PAYLOAD)])
    after = next((f for f in value_schema.get("fields", []) if f.get("field") == "after"), None)
    if after is None or not isinstance(key_schema, dict):
        raise NotColumnar("no row or key schema")
    fields = after.get("fields", [])
    columns = [Column(f["field"], field_type(f), bool(f.get("optional", True))) for f in fields]
    forms = [json_form(f) for f in fields]
    kfields = key_schema.get("fields", [])
    key_forms = [json_form(f) for f in kfields]
    result = Shape(
        columns, forms, tuple(f["field"] for f in kfields), key_forms,
        pa.schema([
            ("after", pa.struct([(c.name, t) for c, (t, _) in zip(columns, forms,
                                                                   strict=True)])),
            ("source", source_struct(position)), ("op", pa.string()),
            ("transaction", pa.struct([("total_order", pa.int64())])),
        ]),
        pa.schema([(f["field"], t) for f, (t, _) in zip(kfields, key_forms, strict=True)]),
    )
    if len(_SHAPES) > 256:
        _SHAPES.clear()
    _SHAPES[(key_head, value_head, position)] = result
    return result


def _read_json(lines: np.ndarray, schema: pa.Schema) -> pa.Table:
    try:
        return pj.read_json(
            pa.BufferReader(pa.py_buffer(lines)),
            read_options=pj.ReadOptions(block_size=4 << 20),
            parse_options=pj.ParseOptions(explicit_schema=schema,
                                          unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise NotColumnar(f"JSON reader: {exc}") from exc


def _convert(col: pa.Array, form: tuple[pa.DataType, Convert | None]) -> pa.Array:
    if _has_placeholder(col, form):  # `decode_net` resolves them first: a guard
        raise NotColumnar("unchanged TOAST placeholder")
    return col if form[1] is None else form[1](col)


# -- sequences ----------------------------------------------------------------------------------

def batch_order(topic: str, source: pa.StructArray, offsets: np.ndarray,
                expected: EventOrder) -> EventOrder:
    """The one registered order of the batch's events (`source.connector`), which must be
    `expected` (the first event's, whose fields the source was parsed with); an unregistered
    connector is an error naming the first such event's offset, two orders in one batch are
    `NotColumnar`."""
    connector = source.field("connector")
    for name in pc.unique(connector).to_pylist():
        order = event_order(name)
        if order is None:
            where = pc.index(pc.fill_null(connector, ""), name or "").as_py()
            source_order({"connector": name}, f"topic {topic} offset {int(offsets[where])}")
        if order is not expected:
            raise NotColumnar("events of two connectors")
    return expected


def sequences(topic: str, source: pa.StructArray, total_order: pa.Array,
              offsets: np.ndarray, order: EventOrder) -> pa.Array:
    """The `decode.sequence_key` strings of a batch, built column-wise by `order`'s registered
    builder, once `batch_order` found every event of that order."""
    batch_order(topic, source, offsets, order)
    assert order.columnar is not None  # (lines_order)
    return order.columnar(source, total_order, offsets)


# -- the batch ----------------------------------------------------------------------------------

@dataclass
class ColumnarChanges:
    """One topic's batch, decoded column-wise: the rows to write.  From `decode_net`, per key
    the newest event, with the row columns (upserts) or only the key columns (deletes), then
    `__hw_sequence` and `__hw_op`, then a `TOAST_FLAG` column per name in `toast`; from
    `decode_changelog`, every event as a changelog row."""

    topic: str
    schema_name: str | None
    table_name: str | None
    key_columns: tuple[str, ...]
    columns: list[Column]
    events: int
    rows: pa.Table
    toast: list[str] = field(default_factory=list)  # columns with `TOAST_FLAG` + name flags
    target: str | None = None


class _Envelope(NamedTuple):
    """What every column-wise decode takes from the payloads' envelopes."""

    op: pa.Array
    source: pa.StructArray
    sequence: pa.Array
    order: EventOrder  # the connector's
    schema_name: str | None  # of the first event (a batch holds one table)
    table_name: str | None


def _envelope(topic: str, payload: pa.Table, lines: Lines, order: EventOrder, ops: pa.Array,
              refused: str) -> _Envelope:
    """The op, source and sequence columns of the parsed payloads (one chunk each); refuses a
    batch with an op outside `ops` (`refused` says what), an event without a source or of
    another order than `order` (`lines_order`)."""
    if payload.num_rows != lines.count:
        raise NotColumnar("line count")
    op = payload.column("op").chunk(0)
    if not pc.all(pc.is_in(op, ops)).as_py():
        raise NotColumnar(refused)
    source = payload.column("source").chunk(0)
    if source.null_count:
        raise NotColumnar("no source block")
    total_order = pc.struct_field(payload.column("transaction").chunk(0), [0])
    first = source[0].as_py()
    seq = sequences(topic, source, total_order, lines.offsets, order)
    return _Envelope(op, source, seq, order,
                     first.get("schema") or first.get("db"), first.get("table"))


_UPSERT_OR_DELETE = pa.array(["c", "u", "d", "r"])
_ANY_OP = pa.array(["c", "u", "d", "r", "t"])


def decode_net(topic: str, lines: Lines, carry: bool = False) -> ColumnarChanges | None:
    """Decoded net changes of the scanned payloads (None: no events).

    With `carry`, the net of one part of a batch (`pipeline.tasks`), with what netting across
    parts needs besides the rows: per unchanged-TOAST column the sequence of the event its
    value comes from (`CARRY_SEQ` + name, null where flagged or deleted), and per key the
    newest delete's sequence in the part (`DELETED`, null without one)."""
    if not lines.count:
        return None
    order = lines_order(topic, lines)
    sh = shape(lines.key_head, lines.value_head, order.columnar_position)
    payload = _read_json(lines.value_lines, sh.value_schema).combine_chunks()
    env = _envelope(topic, payload, lines, order, _UPSERT_OR_DELETE, "truncate or unknown op")
    keys = _read_json(lines.key_lines, sh.key_schema).combine_chunks()
    if keys.num_rows != lines.count:
        raise NotColumnar("line count")
    op, source, seq, offsets = env.op, env.source, env.sequence, lines.offsets
    is_delete = pc.equal(op, "d")
    after = payload.column("after").chunk(0)
    if pc.any(pc.and_(pc.invert(is_delete), pc.is_null(after))).as_py():
        raise NotColumnar("upsert without an after image")
    names = [c.name for c in sh.columns]
    key_cols: dict[str, pa.Array] = {}
    types = {c.name: c.type.arrow for c in sh.columns}
    for name, form in zip(sh.key_columns, sh.key_forms, strict=True):
        if name not in types:
            raise NotColumnar("key column not in the row")
        col = _convert(keys.column(name).chunk(0), form)
        key_cols[name] = col if col.type == types[name] else col.cast(types[name])
    if any(c.null_count for c in key_cols.values()) or not key_cols:
        raise NotColumnar("null key")
    # the connector's position fields (EventOrder.columnar_position: in the source struct)
    position = {f"__p_{name}": source.field(name) for name, _ in env.order.columnar_position}
    dedup = [*sh.key_columns, OP, *position]
    events = pa.table(
        {**key_cols, OP: op, **position, SEQ: seq, "__offset": pa.array(offsets),
         "__i": pa.array(np.arange(len(offsets), dtype=np.int64))})
    # 1. re-deliveries: the first (lowest offset) of equal (key, position, op) events
    #    (when the first position field is distinct, as PostgreSQL stream events' LSNs are,
    #    there is nothing to look for)
    lead = next(iter(position.values()))
    if lead.null_count or pc.count_distinct(lead).as_py() != len(lead):
        first = events.group_by(dedup, use_threads=False).aggregate([("__i", "min")])
        if first.num_rows != events.num_rows:
            events = events.take(np.sort(first.column("__i_min").to_numpy()))
    # 2. per key the newest event by sequence (sequences are unique: they end with the offset)
    seqs = events.column(SEQ)
    if events.num_rows > 1 and not pc.all(pc.greater(seqs.slice(1),
                                                     seqs.slice(0, len(seqs) - 1))).as_py():
        events = events.take(pc.sort_indices(seqs))
    events = events.append_column("__j", pa.array(np.arange(events.num_rows, dtype=np.int64)))
    newest = events.group_by(list(sh.key_columns), use_threads=False).aggregate(
        [("__j", "max")])
    chosen = events.take(np.sort(newest.column("__j_max").to_numpy()))
    rows = chosen.column("__i").combine_chunks()
    net_delete = pc.equal(chosen.column(OP), "d")
    images = after.take(rows).flatten()
    all_images = after.flatten()
    toast = {c.name: col for c, form, col in zip(sh.columns, sh.forms, all_images, strict=True)
             if c.name not in key_cols and _has_placeholder(col, form)}
    sources = _toast_sources(events, newest, sh.key_columns, toast)
    arrays: list[pa.Array | pa.ChunkedArray] = []
    flags: list[pa.Array] = []
    carried: list[pa.Array] = []
    for i, (c, form) in enumerate(zip(sh.columns, sh.forms, strict=True)):
        if c.name in key_cols:
            arrays.append(chosen.column(c.name))
            continue
        raw = images[i]
        if c.name in sources:
            # the newest sent value of the key in the batch; none: keep the target's (flag)
            source_rows = sources[c.name]
            missing = pa.array(source_rows < 0)
            raw = pc.if_else(missing, pa.scalar(None, raw.type),
                             all_images[i].take(np.maximum(source_rows, 0)))
            flags.append(pc.and_(missing, pc.invert(net_delete)))
            if carry:
                sent_at = seq.take(pa.array(np.maximum(source_rows, 0)))
                carried.append(pc.if_else(pc.or_(missing, net_delete),
                                          pa.scalar(None, pa.string()), sent_at))
        col = _convert(raw, form)
        if col.type != c.type.arrow:
            col = col.cast(c.type.arrow)
        arrays.append(pc.if_else(net_delete, pa.scalar(None, c.type.arrow), col))
    arrays.append(chosen.column(SEQ))
    arrays.append(pc.if_else(net_delete, "d", "u"))
    net = pa.Table.from_arrays(arrays + flags,
                               names=[*names, SEQ, OP, *(TOAST_FLAG + c for c in toast)])
    if carry:
        for name, seqs_of in zip(toast, carried, strict=True):
            net = net.append_column(CARRY_SEQ + name, seqs_of)
        net = net.append_column(DELETED, _newest_deletes(events, chosen, sh.key_columns))
    return ColumnarChanges(topic, env.schema_name, env.table_name, sh.key_columns, sh.columns,
                           lines.count, net, toast=list(toast))


# -- the changelog: every event, no netting ------------------------------------------------------

# The changelog's bookkeeping columns, in front of the row columns (as `append_changelog`).
CHANGELOG_META = pa.schema([
    ("__op", pa.string()), (SEQ, pa.string()), ("__source_ts_ms", pa.int64()),
    ("__ts_ms", pa.int64()), ("__lsn", pa.int64()), ("__tx_id", pa.string()),
    ("__snapshot", pa.string()), ("__offset", pa.int64()),
])


def changelog_table(changes: TableChanges) -> pa.Table:
    """The changelog rows of events decoded one by one (`decode.decode_topic`): the layout
    `decode_changelog` gives column-wise, for batches outside its shape."""
    columns = changes.column_list
    meta: dict[str, list[Any]] = {name: [] for name in CHANGELOG_META.names}
    data: dict[str, list[Any]] = {c.name: [] for c in columns}
    for e in changes.events:
        meta["__op"].append(e.op)
        meta[SEQ].append(e.sequence)
        meta["__source_ts_ms"].append(e.source_ts_ms)
        meta["__ts_ms"].append(e.ts_ms)
        meta["__lsn"].append(e.lsn)
        meta["__tx_id"].append(None if e.tx_id is None else str(e.tx_id))
        meta["__snapshot"].append(e.snapshot)
        meta["__offset"].append(e.offset)
        row = e.row or {}
        for c in columns:
            data[c.name].append(row.get(c.name))
    return pa.Table.from_arrays(
        [pa.array(meta[f.name], f.type) for f in CHANGELOG_META]
        + [pa.array(data[c.name], c.type.arrow) for c in columns],
        names=CHANGELOG_META.names + [c.name for c in columns],
    )


def history_rows(changes: TableChanges, events: list[ChangeEvent]) -> ColumnarChanges:
    """SCD2 events decoded one by one (`events`, of `changes`) as `decode_changelog(flags=True)`
    gives them column-wise: the rows every target's history is built from, for batches and
    event families outside the column-wise decoders' shape."""
    deduped = copy.copy(changes)
    deduped.events = list(events)
    rows = changelog_table(deduped)
    toast = sorted({c for e in events for c in e.unavailable})
    for c in toast:
        rows = rows.append_column(TOAST_FLAG + c,
                                  pa.array([c in e.unavailable for e in events], pa.bool_()))
    return ColumnarChanges(changes.topic, changes.schema_name, changes.table_name,
                           changes.key_columns, list(changes.column_list), len(changes.events),
                           rows, toast, changes.target)


def decode_changelog(topic: str, lines: Lines, flags: bool = False) -> ColumnarChanges | None:
    """Every scanned event as a changelog row (its `net` holds them all, in offset order): the
    event path's `append_changelog` rows, column-wise.  The row is the after image, the before
    image for deletes, nothing for truncates; an unchanged-TOAST value is null, as there.

    With `flags`, the events an SCD2 history is built from (`spark_merge.scd2_history`): per
    column that holds an unchanged-TOAST placeholder, a `TOAST_FLAG` + name column, true
    where the value was not sent (the decoder's `ChangeEvent.unavailable`), named in
    `toast`."""
    if not lines.count:
        return None
    order = lines_order(topic, lines)
    sh = shape(lines.key_head, lines.value_head, order.columnar_position)
    image_type = sh.value_schema.field("after").type
    payload = _read_json(lines.value_lines, pa.schema([
        ("before", image_type), ("after", image_type),
        ("source", source_struct(order.columnar_position, _CHANGELOG_SOURCE)),
        ("op", pa.string()), ("ts_ms", pa.int64()),
        ("transaction", pa.struct([("total_order", pa.int64())])),
    ])).combine_chunks()
    env = _envelope(topic, payload, lines, order, _ANY_OP, "unknown op")
    source = env.source
    is_delete = pc.equal(env.op, "d")
    before = payload.column("before").chunk(0).flatten()  # (nulls of the image included)
    after = payload.column("after").chunk(0).flatten()
    tx_id = pc.coalesce(source.field("txId").cast(pa.string()), source.field("gtid"))
    meta = [env.op, env.sequence, source.field("ts_ms"),
            payload.column("ts_ms").chunk(0), source.field("lsn"), tx_id,
            source.field("snapshot"), pa.array(lines.offsets)]
    rows: list[pa.Array] = []
    unsent: dict[str, pa.Array] = {}
    for c, form, old, new in zip(sh.columns, sh.forms, before, after, strict=True):
        raw = pc.if_else(is_delete, old, new)
        if _has_placeholder(raw, form):
            mask = pc.fill_null(pc.is_in(raw, value_set=_UNSENT), False)
            raw = pc.if_else(mask, pa.scalar(None, raw.type), raw)
            if flags:
                unsent[c.name] = mask
        col = _convert(raw, form)
        rows.append(col if col.type == c.type.arrow else col.cast(c.type.arrow))
    table = pa.Table.from_arrays(meta + rows + list(unsent.values()), schema=pa.schema(
        [*CHANGELOG_META, *(pa.field(c.name, c.type.arrow) for c in sh.columns),
         *(pa.field(TOAST_FLAG + c, pa.bool_()) for c in unsent)]))
    return ColumnarChanges(topic, env.schema_name, env.table_name, sh.key_columns, sh.columns,
                           lines.count, table, toast=list(unsent))


def _newest_deletes(events: pa.Table, chosen: pa.Table, keys: tuple[str, ...]) -> pa.Array:
    """For each chosen (net) row, the sequence of its key's newest delete among `events`, or
    null: a delete in one part of a batch cuts the TOAST carry of values sent in another."""
    deletes = events.filter(pc.equal(events.column(OP), "d")).select([*keys, SEQ])
    newest = deletes.group_by(list(keys), use_threads=False).aggregate([(SEQ, "max")])
    joined = chosen.select([*keys, "__j"]).join(newest, list(keys), join_type="left outer",
                                                 use_threads=False).sort_by("__j")
    return joined.column(SEQ + "_max").combine_chunks()


# The unchanged-value placeholder as text, and as the base64 of its bytes (BYTES columns).
_UNSENT = pa.array(sorted(PLACEHOLDERS), pa.string())


def _has_placeholder(col: pa.Array, form: tuple[pa.DataType, Convert | None]) -> bool:
    return (pa.types.is_string(form[0]) and col.null_count < len(col)
            and bool(pc.any(pc.is_in(col, value_set=_UNSENT)).as_py()))


def _toast_sources(events: pa.Table, newest: pa.Table, keys: tuple[str, ...],
                   toast: dict[str, pa.Array]) -> dict[str, np.ndarray]:
    """Per unchanged-TOAST column (its values in payload order), for each key's newest event:
    the payload row holding the newest value actually sent since the key's last delete, or -1.
    Keys come in ascending `__j_max` order, the order of the net rows.

    The event-by-event rule of `net.net_changes`, column-wise: events are ordered by key, then
    sequence; a running maximum of "positions with a value" against a running maximum of
    "positions where the key starts or is deleted" says whether a value survives."""
    if not toast:
        return {}
    # `__j_max` identifies the key: give it to each of the key's events
    keyed = events.select([*keys, "__j", "__i", OP]).join(
        newest, list(keys), join_type="inner", use_threads=False)
    group = keyed.column("__j_max").to_numpy()
    order = np.lexsort((keyed.column("__j").to_numpy(), group))
    group = group[order]
    rows = keyed.column("__i").to_numpy()[order]
    deleted = pc.equal(keyed.column(OP), "d").to_numpy(zero_copy_only=False)[order]
    at = np.arange(len(order))
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = group[1:] != group[:-1]
    reset = np.maximum.accumulate(np.where(starts | deleted, at, -1))
    # each key's newest event; keys are in `__j_max` order, which is the order of `winners`
    ends = np.flatnonzero(np.append(starts[1:], True))
    out = {}
    for name, values in toast.items():
        col = values.take(pa.array(rows))
        sent = ~pc.fill_null(pc.is_in(col, value_set=_UNSENT), False).to_numpy(
            zero_copy_only=False) & ~deleted
        last_sent = np.maximum.accumulate(np.where(sent, at, -1))[ends]
        out[name] = np.where(last_sent >= reset[ends], rows[np.maximum(last_sent, 0)], -1)
    return out


def read_net(root: Path, topic: str, start: int, end: int,
             positions: Positions = POSITIONS) -> ColumnarChanges | None:
    """The batch's net changes by the columnar path; raises NotColumnar outside its shape."""
    return decode_net(topic, scan(root, topic, start, end, positions))
