"""Net changes and changelog rows into Delta tables through Delta Lake's Spark connector
(delta-spark, `from delta.tables import DeltaTable`), exactly once per pipeline batch.

The rules are `delta_target.DeltaTarget.apply_scd1_net`'s, on DataFrames (`change_frame`):
rows older than the last remembered truncate are dropped; a key's remembered delete (state
table `<root>/_headwater/state/<schema>.<table>`) keeps out an older upsert arriving later; an
unchanged-TOAST flag keeps the target's value; a MERGE lets only a newer `__hw_sequence` win;
new source columns follow `headwater.pipeline.schema.evolution`.  The tables are the same
(`<root>/<schema>/<table>`, `__hw_sequence`), so a table written by the delta-rs target is
continued here and the other way round.

Exactly once: every commit of a batch carries Delta's app transaction (`txn`: the pipeline id
and the Spark batch id).  MERGE takes it from the session settings
`spark.databricks.delta.write.txnAppId` / `spark.databricks.delta.write.txnVersion` (Delta 4.4's
`MergeIntoCommand` checks `hasBeenExecuted` first: a batch id the table has already committed
makes the MERGE a no-op that returns no metrics row), an append from the writer options
`txnAppId` / `txnVersion`.  A replayed batch is recognised before any Spark job by reading the
table's `txn` (`DeltaTarget.already_applied`, delta-rs: milliseconds, where planning the
statements only for Delta to skip them costs seconds of Spark jobs); Delta's own check stays
the guard at commit time.  Rows the driver holds (`apply_scd1_net`) have their deletes
remembered by delta-rs (`DeltaTarget._merge_state`, with the same `txn`), rows netted by Spark
tasks (`merge_net`) by a delta-spark MERGE.  The state's commit comes first, the table's last:
a crash between them leaves the deletes remembered, and the replay, whose state MERGE is then
skipped (delta-spark) or changes nothing (delta-rs: only a newer sequence wins), applies the
table's.  Were the order reversed, a replay would skip the table and never remember the
deletes (see delta_target's docstring).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from headwater.pipeline.change_frame import ChangeFrame, from_columnar
from headwater.pipeline.changelog_once import OFFSET_DIGITS
from headwater.pipeline.columnar import OP, SEQ, TOAST_FLAG, ColumnarChanges
from headwater.pipeline.decode import Column
from headwater.pipeline.delta_target import (
    DeltaTarget,
    delta_tables,
    key_json_array,
    state_deletes,
)
from headwater.pipeline.spark_merge import (
    ACTION,
    END,
    KEY,
    START,
    after_state,
    batch_points,
    first_deliveries,
    history_floor,
    q,
    remembered_points,
    scd1_merge,
    scd2_history,
    scd2_merge_sql,
    staging_folder,
    with_key,
)

log = logging.getLogger("headwater.pipeline.delta")

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"


class SparkDeltaTarget(DeltaTarget):
    """The Delta target whose column-wise operations (net change MERGE, SCD2 history MERGE,
    changelog append, maintenance) run on Spark's engine with delta-spark; the event-by-event,
    document and Datastream operations it inherits still write with delta-rs, into the same
    tables."""

    # The executors' stage hands this target its SCD1 batch as a DataFrame netted on the
    # executors (`executor_net.net_frame`, `merge_net`), its changelog batch as a DataFrame
    # of the staged parts (`executor_net.changelog_frame`, `append_changelog_net`) and its
    # SCD2 batch as a DataFrame of the events (`executor_net.history_frame`,
    # `merge_history`), not as the driver's Arrow rows.
    frame_modes = frozenset({"scd1", "changelog", "scd2"})
    columnar_modes = frozenset({"scd1", "changelog", "scd2"})

    def __init__(self, spark: Any, root: Path, app_id: str, schema_evolution: str = "evolve",
                 compact_interval_batches: int = 0) -> None:
        super().__init__(root, app_id, schema_evolution, compact_interval_batches)
        self.spark = spark

    # -- the column-wise path's operations, fed from the driver's Arrow tables --------------
    def apply_scd1_net(self, changes: ColumnarChanges, batch_id: int) -> None:
        """Net rows the driver holds in Arrow: the state's truncate floor and remembered
        deletes are applied in Arrow, and the deletes remembered, by delta-rs, as the delta-rs
        target does (the state is Headwater's bookkeeping, read and written in milliseconds,
        where a Spark join, a count and a delta-spark MERGE of it cost about as much as the
        table's own MERGE: half the batch); Spark runs the table's MERGE only, last."""
        path = self.table_path(changes)
        if self.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        net = self._net_after_state(changes)
        frame = from_columnar(self.spark, dataclasses.replace(changes, rows=net))
        deletes = net.filter(pc.equal(net.column(OP), "d"))
        columns = self._spark_table(path, frame.rows.schema, frame.columns)
        if deletes.num_rows:  # state first, the table's commit last (module docstring)
            self._merge_state(changes, state_deletes(deletes, changes.key_columns), batch_id)
        self._merge_table(frame, path, columns, frame.rows,
                          {"u": net.num_rows - deletes.num_rows, "d": deletes.num_rows},
                          batch_id)

    def append_changelog_rows(self, changes: ColumnarChanges, batch_id: int) -> None:
        self.append_changelog_frame(from_columnar(self.spark, changes), batch_id)

    # -- SCD type 1 ------------------------------------------------------------------------
    def merge_net(self, frame: ChangeFrame, batch_id: int) -> None:
        """Merges a batch's net changes given as a DataFrame (rows netted by Spark tasks):
        the state's rules as Spark joins (see the module docstring for the rules and order)."""
        from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

        path = self.table_path(frame)
        if self.already_applied(path, batch_id):  # (delta-rs reads the txn in ms)
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        net = after_state(with_key(frame.rows, frame.key_columns, frame.columns),
                          self._state_frame(frame))  # lazy: no Spark job of its own
        # (`net` is read three times, each time computed anew: it is deterministic, so the
        # state and the table see the same rows; Delta refuses a cached MERGE source)
        ops = dict(net.groupBy(OP).count().collect())
        deletes = (net.where(F.col(OP) == "d").select(
            F.col(KEY).alias("key"), F.lit("delete").alias("kind"), F.col(SEQ))
            if ops.get("d") else None)
        self._write_net(frame, path, net, deletes, ops, batch_id)

    def _write_net(self, frame: ChangeFrame, path: Path, net: Any, deletes: Any | None,
                   ops: dict[str, int], batch_id: int) -> None:
        """The batch's commits: the remembered deletes first, the table's MERGE last."""
        columns = self._spark_table(path, frame.rows.schema, frame.columns)
        if deletes is not None:  # state first, the table's commit last (module docstring)
            self._merge_state_frame(frame, deletes, batch_id)
        self._merge_table(frame, path, columns, net, ops, batch_id)

    def _merge_table(self, frame: ChangeFrame, path: Path, columns: list[str], net: Any,
                     ops: dict[str, int], batch_id: int) -> None:
        """The table's MERGE of the batch's net rows (`net`), its last commit."""
        source = net.select(*(q(c) for c in [*columns, SEQ, OP]),
                            *(q(TOAST_FLAG + c) for c in frame.toast))
        applied = self._merge_scd1_frame(path, source, columns, frame.key_columns,
                                         [c for c in frame.toast if c in columns], batch_id)
        if applied:
            log.info("batch %d: %s: %d upserts, %d deletes merged (delta-spark)", batch_id,
                     path, ops.get("u", 0), ops.get("d", 0))
        else:
            log.info("batch %d already applied to %s: skipped", batch_id, path)

    def _merge_scd1_frame(self, path: Path, source: Any, columns: list[str],
                          keys: tuple[str, ...], toast: list[str], batch_id: int) -> bool:
        """The table's MERGE, the batch's last commit; False when Delta found the batch
        already committed (`hasBeenExecuted`: no commit, no metrics row)."""
        from delta.tables import DeltaTable

        m = scd1_merge(columns, keys, toast)
        with self._txn(batch_id):
            result = (
                DeltaTable.forPath(self.spark, str(path)).alias("t")
                .merge(source.alias("s"), m.match)
                .whenMatchedUpdate(condition=m.update_when, set=dict(m.updates))
                .whenMatchedDelete(condition=m.delete_when)
                .whenNotMatchedInsert(condition=m.insert_when, values=dict(m.inserts))
                .execute()
            )
        return bool(result.collect())

    def _spark_table(self, path: Path, schema: Any, columns: tuple[Column, ...],
                     tail: tuple[str, ...] = (SEQ,)) -> list[str]:
        """The target's columns this batch writes: the table is created when missing (the
        columns, then the text columns `tail`), and new source columns are added, left out or
        refused per `schema_evolution` (`DeltaTarget._evolve`, on the table's schema as
        delta-rs reads it: no Spark job)."""
        from delta.tables import DeltaTable
        from pyspark.sql.types import StringType, StructField, StructType

        fields = {f.name: f for f in schema.fields}
        dt = self._open(path)
        if dt is None:
            wanted = StructType([*(fields[c.name] for c in columns),
                                 *(StructField(n, StringType()) for n in tail)])
            (DeltaTable.createIfNotExists(self.spark).location(str(path))
             .addColumns(wanted).execute())
            return [c.name for c in columns]
        existing = {f.name for f in dt.schema().fields}
        taken = [c.name for c in self._evolve(dt, path, list(columns))]
        new_names = [n for n in taken if n not in existing]
        if new_names:
            added = ", ".join(f"{q(n)} {fields[n].dataType.simpleString()}" for n in new_names)
            self.spark.sql(f"ALTER TABLE delta.{q(str(path))} ADD COLUMNS ({added})")
        return taken

    # -- SCD type 2 ------------------------------------------------------------------------
    def apply_scd2_rows(self, changes: ColumnarChanges, batch_id: int,
                        tracked: frozenset[str] | None = None) -> None:
        """An SCD2 batch the driver decoded column-wise (`decode_changelog(flags=True)`): the
        same history as from the executors' parts (`merge_history`)."""
        self.merge_history(from_columnar(self.spark, changes), batch_id, tracked)

    def merge_history(self, frame: ChangeFrame, batch_id: int,
                      tracked: frozenset[str] | None = None) -> None:
        """A batch's SCD2 history written by Spark: `DeltaTarget.apply_scd2`'s table, state
        and rules (`scd2.rebuild`), built on the executors (`spark_merge.scd2_history`) from
        the batch's events (`frame`: `decode_changelog(flags=True)`'s rows), the stored
        versions and remembered deletes of its keys.  Commits, in the reference's order: the
        open versions closed at the batch's truncate (an UPDATE, idempotent), the batch's
        deletes and truncate remembered (the state's MERGE, with the batch's `txn`), the
        table's MERGE last (with the batch's `txn`): a replay after a crash between them
        skips what carries the `txn` and rebuilds the rest from the remembered deletes."""
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

        path = self.table_path(frame)
        if self.already_applied(path, batch_id):  # (delta-rs reads the txn in ms)
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        keys = frame.key_columns
        tracked = tracked if tracked is not None else frozenset(c.name for c in frame.columns)
        taken = self._spark_table(path, frame.rows.schema, frame.columns, (START, END))
        events, truncate, deletes = batch_points(frame.rows, keys)
        state = self._state_frame(frame, ("truncate", "scd2_delete"))
        table = DeltaTable.forPath(self.spark, str(path)).toDF()
        history = scd2_history(events, table, state, history_floor(state, truncate), keys,
                               frame.columns, taken, frame.toast, tracked)
        with staging_folder(frame, self.root / "_headwater" / "staging", batch_id) as folder:
            # the rows are computed once, before any commit changes what they are read from
            history.write.mode("overwrite").parquet(folder)
            rows = self.spark.read.parquet(folder)
            changed = dict(rows.groupBy(ACTION).count().collect())
            if truncate is not None:  # (idempotent: no txn, which would skip the MERGE)
                DeltaTable.forPath(self.spark, str(path)).update(
                    f"{q(END)} IS NULL AND {q(START)} < '{truncate}'",
                    {END: F.lit(truncate)})
            remember = remembered_points(self.spark, events, truncate, deletes, keys,
                                         frame.columns)
            if remember is not None:  # state first, the table's commit last
                self._merge_state_frame(frame, remember, batch_id)
            if not changed:
                log.info("batch %d: %s: no version changed (delta-spark)", batch_id, path)
                return
            view = f"hw_history_{uuid.uuid4().hex}"
            rows.createOrReplaceTempView(view)
            try:
                with self._txn(batch_id):
                    applied = self.spark.sql(scd2_merge_sql(
                        f"delta.{q(str(path))}", view, keys, taken)).collect()
            finally:
                self.spark.catalog.dropTempView(view)
        if applied:
            log.info("batch %d: %s: %d versions written, %d removed (SCD2, delta-spark)",
                     batch_id, path, changed.get("u", 0), changed.get("d", 0))
        else:
            log.info("batch %d already applied to %s: skipped", batch_id, path)

    # -- state: remembered deletes and truncates -------------------------------------------
    def _state_frame(self, frame: ChangeFrame, kinds: tuple[str, ...] = ("truncate", "delete")
                     ) -> Any | None:
        """The state table's rows of `kinds` (None when there is no state table): truncates
        and SCD1 deletes, or SCD2's delete points."""
        from delta.tables import DeltaTable

        path = str(self.state_path(frame))
        if self._open(Path(path)) is None:
            return None
        wanted = ", ".join(f"'{k}'" for k in kinds)
        return DeltaTable.forPath(self.spark, path).toDF().where(f"kind IN ({wanted})")

    def _merge_state_frame(self, frame: ChangeFrame, source: Any, batch_id: int) -> None:
        """Remembers deletes: the newest per key (`DeltaTarget._merge_state`'s MERGE)."""
        from delta.tables import DeltaTable
        from pyspark.sql.types import StringType, StructField, StructType

        path = str(self.state_path(frame))
        if self._open(Path(path)) is None:
            (DeltaTable.createIfNotExists(self.spark).location(path)
             .addColumns(StructType([StructField(n, StringType()) for n in
                                     ("key", "kind", SEQ)])).execute())
        with self._txn(batch_id):
            (DeltaTable.forPath(self.spark, path).alias("t")
             .merge(source.alias("s"),
                    f"t.key = s.key AND t.kind = s.kind AND (t.kind <> 'scd2_delete' OR "
                    f"t.{q(SEQ)} = s.{q(SEQ)})")
             .whenMatchedUpdateAll(condition=f"s.{q(SEQ)} > t.{q(SEQ)}")
             .whenNotMatchedInsertAll()
             .execute())

    @contextlib.contextmanager
    def _txn(self, batch_id: int) -> Iterator[None]:
        """The session settings that make the DML inside an idempotent write of this batch;
        unset afterwards, so that no other statement of the session carries them."""
        conf = self.spark.conf
        conf.set(TXN_APP_ID, self.app_id)
        conf.set(TXN_VERSION, str(batch_id))
        try:
            yield
        finally:
            conf.unset(TXN_APP_ID)
            conf.unset(TXN_VERSION)

    # -- changelog -------------------------------------------------------------------------
    def append_changelog_frame(self, frame: ChangeFrame, batch_id: int,
                               checked: bool = False) -> None:
        """Appends every event's row, once per batch (the writer's idempotent options;
        `checked`: the caller found the batch not yet applied)."""
        path = self.table_path(frame)
        if not checked and self.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        (frame.rows.write.format("delta").mode("append").option("mergeSchema", "true")
         .option("txnAppId", self.app_id).option("txnVersion", str(batch_id))
         .save(str(path)))
        log.info("batch %d: %s: %d changelog rows appended (delta-spark)", batch_id, path,
                 frame.events)

    def append_changelog_net(self, frame: ChangeFrame, batch_id: int) -> None:
        """Appends a batch's changelog rows read from its staged parts by Spark
        (`executor_net.changelog_frame`): the re-deliveries dropped by Spark
        (`spark_merge.first_deliveries`, against the changelog's rows from the batch's lowest
        source position on, as `changelog_once` does in Arrow), the rest appended with the
        batch's `txn`; no row passes through the driver."""
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

        path = self.table_path(frame)
        if self.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        seen = None
        if self._open(path) is not None:
            since = frame.rows.select(F.min(F.expr(
                f"substring({q(SEQ)}, 1, length({q(SEQ)}) - {OFFSET_DIGITS})"))).first()[0]
            if since is not None:
                seen = (DeltaTable.forPath(self.spark, str(path)).toDF()
                        .where(F.col(q(SEQ)) >= since))
        rows = first_deliveries(frame.rows, seen, frame.key_columns)
        self.append_changelog_frame(dataclasses.replace(frame, rows=rows), batch_id,
                                    checked=True)

    # -- maintenance -----------------------------------------------------------------------
    def maintain(self, batch_id: int) -> None:
        """`DeltaTarget.maintain` through delta-spark: every `compact_interval_batches`
        batches, `OPTIMIZE` (bin-packing compaction) and `VACUUM` (files older than the
        table's retention) of every Delta table under the root and of those opened
        elsewhere.  Compaction changes no row and keeps the tables' `txn`s; a failure only
        logs (the next interval retries)."""
        from delta.tables import DeltaTable

        every = self.compact_interval_batches
        if every <= 0 or (batch_id + 1) % every:
            return
        for key in sorted(set(self._tables) | {str(p) for p in delta_tables(self.root)}):
            try:
                table = DeltaTable.forPath(self.spark, key)
                metrics = table.optimize().executeCompaction().first()
                table.vacuum()
            except Exception as exc:  # maintenance must not stop the pipeline
                log.warning("batch %d: compacting %s failed (retried in %d batches): %s",
                            batch_id, key, every, exc)
                continue
            if metrics is not None:
                m = metrics["metrics"]
                log.info("batch %d: %s compacted: %s files into %s", batch_id, key,
                         m["numFilesRemoved"], m["numFilesAdded"])


__all__ = ["SparkDeltaTarget", "key_json_array"]
