"""MongoDB documents into JDBC tables (PostgreSQL, MariaDB): the document path's rules
(`flow`) written by the JDBC target (`jdbc_target`: staging, one transaction per batch and
table, remembered deletes, progress rows).

The table is the Delta document table's (`flow`): `__hw_id` (the key), `__hw_doc`, the mode's
bookkeeping, the fields as columns.  Sub-documents and arrays are JSON text (as
`headwater.pipeline.mongodb.nested=json`), so that each column's declared type reads back as
the type it was written from (`JdbcTarget.column_types`).  A field whose values no longer fit
its column (long -> double, anything -> string) changes the column's type in place and
recomputes its values from `__hw_doc` (`JdbcTarget.retype`, crash-safe), where Delta rewrites
the table.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from headwater.pipeline import changelog_once
from headwater.pipeline.columnar import SEQ
from headwater.pipeline.connect_types import FieldType
from headwater.pipeline.decode import Column, TableChanges
from headwater.pipeline.delta_target import END, START
from headwater.pipeline.documents import ejson, flow, shapes
from headwater.pipeline.documents.events import DocBatch, DocEvent
from headwater.pipeline.documents.flow import DOC, HIDDEN, ID, STR, doc_text, stored_doc
from headwater.pipeline.documents.fold import Base
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.jdbc_target import JdbcTarget
from headwater.pipeline.net import NetChange
from headwater.pipeline.scd2 import Version

log = logging.getLogger("headwater.pipeline.documents")

_FIRST = (ID,)  # a document's key


def _identity(v: Any) -> Any:
    return v


class JdbcDocuments:
    """The document path's JDBC storage (see the module docstring)."""

    def __init__(self, jdbc: JdbcTarget, options: DocumentOptions) -> None:
        self.jdbc = jdbc
        self.options = dataclasses.replace(options, nested="json")

    # -- shared ------------------------------------------------------------------------------
    @staticmethod
    def _changes(batch: DocBatch, columns: dict[str, pa.DataType] | None = None,
                 hidden: Sequence[str] = (), key: tuple[str, ...] = ()) -> TableChanges:
        changes = TableChanges(batch.topic)
        changes.schema_name = batch.db
        changes.table_name = batch.collection
        changes.key_columns = key
        for n, t in [*((h, STR) for h in hidden), *(columns or {}).items()]:
            changes.columns[n] = Column(n, FieldType(t, _identity), n not in key)
        return changes

    def _skipped(self, probe: TableChanges, batch_id: int, key: tuple[str, ...]) -> bool:
        """Whether the batch is applied already; if not, a retype a crash left unfinished is
        finished first (`JdbcTarget.finish_retypes`), before anything reads the columns."""
        if self.jdbc.applied(probe, batch_id):
            log.info("batch %d already applied to %s.%s: skipped", batch_id, self.jdbc.schema,
                     self.jdbc.table_name(probe))
            return True
        self.jdbc.finish_retypes(probe, key, (ID, DOC), self._recompute)
        return False

    def _columns(self, probe: TableChanges, docs: Sequence[dict[str, Any]],
                 key: tuple[str, ...]) -> dict[str, pa.DataType]:
        """The data columns after schema evolution for `docs` (`flow.plan`), columns whose
        type changes retyped and recomputed first."""
        existing = {n: t for n, t in self.jdbc.column_types(probe).items() if n not in HIDDEN}
        where = f"{self.jdbc.schema}.{self.jdbc.table_name(probe)}"
        columns, changed = flow.plan(docs, existing, self.options, self.jdbc.schema_evolution,
                                     where)
        if changed:
            d = self.jdbc.dialect
            self.jdbc.retype(probe, {n: d.column_type(columns[n]) for n in changed}, key,
                             (ID, DOC), self._recompute)
        return columns

    def _recompute(self, column: str, sql: str, rows: list[tuple[Any, ...]]) -> list[Any]:
        """A retyped column's values from the stored documents (rows: key..., `__hw_id`,
        `__hw_doc`)."""
        typ = shapes.normalize(self.jdbc.dialect.arrow_type(sql) or STR)
        docs = [shapes.fields(stored_doc(r[-1], r[-2]), self.options) for r in rows]
        values: list[Any] = ejson.column([f.get(column) for f in docs], typ).to_pylist()
        return values

    @staticmethod
    def _rows(ids: Sequence[str], docs: Sequence[dict[str, Any] | None],
              columns: dict[str, pa.DataType], data: list[pa.Array]) -> list[dict[str, Any]]:
        values = [a.to_pylist() for a in data]
        return [{ID: i, DOC: doc_text(d), **{n: v[r] for n, v in zip(columns, values,
                                                                        strict=True)}}
                for r, (i, d) in enumerate(zip(ids, docs, strict=True))]

    # -- SCD type 1 ----------------------------------------------------------------------------
    def apply_scd1(self, batch: DocBatch, batch_id: int) -> None:
        probe = self._changes(batch)
        if self._skipped(probe, batch_id, _FIRST):
            return
        ids = sorted({e.id for e in batch.events})
        tombs = self.jdbc.remembered(probe, "delete", [(i,) for i in ids])
        current = {i: Base(s, stored_doc(d, i)) for i, d, s in self.jdbc.rows_where(
            probe, (ID, DOC, SEQ), ID, flow.patched(batch))}
        where = f"{self.jdbc.schema}.{self.jdbc.table_name(probe)}"
        net = flow.net_documents(batch, {k[0]: v for k, v in tombs.items()}, current, where)
        if not net:
            return
        columns = self._columns(probe, [n.doc for n in net if n.doc is not None], _FIRST)
        docs = [n.doc for n in net]
        rows = self._rows([n.id for n in net], docs, columns,
                          flow.values(docs, columns, self.options))
        changes = self._changes(batch, columns, (ID, DOC), _FIRST)
        self.jdbc.apply_scd1(changes, [
            NetChange((n.id,), n.doc is None, n.sequence, None if n.doc is None else row,
                      frozenset()) for n, row in zip(net, rows, strict=True)], None, batch_id)

    # -- SCD type 2 ----------------------------------------------------------------------------
    def apply_scd2(self, batch: DocBatch, batch_id: int, track: Sequence[str] | None = None,
                   track_except: Sequence[str] | None = None) -> None:
        key = (ID, START)
        probe = self._changes(batch)
        if self._skipped(probe, batch_id, key):
            return
        ids = sorted({e.id for e in batch.events})
        if not ids:
            return
        stored: dict[str, list[Version]] = {}
        for i, d, s, e in self.jdbc.rows_where(probe, (ID, DOC, START, END), ID, ids):
            row = flow.version_row(stored_doc(d, i), self.options)
            assert row is not None
            stored.setdefault(i, []).append(Version(str(s), None if e is None else str(e), row))
        deleted = {k[0]: v for k, v in self.jdbc.remembered(
            probe, "scd2_delete", [(i,) for i in ids]).items()}
        versions = flow.history(batch, stored, deleted, self.options, track, track_except)
        docs = [v.row[DOC] for _, v in versions]
        columns = self._columns(probe, docs, key)
        rows = self._rows([i for i, _ in versions], docs, columns,
                          flow.values(docs, columns, self.options))
        for row, (_i, v) in zip(rows, versions, strict=True):
            row[START], row[END] = v.start, v.end
        self.jdbc.apply_versions(self._changes(batch, columns, (ID, DOC), _FIRST), rows,
                                 [((i,), s) for i, s in flow.deletes(batch)], batch_id)

    # -- changelog -----------------------------------------------------------------------------
    def append_changelog(self, batch: DocBatch, batch_id: int) -> None:
        """Every event as a row (`flow.changelog_rows`), each once (`changelog_once`)."""
        key = (SEQ,)  # (each event's own: the changelog holds it once)
        probe = self._changes(batch)
        if not batch.events or self._skipped(probe, batch_id, key):
            return
        events: list[DocEvent] = sorted(batch.events, key=lambda e: e.offset)
        keep = changelog_once.first_mask(flow.changelog_order(events), _FIRST, probe,
                                         self.jdbc)
        if keep is not None:  # re-deliveries (`changelog_once`)
            events = [e for e, k in zip(events, keep.to_pylist(), strict=True) if k]
            if not events:
                return
        columns = self._columns(probe, flow.changelog_images(events), key)
        self.jdbc.append_changelog_table(self._changes(batch, columns),
                                         flow.changelog_rows(events, columns, self.options),
                                         batch_id)
