"""Net changes and changelog rows into Apache Iceberg tables through Iceberg's Spark runtime,
exactly once per pipeline batch.

The catalog is a Hadoop catalog whose warehouse is a local directory
(`headwater.pipeline.iceberg.warehouse`), registered in the session under
`headwater.pipeline.iceberg.catalog` when the target starts (Spark loads a catalog by name
the first time a statement names it).  A source table `<schema>.<table>` becomes
`<catalog>.<schema>.<table>`: its namespace is the source schema, like the Delta target's
`<root>/<schema>/<table>`.  Tables are format 2 with merge-on-read MERGE, UPDATE and DELETE:
a batch's deletes are written as position delete files, not as rewritten data files.

SCD1 (`spark_merge`'s rules, shared with the delta-spark target): the net rows of a batch go
through the state table `<catalog>._headwater_state.<schema>.<table>` (remembered deletes and
truncates, with their sequences, `delta_target`'s layout) and one MERGE INTO, where only a
newer `__hw_sequence` wins and an unchanged-TOAST flag keeps the target's value.  A truncate
deletes the rows older than it.  Changelog: every event's row is appended.  New source columns
follow `headwater.pipeline.schema.evolution` (ALTER TABLE ... ADD COLUMNS).  SCD2
(`merge_history`): the history of `delta_target`'s layout (`__START_AT`, `__END_AT`), rebuilt
on the executors per key by `scd2.rebuild` (`spark_merge.scd2_history`) and written by one
MERGE INTO; the state table also keeps its delete points.  Maintenance (`maintain`) rewrites
small data files and position deletes and expires old snapshots every
`headwater.pipeline.iceberg.compact.interval.batches` batches.

Exactly once: the table's last commit of a batch carries the pipeline id and the batch id in
its snapshot summary (`headwater.pipeline`, `headwater.batch`: Iceberg's session setting
`spark.sql.iceberg.snapshot-property.<key>`, set around that one statement).  Before writing,
the target walks the table's snapshots from the current one back to the newest of its
pipeline (Iceberg's Java API: no Spark job) and skips a batch at or below the id found there.
The commits before the last (the state's MERGE, a truncate's DELETE) are idempotent under the
sequence rule, so a crash between them and the table's MERGE changes nothing: the replay
repeats them, then commits the table.  The state's commit comes first for the reason
`delta_target`'s docstring gives.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from headwater.pipeline.change_frame import ChangeFrame, from_columnar
from headwater.pipeline.columnar import (
    OP,
    SEQ,
    TOAST_FLAG,
    ColumnarChanges,
    changelog_table,
    history_rows,
)
from headwater.pipeline.decode import ChangeEvent, Column, TableChanges
from headwater.pipeline.delta_target import (
    EVOLUTION_MODES,
    evolve,
    key_json_array,
    net_table,
    state_deletes,
)
from headwater.pipeline.net import NetChange
from headwater.pipeline.spark_merge import (
    ACTION,
    END,
    KEY,
    START,
    Scd1Merge,
    after_state,
    batch_points,
    history_floor,
    q,
    remembered_points,
    scd1_merge,
    scd2_history,
    scd2_merge_sql,
    staging_folder,
)

log = logging.getLogger("headwater.pipeline.iceberg")

CATALOG_IMPL = "org.apache.iceberg.spark.SparkCatalog"
SNAPSHOT_PROPERTY = "spark.sql.iceberg.snapshot-property."
PIPELINE_KEY = "headwater.pipeline"  # snapshot summary: the pipeline that committed it
BATCH_KEY = "headwater.batch"  # and its batch id
STATE_NAMESPACE = "_headwater_state"
TABLE_PROPERTIES = {
    "format-version": "2",
    "write.merge.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.delete.mode": "merge-on-read",
}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Changes = TableChanges | ColumnarChanges | ChangeFrame


class IcebergTarget:
    """The pipeline's target for Iceberg tables (module docstring)."""

    # The modes whose batches the executors' stage hands over as DataFrames: SCD2's events
    # (`executor_net.history_frame`, `merge_history`); SCD1 and the changelog take the
    # driver's Arrow rows.
    frame_modes = frozenset({"scd2"})
    # SCD1 and the changelog as the driver's column-wise rows, SCD2 as a DataFrame of them
    # (runner.columnar_path).
    columnar_modes = frozenset({"scd1", "changelog", "scd2"})

    def __init__(self, spark: Any, warehouse: Path, catalog: str, app_id: str,
                 schema_evolution: str = "evolve", compact_interval_batches: int = 0) -> None:
        if schema_evolution not in EVOLUTION_MODES:
            raise ValueError(f"schema evolution mode {schema_evolution!r} is not one of "
                             f"{', '.join(EVOLUTION_MODES)}")
        if not _NAME.match(catalog):
            raise ValueError(f"headwater.pipeline.iceberg.catalog: {catalog!r} is not a Spark "
                             "catalog name (letters, digits and _, not starting with a digit)")
        self.spark = spark
        self.warehouse = Path(warehouse).resolve()
        self.catalog = catalog
        self.app_id = app_id
        self.schema_evolution = schema_evolution
        self.compact_interval_batches = compact_interval_batches
        register_catalog(spark, catalog, self.warehouse)

    # -- names -----------------------------------------------------------------------------
    def namespace(self, changes: Changes) -> tuple[str, ...]:
        if changes.target is not None:  # (AUTO CDC flows' own table: `ns/table`)
            *ns, _name = str(changes.target).strip("/").split("/")
            return tuple(ns) or ("default",)
        return (changes.schema_name or "default",)

    def table_parts(self, changes: Changes) -> tuple[str, ...]:
        if changes.target is not None:
            return (*self.namespace(changes), str(changes.target).strip("/").split("/")[-1])
        return (*self.namespace(changes), changes.table_name or changes.topic)

    def table_name(self, changes: Changes) -> str:
        """The table's name in Spark SQL: `catalog`.`schema`.`table`."""
        return ".".join(q(p) for p in (self.catalog, *self.table_parts(changes)))

    def state_parts(self, changes: Changes) -> tuple[str, ...]:
        return (STATE_NAMESPACE, *self.table_parts(changes))

    def state_name(self, changes: Changes) -> str:
        return ".".join(q(p) for p in (self.catalog, *self.state_parts(changes)))

    # -- exactly once ----------------------------------------------------------------------
    def applied_batch(self, parts: tuple[str, ...]) -> int | None:
        """The newest batch id this pipeline committed to the table (None: none, or no
        table), from the snapshot summaries: the current snapshot, then its ancestors."""
        table = self._load(parts)
        if table is None:
            return None
        snapshot = table.currentSnapshot()
        while snapshot is not None:
            summary = snapshot.summary()
            if summary.get(PIPELINE_KEY) == self.app_id and summary.get(BATCH_KEY) is not None:
                return int(summary.get(BATCH_KEY))
            parent = snapshot.parentId()
            snapshot = None if parent is None else table.snapshot(parent)
        return None

    def already_applied(self, changes: Changes, batch_id: int) -> bool:
        done = self.applied_batch(self.table_parts(changes))
        if done is not None and done >= batch_id:
            log.info("batch %d already applied to %s: skipped", batch_id,
                     self.table_name(changes))
            return True
        return False

    @contextmanager
    def _marked(self, batch_id: int) -> Iterator[None]:
        """The session settings that put the pipeline and batch ids into the summary of the
        snapshot the statement inside commits; unset afterwards, so that no other commit of
        the session carries them."""
        conf = self.spark.conf
        conf.set(SNAPSHOT_PROPERTY + PIPELINE_KEY, self.app_id)
        conf.set(SNAPSHOT_PROPERTY + BATCH_KEY, str(batch_id))
        try:
            yield
        finally:
            conf.unset(SNAPSHOT_PROPERTY + PIPELINE_KEY)
            conf.unset(SNAPSHOT_PROPERTY + BATCH_KEY)

    def _catalog(self) -> Any:
        """The Iceberg catalog (Java `org.apache.iceberg.catalog.Catalog`)."""
        return self.spark._jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergCatalog(
            self.spark._jsparkSession, self.catalog)

    def _load(self, parts: tuple[str, ...]) -> Any | None:
        """The Iceberg table (Java `org.apache.iceberg.Table`), None when there is none."""
        jvm = self.spark._jvm
        catalog = self._catalog()
        ident = jvm.org.apache.iceberg.catalog.TableIdentifier.of(_java_strings(self.spark,
                                                                                parts))
        if not catalog.tableExists(ident):
            return None
        return catalog.loadTable(ident)

    # -- tables ----------------------------------------------------------------------------
    def _table(self, changes: Changes, frame: ChangeFrame, before: tuple[str, ...],
               after: tuple[str, ...]) -> list[str]:
        """The table's source columns this batch writes: the table is created when missing
        (Headwater's columns `before`, the source's, Headwater's `after`), and new source
        columns are added, left out or refused per `schema_evolution`
        (`delta_target.evolve`)."""
        name = self.table_name(changes)
        fields = {f.name: f for f in frame.rows.schema.fields}
        source = [c.name for c in frame.columns]
        table = self._load(self.table_parts(changes))
        if table is None:
            self._create(self.table_parts(changes), [fields[n] for n in [*before, *source, *after]])
            return source
        existing = {f.name: f.dataType for f in self.spark.table(name).schema.fields}
        taken = [c.name for c in evolve(name, existing, list(frame.columns),
                                        self.schema_evolution, _spark_changed(fields))]
        new = [n for n in taken if n not in existing]
        if new:
            added = ", ".join(f"{q(n)} {fields[n].dataType.simpleString()}" for n in new)
            self.spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({added})")
        return taken

    def _create(self, parts: tuple[str, ...], fields: list[Any]) -> None:
        ns = ".".join(q(p) for p in (self.catalog, *parts[:-1]))
        self.spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
        columns = ", ".join(f"{q(f.name)} {f.dataType.simpleString()}" for f in fields)
        props = ", ".join(f"'{k}' = '{v}'" for k, v in TABLE_PROPERTIES.items())
        name = ".".join(q(p) for p in (self.catalog, *parts))
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {name} ({columns}) USING iceberg "
                       f"TBLPROPERTIES ({props})")

    # -- SCD type 1 ------------------------------------------------------------------------
    def apply_scd1(self, changes: TableChanges, net: list[NetChange], truncate: str | None,
                   batch_id: int) -> None:
        """Net changes computed event by event (a batch with a truncate comes this way)."""
        if self.already_applied(changes, batch_id):
            return
        toast = sorted({c for n in net for c in n.unavailable})
        rows = net_table(net, changes.column_list, changes.key_columns, toast)
        batch = ColumnarChanges(changes.topic, changes.schema_name, changes.table_name,
                                changes.key_columns, list(changes.column_list),
                                len(changes.events), rows, toast, changes.target)
        self._scd1(batch, truncate, batch_id)

    def apply_scd1_net(self, changes: ColumnarChanges, batch_id: int) -> None:
        """Net changes computed column-wise (`columnar.decode_net`)."""
        if self.already_applied(changes, batch_id):
            return
        self._scd1(changes, None, batch_id)

    def _scd1(self, changes: ColumnarChanges, truncate: str | None, batch_id: int) -> None:
        """The state's rules (`spark_merge.after_state`, as Spark joins inside the MERGE's
        plan), then the commits: the state's (remembered deletes and truncate), a truncate's
        DELETE, the table's MERGE (marked with the batch) last."""
        keys = changes.key_columns
        rows = changes.rows
        if truncate is not None:  # (older than the batch's truncate: gone with it)
            rows = rows.filter(pc.greater_equal(rows.column(SEQ), truncate))
        # The key as the state table names it, computed here, in Arrow: no Python worker.
        rows = rows.append_column(KEY, key_json_array(rows, keys))
        frame = from_columnar(self.spark, dataclasses.replace(changes, rows=rows))
        name = self.table_name(changes)
        columns = self._table(changes, frame, (), (SEQ,))
        state = self._state_frame(changes)
        deletes = rows.filter(pc.equal(rows.column(OP), "d"))
        remembered = state_deletes(deletes, keys)
        if truncate is not None:
            remembered = pa.concat_tables([remembered, pa.table(
                {"key": [""], "kind": ["truncate"], SEQ: [truncate]},
                schema=remembered.schema)])
        if remembered.num_rows:  # state first, the table's commit last (module docstring)
            self._merge_state(changes, remembered)
        if truncate is not None:
            self.spark.sql(f"DELETE FROM {name} WHERE {q(SEQ)} < '{_sql_text(truncate)}'")
        net = after_state(frame.rows, state)
        source = net.select(*(q(c) for c in [*columns, SEQ, OP]),
                            *(q(TOAST_FLAG + c) for c in frame.toast))
        m = scd1_merge(columns, keys, [c for c in frame.toast if c in columns])
        self._merge_table(name, source, m, batch_id)
        log.info("batch %d: %s: %d net rows merged, %d deletes (iceberg)", batch_id, name,
                 rows.num_rows, deletes.num_rows)

    def _merge_table(self, name: str, source: Any, merge: Scd1Merge, batch_id: int) -> None:
        """The table's MERGE, the batch's last commit, marked with its batch id."""
        view = f"hw_net_{uuid.uuid4().hex}"
        source.createOrReplaceTempView(view)
        try:
            with self._marked(batch_id):
                self.spark.sql(merge.sql(name, q(view)))
        finally:
            self.spark.catalog.dropTempView(view)

    def _state_frame(self, changes: Changes, kinds: tuple[str, ...] = ("truncate", "delete")
                     ) -> Any | None:
        """The state table's rows of `kinds` (None when there is no state table): truncates
        and SCD1 deletes, or SCD2's delete points."""
        if self._load(self.state_parts(changes)) is None:
            return None
        wanted = ", ".join(f"'{k}'" for k in kinds)
        return self.spark.table(self.state_name(changes)).where(f"kind IN ({wanted})")

    def _merge_state(self, changes: Changes, rows: pa.Table | Any) -> None:
        """Remembers deletes and truncates (`rows`: Arrow, or a DataFrame): the newest per
        key and kind, every SCD2 delete point (`delta_target`'s state MERGE; idempotent, so it
        needs no batch mark)."""
        from pyspark.sql.types import StringType, StructField, StructType

        schema = StructType([StructField(n, StringType()) for n in ("key", "kind", SEQ)])
        if self._load(self.state_parts(changes)) is None:
            self._create(self.state_parts(changes), list(schema.fields))
        view = f"hw_state_{uuid.uuid4().hex}"
        source = (self.spark.createDataFrame(rows, schema=schema)
                  if isinstance(rows, pa.Table) else rows)
        source.createOrReplaceTempView(view)
        try:
            self.spark.sql(
                f"MERGE INTO {self.state_name(changes)} t USING {q(view)} s "
                f"ON t.key = s.key AND t.kind = s.kind "
                f"AND (t.kind <> 'scd2_delete' OR t.{q(SEQ)} = s.{q(SEQ)}) "
                f"WHEN MATCHED AND s.{q(SEQ)} > t.{q(SEQ)} THEN UPDATE SET * "
                f"WHEN NOT MATCHED THEN INSERT *")
        finally:
            self.spark.catalog.dropTempView(view)

    # -- SCD type 2 ------------------------------------------------------------------------
    def apply_scd2(self, changes: TableChanges, events: list[ChangeEvent], truncate: str | None,
                   batch_id: int, tracked: frozenset[str] | None = None) -> None:
        """Events decoded one by one (`runner.apply_changes`: re-deliveries already dropped):
        the same history as the column-wise events' (`merge_history`)."""
        del truncate  # (the events hold it; `merge_history` finds it there)
        self.apply_scd2_rows(history_rows(changes, events), batch_id, tracked)

    def apply_scd2_rows(self, changes: ColumnarChanges, batch_id: int,
                        tracked: frozenset[str] | None = None) -> None:
        """SCD2 events the driver decoded column-wise (`decode_changelog(flags=True)`)."""
        self.merge_history(from_columnar(self.spark, changes), batch_id, tracked)

    def merge_history(self, frame: ChangeFrame, batch_id: int,
                      tracked: frozenset[str] | None = None) -> None:
        """A batch's SCD2 history (`delta_target`'s layout: the source's columns, then
        `__START_AT` and `__END_AT`, null while current), built on the executors
        (`spark_merge.scd2_history`: `scd2.rebuild` per key) from the batch's events, the
        stored versions and the remembered delete points of its keys.  Commits: the open
        versions closed at the batch's truncate (UPDATE), the batch's delete points and
        truncate remembered (the state's MERGE), both idempotent; the table's MERGE INTO,
        marked with the batch, last."""
        if self.already_applied(frame, batch_id):
            return
        keys = frame.key_columns
        if not keys:
            raise ValueError(f"{self.table_name(frame)}: SCD2 needs key columns (a primary "
                             "key or message.key.columns)")
        tracked = tracked if tracked is not None else frozenset(c.name for c in frame.columns)
        name = self.table_name(frame)
        taken = self._table(frame, _with_validity(frame), (), (START, END))
        events, truncate, deletes = batch_points(frame.rows, keys)
        state = self._state_frame(frame, ("truncate", "scd2_delete"))
        history = scd2_history(events, self.spark.table(name), state,
                               history_floor(state, truncate), keys, frame.columns, taken,
                               frame.toast, tracked)
        with staging_folder(frame, self.warehouse / "_headwater_staging", batch_id) as folder:
            # the rows are computed once, before any commit changes what they are read from
            history.write.mode("overwrite").parquet(folder)
            rows = self.spark.read.parquet(folder)
            changed = dict(rows.groupBy(ACTION).count().collect())
            if truncate is not None:
                self.spark.sql(f"UPDATE {name} SET {q(END)} = '{_sql_text(truncate)}' "
                               f"WHERE {q(END)} IS NULL AND {q(START)} < "
                               f"'{_sql_text(truncate)}'")
            remember = remembered_points(self.spark, events, truncate, deletes, keys,
                                         frame.columns)
            if remember is not None:  # state first, the table's commit last
                self._merge_state(frame, remember)
            if not changed:
                log.info("batch %d: %s: no version changed (iceberg)", batch_id, name)
                return
            view = f"hw_history_{uuid.uuid4().hex}"
            rows.createOrReplaceTempView(view)
            try:
                with self._marked(batch_id):
                    self.spark.sql(scd2_merge_sql(name, q(view), keys, taken))
            finally:
                self.spark.catalog.dropTempView(view)
        log.info("batch %d: %s: %d versions written, %d removed (SCD2, iceberg)", batch_id,
                 name, changed.get("u", 0), changed.get("d", 0))

    # -- maintenance -----------------------------------------------------------------------
    def maintain(self, batch_id: int) -> None:
        """Every `compact_interval_batches` batches (counted by batch id, so the cadence
        survives restarts), for every table of the warehouse (targets and state tables, also
        those no batch of this run touched): rewrites small data files and those with
        position deletes into new ones (the deletes applied), rewrites the remaining position
        delete files, then expires the snapshots older than the table's
        `history.expire.max-snapshot-age-ms` (5 days unless set; the newest always stays).

        The rewrites' snapshots carry this batch's mark, like the batch's own commits: they
        come after every commit of the batch, and the expiry may remove the snapshots before
        them, which the exactly-once walk would otherwise need.  No row changes; a failure
        only logs (the next interval retries)."""
        every = self.compact_interval_batches
        if every <= 0 or (batch_id + 1) % every:
            return
        actions = self.spark._jvm.org.apache.iceberg.spark.actions.SparkActions.get(
            self.spark._jsparkSession)
        for parts in self.tables():
            name = ".".join(parts)
            try:
                table = self._load(parts)
                if table is None:
                    continue
                files = (actions.rewriteDataFiles(table)
                         .option("min-input-files", "2").option("delete-file-threshold", "1")
                         .option("remove-dangling-deletes", "true")
                         .snapshotProperty(PIPELINE_KEY, self.app_id)
                         .snapshotProperty(BATCH_KEY, str(batch_id)).execute())
                deletes = (actions.rewritePositionDeletes(table)
                           .snapshotProperty(PIPELINE_KEY, self.app_id)
                           .snapshotProperty(BATCH_KEY, str(batch_id)).execute())
                actions.expireSnapshots(table).execute()
            except Exception as exc:  # maintenance must not stop the pipeline
                log.warning("batch %d: compacting %s failed (retried in %d batches): %s",
                            batch_id, name, every, exc)
                continue
            log.info("batch %d: %s compacted: %d data files into %d, %d position delete "
                     "files rewritten", batch_id, name, files.rewrittenDataFilesCount(),
                     files.addedDataFilesCount(), deletes.rewrittenDeleteFilesCount())

    def tables(self) -> list[tuple[str, ...]]:
        """Every table of the warehouse, as namespace parts and name."""
        catalog = self._catalog()
        found: list[tuple[str, ...]] = []
        pending = list(catalog.listNamespaces())
        while pending:
            ns = pending.pop()
            pending.extend(catalog.listNamespaces(ns))
            found.extend((*ident.namespace().levels(), ident.name())
                         for ident in catalog.listTables(ns))
        return sorted(found)

    # -- what a batch without types (Datastream's JSON events) reads of the table ----------
    def column_types(self, changes: Changes) -> dict[str, pa.DataType]:
        """The table's column types (empty: no table yet), which JSON columns keep where
        their values fit, as `DeltaTarget.column_types`."""
        from pyspark.sql.pandas.types import to_arrow_schema

        if self._load(self.table_parts(changes)) is None:
            return {}
        schema = to_arrow_schema(self.spark.table(self.table_name(changes)).schema)
        return {f.name: f.type for f in schema}

    def column_values(self, changes: Changes, name: str) -> list[Any]:
        """Every value of the table's column `name` (none: no table, or no such column),
        e.g. the event ids a changelog holds already."""
        if self._load(self.table_parts(changes)) is None:
            return []
        frame = self.spark.table(self.table_name(changes))
        if name not in frame.columns:
            return []
        values: list[Any] = frame.select(q(name)).toArrow().column(0).to_pylist()
        return values

    # -- changelog -------------------------------------------------------------------------
    def append_changelog(self, changes: TableChanges, batch_id: int) -> None:
        self._append(changes, changelog_table(changes), batch_id)

    def append_changelog_table(self, changes: TableChanges, table: pa.Table,
                               batch_id: int) -> None:
        """A changelog batch built elsewhere (Datastream's, with its event ids)."""
        self._append(changes, table, batch_id)

    def append_changelog_rows(self, changes: ColumnarChanges, batch_id: int) -> None:
        self._append(changes, changes.rows, batch_id)

    def changelog_since(self, changes: Changes, since: str, keys: Sequence[str]
                        ) -> pa.Table | None:
        """The changelog's rows from source position `since` on (`changelog_once`); Iceberg
        prunes the data files by their sequence statistics."""
        from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

        if self._load(self.table_parts(changes)) is None:
            return None
        frame = self.spark.table(self.table_name(changes))
        return frame.where(F.col(q(SEQ)) >= F.lit(since)).select(
            *(q(c) for c in (SEQ, "__op", *keys))).toArrow()

    def _append(self, changes: TableChanges | ColumnarChanges, rows: pa.Table,
                batch_id: int) -> None:
        """Appends every event's row, once per batch (the marked snapshot)."""
        if self.already_applied(changes, batch_id):
            return
        columns = tuple(changes.column_list if isinstance(changes, TableChanges)
                        else changes.columns)
        source = {c.name for c in columns}
        meta = tuple(n for n in rows.column_names if n not in source)
        frame = from_columnar(self.spark, ColumnarChanges(
            changes.topic, changes.schema_name, changes.table_name, changes.key_columns,
            list(columns), rows.num_rows, rows, [], changes.target))
        taken = self._table(changes, frame, meta, ())
        with self._marked(batch_id):
            (frame.rows.select(*(q(c) for c in [*meta, *taken]))
             .writeTo(self.table_name(changes)).append())
        log.info("batch %d: %s: %d changelog rows appended (iceberg)", batch_id,
                 self.table_name(changes), rows.num_rows)


def register_catalog(spark: Any, name: str, warehouse: Path) -> None:
    """Registers the Hadoop catalog `name` on `warehouse` in the session; refuses a name the
    session already gives another warehouse (Spark keeps a catalog once loaded: the new
    warehouse would silently be ignored)."""
    prefix = f"spark.sql.catalog.{name}"
    current = spark.conf.get(f"{prefix}.warehouse", None)
    if current is not None and Path(current) != warehouse:
        raise ValueError(f"headwater.pipeline.iceberg.catalog: the Spark session already has "
                         f"a catalog {name!r} on {current}, not on {warehouse}; give this "
                         "warehouse another catalog name")
    if current is None and spark.conf.get(prefix, None) is not None:
        raise ValueError(f"headwater.pipeline.iceberg.catalog: the Spark session already has "
                         f"a catalog {name!r} (spark.sql.catalog.{name}); choose another name")
    spark.conf.set(prefix, CATALOG_IMPL)
    spark.conf.set(f"{prefix}.type", "hadoop")
    spark.conf.set(f"{prefix}.warehouse", str(warehouse))
    # Every statement reads the table's current metadata: a table cached by the catalog
    # could be older than a commit another process (a restarted pipeline) made.
    spark.conf.set(f"{prefix}.cache-enabled", "false")


def _java_strings(spark: Any, values: tuple[str, ...]) -> Any:
    """A Java String[] (for varargs through py4j)."""
    array = spark.sparkContext._gateway.new_array(spark._jvm.java.lang.String, len(values))
    for i, v in enumerate(values):
        array[i] = v
    return array


def _sql_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


_NARROW = re.compile(r"\b(tinyint|smallint)\b")


def _iceberg_type(spark_type: Any) -> str:
    """A Spark type as an Iceberg table gives it back: Iceberg has no 8- or 16-bit integers
    (they are stored as int), and a timestamp of either kind is one type here, as for Delta."""
    return _NARROW.sub("int", spark_type.simpleString()).replace("timestamp_ntz", "timestamp")


def _spark_changed(fields: dict[str, Any]) -> Any:
    """`delta_target.evolve`'s type test for an Iceberg table (Spark types on both sides)."""
    def changed(column: Column, old: Any) -> bool:
        return _iceberg_type(fields[column.name].dataType) != _iceberg_type(old)
    return changed


def _with_validity(frame: ChangeFrame) -> ChangeFrame:
    """`frame` with the history's validity columns (text), for `_table` to create them."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    rows = frame.rows.select("*", *(F.lit(None).cast("string").alias(c) for c in (START, END)))
    return dataclasses.replace(frame, rows=rows)
