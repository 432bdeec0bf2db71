"""MongoDB documents into Iceberg tables: the document path's rules (`flow`) written through
the Iceberg target (`iceberg_target`: its catalog, state table and marked commits).

The table is the Delta document table's (`flow`): `__hw_id` (the key), `__hw_doc`, the mode's
bookkeeping, the fields as columns.  Sub-documents and arrays are JSON text (as
`headwater.pipeline.mongodb.nested=json`), as in JDBC tables: the column types read back are
the types written.  Exactly once as for the relational rows: remembered deletes are merged
into the state table first, the table's commit (MERGE or append) marked with the batch last.

A field whose values no longer fit its column (long -> double, anything -> string) is retyped
by add, fill, swap: a column `__hw_retype_<name>` of the new type is added (one commit), filled
from `__hw_doc` (one MERGE), then one schema commit deletes the old column, renames the new
one to its name and moves it to the old one's place.  Iceberg's in-place promotions (int ->
long, float -> double) never apply: documents' numbers are long or double already.  The
swap's delete, rename and move are one atomic schema update, and the fill cannot share it
(Spark commits a schema change and a write separately), so the `__hw_retype_` column is the
pending retype: recorded in the table's own schema, in the same commit that adds it, and
finished (filled again, swapped) before anything else reads the table after a crash.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from headwater.pipeline import changelog_once
from headwater.pipeline.columnar import CHANGELOG_META, OP, SEQ
from headwater.pipeline.decode import TableChanges
from headwater.pipeline.delta_target import END, START
from headwater.pipeline.documents import ejson, flow, shapes
from headwater.pipeline.documents.events import DocBatch, DocEvent
from headwater.pipeline.documents.flow import DOC, HIDDEN, ID, STR, doc_text, stored_doc
from headwater.pipeline.documents.fold import Base
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.iceberg_target import IcebergTarget
from headwater.pipeline.scd2 import ACTION, Version
from headwater.pipeline.spark_merge import q, scd1_merge, scd2_merge_sql

log = logging.getLogger("headwater.pipeline.documents")

RETYPE = "__hw_retype_"  # a column being retyped: its new values, until the swap


def _spark_type(t: pa.DataType) -> str:
    from pyspark.sql.pandas.types import from_arrow_type

    return str(from_arrow_type(t).simpleString())


class IcebergDocuments:
    """The document path's Iceberg storage (see the module docstring)."""

    def __init__(self, ice: IcebergTarget, options: DocumentOptions) -> None:
        self.ice = ice
        self.spark = ice.spark
        self.options = dataclasses.replace(options, nested="json")

    def _fault(self, point: str) -> None:
        """A test's crash point (`retype-added`, `retype-filled`); nothing here."""

    # -- shared ------------------------------------------------------------------------------
    def _skipped(self, probe: TableChanges, batch_id: int) -> bool:
        """Whether the batch is applied already; if not, a retype a crash left unfinished is
        finished first, before anything reads the columns."""
        if self.ice.already_applied(probe, batch_id):
            return True
        self._finish_retypes(probe)
        return False

    def _frame(self, table: pa.Table) -> Any:
        from pyspark.sql.pandas.types import from_arrow_schema

        return self.spark.createDataFrame(table, schema=from_arrow_schema(table.schema))

    def _select(self, probe: TableChanges, select: Sequence[str], ids: Sequence[str]
                ) -> pa.Table | None:
        """The `select` columns of the rows whose `__hw_id` is one of `ids` (None: no
        table)."""
        from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

        if not ids or self.ice._load(self.ice.table_parts(probe)) is None:
            return None
        frame = self.spark.table(self.ice.table_name(probe))
        out: pa.Table = frame.where(F.col(q(ID)).isin(list(ids))).select(
            *(q(c) for c in select)).toArrow()
        return out

    def _remembered(self, probe: TableChanges, kind: str, ids: Sequence[str]
                    ) -> dict[str, list[str]]:
        from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

        state = self.ice._state_frame(probe, (kind,))
        if state is None or not ids:
            return {}
        out: dict[str, list[str]] = {}
        for r in state.where(F.col("key").isin(list(ids))).select("key", q(SEQ)).collect():
            out.setdefault(str(r[0]), []).append(str(r[1]))
        return out

    def _remember(self, probe: TableChanges, kind: str, deletes: list[tuple[str, str]]) -> None:
        if deletes:
            self.ice._merge_state(probe, pa.table(
                {"key": [i for i, _ in deletes], "kind": [kind] * len(deletes),
                 SEQ: [s for _, s in deletes]}))

    def _table(self, probe: TableChanges, hidden: Sequence[pa.Field],
               docs: Sequence[dict[str, Any]]) -> dict[str, pa.DataType]:
        """The data columns after schema evolution for `docs` (`flow.plan`): the table is
        created when missing, new columns added, changed ones retyped."""
        name = self.ice.table_name(probe)
        if self.ice._load(self.ice.table_parts(probe)) is None:
            first = flow.plan(docs, {}, self.options, "evolve", name).columns
            schema = pa.schema([*hidden, *(pa.field(n, t) for n, t in first.items())])
            from pyspark.sql.pandas.types import from_arrow_schema

            self.ice._create(self.ice.table_parts(probe), list(from_arrow_schema(schema).fields))
            return first
        existing = {n: t for n, t in self.ice.column_types(probe).items() if n not in HIDDEN}
        columns, changed = flow.plan(docs, existing, self.options, self.ice.schema_evolution,
                                     name)
        new = [n for n in columns if n not in existing]
        if new:
            self.spark.sql(f"ALTER TABLE {name} ADD COLUMNS ("
                           + ", ".join(f"{q(n)} {_spark_type(columns[n])}" for n in new) + ")")
        if changed:
            self.spark.sql(f"ALTER TABLE {name} ADD COLUMNS ("
                           + ", ".join(f"{q(RETYPE + n)} {_spark_type(columns[n])}"
                                       for n in changed) + ")")
            self._fault("retype-added")
            self._finish_retypes(probe)
        return columns

    def _finish_retypes(self, probe: TableChanges) -> None:
        """Fills the table's `__hw_retype_` columns from `__hw_doc` and swaps each in for the
        column it retypes (module docstring); nothing when there are none."""
        parts = self.ice.table_parts(probe)
        if self.ice._load(parts) is None:
            return
        name = self.ice.table_name(probe)
        types = self.ice.column_types(probe)
        pending = [n for n in types if n.startswith(RETYPE)]
        if not pending:
            return
        stored = self.spark.table(name).select(q(ID), q(DOC)).distinct().toArrow()
        ids, texts = stored.column(ID).to_pylist(), stored.column(DOC).to_pylist()
        flat = [shapes.fields(stored_doc(d, i), self.options) for i, d in zip(ids, texts,
                                                                                strict=True)]
        source = pa.table({ID: pa.array(ids, STR), DOC: pa.array(texts, STR), **{
            n: ejson.column([f.get(n[len(RETYPE):]) for f in flat], shapes.normalize(types[n]))
            for n in pending}})
        view = f"hw_retype_{uuid.uuid4().hex}"
        self._frame(source).createOrReplaceTempView(view)
        try:
            self.spark.sql(f"MERGE INTO {name} t USING {q(view)} s "
                           f"ON t.{q(ID)} = s.{q(ID)} AND t.{q(DOC)} <=> s.{q(DOC)} "
                           "WHEN MATCHED THEN UPDATE SET "
                           + ", ".join(f"{q(n)} = s.{q(n)}" for n in pending))
        finally:
            self.spark.catalog.dropTempView(view)
        self._fault("retype-filled")
        table = self.ice._load(parts)
        assert table is not None
        order = list(types)  # (an old column is never the first: `__hw_id` is)
        update = table.updateSchema()
        for n in pending:
            old = n[len(RETYPE):]
            update = update.deleteColumn(old).renameColumn(n, old).moveAfter(
                n, order[order.index(old) - 1])
        update.commit()
        for n in pending:
            log.warning("%s: column %s is now %s (%d documents recomputed)", name,
                        n[len(RETYPE):], _spark_type(types[n]), len(ids))

    def _merge(self, source: pa.Table, merge_sql: Callable[[str], str], batch_id: int) -> None:
        """The table's MERGE of `source` (the statement `merge_sql` makes for the source's
        view), the batch's last commit, marked."""
        view = f"hw_docs_{uuid.uuid4().hex}"
        self._frame(source).createOrReplaceTempView(view)
        try:
            with self.ice._marked(batch_id):
                self.spark.sql(merge_sql(q(view)))
        finally:
            self.spark.catalog.dropTempView(view)

    # -- SCD type 1 ----------------------------------------------------------------------------
    def apply_scd1(self, batch: DocBatch, batch_id: int) -> None:
        probe = flow.probe(batch)
        if self._skipped(probe, batch_id):
            return
        ids = sorted({e.id for e in batch.events})
        rows = self._select(probe, (ID, DOC, SEQ), flow.patched(batch))
        current = {} if rows is None else {i: Base(s, stored_doc(d, i)) for i, d, s in zip(
            *(rows.column(n).to_pylist() for n in (ID, DOC, SEQ)), strict=True)}
        net = flow.net_documents(batch, self._remembered(probe, "delete", ids), current,
                                 self.ice.table_name(probe))
        if not net:
            return
        hidden = [pa.field(ID, STR), pa.field(DOC, STR), pa.field(SEQ, STR)]
        columns = self._table(probe, hidden, [n.doc for n in net if n.doc is not None])
        source = pa.Table.from_arrays([
            pa.array([n.id for n in net], STR), pa.array([doc_text(n.doc) for n in net], STR),
            pa.array([n.sequence for n in net], STR),
            *flow.values([n.doc for n in net], columns, self.options),
            pa.array(["d" if n.doc is None else "u" for n in net], STR)],
            names=[ID, DOC, SEQ, *columns, OP])
        # state first, the table's marked commit last (`iceberg_target`)
        self._remember(probe, "delete", [(n.id, n.sequence) for n in net if n.doc is None])
        merge = scd1_merge([ID, DOC, *columns], (ID,), [])
        self._merge(source, lambda view: merge.sql(self.ice.table_name(probe), view), batch_id)

    # -- SCD type 2 ----------------------------------------------------------------------------
    def apply_scd2(self, batch: DocBatch, batch_id: int, track: Sequence[str] | None = None,
                   track_except: Sequence[str] | None = None) -> None:
        probe = flow.probe(batch)
        if self._skipped(probe, batch_id):
            return
        ids = sorted({e.id for e in batch.events})
        if not ids:
            return
        stored: dict[str, list[Version]] = {}
        rows = self._select(probe, (ID, DOC, START, END), ids)
        for i, d, s, e in zip(*(rows.column(n).to_pylist() for n in (ID, DOC, START, END))
                              if rows is not None else ([], [], [], []), strict=True):
            row = flow.version_row(stored_doc(d, i), self.options)
            assert row is not None
            stored.setdefault(i, []).append(Version(s, e, row))
        versions = flow.history(batch, stored, self._remembered(probe, "scd2_delete", ids),
                                self.options, track, track_except)
        docs = [v.row[DOC] for _, v in versions]
        hidden = [pa.field(ID, STR), pa.field(DOC, STR), pa.field(START, STR),
                  pa.field(END, STR)]
        columns = self._table(probe, hidden, docs)
        # the stored versions the rebuilt history no longer has: removed by the same MERGE
        kept = {(i, v.start) for i, v in versions}
        gone = [(i, v.start) for i, vs in stored.items() for v in vs if (i, v.start) not in kept]
        source = pa.Table.from_arrays([
            pa.array([i for i, _ in versions] + [i for i, _ in gone], STR),
            pa.array([doc_text(d) for d in docs] + [None] * len(gone), STR),
            pa.array([v.start for _, v in versions] + [s for _, s in gone], STR),
            pa.array([v.end for _, v in versions] + [None] * len(gone), STR),
            *(pa.concat_arrays([a, pa.nulls(len(gone), a.type)])
              for a in flow.values(docs, columns, self.options)),
            pa.array(["u"] * len(versions) + ["d"] * len(gone), STR)],
            names=[ID, DOC, START, END, *columns, ACTION])
        self._remember(probe, "scd2_delete", flow.deletes(batch))  # first, as for SCD1
        name = self.ice.table_name(probe)
        self._merge(source, lambda view: scd2_merge_sql(name, view, (ID,), [ID, DOC, *columns]),
                    batch_id)

    # -- changelog -----------------------------------------------------------------------------
    def append_changelog(self, batch: DocBatch, batch_id: int) -> None:
        """Every event as a row (`flow.changelog_rows`), each once (`changelog_once`)."""
        probe = flow.probe(batch)
        if not batch.events or self._skipped(probe, batch_id):
            return
        events: list[DocEvent] = sorted(batch.events, key=lambda e: e.offset)
        keep = changelog_once.first_mask(flow.changelog_order(events), (ID,), probe, self.ice)
        if keep is not None:  # re-deliveries (`changelog_once`)
            events = [e for e, k in zip(events, keep.to_pylist(), strict=True) if k]
            if not events:
                return
        columns = self._table(probe, [*CHANGELOG_META, *flow.changelog_hidden()],
                              flow.changelog_images(events))
        rows = flow.changelog_rows(events, columns, self.options)
        name = self.ice.table_name(probe)
        order = self.spark.table(name).columns
        with self.ice._marked(batch_id):
            self._frame(rows).select(*(q(c) for c in order)).writeTo(name).append()
        log.info("batch %d: %s: %d document changelog rows appended (iceberg)", batch_id,
                 name, rows.num_rows)
