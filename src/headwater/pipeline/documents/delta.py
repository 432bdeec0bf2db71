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

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, QueryBuilder, write_deltalake

from headwater.pipeline import changelog_once
from headwater.pipeline.columnar import CHANGELOG_META, OP, SEQ
from headwater.pipeline.decode import TableChanges
from headwater.pipeline.delta_target import END, START, STATE_SCHEMA, DeltaTarget, q
from headwater.pipeline.documents import ejson, flow, shapes
from headwater.pipeline.documents.events import DocBatch, DocEvent
from headwater.pipeline.documents.flow import DOC, HIDDEN, ID, STR, doc_text, stored_doc
from headwater.pipeline.documents.fold import Base
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.scd2 import Version

log = logging.getLogger("headwater.pipeline.documents")


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _in_list(ids: Sequence[str]) -> str:
    return ", ".join(_lit(i) for i in ids)


class DocumentTarget:
    """The document path's Delta storage, on top of a `DeltaTarget` (its open tables, commits
    and state table); the rules are `flow`'s."""

    def __init__(self, delta: DeltaTarget, options: DocumentOptions) -> None:
        self.delta = delta
        self.options = options

    # -- shared ------------------------------------------------------------------------------
    def _query(self, dt: DeltaTable, sql: str) -> pa.Table:
        return pa.table(QueryBuilder().register("t", dt).execute(sql).read_all())

    def _table(self, path: Path, hidden: list[pa.Field], docs: Sequence[dict[str, object]]
               ) -> tuple[DeltaTable, dict[str, pa.DataType]]:
        """The target table (created with the documents' columns) and its data columns
        after schema evolution for `docs` (`flow.plan`)."""
        dt = self.delta._open(path)
        if dt is None:
            first = flow.plan(docs, {}, self.options, "evolve", str(path)).columns
            dt = self.delta._ensure_table(path, pa.schema(
                [*hidden, *(pa.field(n, t) for n, t in first.items())]))
        existing = {f.name: f.type for f in pa.schema(dt.schema().to_arrow())
                    if f.name not in HIDDEN}
        columns, changed = flow.plan(docs, existing, self.options,
                                     self.delta.schema_evolution, str(path))
        if changed:
            dt = self._rewrite(dt, path, columns, changed)
        return dt, columns

    def _rewrite(self, dt: DeltaTable, path: Path, columns: dict[str, pa.DataType],
                 changed: list[str]) -> DeltaTable:
        """The table with the `changed` columns recomputed from `__hw_doc` in their new
        types (one overwrite commit, since Delta cannot change a column's type in place;
        rows and other columns as they were)."""
        table = pa.table(dt.to_pyarrow_table())
        docs = [stored_doc(d, i) for d, i in zip(table.column(DOC).to_pylist(),
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
                [pa.array([i for i, _ in deletes], STR), pa.array([kind] * len(deletes), STR),
                 pa.array([s for _, s in deletes], STR)], schema=STATE_SCHEMA), batch_id)

    # -- SCD type 1 ----------------------------------------------------------------------------
    def apply_scd1(self, batch: DocBatch, batch_id: int) -> None:
        changes = flow.probe(batch)
        path = self.delta.table_path(changes)
        if self.delta.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        ids = sorted({e.id for e in batch.events})
        net = flow.net_documents(batch, self._remembered(changes, "delete", ids),
                                 self._current(path, flow.patched(batch)), str(path))
        if not net:
            return
        hidden = [pa.field(ID, STR), pa.field(DOC, STR), pa.field(SEQ, STR)]
        dt, columns = self._table(path, hidden, [n.doc for n in net if n.doc is not None])
        names = [ID, DOC, SEQ, OP, *columns]
        source = pa.Table.from_arrays([
            pa.array([n.id for n in net], STR),
            pa.array([doc_text(n.doc) for n in net], STR),
            pa.array([n.sequence for n in net], STR),
            pa.array(["d" if n.doc is None else "u" for n in net], STR),
            *flow.values([n.doc for n in net], columns, self.options)], names=names)
        sets = {q(n): f"s.{q(n)}" for n in names if n != OP}
        newer = f"s.{q(SEQ)} > t.{q(SEQ)}"
        # Remembered first, the table's commit (with the batch's txn) last: a crash between
        # them must not let the replay skip the table with its deletes forgotten.
        self._remember(changes, "delete", [(n.id, n.sequence) for n in net if n.doc is None],
                       batch_id)
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
        return {i: Base(s, stored_doc(d, i)) for i, d, s in zip(
            table.column(ID).to_pylist(), table.column(DOC).to_pylist(),
            table.column(SEQ).to_pylist(), strict=True)}

    # -- SCD type 2 ----------------------------------------------------------------------------
    def apply_scd2(self, batch: DocBatch, batch_id: int, track: Sequence[str] | None = None,
                   track_except: Sequence[str] | None = None) -> None:
        changes = flow.probe(batch)
        path = self.delta.table_path(changes)
        if self.delta.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        ids = sorted({e.id for e in batch.events})
        if not ids:
            return
        rows = flow.history(batch, self._versions(path, ids),
                            self._remembered(changes, "scd2_delete", ids), self.options,
                            track, track_except)
        hidden = [pa.field(ID, STR), pa.field(DOC, STR), pa.field(START, STR),
                  pa.field(END, STR)]
        docs = [v.row[DOC] for _, v in rows]
        dt, columns = self._table(path, hidden, docs)
        source = pa.Table.from_arrays([
            pa.array([i for i, _ in rows], STR), pa.array([doc_text(d) for d in docs], STR),
            pa.array([v.start for _, v in rows], STR), pa.array([v.end for _, v in rows], STR),
            *flow.values(docs, columns, self.options)], names=[ID, DOC, START, END, *columns])
        self._remember(changes, "scd2_delete", flow.deletes(batch), batch_id)  # first: scd1
        (
            dt.merge(source, predicate=f"t.{q(ID)} = s.{q(ID)} AND t.{q(START)} = s.{q(START)}",
                     source_alias="s", target_alias="t", merge_schema=True,
                     commit_properties=self.delta._commit(batch_id))
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(predicate=f"t.{q(ID)} IN ({_in_list(ids)})")
            .execute()
        )

    def _versions(self, path: Path, ids: list[str]) -> dict[str, list[Version]]:
        dt = self.delta._open(path)
        if dt is None:
            return {}
        table = self._query(dt, f"SELECT {q(ID)}, {q(DOC)}, {q(START)}, {q(END)} FROM t "
                                f"WHERE {q(ID)} IN ({_in_list(ids)})")
        out: dict[str, list[Version]] = {}
        for i, d, s, e in zip(*(table.column(n).to_pylist() for n in (ID, DOC, START, END)),
                              strict=True):
            row = flow.version_row(stored_doc(d, i), self.options)
            assert row is not None
            out.setdefault(i, []).append(Version(s, e, row))
        return out

    # -- changelog -----------------------------------------------------------------------------
    def append_changelog(self, batch: DocBatch, batch_id: int) -> None:
        """Every event as a row (`flow.changelog_rows`), each once (`changelog_once`)."""
        changes = flow.probe(batch)
        path = self.delta.table_path(changes)
        if self.delta.already_applied(path, batch_id) or not batch.events:
            return
        events: list[DocEvent] = sorted(batch.events, key=lambda e: e.offset)
        keep = changelog_once.first_mask(flow.changelog_order(events), (ID,), changes,
                                         self.delta)
        if keep is not None:  # re-deliveries (`changelog_once`)
            events = [e for e, k in zip(events, keep.to_pylist(), strict=True) if k]
            if not events:
                return
        _dt, columns = self._table(path, [*CHANGELOG_META, *flow.changelog_hidden()],
                                   flow.changelog_images(events))
        write_deltalake(str(path), flow.changelog_rows(events, columns, self.options),
                        mode="append", schema_mode="merge",
                        commit_properties=self.delta._commit(batch_id))
