"""The column-wise snapshot: a chunk of COPY text rendered to topic records in a few passes.

Why: row by row, a snapshot event costs about 30 µs of Python (split the line, convert each
value, build the record, build the payload dicts, serialize, splice), while PostgreSQL hands
out rows 30-80 times faster.  Nearly all of an event is the same for every row of a table: the
Connect schemas, the source block (the snapshot's position, the read time of the chunk), the
envelope's constants, the key's schema.  Only the values differ.

How: `TableTemplate` renders one record of the table with the runtime's own format, each value
replaced by a unique token, and cuts the result at the tokens: the constant byte pieces between
the values, of the value and of the key (so the format stays the one place that knows the
envelope; a format whose output is not values spliced between constant bytes does not offer
`splices_values` and the snapshot reads row-wise).  A chunk of COPY lines is then
scanned once into field boundaries, each column's values are rendered from the COPY bytes by
its kernel (columnar_kinds.py, _copykernels.c), and every row's key and value are
assembled from pieces and values, all compiled.  The first piece of each (with schemas, the
Connect schema: most of a record's bytes) is left out and carried once per chunk: the chunk's
records are one `PackedRecords` (model/topic.py), buffers rather than a Python object per
record, which the topic log lays out with one compiled call and a worker process hands over
as they are.  Values no kernel handles go through the
column's own converter and orjson, exactly as the row-wise path does, and are spliced in the
same way: the output is byte for byte the row-wise path's
(tests/integration/postgres/test_columnar_snapshot.py).

The first and the last row of each table are left to the row-wise path (snapshot.py): their
`snapshot` marker (first, first_in_data_collection, last_in_data_collection, last) is only
known once the following row is.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import orjson

from headwater.connectors.postgres import _copykernels as kernels
from headwater.connectors.postgres.columnar_kinds import FALLBACK
from headwater.connectors.postgres.copy_text import unescape
from headwater.connectors.postgres.tables import TableCodec
from headwater.converters.connect_json import json_default
from headwater.model.record import SourceContext
from headwater.model.topic import PackedRecords, TopicRecord
from headwater.relational.snapshot_splice import render_token_record

log = logging.getLogger("headwater.connectors.postgres.snapshot")

_TOKEN = "@@headwater-columnar-{}@@"


class _Pieces(NamedTuple):
    data: Any  # uint8: the constant pieces, concatenated
    offsets: Any  # int64: piece i is data[offsets[i]:offsets[i + 1]]
    order: tuple[int, ...]  # the columns whose values follow pieces 0, 1, ...


def _cut(doc: bytes, tokens: Sequence[bytes], columns: Sequence[int]) -> _Pieces | None:
    """`doc` cut at the tokens of `columns` (each must occur exactly once), in doc order."""
    found: list[tuple[int, int]] = []
    for column in columns:
        token = tokens[column]
        at = doc.find(token)
        if at < 0 or doc.find(token, at + 1) >= 0:
            return None
        found.append((at, column))
    found.sort()
    parts: list[bytes] = []
    start = 0
    for at, column in found:
        parts.append(doc[start:at])
        start = at + len(tokens[column])
    parts.append(doc[start:])
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    data = np.frombuffer(b"".join(parts), dtype=np.uint8)
    return _Pieces(data, offsets, tuple(column for _, column in found))


def _without_first(pieces: _Pieces) -> tuple[bytes, _Pieces]:
    """The first piece (the bytes before the first value: with schemas, the Connect schema,
    most of a record) and the pieces with that one empty: the kernels then render only what
    follows it, and the records carry it once (PackedRecords)."""
    first = int(pieces.offsets[1])
    offsets = pieces.offsets - first
    offsets[0] = 0
    return bytes(pieces.data[:first]), _Pieces(pieces.data[first:], offsets, pieces.order)


class TableTemplate(NamedTuple):
    """The constant parts of a table's READ events (snapshot=true) at one read time."""

    topic: str
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...]
    value: _Pieces  # order: every column, in schema order; the first piece empty
    key: _Pieces | None  # order: the key columns; None for a table without a key; likewise
    value_prefix: bytes = b""  # the value's first piece
    key_prefix: bytes = b""  # the key's first piece (b"" without a key)


def table_template(renderer: Any, codec: TableCodec, context: SourceContext, position: Any,
                   now_ms: int) -> TableTemplate | None:
    """Renders a token record with `renderer` and cuts it; None when its output is not the
    values spliced between constant bytes (the caller then reads row-wise, and says so)."""
    schema = codec.schema
    names = [_TOKEN.format(i) for i in range(len(schema.columns))]
    rendered = render_token_record(renderer, schema, context, position, now_ms, tuple(names))
    if rendered is None:
        return None
    topic, out = rendered
    tokens = [orjson.dumps(n) for n in names]
    value = _cut(out.value, tokens, range(len(names)))  # type: ignore[arg-type]
    if value is None or value.order != tuple(range(len(names))):
        return None
    key = None
    if out.key is not None:
        key = _cut(out.key, tokens, schema.key_positions)
        if key is None:
            return None
    elif schema.key_positions:
        return None
    value_prefix, value = _without_first(value)
    key_prefix = b""
    if key is not None:
        key_prefix, key = _without_first(key)
    return TableTemplate(topic, out.timestamp, out.headers, value, key, value_prefix, key_prefix)


_EMPTY_KEY = _Pieces(np.zeros(0, dtype=np.uint8), np.zeros(2, dtype=np.int64), ())


class ColumnarTable:
    """Renders chunks of one table version's COPY text as READ topic records (snapshot=true)."""

    def __init__(self, codec: TableCodec, name: str) -> None:
        self.codec = codec
        self.name = name
        self.kinds = np.array([c.kind for c in codec.columnar], dtype=np.int64)
        self.params = np.array([c.param for c in codec.columnar], dtype=np.int64)
        self.fields = np.array(codec.keep, dtype=np.int64)
        self.width = len(codec.incoming)
        self.converters = codec.converters
        self.fallbacks = tuple(
            c.name for c, kind in zip(codec.schema.columns, codec.columnar, strict=True)
            if kind.kind == FALLBACK)
        self.slow_values = 0  # values of kernel columns the kernels left to the converters
        if self.fallbacks:
            log.info("snapshot step: read %s column-wise; the columns %s (types without a "
                     "column-wise kernel, or mapped values) use their per-value converter",
                     name, ", ".join(self.fallbacks))
        else:
            log.info("snapshot step: read %s column-wise, every column by its kernel", name)

    def render(self, data: bytes, template: TableTemplate) -> Sequence[TopicRecord]:
        """The records of `data` (whole COPY text lines), in order: PackedRecords for a table
        with a key (no Python object per record), else a list."""
        buf = np.frombuffer(data, dtype=np.uint8)
        rows_max = data.count(b"\n")
        starts = np.empty((rows_max, self.width), dtype=np.int64)
        ends = np.empty((rows_max, self.width), dtype=np.int64)
        rows = kernels.scan(buf, self.width, starts, ends)
        if rows < 0:
            raise ValueError(f"COPY line {-rows} of the chunk does not have {self.width} fields")
        slow = np.empty((rows, len(self.kinds)), dtype=np.bool_)
        kernels.check(self.kinds, self.params, self.fields, buf, starts, ends, rows, slow)
        over, over_off = self._converted(data, slow, starts, ends)
        key = template.key or _EMPTY_KEY
        nkeys = len(key.order)
        value_cap = (rows * (int(template.value.offsets[-1]) + kernels.SLACK * len(self.kinds))
                     + kernels.GROWTH * len(data) + len(over))
        key_cap = (rows * (int(key.offsets[-1]) + kernels.SLACK * nkeys)
                   + kernels.GROWTH * len(data) + len(over)) if nkeys else 0
        values = np.empty(value_cap, dtype=np.uint8)
        keys = np.empty(key_cap, dtype=np.uint8)
        value_off = np.empty(rows + 1, dtype=np.int64)
        key_off = np.empty(rows + 1, dtype=np.int64)
        kernels.assemble(
            self.kinds, self.params, self.fields, buf, starts, ends, rows, slow, over, over_off,
            template.value.data, template.value.offsets,
            np.array(key.order, dtype=np.int64), key.data, key.offsets,
            values, value_off, keys, key_off)
        ts, headers = template.timestamp, template.headers
        if not nkeys:  # one copy per record, straight from the assembled buffer
            value_view = values.data
            vo = value_off.tolist()
            prefix = template.value_prefix
            return [TopicRecord(None, prefix + value_view[vo[i]:vo[i + 1]], ts, headers)
                    for i in range(rows)]
        return PackedRecords(template.key_prefix, keys[:key_off[rows]].tobytes(),
                             key_off.tobytes(), template.value_prefix,
                             values[:value_off[rows]].tobytes(), value_off.tobytes(), ts,
                             headers)

    def _converted(self, data: bytes, slow: Any, starts: Any, ends: Any) -> tuple[Any, Any]:
        """The JSON of every slow value by its converter, row-major, and their offsets."""
        where = np.argwhere(slow)
        parts: list[bytes] = []
        fields = self.fields
        converters = self.converters
        dumps = orjson.dumps
        for r, j in where.tolist():
            f = fields[j]
            value = converters[j](unescape(data[starts[r, f]:ends[r, f]].decode("utf-8")))
            parts.append(dumps(value, default=json_default))
        kernel_slow = len(parts) - (int(slow[:, self.kinds == FALLBACK].sum())
                                    if self.fallbacks else 0)
        self.slow_values += kernel_slow
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        if parts:
            np.cumsum([len(p) for p in parts], out=offsets[1:])
        return np.frombuffer(b"".join(parts), dtype=np.uint8), offsets
