"""A snapshot chunk's READ records rendered together, for a reader that hands rows as Python
values (MySQL's PyMySQL result sets): the rows' `after` objects serialized in one call and
spliced into the table's constant event bytes.

Why: row by row, each READ event pays a `ChangeRecord`, the renderer's per-record work (the
row dict, a serializer call, the source block, the value template), and the topic log's
per-record encoding: about twice what reading the row costs.  Nearly all of an event is the
same for every row of a table at one read time: the Connect schemas, the source block, the
envelope's constants, the key's schema.  Only the row's object differs.

How: `splice_template` renders one record of the table with the runtime's own format, each
value replaced by a unique token, and cuts the result around the `after` object (and the key's
object), so the format stays the one place that knows the envelope (as in the PostgreSQL
column-wise snapshot, connectors/postgres/snapshot_columnar.py); a format without
`splices_values`, or whose output does not hold that object as orjson writes it, leaves the
table to the row-wise path, which the log says.  A chunk is then rendered in C-level passes:
the rows' dicts built with `map`, the whole list serialized by one `orjson.dumps` (the format
writes each row with `orjson.dumps(dict(zip(names, after)), default=json_default)`: the same
bytes per object), cut apart at the objects' boundaries, joined with the constant suffix and
packed into one `PackedRecords` (model/topic.py) that the topic log lays out with one compiled
call.  Output: byte for byte the row-wise path's
(tests/integration/mysql/test_snapshot_columnwise.py).

The first row of a table and the last of each chunk go row-wise (relational/snapshot.py):
their `snapshot` marker is only known once the next row is.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, repeat
from operator import itemgetter
from typing import Any, NamedTuple

import orjson

from headwater.converters.connect_json import json_default
from headwater.model.record import ChangeRecord, Op, SnapshotMarker, SourceContext
from headwater.model.schema import TableSchema
from headwater.model.topic import HeaderBytes, PackedRecords, TopicBatch, TopicRecord
from headwater.relational.snapshot import RowSink

_TOKEN = "@@headwater-splice-{}@@"


def _around(doc: bytes, middle: bytes) -> tuple[bytes, bytes] | None:
    """`doc`'s bytes before and after `middle`, which must occur exactly once."""
    at = doc.find(middle)
    if at < 0 or doc.find(middle, at + 1) >= 0:
        return None
    return doc[:at], doc[at + len(middle):]


class SpliceTemplate(NamedTuple):
    """The constant parts of a table's READ events (snapshot=true) at one read time: each
    record is `value_prefix` + its row's `after` object + `value_suffix`, its key likewise
    with the key's object."""

    topic: str
    timestamp: int
    headers: HeaderBytes
    names: tuple[str, ...]  # the `after` object's field names, in schema order
    value_prefix: bytes  # with schemas, the Connect schema: most of a record
    value_suffix: bytes  # the source block, op, times
    key_names: tuple[str, ...]  # () for a table without a key
    key_positions: tuple[int, ...]
    key_prefix: bytes
    key_suffix: bytes


def render_token_record(renderer: Any, schema: TableSchema, context: SourceContext,
                        position: Any, now_ms: int, tokens: tuple[str, ...]
                        ) -> tuple[str, TopicRecord] | None:
    """The table's READ record (snapshot=true) rendered by `renderer` with `tokens` for its
    values, and its topic: what a snapshot that splices values into the format's own bytes
    cuts apart (here and connectors/postgres/snapshot_columnar.py); None unless the format
    made exactly one record with a value."""
    record = ChangeRecord(context, schema, Op.READ, None, tokens, now_ms, now_ms,
                          SnapshotMarker.TRUE, position)
    batch: TopicBatch = renderer.render_batch([record])
    if len(batch) != 1:
        return None
    (topic, records), = batch.items()
    if len(records) != 1 or records[0].value is None:
        return None
    return topic, records[0]


def splice_template(renderer: Any, schema: TableSchema, context: SourceContext, position: Any,
                    now_ms: int) -> SpliceTemplate | None:
    """Renders a token record with `renderer` and cuts it around its `after` object (and its
    key's object); None when the output does not hold them as orjson writes a dict of the
    column names."""
    if not schema.columns or not getattr(renderer, "splices_values", False):
        return None
    names = tuple(c.name for c in schema.columns)
    tokens = tuple(_TOKEN.format(i) for i in range(len(names)))
    rendered = render_token_record(renderer, schema, context, position, now_ms, tokens)
    if rendered is None or rendered[1].partition is not None:
        return None
    topic, out = rendered
    doc = out.value
    assert doc is not None
    value = _around(doc, orjson.dumps(dict(zip(names, tokens, strict=True))))
    if value is None:
        return None
    positions = tuple(schema.key_positions)
    key_names = tuple(names[p] for p in positions)
    key: tuple[bytes, bytes] | None = (b"", b"")
    if out.key is not None:
        key = _around(out.key, orjson.dumps({n: tokens[p] for n, p in zip(
            key_names, positions, strict=True)})) if positions else None
    elif positions:
        key = None
    if key is None:
        return None
    return SpliceTemplate(topic, out.timestamp, out.headers, names, *value, key_names,
                          positions, *key)


def _objects(names: Sequence[str], rows: Iterable[Sequence[Any]], count: int
             ) -> list[bytes] | None:
    """Each row's JSON object of `names` (as the format writes `dict(zip(names, row))`),
    serialized in one orjson call and cut apart at the objects' boundaries; None if the
    cut does not give `count` objects (a nested object starting with the first name)."""
    text = _dumps(list(map(dict, map(zip, repeat(names), rows))), default=json_default)
    first = _dumps({names[0]: 0})[:-2]  # {"name":
    # Between two objects: `},{"name":`, which no string holds (its quotes are escaped).
    parts = text[1:-1].replace(b"}," + first, b"}\x00" + first).split(b"\x00")
    return parts if len(parts) == count else None


def _offsets(items: list[bytes]) -> bytes:
    return array("q", accumulate(map(len, items), initial=0)).tobytes()


_dumps = orjson.dumps


def render_rows(template: SpliceTemplate, rows: Sequence[Sequence[Any]]
                ) -> Sequence[TopicRecord] | None:
    """The READ records of converted rows (schema order): PackedRecords for a table with a
    key, else a list; None when they cannot be cut apart (the caller renders them row-wise)."""
    objects = _objects(template.names, rows, len(rows))
    if objects is None:
        return None
    values = list(map(bytes.__add__, objects, repeat(template.value_suffix)))
    ts, headers = template.timestamp, template.headers
    if not template.key_names:
        prefix = template.value_prefix
        return [TopicRecord(None, prefix + v, ts, headers) for v in values]
    key_rows = zip(*[map(itemgetter(p), rows) for p in template.key_positions], strict=True)
    key_objects = _objects(template.key_names, key_rows, len(rows))
    if key_objects is None:
        return None
    keys = list(map(bytes.__add__, key_objects, repeat(template.key_suffix)))
    return PackedRecords(template.key_prefix, b"".join(keys), _offsets(keys),
                         template.value_prefix, b"".join(values), _offsets(values), ts, headers)


class ChunkSplicer:
    """Feeds fetched chunks of one table version to a `RowSink`, rendered together: a table's
    first row and each chunk's last row go row-wise (their markers), the rows between as
    records rendered by `render_rows`."""

    def __init__(self, renderer: Any, schema: TableSchema, context: SourceContext,
                 convert_rows: Callable[[Sequence[Sequence[Any]]], list[tuple[Any, ...]]]
                 ) -> None:
        self.renderer, self.schema, self.context = renderer, schema, context
        self.convert_rows = convert_rows
        self._template: SpliceTemplate | None = None
        self._at: tuple[Any, int] | None = None  # the template's (position, read time)

    def template(self, position: Any, now_ms: int) -> SpliceTemplate | None:
        """The template at this read time (a new one each time the sink takes the time)."""
        at = (position, now_ms)
        if self._at != at:
            self._template = splice_template(self.renderer, self.schema, self.context,
                                             position, now_ms)
            self._at = at
        return self._template

    def add(self, rows: Sequence[Sequence[Any]], sink: RowSink) -> None:
        """One fetched chunk of rows (as the driver returned them) to `sink`."""
        converted = self.convert_rows(rows)
        if not sink.table_rows and converted:
            sink.add(converted[0])
            del converted[0]
        if len(converted) < 2:
            sink.add_many(converted)
            return
        template = self.template(sink.position, sink.now_ms)
        last = converted.pop()
        records = None if template is None else render_rows(template, converted)
        if template is None or records is None:
            converted.append(last)
            sink.add_many(converted)
            return
        sink.add_rendered({template.topic: records}, len(records), last)


def chunk_splicer(renderer: Any, schema: TableSchema, context: SourceContext, position: Any,
                  convert_rows: Callable[[Sequence[Sequence[Any]]], list[tuple[Any, ...]]],
                  name: str, logger: logging.Logger) -> ChunkSplicer | None:
    """The table's chunk renderer, None (said in the log) to render its rows one by one."""
    if splice_template(renderer, schema, context, position, 0) is None:
        logger.info("snapshot step: read %s row-wise: the output format (transforms, "
                    "converters or the Datastream format) does not splice values", name)
        return None
    logger.info("snapshot step: read %s column-wise, its chunks' records rendered together",
                name)
    return ChunkSplicer(renderer, schema, context, convert_rows)
