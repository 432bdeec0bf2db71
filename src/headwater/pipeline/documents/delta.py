"""MongoDB documents into Delta tables: SCD1, SCD2 and changelog, with evolving columns.

The tables live where the relational ones do (`<root>/<db>/<collection>`) and follow the same
rules (`delta_target`): a MERGE lets only a newer sequence win, deletes are remembered in the
state table, the batch id is the commit's app transaction.  What differs:

- the key is `__hw_id`, the `_id`'s Extended JSON text (`_id` is a column like the others, so
  an ObjectId and its hex string, or 1 and "1", stay different documents);
- every row keeps its document's Extended JSON in `__hw_doc`: the exact state a later patch
  applies to, and what columns are recomputed from when their type changes;
- columns are the documents' fields with inferred types (`shapes`).  A new field adds a column;
  a field whose type no longer fits its column widens it (long -> double) or turns it into a
  string column, and since Delta cannot change a column's type in place, the table is then
  rewritten once with the column recomputed from `__hw_doc` (a full overwrite; rare, logged).
  An update writes every column, so a field the document lost (`$unset`) becomes null.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, QueryBuilder, write_deltalake

from headwater.pipeline import changelog_once
from headwater.pipeline.columnar import CHANGELOG_META, OP, SEQ
from headwater.pipeline.decode import TableChanges
from headwater.pipeline.delta_target import (
    END,
    START,
    STATE_SCHEMA,
    DeltaTarget,
    SchemaEvolutionError,
    q,
)
from headwater.pipeline.documents import ejson, shapes
from headwater.pipeline.documents.events import DocBatch, DocEvent, dedup
from headwater.pipeline.documents.fold import Base, by_document, fold
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.scd2 import Point, Version, rebuild, tracked_columns

log = logging.getLogger("headwater.pipeline.documents")

ID = "__hw_id"
DOC = "__hw_doc"
UPDATE = "__hw_update"  # changelog: the event's updateDescription (JSON text)
_STR = pa.string()
HIDDEN = frozenset({ID, DOC, UPDATE, SEQ, OP, START, END, *CHANGELOG_META.names})


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in_list(ids: Sequence[str]) -> str:
    return ", ".join(_lit(i) for i in ids)


def _doc_text(doc: dict[str, Any] | None) -> str | None:
    return None if doc is None else ejson.text(doc)


def _stored_doc(doc_text: str | None, doc_id: str) -> dict[str, Any]:
    if doc_text is not None:
        doc = orjson.loads(doc_text)
        if isinstance(doc, dict):
            return doc
    return {"_id": orjson.loads(doc_id)}


class DocumentTarget:
    """The document path's writer, on top of a `DeltaTarget` (its open tables, commits and
    state table)."""

    def __init__(self, delta: DeltaTarget, options: DocumentOptions) -> None:
        self.delta = delta
        self.options = options

    # -- shared ------------------------------------------------------------------------------
    @staticmethod
    def _changes(batch: DocBatch) -> TableChanges:
        changes = TableChanges(batch.topic)
        changes.schema_name = batch.db
        changes.table_name = batch.collection
        return changes

    def _query(self, dt: DeltaTable, sql: str) -> pa.Table:
        return pa.table(QueryBuilder().register("t", dt).execute(sql).read_all())

    def _table(self, path: Path, hidden: list[pa.Field], docs: list[dict[str, Any]]
               ) -> tuple[DeltaTable, dict[str, pa.DataType]]:
        """The target table (created with the documents' columns) and its data columns
        after schema evolution for `docs`."""
        raw = shapes.columns(docs, self.options)
        dt = self.delta._open(path)
        if dt is None:
            first = {n: t for n, r in raw.items() if (t := shapes.finalize(r)) is not None}
            dt = self.delta._ensure_table(path, pa.schema(
                [*hidden, *(pa.field(n, t) for n, t in first.items())]))
        existing = {f.name: shapes.normalize(f.type) for f in pa.schema(dt.schema().to_arrow())
                    if f.name not in HIDDEN}
        columns = dict(existing)
        new: list[str] = []
        changed: list[str] = []
        for name, t in raw.items():
            old = existing.get(name)
            final = shapes.finalize(t if old is None else shapes.merge(old, t))
            if final is None or final == old:
                continue
            columns[name] = final
            (new if old is None else changed).append(name)
        mode = self.delta.schema_evolution
        if mode == "fail" and (new or changed):
            raise SchemaEvolutionError(
                f"{path}: documents bring new field(s) or types ({', '.join(new + changed)}) "
                "and headwater.pipeline.schema.evolution=fail")
        if mode == "ignore":
            for name in new:
                del columns[name]
        elif new:
            log.info("%s: adding columns %s (schema evolution)", path, ", ".join(new))
        if changed:
            dt = self._rewrite(dt, path, columns, changed)
        return dt, columns

    def _rewrite(self, dt: DeltaTable, path: Path, columns: dict[str, pa.DataType],
                 changed: list[str]) -> DeltaTable:
        """The table with the `changed` columns recomputed from `__hw_doc` in their new
        types (one overwrite commit; rows and other columns as they were)."""
        for name in changed:
            log.warning("%s: column %r changes type to %s (values of other types are "
                        "written as Extended JSON text): rewriting the table", path, name,
                        columns[name])
        table = pa.table(dt.to_pyarrow_table())
        docs = [_stored_doc(d, i) for d, i in zip(table.column(DOC).to_pylist(),
                                                 table.column(ID).to_pylist(), strict=True)]
        flat = [shapes.fields(d, self.options) for d in docs]
        for name in changed:
            col = ejson.column([f.get(name) for f in flat], columns[name])
            if name in table.column_names:
                table = table.set_column(table.column_names.index(name), name, col)
            else:
                table = table.append_column(name, col)
        write_deltalake(str(path), table, mode="overwrite", schema_mode="overwrite",
                        commit_properties=CommitProperties(
                            custom_metadata={"headwater.rewrite": ",".join(changed)}))
        reopened = self.delta._open(path)
        assert reopened is not None
        return reopened

    def _data(self, docs: list[dict[str, Any] | None], columns: dict[str, pa.DataType]
              ) -> list[pa.Array]:
        flat = [shapes.fields(d, self.options) if d is not None else {} for d in docs]
        out = []
        for name, t in columns.items():
            try:
                out.append(ejson.column([f.get(name) for f in flat], t))
            except (ValueError, TypeError, KeyError, OverflowError) as exc:
                raise SchemaEvolutionError(f"field {name!r}: a value does not fit {t}: {exc}"
                                           ) from exc
        return out

    def _remembered(self, changes: TableChanges, kind: str, ids: Sequence[str]
                    ) -> dict[str, list[str]]:
        dt = self.delta._open(self.delta.state_path(changes))
        if dt is None or not ids:
            return {}
        table = self._query(dt, f"SELECT key, {q(SEQ)} FROM t WHERE kind = {_lit(kind)} AND "
                                f"key IN ({_in_list(ids)})")
        out: dict[str, list[str]] = {}
        for k, s in zip(table.column("key").to_pylist(), table.column(SEQ).to_pylist(),
                        strict=True):
            out.setdefault(k, []).append(s)
        return out

    def _remember(self, changes: TableChanges, kind: str, deletes: list[tuple[str, str]],
                  batch_id: int) -> None:
        if deletes:
            self.delta._merge_state(changes, pa.table(
                [pa.array([i for i, _ in deletes], _STR), pa.array([kind] * len(deletes), _STR),
                 pa.array([s for _, s in deletes], _STR)], schema=STATE_SCHEMA), batch_id)

    # -- SCD type 1 ----------------------------------------------------------------------------
    def apply_scd1(self, batch: DocBatch, batch_id: int) -> None:
        changes = self._changes(batch)
        path = self.delta.table_path(changes)
        if self.delta.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        groups = by_document(dedup(batch.events))
        if not groups:
            return
        tombs = self._remembered(changes, "delete", list(groups))
        patched = [i for i, evs in groups.items() if any(e.update is not None for e in evs)]
        current = self._current(path, patched)
        net: list[tuple[str, str, dict[str, Any] | None]] = []
        unbased = 0
        for doc_id, evs in groups.items():
            bases = [Base(s, None) for s in tombs.get(doc_id, ())]
            if doc_id in current:
                bases.append(current[doc_id])
            folded = fold(doc_id, evs, bases)
            unbased += folded.unbased
            last = folded.resolved[-1]
            tomb = max(tombs[doc_id]) if tombs.get(doc_id) else None
            if tomb is not None and (last.sequence < tomb
                                     or (last.sequence == tomb and last.doc is not None)):
                continue  # older than a remembered delete (a replay keeps that delete)
            net.append((doc_id, last.sequence, last.doc))
        if unbased:
            log.warning("%s: %d document(s) updated without a full document and with no "
                        "previous state (their rows hold only the updated fields)", path,
                        unbased)
        hidden = [pa.field(ID, _STR), pa.field(DOC, _STR), pa.field(SEQ, _STR)]
        dt, columns = self._table(path, hidden, [d for _, _, d in net if d is not None])
        names = [ID, DOC, SEQ, OP, *columns]
        source = pa.Table.from_arrays([
            pa.array([i for i, _, _ in net], _STR),
            pa.array([_doc_text(d) for _, _, d in net], _STR),
            pa.array([s for _, s, _ in net], _STR),
            pa.array(["d" if d is None else "u" for _, _, d in net], _STR),
            *self._data([d for _, _, d in net], columns)], names=names)
        sets = {q(n): f"s.{q(n)}" for n in names if n != OP}
        newer = f"s.{q(SEQ)} > t.{q(SEQ)}"
        # Remembered first, the table's commit (with the batch's txn) last: a crash between
        # them must not let the replay skip the table with its deletes forgotten.
        self._remember(changes, "delete", [(i, s) for i, s, d in net if d is None], batch_id)
        (
            dt.merge(source, predicate=f"t.{q(ID)} = s.{q(ID)}", source_alias="s",
                     target_alias="t", merge_schema=True,
                     commit_properties=self.delta._commit(batch_id))
            .when_matched_update(updates=sets, predicate=f"s.{q(OP)} = 'u' AND {newer}")
            .when_matched_delete(predicate=f"s.{q(OP)} = 'd' AND {newer}")
            .when_not_matched_insert(updates=sets, predicate=f"s.{q(OP)} = 'u'")
            .execute()
        )

    def _current(self, path: Path, ids: list[str]) -> dict[str, Base]:
        """The target's rows of `ids` (the base of their patches)."""
        dt = self.delta._open(path)
        if dt is None or not ids:
            return {}
        table = self._query(dt, f"SELECT {q(ID)}, {q(DOC)}, {q(SEQ)} FROM t "
                                f"WHERE {q(ID)} IN ({_in_list(ids)})")
        return {i: Base(s, _stored_doc(d, i)) for i, d, s in zip(
            table.column(ID).to_pylist(), table.column(DOC).to_pylist(),
            table.column(SEQ).to_pylist(), strict=True)}

    # -- SCD type 2 ----------------------------------------------------------------------------
    def apply_scd2(self, batch: DocBatch, batch_id: int, track: Sequence[str] | None = None,
                   track_except: Sequence[str] | None = None) -> None:
        changes = self._changes(batch)
        path = self.delta.table_path(changes)
        if self.delta.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        groups = by_document(dedup(batch.events))
        if not groups:
            return
        ids = list(groups)
        stored = self._versions(path, ids)
        deleted = self._remembered(changes, "scd2_delete", ids)
        rows: list[tuple[str, Version]] = []
        for doc_id, evs in groups.items():
            versions = stored.get(doc_id, [])
            starts = {v.start for v in versions}
            bases = [Base(s, None) for s in deleted.get(doc_id, ())]
            for v in versions:
                bases.append(Base(v.start, v.row[DOC]))
                if v.end is not None and v.end not in starts:
                    bases.append(Base(v.end, None))
            resolved = fold(doc_id, evs, bases).resolved
            points = [Point(s, True, None) for s in deleted.get(doc_id, ())]
            points += [Point(r.sequence, r.doc is None, self._row(r.doc)) for r in resolved]
            names = sorted(({n for p in points if p.row for n in p.row}
                            | {n for v in versions for n in v.row}) - {DOC})
            tracked = tracked_columns(names, track, track_except)
            rows += [(doc_id, v) for v in rebuild(versions, points, tracked)]
        hidden = [pa.field(ID, _STR), pa.field(DOC, _STR), pa.field(START, _STR),
                  pa.field(END, _STR)]
        docs = [v.row[DOC] for _, v in rows]
        dt, columns = self._table(path, hidden, docs)
        source = pa.Table.from_arrays([
            pa.array([i for i, _ in rows], _STR), pa.array([_doc_text(d) for d in docs], _STR),
            pa.array([v.start for _, v in rows], _STR), pa.array([v.end for _, v in rows], _STR),
            *self._data(docs, columns)], names=[ID, DOC, START, END, *columns])
        self._remember(changes, "scd2_delete",  # first: see apply_scd1
                       [(e.id, e.sequence) for evs in groups.values() for e in evs
                        if e.op == "d"], batch_id)
        (
            dt.merge(source, predicate=f"t.{q(ID)} = s.{q(ID)} AND t.{q(START)} = s.{q(START)}",
                     source_alias="s", target_alias="t", merge_schema=True,
                     commit_properties=self.delta._commit(batch_id))
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(predicate=f"t.{q(ID)} IN ({_in_list(ids)})")
            .execute()
        )

    def _row(self, doc: dict[str, Any] | None) -> dict[str, Any] | None:
        """A version's row for `scd2.rebuild`: the column values (still Extended JSON, so
        that tracked columns compare exactly) plus the document."""
        if doc is None:
            return None
        return {**shapes.fields(doc, self.options), DOC: doc}

    def _versions(self, path: Path, ids: list[str]) -> dict[str, list[Version]]:
        dt = self.delta._open(path)
        if dt is None:
            return {}
        table = self._query(dt, f"SELECT {q(ID)}, {q(DOC)}, {q(START)}, {q(END)} FROM t "
                                f"WHERE {q(ID)} IN ({_in_list(ids)})")
        out: dict[str, list[Version]] = {}
        for i, d, s, e in zip(*(table.column(n).to_pylist() for n in (ID, DOC, START, END)),
                              strict=True):
            row = self._row(_stored_doc(d, i))
            assert row is not None
            out.setdefault(i, []).append(Version(s, e, row))
        return out

    # -- changelog -----------------------------------------------------------------------------
    def append_changelog(self, batch: DocBatch, batch_id: int) -> None:
        """Every event as a row: its image (the before image or only `_id` for a delete,
        only `_id` for a patch, whose updateDescription is in `__hw_update`)."""
        changes = self._changes(batch)
        path = self.delta.table_path(changes)
        if self.delta.already_applied(path, batch_id) or not batch.events:
            return
        events: list[DocEvent] = sorted(batch.events, key=lambda e: e.offset)
        keep = changelog_once.first_mask(pa.table({
            SEQ: pa.array([e.sequence for e in events], _STR),
            changelog_once.CHANGELOG_OP: pa.array([e.op for e in events], _STR),
            ID: pa.array([e.id for e in events], _STR)}), (ID,), changes, self.delta)
        if keep is not None:  # re-deliveries (`changelog_once`)
            events = [e for e, k in zip(events, keep.to_pylist(), strict=True) if k]
            if not events:
                return
        docs = [e.doc if e.doc is not None else {"_id": orjson.loads(e.id)} for e in events]
        hidden = [*CHANGELOG_META, pa.field(ID, _STR), pa.field(DOC, _STR),
                  pa.field(UPDATE, _STR)]
        _dt, columns = self._table(path, hidden, docs)
        meta = [
            pa.array([e.op for e in events], _STR), pa.array([e.sequence for e in events], _STR),
            pa.array([e.source_ts_ms for e in events], pa.int64()),
            pa.array([e.ts_ms for e in events], pa.int64()), pa.nulls(len(events), pa.int64()),
            pa.array([e.tx_id for e in events], _STR), pa.array([e.snapshot for e in events],
                                                                 _STR),
            pa.array([e.offset for e in events], pa.int64()),
            pa.array([e.id for e in events], _STR),
            pa.array([_doc_text(e.doc) for e in events], _STR),
            pa.array([e.update_text for e in events], _STR),
        ]
        table = pa.Table.from_arrays([*meta, *self._data(list(docs), columns)],
                                     schema=pa.schema([*hidden, *(pa.field(n, t) for n, t
                                                                  in columns.items())]))
        write_deltalake(str(path), table, mode="append", schema_mode="merge",
                        commit_properties=self.delta._commit(batch_id))
