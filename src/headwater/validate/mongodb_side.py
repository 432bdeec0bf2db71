"""MongoDB collections against their document targets (Delta, JDBC or Iceberg; SCD1, or SCD2's
open versions): both sides as rows of (`_id` text, canonical document text), compared by
`compare.compare_table`.

What the pipeline writes (`pipeline/documents/flow.py`, one layout for Delta, JDBC and
Iceberg): one row per current document, keyed by `__hw_id` (the `_id`'s Extended JSON text,
normalized) and holding the document's Extended JSON in `__hw_doc`; its other columns are
projections of `__hw_doc` (JDBC and Iceberg: sub-documents and arrays as JSON text), so
`__hw_doc` is what is compared.
The source side reads each document as the connector's snapshot does (raw BSON,
the collection's codec: Debezium's Extended JSON with `field.exclude.list` and
`field.renames` applied), streamed from a cursor: MongoDB has no server-side hash that Python
could reproduce, so the hashing is done here, one document at a time.

One canonical form for both: the target's `__hw_doc` mixes Debezium's strict form (full images,
`{"$numberLong": ...}`, `{"$date": <ms>}`) with the relaxed one (fields set by patches), so
both sides are parsed (type wrappers by `bson.json_util`, either form) and written again as
relaxed Extended JSON with sorted keys.  Relaxed because it is the form both can reach: a
relaxed 5 cannot say whether it was an int or a long.  Field order is therefore not compared.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

import orjson
import pyarrow.compute as pc
from bson import json_util
from bson.binary import UuidRepresentation
from bson.codec_options import DatetimeConversion
from bson.json_util import JSONMode, JSONOptions
from deltalake import DeltaTable

from headwater.pipeline.delta_target import END
from headwater.pipeline.documents.events import normalized_id
from headwater.pipeline.documents.flow import DOC, ID
from headwater.validate.canonical import SEP
from headwater.validate.model import RowDiff, Signature, TablePlan

BATCH_ROWS: Final = 10_000
DOCUMENT: Final = "document"  # the plan's one compared column besides `_id`
ABSENT: Final = "(absent)"
_OPTIONS: Final = JSONOptions(
    json_mode=JSONMode.RELAXED, datetime_conversion=DatetimeConversion.DATETIME_AUTO,
    tz_aware=True, uuid_representation=UuidRepresentation.UNSPECIFIED)


_SAME: Final = frozenset({"$oid", "$numberDecimal"})  # one form, relaxed or not
_INTS: Final = frozenset({"$numberLong", "$numberInt"})  # relaxed: a plain number
_DIGITS: Final = re.compile(r"-?[0-9]+")


def canonical(doc_text: str) -> str:
    """The document's canonical text: relaxed Extended JSON, keys sorted (module docstring).

    Plain values and documents are left to orjson; only type wrappers (objects with a `$`
    key) go through `bson.json_util`, several times faster than parsing the whole document
    with it."""
    return orjson.dumps(_relaxed(orjson.loads(doc_text)), option=orjson.OPT_SORT_KEYS).decode()


def _relaxed(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1:  # the commonest wrappers, without json_util
            key, inner = next(iter(value.items()))
            if key in _SAME and isinstance(inner, str):
                return value
            if key in _INTS and isinstance(inner, str) and _DIGITS.fullmatch(inner):
                return int(inner)
        if any(k.startswith("$") for k in value):
            bson_value = json_util.loads(orjson.dumps(value), json_options=_OPTIONS)
            return orjson.loads(json_util.dumps(bson_value, json_options=_OPTIONS))
        return {k: _relaxed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relaxed(v) for v in value]
    return value


def chunk_of(doc_id: str, buckets: int) -> int:
    """The bucket of an `_id` text (MD5, as `target.py` buckets a non-integer key)."""
    return int(hashlib.md5(doc_id.encode(), usedforsecurity=False).hexdigest()[:7], 16) % buckets


def _signatures(rows: Iterable[tuple[str, str]], buckets: int,
                only: set[int] | None) -> dict[int, Signature]:
    counts: dict[int, int] = {}
    sums: dict[int, int] = {}
    for doc_id, doc in rows:
        chunk = chunk_of(doc_id, buckets)
        if only is not None and chunk not in only:
            continue
        text = doc_id + SEP + canonical(doc)
        digest = hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()
        counts[chunk] = counts.get(chunk, 0) + 1
        sums[chunk] = sums.get(chunk, 0) + int(digest[:15], 16)
    return {c: Signature(n, sums[c]) for c, n in counts.items()}


def _rows(rows: Iterable[tuple[str, str]], buckets: int,
          chunks: set[int]) -> Iterator[tuple[str, ...]]:
    for doc_id, doc in rows:
        if chunk_of(doc_id, buckets) in chunks:
            yield doc_id, canonical(doc)


class MongoSource:
    """One collection, read through the connector's codec (`codec.read`: the snapshot's
    `after`), documents as raw BSON so the connector's exact encoder applies."""

    def __init__(self, collection: Any, codec: Any) -> None:
        self.collection = collection
        self.codec = codec

    def _documents(self) -> Iterator[tuple[str, str]]:
        with self.collection.find({}, batch_size=BATCH_ROWS) as cursor:
            for raw in cursor:
                doc_id, doc, _ = self.codec.read(raw)
                yield normalized_id(doc_id), doc

    def count(self, plan: TablePlan) -> int:
        return int(self.collection.count_documents({}))

    def signatures(self, plan: TablePlan, chunk_rows: int, buckets: int,
                   only: set[int] | None = None) -> dict[int, Signature]:
        return _signatures(self._documents(), buckets, only)

    def rows(self, plan: TablePlan, chunk_rows: int, buckets: int,
             chunks: set[int]) -> Iterator[tuple[str, ...]]:
        return _rows(self._documents(), buckets, chunks)


class DocumentSide:
    """A document target's current documents (`__hw_id`, `__hw_doc`), as `documents` reads
    them for a plan: a Delta table (`delta_documents`), a JDBC table (`JdbcTargets.stream`) or
    an Iceberg table through Spark (`IcebergTargets.stream`).
    Only where they are read from differs; the canonical form and hashing are one."""

    def __init__(self, documents: Callable[[TablePlan], Iterable[tuple[Any, Any]]]) -> None:
        self.documents = documents

    def _documents(self, plan: TablePlan) -> Iterator[tuple[str, str]]:
        for doc_id, doc in self.documents(plan):
            # A row without its document (never written so by the pipeline) is `{}`: every
            # field then shows as differing.
            yield str(doc_id), doc if doc is not None else "{}"

    def signatures(self, plan: TablePlan, chunk_rows: int, buckets: int,
                   only: set[int] | None = None) -> dict[int, Signature]:
        return _signatures(self._documents(plan), buckets, only)

    def rows(self, plan: TablePlan, chunk_rows: int, buckets: int,
             chunks: set[int]) -> Iterator[tuple[str, ...]]:
        return _rows(self._documents(plan), buckets, chunks)


def delta_documents(plan: TablePlan) -> Iterator[tuple[Any, Any]]:
    """A Delta document table's current documents, batch by batch (SCD2: the open
    versions, as `current.py` says)."""
    dataset = DeltaTable(plan.target).to_pyarrow_dataset()
    where = pc.field(END).is_null() if plan.mode == "scd2" else None
    for batch in dataset.to_batches(columns=[ID, DOC], filter=where, batch_size=BATCH_ROWS):
        yield from zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)


def field_diffs(row: RowDiff) -> RowDiff:
    """A changed document's difference as its differing top-level fields (canonical texts;
    `(absent)` for a field one side lacks), instead of the two whole documents."""
    if row.kind != "changed" or DOCUMENT not in row.columns:
        return row
    a = json.loads(row.columns[DOCUMENT]["source"])
    b = json.loads(row.columns[DOCUMENT]["target"])
    fields: dict[str, dict[str, str]] = {}
    for name in sorted(a.keys() | b.keys()):
        if a.get(name, ABSENT) != b.get(name, ABSENT) or (name in a) != (name in b):
            fields[name] = {"source": _text(a, name), "target": _text(b, name)}
    return RowDiff(row.key, row.kind, fields)


def _text(doc: dict[str, Any], name: str) -> str:
    if name not in doc:
        return ABSENT
    return json.dumps(doc[name], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
