"""The document path's rules, apart from where the rows are stored: one flow for the Delta
(`documents.delta`), JDBC (`documents.jdbc`) and Iceberg (`documents.iceberg`) document
tables.

Given what the target holds (the current documents, remembered deletes, the stored versions,
its columns) these decide a batch's rows: the net document per `_id` (SCD1), every document's
rebuilt history (SCD2), the changelog's rows, and which columns are new or change type.  The
table layout is the same everywhere: `__hw_id` (the `_id`'s Extended JSON text, the key),
`__hw_doc` (the document's Extended JSON: a later patch's base, and what a column whose type
changes is recomputed from), the bookkeeping columns of the mode, then the fields as columns
(`shapes`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import orjson
import pyarrow as pa

from headwater.pipeline import changelog_once
from headwater.pipeline.columnar import CHANGELOG_META, OP, SEQ
from headwater.pipeline.decode import TableChanges
from headwater.pipeline.delta_target import END, START, SchemaEvolutionError
from headwater.pipeline.documents import ejson, shapes
from headwater.pipeline.documents.events import DocBatch, DocEvent, dedup
from headwater.pipeline.documents.fold import Base, by_document, fold
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.scd2 import Point, Version, rebuild, tracked_columns

log = logging.getLogger("headwater.pipeline.documents")

ID = "__hw_id"
DOC = "__hw_doc"
UPDATE = "__hw_update"  # changelog: the event's updateDescription (JSON text)
STR = pa.string()
HIDDEN = frozenset({ID, DOC, UPDATE, SEQ, OP, START, END, *CHANGELOG_META.names})


class Net(NamedTuple):
    """A document's net change of a batch (SCD1): its last state, None when deleted."""

    id: str
    sequence: str
    doc: dict[str, Any] | None


class Plan(NamedTuple):
    """The table's data columns after a batch (in order), and which of them change type."""

    columns: dict[str, pa.DataType]
    changed: list[str]


def probe(batch: DocBatch) -> TableChanges:
    """What a target names the collection's table by: the database as schema, the
    collection as table."""
    changes = TableChanges(batch.topic)
    changes.schema_name = batch.db
    changes.table_name = batch.collection
    return changes


def doc_text(doc: dict[str, Any] | None) -> str | None:
    return None if doc is None else ejson.text(doc)


def stored_doc(text: str | None, doc_id: str) -> dict[str, Any]:
    """A stored `__hw_doc` (only `_id` when none was stored: a changelog's patch row)."""
    if text is not None:
        doc = orjson.loads(text)
        if isinstance(doc, dict):
            return doc
    return {"_id": orjson.loads(doc_id)}


def net_documents(batch: DocBatch, remembered: Mapping[str, Sequence[str]],
                  current: Mapping[str, Base], where: str) -> list[Net]:
    """SCD1: each document's last state after the batch, with the target's rows and
    remembered deletes (`remembered`) as the patches' bases; a document older than a
    remembered delete is left out (a replay keeps that delete)."""
    out: list[Net] = []
    unbased = 0
    for doc_id, evs in by_document(dedup(batch.events)).items():
        tombs = remembered.get(doc_id, ())
        bases = [Base(s, None) for s in tombs]
        if doc_id in current:
            bases.append(current[doc_id])
        folded = fold(doc_id, evs, bases)
        unbased += folded.unbased
        last = folded.resolved[-1]
        tomb = max(tombs) if tombs else None
        if tomb is not None and (last.sequence < tomb
                                 or (last.sequence == tomb and last.doc is not None)):
            continue
        out.append(Net(doc_id, last.sequence, last.doc))
    if unbased:
        log.warning("%s: %d document(s) updated without a full document and with no previous "
                    "state (their rows hold only the updated fields)", where, unbased)
    return out


def patched(batch: DocBatch) -> list[str]:
    """The documents a batch patches: the ones whose current state the target must give."""
    return sorted({e.id for e in batch.events if e.update is not None})


def version_row(doc: dict[str, Any] | None, options: DocumentOptions) -> dict[str, Any] | None:
    """A version's row for `scd2.rebuild`: the column values (still Extended JSON, so that
    tracked columns compare exactly) plus the document."""
    if doc is None:
        return None
    return {**shapes.fields(doc, options), DOC: doc}


def history(batch: DocBatch, stored: Mapping[str, list[Version]],
            deleted: Mapping[str, Sequence[str]], options: DocumentOptions,
            track: Sequence[str] | None, track_except: Sequence[str] | None,
            ) -> list[tuple[str, Version]]:
    """SCD2: the rebuilt versions of every document the batch touches (`stored`: their
    versions in the target, rows from `version_row`; `deleted`: remembered deletes)."""
    rows: list[tuple[str, Version]] = []
    for doc_id, evs in by_document(dedup(batch.events)).items():
        versions = stored.get(doc_id, [])
        starts = {v.start for v in versions}
        bases = [Base(s, None) for s in deleted.get(doc_id, ())]
        for v in versions:
            bases.append(Base(v.start, v.row[DOC]))
            if v.end is not None and v.end not in starts:
                bases.append(Base(v.end, None))
        resolved = fold(doc_id, evs, bases).resolved
        points = [Point(s, True, None) for s in deleted.get(doc_id, ())]
        points += [Point(r.sequence, r.doc is None, version_row(r.doc, options))
                   for r in resolved]
        names = sorted(({n for p in points if p.row for n in p.row}
                        | {n for v in versions for n in v.row}) - {DOC})
        tracked = tracked_columns(names, track, track_except)
        rows += [(doc_id, v) for v in rebuild(versions, points, tracked)]
    return rows


def deletes(batch: DocBatch) -> list[tuple[str, str]]:
    """(id, sequence) of the batch's deletes: what SCD2 remembers."""
    return [(e.id, e.sequence) for e in dedup(batch.events) if e.op == "d"]


def plan(docs: Sequence[dict[str, Any]], existing: Mapping[str, pa.DataType],
         options: DocumentOptions, evolution: str, where: str) -> Plan:
    """The columns `docs` need next to the table's `existing` ones, per
    `headwater.pipeline.schema.evolution` (new fields added, left out or refused); a field
    whose values no longer fit its column widens it (`shapes.merge`) in every mode."""
    columns = {n: shapes.normalize(t) for n, t in existing.items()}
    new: list[str] = []
    changed: list[str] = []
    for name, t in shapes.columns(list(docs), options).items():
        old = columns.get(name)
        final = shapes.finalize(t if old is None else shapes.merge(old, t))
        if final is None or final == old:
            continue
        columns[name] = final
        (new if old is None else changed).append(name)
    if existing and evolution == "fail" and (new or changed):
        raise SchemaEvolutionError(
            f"{where}: documents bring new field(s) or types ({', '.join(new + changed)}) "
            "and headwater.pipeline.schema.evolution=fail")
    if existing and evolution == "ignore":
        for name in new:
            del columns[name]
    elif existing and new:
        log.info("%s: adding columns %s (schema evolution)", where, ", ".join(new))
    for name in changed:
        log.warning("%s: column %r changes type to %s (values of other types are written as "
                    "Extended JSON text): recomputing it from the stored documents", where,
                    name, columns[name])
    return Plan(columns, changed)


def values(docs: Sequence[dict[str, Any] | None], columns: Mapping[str, pa.DataType],
           options: DocumentOptions) -> list[pa.Array]:
    """The documents' column values (a None document: all null)."""
    flat = [shapes.fields(d, options) if d is not None else {} for d in docs]
    out = []
    for name, t in columns.items():
        try:
            out.append(ejson.column([f.get(name) for f in flat], t))
        except (ValueError, TypeError, KeyError, OverflowError) as exc:
            raise SchemaEvolutionError(f"field {name!r}: a value does not fit {t}: {exc}"
                                       ) from exc
    return out


def changelog_rows(events: Sequence[DocEvent], columns: Mapping[str, pa.DataType],
                   options: DocumentOptions) -> pa.Table:
    """Every event as a row: the changelog's bookkeeping (`CHANGELOG_META`), `__hw_id`,
    `__hw_doc` (the image: the before image of a delete, none for a patch, whose
    updateDescription is `__hw_update`), then the image's fields."""
    meta = [
        pa.array([e.op for e in events], STR), pa.array([e.sequence for e in events], STR),
        pa.array([e.source_ts_ms for e in events], pa.int64()),
        pa.array([e.ts_ms for e in events], pa.int64()), pa.nulls(len(events), pa.int64()),
        pa.array([e.tx_id for e in events], STR), pa.array([e.snapshot for e in events], STR),
        pa.array([e.offset for e in events], pa.int64()),
        pa.array([e.id for e in events], STR),
        pa.array([doc_text(e.doc) for e in events], STR),
        pa.array([e.update_text for e in events], STR),
    ]
    schema = pa.schema([*CHANGELOG_META, *changelog_hidden(),
                        *(pa.field(n, t) for n, t in columns.items())])
    return pa.Table.from_arrays([*meta, *values(changelog_images(events), columns, options)],
                                schema=schema)


def changelog_hidden() -> list[pa.Field]:
    return [pa.field(ID, STR), pa.field(DOC, STR), pa.field(UPDATE, STR)]


def changelog_images(events: Sequence[DocEvent]) -> list[dict[str, Any]]:
    return [e.doc if e.doc is not None else {"_id": orjson.loads(e.id)} for e in events]


def changelog_order(events: Sequence[DocEvent]) -> pa.Table:
    """What `changelog_once.first_mask` compares: sequence, op and `__hw_id`."""
    return pa.table({SEQ: pa.array([e.sequence for e in events], STR),
                     changelog_once.CHANGELOG_OP: pa.array([e.op for e in events], STR),
                     ID: pa.array([e.id for e in events], STR)})
