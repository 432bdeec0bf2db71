"""Applies net changes to Delta Lake tables with delta-rs, exactly once per pipeline batch.

Each target table `<root>/<schema>/<table>` holds the source's columns plus `__hw_sequence`, the
sequence of the event that last wrote the row.  A merge only lets a newer event win, so an event
older than the target's state never overwrites it, even when it arrives in a later batch.
Deletes and truncates are remembered, with their sequences, in a small state table
(`<root>/_headwater/state/<schema>.<table>`), so an older upsert arriving after a delete does not
resurrect the row.

Exactly once: the last commit a batch makes to a table carries a Delta *app transaction*
(`txn` action) with the pipeline's id and the Spark batch id.  A batch that Spark replays after a
crash finds its id already committed and skips the table; the commits before it (truncate,
state) are idempotent under the sequence rule, so a crash between them changes nothing.  The
order matters: were the state written after the table's commit, a crash between the two would
make the replay skip the table and never remember the batch's deletes, and an older upsert
arriving later would bring a deleted row back.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, QueryBuilder, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError

from headwater.pipeline.change_frame import ChangeFrame
from headwater.pipeline.changelog_once import first_mask
from headwater.pipeline.columnar import (
    OP,
    SEQ,
    TOAST_FLAG,
    ColumnarChanges,
    changelog_table,
    history_rows,
)
from headwater.pipeline.decode import ChangeEvent, Column, TableChanges
from headwater.pipeline.net import KeylessTableError, NetChange
from headwater.pipeline.scd2 import ACTION, KIND, changed_versions
from headwater.pipeline.scd2 import END as END  # noqa: PLC0414 (re-exported)
from headwater.pipeline.scd2 import START as START  # noqa: PLC0414 (re-exported)

log = logging.getLogger("headwater.pipeline.delta")

STATE_SCHEMA = pa.schema([("key", pa.string()), ("kind", pa.string()), (SEQ, pa.string())])


def q(name: str) -> str:
    """A quoted SQL identifier for delta-rs (DataFusion) predicates."""
    return '"' + name.replace('"', '""') + '"'


def _sql_literal(value: Any) -> str:
    """A SQL literal for a key value in a delta-rs predicate."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value).replace("'", "''")
    return f"'{text}'"


def _query(dt: DeltaTable, sql: str) -> pa.Table:
    """A SQL query (DataFusion, inside delta-rs) over one Delta table registered as `t`."""
    return pa.table(QueryBuilder().register("t", dt).execute(sql).read_all())


def _key_json(key: tuple[Any, ...]) -> str:
    return orjson.dumps(list(key), default=str).decode()


def key_json_array(table: pa.Table, keys: tuple[str, ...]) -> pa.Array:
    """`_key_json` of every row's key columns (how the state table names a key)."""
    if len(keys) == 1 and pa.types.is_integer(table.schema.field(keys[0]).type):
        text = pc.cast(table.column(keys[0]), pa.string())
        return pc.binary_join_element_wise("[", text, "]", "").combine_chunks()
    columns = [table.column(k).to_pylist() for k in keys]
    return pa.array([_key_json(k) for k in zip(*columns, strict=True)], pa.string())


def state_deletes(deletes: pa.Table, keys: tuple[str, ...], kind: str = "delete") -> pa.Table:
    """The state table's rows remembering deletes (their key and sequence): SCD1's net
    deletes, or SCD2's delete points (`kind` scd2_delete)."""
    n = deletes.num_rows
    return pa.table([key_json_array(deletes, keys), pa.array([kind] * n, pa.string()),
                     deletes.column(SEQ)], schema=STATE_SCHEMA)


def _history_schema(columns: Sequence[Column]) -> pa.Schema:
    """An SCD2 history table's columns: the source's, then the version's validity."""
    return pa.schema([*(pa.field(c.name, c.type.arrow) for c in columns),
                      pa.field(START, pa.string()), pa.field(END, pa.string())])


def _points(table: pa.Table, names: list[str], types: dict[str, pa.DataType],
            toast: list[str], kind: str, seq: Any = None, op: Any = None, start: Any = None,
            end: Any = None) -> pa.Table:
    """Rows of `table` as `scd2.changed_versions` takes them (KIND `kind`): the batch's
    columns (null where `table` has none), validity, sequence and op, TOAST flags (false but
    for events)."""
    n = table.num_rows

    def text(values: Any) -> Any:
        return pa.nulls(n, pa.string()) if values is None else values

    arrays = [table.column(c) if c in table.column_names else pa.nulls(n, types[c])
              for c in names]
    arrays += [text(start), text(end), text(seq), text(op)]
    arrays += [table.column(TOAST_FLAG + c) if kind == "e" else pa.array([False] * n)
               for c in toast]
    arrays.append(pa.array([kind] * n, pa.string()))
    return pa.Table.from_arrays(arrays, names=[*names, START, END, SEQ, "__op",
                                               *(TOAST_FLAG + c for c in toast), KIND])


def _plain(t: pa.DataType) -> pa.DataType:
    """A type without views (DataFusion's string and binary views as their plain types)."""
    if t == pa.string_view():
        return pa.string()
    return pa.binary() if t == pa.binary_view() else t


class _NoChangelog:
    """No rows seen before the batch: an SCD2 batch drops the re-deliveries inside it, as
    `net.dedup` does; later ones lose to their own earlier copy in `scd2.rebuild`."""

    def changelog_since(self, changes: Any, since: str, keys: Sequence[str]) -> None:
        return None


def _first_deliveries(changes: ColumnarChanges) -> pa.Table:
    """The batch's rows (in delivery order) without re-deliveries (`changelog_once`'s
    identity: position, op, key)."""
    rows = changes.rows
    keys = changes.key_columns
    keep = first_mask(rows.select([SEQ, "__op", *keys]), keys, changes, _NoChangelog())
    return rows if keep is None else rows.filter(keep)


class SchemaEvolutionError(ValueError):
    """A source schema change the target cannot, or may not, follow."""


def evolve(where: str, existing: dict[str, Any], columns: list[Column], mode: str,
           changed: Callable[[Column, Any], bool]) -> list[Column]:
    """The batch's columns a target table (`existing`: its column types) takes, per `mode`
    (`headwater.pipeline.schema.evolution`); `changed` says whether a column's type at the
    source is not the table's (each table format has its own types).

    New source columns are added (evolve), left out (ignore) or refused (fail).  A column
    whose type changed is always refused: rewriting a table's history to a new type is a
    decision for its owner, not for a pipeline.  Dropped source columns stay in the target
    (rows written later hold null there); a rename is a new column plus the old one.
    """
    for c in columns:
        old = existing.get(c.name)
        if old is not None and changed(c, old):
            raise SchemaEvolutionError(
                f"{where}: column {c.name!r} changed type from {old} to {c.type.arrow} at the "
                "source; migrate the target table (or re-create it and re-run the pipeline "
                "from a new checkpoint)"
            )
    new = [c.name for c in columns if c.name not in existing]
    if not new or mode == "evolve":
        if new:
            log.info("%s: adding columns %s (schema evolution)", where, ", ".join(new))
        return columns
    if mode == "fail":
        raise SchemaEvolutionError(
            f"{where}: the source added column(s) {', '.join(new)} and "
            "headwater.pipeline.schema.evolution=fail"
        )
    return [c for c in columns if c.name in existing]


def _arrow_changed(column: Column, old: pa.DataType) -> bool:
    """A Delta column's type is not the source's (timestamps of any unit or zone are one)."""
    new = column.type.arrow
    return bool(old != new and not (pa.types.is_timestamp(old) and pa.types.is_timestamp(new)))


EVOLUTION_MODES = ("evolve", "ignore", "fail")

Changes = TableChanges | ColumnarChanges | ChangeFrame


class DeltaTarget:
    # The modes whose batches the executors' stage hands over as DataFrames (`ChangeFrame`:
    # `merge_net`, `append_changelog_net`, `merge_history`) rather than as the driver's Arrow
    # rows (`apply_scd1_net`, `append_changelog_rows`); none for delta-rs.
    frame_modes: frozenset[str] = frozenset()
    # The modes whose batches this target takes as the driver's column-wise rows, or as
    # DataFrames where `frame_modes` says (runner.columnar_path); the rest go event by event.
    columnar_modes: frozenset[str] = frozenset({"scd1", "changelog", "scd2"})

    def __init__(self, root: Path, app_id: str, schema_evolution: str = "evolve",
                 compact_interval_batches: int = 0) -> None:
        if schema_evolution not in EVOLUTION_MODES:
            raise ValueError(f"schema evolution mode {schema_evolution!r} is not one of "
                             f"{', '.join(EVOLUTION_MODES)}")
        self.root = Path(root)
        self.app_id = app_id
        self.schema_evolution = schema_evolution
        self.compact_interval_batches = compact_interval_batches
        self._tables: dict[str, DeltaTable] = {}

    def maintain(self, batch_id: int) -> None:
        """Every `compact_interval_batches` batches: compacts the small files of every Delta
        table under the root (targets and state tables) and of the tables this pipeline
        opened elsewhere (absolute targets), then vacuums the files older than the table's retention
        (`delta.deletedFileRetentionDuration`, a week unless set).

        A continuous pipeline commits every trigger, and each MERGE leaves new small files:
        without this, reading a table slows down as it lives.  Keyed by batch id, so the
        cadence survives restarts; compaction changes no row, so replaying a batch after a
        crash here is harmless, and a failure only logs (the next interval retries)."""
        every = self.compact_interval_batches
        if every <= 0 or (batch_id + 1) % every:
            return
        # Every table under the root, not only those this process has opened: a pipeline run
        # with --once (or restarted) opens only the tables its batches touched, and a table
        # written only in other batches would otherwise never be compacted.
        for key in sorted(set(self._tables) | {str(p) for p in delta_tables(self.root)}):
            dt = self._open(Path(key))
            if dt is None:
                continue
            try:
                metrics = dt.optimize.compact()
                removed = dt.vacuum(dry_run=False)
            except Exception as exc:  # maintenance must not stop the pipeline
                log.warning("batch %d: compacting %s failed (retried in %d batches): %s",
                            batch_id, key, every, exc)
                continue
            if metrics.get("numFilesRemoved") or removed:
                log.info("batch %d: %s compacted: %s files into %s; %d old files vacuumed",
                         batch_id, key, metrics.get("numFilesRemoved"),
                         metrics.get("numFilesAdded"), len(removed))

    def _evolve(self, dt: DeltaTable, path: Path, columns: list[Column]) -> list[Column]:
        """The batch's columns the target takes, per `schema_evolution` (`evolve`)."""
        existing = {f.name: f.type for f in pa.schema(dt.schema().to_arrow())}
        return evolve(str(path), existing, columns, self.schema_evolution, _arrow_changed)

    def table_path(self, changes: Changes) -> Path:
        if changes.target is not None:
            target = Path(changes.target)
            return target if target.is_absolute() else self.root / target
        schema = changes.schema_name or "default"
        return self.root / schema / (changes.table_name or changes.topic)

    def state_path(self, changes: Changes) -> Path:
        if changes.target is not None:
            name = str(changes.target).strip("/").replace("/", ".")
        else:
            name = f"{changes.schema_name or 'default'}.{changes.table_name or changes.topic}"
        return self.root / "_headwater" / "state" / name

    def _commit(self, batch_id: int) -> CommitProperties:
        return CommitProperties(
            app_transactions=[Transaction(self.app_id, batch_id)],
            custom_metadata={"headwater.batch": str(batch_id)},
        )

    def _open(self, path: Path) -> DeltaTable | None:
        """The table at `path`, brought up to date (None if there is none).

        Tables stay open between batches: bringing one up to date reads only the commits
        since, where opening it replays its log from the last checkpoint, several times per
        batch and table, which is most of a small batch's cost.
        """
        key = str(path)
        dt = self._tables.get(key)
        if dt is not None:
            try:
                dt.update_incremental()
                return dt
            except Exception:  # removed or replaced meanwhile: open it anew
                del self._tables[key]
        try:
            dt = DeltaTable(key)
        except TableNotFoundError:
            return None
        self._tables[key] = dt
        return dt

    def column_types(self, changes: Changes) -> dict[str, pa.DataType]:
        """The target table's column types (empty: no table yet): what a batch whose events
        carry no types (Datastream's JSON events) keeps where its values fit."""
        dt = self._open(self.table_path(changes))
        return {} if dt is None else {f.name: f.type for f in pa.schema(dt.schema().to_arrow())}

    def column_values(self, changes: Changes, name: str) -> list[Any]:
        """Every value of the target table's column `name` (none: no table, or no such
        column), e.g. the event ids a changelog holds already."""
        dt = self._open(self.table_path(changes))
        if dt is None or name not in dt.schema().to_arrow().names:
            return []
        values: list[Any] = dt.to_pyarrow_table(columns=[name]).column(name).to_pylist()
        return values

    def already_applied(self, path: Path, batch_id: int) -> bool:
        dt = self._open(path)
        if dt is None:
            return False
        version = dt.transaction_version(self.app_id)
        return version is not None and version >= batch_id

    # -- SCD type 1 ----------------------------------------------------------------------------
    def apply_scd1(
        self, changes: TableChanges, net: list[NetChange], truncate: str | None, batch_id: int
    ) -> None:
        path = self.table_path(changes)
        if self.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        columns = changes.column_list
        keys = changes.key_columns
        state = self._load_state(changes)
        floor = state.get(None)  # last truncate
        if truncate is not None:
            floor = max(floor or "", truncate)
        kept = []
        for n in net:
            tomb = state.get(_key_json(n.key))
            if floor is not None and n.sequence < floor:
                continue  # older than a truncate
            stale = tomb is not None and (n.sequence < tomb
                                          or (n.sequence == tomb and not n.delete))
            if stale:
                # older than a remembered delete of this key (that delete itself is kept: a
                # replay after a crash finds it remembered but maybe not yet applied)
                continue
            kept.append(n)
        dt, columns = self._scd1_table(path, columns)
        if truncate is not None:
            dt.delete(f"{q(SEQ)} < '{truncate}'")
        # State first, the table's commit (with the batch's txn) last: see the module docstring.
        self._save_state(changes, kept, truncate, batch_id)
        toast = sorted({c for n in kept for c in n.unavailable})
        source = net_table(kept, columns, keys, toast)
        self._merge_scd1(dt, source, columns, keys, toast, batch_id)

    def _scd1_table(self, path: Path, columns: list[Column]) -> tuple[DeltaTable, list[Column]]:
        arrow_schema = pa.schema(
            [pa.field(c.name, c.type.arrow) for c in columns] + [pa.field(SEQ, pa.string())]
        )
        dt = self._ensure_table(path, arrow_schema)
        return dt, self._evolve(dt, path, columns)

    def _merge_scd1(self, dt: DeltaTable, source: pa.Table, columns: list[Column],
                    keys: tuple[str, ...], toast: list[str], batch_id: int) -> None:
        match = " AND ".join(f"t.{q(k)} = s.{q(k)}" for k in keys)
        updates = {
            q(c.name): (
                f"CASE WHEN s.{q(TOAST_FLAG + c.name)} THEN t.{q(c.name)} ELSE s.{q(c.name)} END"
                if c.name in toast else f"s.{q(c.name)}"
            )
            for c in columns
        }
        updates[q(SEQ)] = f"s.{q(SEQ)}"
        inserts = {q(c.name): f"s.{q(c.name)}" for c in columns}
        inserts[q(SEQ)] = f"s.{q(SEQ)}"
        newer = f"s.{q(SEQ)} > t.{q(SEQ)}"
        (
            dt.merge(source, predicate=match, source_alias="s", target_alias="t",
                     merge_schema=True, commit_properties=self._commit(batch_id))
            .when_matched_update(updates=updates, predicate=f"s.{q(OP)} = 'u' AND {newer}")
            .when_matched_delete(predicate=f"s.{q(OP)} = 'd' AND {newer}")
            .when_not_matched_insert(updates=inserts, predicate=f"s.{q(OP)} = 'u'")
            .execute()
        )

    def apply_scd1_net(self, changes: ColumnarChanges, batch_id: int) -> None:
        """`apply_scd1` for net changes computed column-wise (`columnar`): same rules, with
        the remembered deletes joined in Arrow instead of looked up per key."""
        path = self.table_path(changes)
        if self.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        keys = changes.key_columns
        net = self._net_after_state(changes)
        dt, columns = self._scd1_table(path, changes.columns)
        deletes = net.filter(pc.equal(net.column(OP), "d"))
        if deletes.num_rows:  # state first, the table's commit last (module docstring)
            remembered = state_deletes(deletes, keys)  # (one row per key: the net's)
            state = self._ensure_table(self.state_path(changes), STATE_SCHEMA)
            if not self._append_if_empty(state, remembered, batch_id):
                self._merge_state(changes, remembered, batch_id)
        upserts = net.filter(pc.equal(net.column(OP), "u"))
        if self._append_if_empty(dt, upserts.select([c.name for c in columns] + [SEQ]),
                                 batch_id):
            return
        source = net.select([c.name for c in columns] + [SEQ, OP]
                            + [TOAST_FLAG + c for c in changes.toast])
        self._merge_scd1(dt, source, columns, keys, changes.toast, batch_id)

    def _append_if_empty(self, dt: DeltaTable, rows: pa.Table, batch_id: int) -> bool:
        """Appends `rows` (at most one per key) when the table holds no data file yet, and
        says whether it did; the caller MERGEs otherwise.

        Into a table without rows, a MERGE's only effect is its insert clause, and the net
        rows it inserts (`rows`: an upsert's row columns and sequence, a delete's state row)
        are what an append writes, in one commit with the batch's `txn` as the MERGE's.  The
        MERGE would still join them against the table in DataFusion: on the bench's first
        batch of 500k records (180k net rows), the driver's CPU for the batch's writes fell
        from 0.45-0.56 s to 0.31 s.  The first batch of a pipeline (an initial snapshot) is
        its largest.  Only when the rows' columns are the table's and their values cast to its
        types without loss (Arrow's safe cast, as the MERGE casts its source); else MERGE."""
        if dt.file_uris():
            return False
        schema = pa.schema(dt.schema().to_arrow())
        if rows.schema.names != schema.names:
            return False
        try:  # (the MERGE casts the source to the table's types too: ms to Delta's us)
            rows = rows.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
        write_deltalake(dt, rows, mode="append", commit_properties=self._commit(batch_id))
        dt.update_incremental()
        return True

    def _net_after_state(self, changes: ColumnarChanges) -> pa.Table:
        """The batch's net rows without those the state keeps out: older than the last
        remembered truncate, or than a remembered delete of their key (that delete itself is
        kept: a replay after a crash finds it remembered but maybe not yet applied)."""
        keys = changes.key_columns
        net = changes.rows
        state = self._state_arrow(changes, ("truncate", "delete"))
        if state is not None and state.num_rows:
            kinds = state.column("kind")
            truncates = state.filter(pc.equal(kinds, "truncate")).column(SEQ)
            if len(truncates):
                net = net.filter(pc.greater_equal(net.column(SEQ), pc.max(truncates)))
            tombs = state.filter(pc.equal(kinds, "delete"))
            if tombs.num_rows and net.num_rows:
                joined = net.append_column("__hw_key", key_json_array(net, keys)).join(
                    pa.table({"__hw_key": tombs.column("key"),
                              "__hw_tomb": tombs.column(SEQ)}),
                    "__hw_key", join_type="left outer", use_threads=False)
                tomb = pc.fill_null(joined.column("__hw_tomb"), "")
                seq = joined.column(SEQ)
                newer = pc.or_(pc.greater(seq, tomb), pc.and_(
                    pc.equal(seq, tomb), pc.equal(joined.column(OP), "d")))
                net = joined.filter(newer).drop_columns(["__hw_key", "__hw_tomb"])
        return net

    def _ensure_table(self, path: Path, schema: pa.Schema) -> DeltaTable:
        dt = self._open(path)
        if dt is None:
            path.mkdir(parents=True, exist_ok=True)
            write_deltalake(str(path), schema.empty_table(), mode="error")
            dt = self._open(path)
            assert dt is not None
        return dt

    # -- SCD type 2 ----------------------------------------------------------------------------
    def apply_scd2(
        self, changes: TableChanges, events: list[ChangeEvent], truncate: str | None,
        batch_id: int, tracked: frozenset[str] | None = None,
    ) -> None:
        """Events decoded one by one (`runner.apply_changes`: re-deliveries already dropped):
        the same history, by the same write, as the column-wise events' (`apply_scd2_rows`)."""
        del truncate  # (the events hold it; `apply_scd2_rows` finds it there)
        batch = history_rows(changes, events)
        self._write_history(batch, batch.rows, batch_id, tracked)

    def apply_scd2_rows(self, changes: ColumnarChanges, batch_id: int,
                        tracked: frozenset[str] | None = None) -> None:
        """SCD2 events decoded column-wise (`decode_changelog(flags=True)`, by the driver or
        the executors): their re-deliveries inside the batch dropped as `net.dedup` drops
        them (`changelog_once`'s identity), then `_write_history`."""
        self._write_history(changes, _first_deliveries(changes), batch_id, tracked)

    def _write_history(self, changes: ColumnarChanges, rows: pa.Table, batch_id: int,
                       tracked: frozenset[str] | None) -> None:
        """A batch's SCD2 history: the table holds the source's columns plus `__START_AT` and
        `__END_AT` (null while current), one row per version.  From the batch's events
        (`rows`: `decode_changelog(flags=True)`'s columns, without re-deliveries), the stored
        versions and remembered delete points of its keys, each touched key's history is
        rebuilt (`scd2.changed_versions`: `scd2.rebuild`'s rules).  Commits: the open
        versions closed at the batch's truncate (an UPDATE, idempotent), the batch's delete
        points and truncate remembered (the state's MERGE), then the table's MERGE of the
        versions that changed, marked with the batch (module docstring)."""
        path = self.table_path(changes)
        if self.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        keys = changes.key_columns
        ops = rows.column("__op")
        truncates = rows.filter(pc.equal(ops, "t")).column(SEQ)
        truncate = pc.max(truncates).as_py() if len(truncates) else None
        events = rows.filter(pc.not_equal(ops, "t"))
        if events.num_rows and not keys:  # (its events used to be skipped here, silently)
            raise KeylessTableError(
                f"table {changes.schema_name}.{changes.table_name} has no key: SCD2 needs "
                "one (set message.key.columns on the connector, or use the changelog mode)")
        columns = changes.columns
        dt = self._ensure_table(path, _history_schema(columns))
        taken = [c.name for c in self._evolve(dt, path, columns)]
        state = self._state_arrow(changes, ("truncate",))
        stored_floor = None
        if state is not None and state.num_rows:
            stored_floor = pc.max(state.column(SEQ)).as_py()
        floor = max((f for f in (stored_floor, truncate) if f is not None), default=None)
        if truncate is not None:
            dt.update(updates={q(END): f"'{truncate}'"},
                      predicate=f"{q(END)} IS NULL AND {q(START)} < '{truncate}'")
        remember = state_deletes(events.filter(pc.equal(events.column("__op"), "d")), keys,
                                 "scd2_delete")
        if truncate is not None:
            remember = pa.concat_tables([remember, pa.table(
                [[""], ["truncate"], [truncate]], schema=STATE_SCHEMA)])
        if not events.num_rows:
            if remember.num_rows:
                self._merge_state(changes, remember, batch_id)
            return
        t0 = time.monotonic()
        history = self._changed_history(dt, changes, events, floor, taken, tracked)
        t1 = time.monotonic()
        if remember.num_rows:  # state first, the table's commit last (module docstring)
            self._merge_state(changes, remember, batch_id)
        match = " AND ".join([*(f"t.{q(k)} = s.{q(k)}" for k in keys),
                              f"t.{q(START)} = s.{q(START)}"])
        (
            dt.merge(history, predicate=match, source_alias="s", target_alias="t",
                     merge_schema=True, commit_properties=self._commit(batch_id))
            .when_matched_delete(predicate=f"s.{q(ACTION)} = 'd'")
            .when_matched_update(updates={q(c): f"s.{q(c)}" for c in [*taken, END]})
            .when_not_matched_insert(updates={q(c): f"s.{q(c)}" for c in [*taken, START, END]},
                                     predicate=f"s.{q(ACTION)} = 'u'")
            .execute()
        )
        actions = history.column(ACTION)
        log.info("batch %d: %s: %d events, %d versions written, %d removed (SCD2, column-wise); "
                 "rebuild %.2fs, write %.2fs", batch_id, path, events.num_rows,
                 pc.sum(pc.equal(actions, "u")).as_py() or 0,
                 pc.sum(pc.equal(actions, "d")).as_py() or 0, t1 - t0, time.monotonic() - t1)

    def _changed_history(self, dt: DeltaTable, changes: ColumnarChanges, events: pa.Table,
                         floor: str | None, taken: list[str],
                         tracked: frozenset[str] | None) -> pa.Table:
        """`scd2.changed_versions` of the batch's keys: their events, stored versions and
        remembered delete points, gathered in Arrow."""
        keys = changes.key_columns
        columns = changes.columns
        names = [c.name for c in columns]
        types = {c.name: c.type.arrow for c in columns}
        tracked = tracked if tracked is not None else frozenset(names)
        events = events.filter(functools.reduce(
            pc.and_, [pc.is_valid(events.column(k)) for k in keys]))
        batch_keys = events.select(list(keys)).group_by(list(keys), use_threads=False
                                                        ).aggregate([])
        parts = [_points(events, names, types, changes.toast, "e",
                         seq=events.column(SEQ), op=events.column("__op"))]
        first = pc.unique(batch_keys.column(keys[0]))
        stored = _query(dt, f"SELECT * FROM t WHERE {q(keys[0])} IN "
                            f"({', '.join(_sql_literal(v) for v in first.to_pylist())})")
        if stored.num_rows:
            # (the batch's types, so that values compare as the events'; DataFusion answers
            # with string views, which Arrow's joins do not take)
            stored = pa.table({name: stored.column(name).cast(types.get(name, _plain(f.type)))
                               for name, f in zip(stored.column_names, stored.schema,
                                                  strict=True)})
            stored = stored.join(batch_keys, list(keys), join_type="left semi",
                                 use_threads=False)
            parts.append(_points(stored, names, types, changes.toast, "v",
                                 start=stored.column(START).cast(pa.string()),
                                 end=stored.column(END).cast(pa.string())))
        named = batch_keys.append_column("key", key_json_array(batch_keys, keys))
        tombs = self._state_arrow(changes, ("scd2_delete",), named.column("key"))
        if tombs is not None and tombs.num_rows:
            tombs = named.join(tombs.select(["key", SEQ]), "key", join_type="inner",
                               use_threads=False)
            parts.append(_points(tombs, names, types, changes.toast, "x",
                                 seq=tombs.column(SEQ),
                                 op=pa.array(["d"] * tombs.num_rows, pa.string())))
        schema = _history_schema([c for c in columns if c.name in set(taken)]).append(
            pa.field(ACTION, pa.string()))
        return changed_versions(pa.concat_tables(parts), keys, taken, changes.toast,
                                tracked, floor, schema)

    # -- state: remembered deletes and truncates ----------------------------------------------
    def _load_state(self, changes: TableChanges) -> dict[str | None, str]:
        """Remembered delete per key (SCD1) and the last truncate (key None)."""
        dt = self._open(self.state_path(changes))
        if dt is None:
            return {}
        table = _query(dt, "SELECT * FROM t WHERE kind IN ('truncate', 'delete')")
        out: dict[str | None, str] = {}
        for key, kind, seq in zip(table.column("key").to_pylist(),
                                  table.column("kind").to_pylist(),
                                  table.column(SEQ).to_pylist(), strict=True):
            out[None if kind == "truncate" else key] = seq
        return out

    def _state_arrow(self, changes: Changes, kinds: tuple[str, ...],
                     keys: pa.ChunkedArray | None = None) -> pa.Table | None:
        """The state's rows of `kinds` (of the keys `keys` names, by their text, if given)."""
        dt = self._open(self.state_path(changes))
        if dt is None:
            return None
        wanted = ", ".join(f"'{k}'" for k in kinds)
        of_keys = "" if keys is None else (
            f" AND key IN ({', '.join(_sql_literal(k) for k in keys.to_pylist())})")
        table = _query(dt, f"SELECT key, kind, {q(SEQ)} FROM t WHERE kind IN ({wanted})"
                           + of_keys)
        return table.cast(STATE_SCHEMA)  # (DataFusion answers with string views)

    def _save_state(
        self, changes: TableChanges, net: list[NetChange], truncate: str | None, batch_id: int,
    ) -> None:
        rows = [(_key_json(n.key), "delete", n.sequence) for n in net if n.delete]
        if truncate is not None:
            rows.append(("", "truncate", truncate))
        if not rows:
            return
        source = pa.Table.from_pylist(
            [{"key": k, "kind": kind, SEQ: s} for k, kind, s in rows], schema=STATE_SCHEMA)
        self._merge_state(changes, source, batch_id)

    def _merge_state(self, changes: Changes, source: pa.Table, batch_id: int) -> None:
        path = self.state_path(changes)
        dt = self._ensure_table(path, STATE_SCHEMA)
        (
            # SCD1 keeps the newest delete per key; SCD2 keeps every delete point.
            dt.merge(source, predicate=(
                        "t.key = s.key AND t.kind = s.kind"
                        + (f" AND (t.kind <> 'scd2_delete' OR t.{q(SEQ)} = s.{q(SEQ)})")),
                     source_alias="s", target_alias="t",
                     commit_properties=self._commit(batch_id))
            .when_matched_update_all(predicate=f"s.{q(SEQ)} > t.{q(SEQ)}")
            .when_not_matched_insert_all()
            .execute()
        )

    # -- changelog -----------------------------------------------------------------------------
    def append_changelog(self, changes: TableChanges, batch_id: int) -> None:
        self._append_changelog(changes, changelog_table(changes), batch_id)

    def append_changelog_rows(self, changes: ColumnarChanges, batch_id: int) -> None:
        """`append_changelog` for rows decoded column-wise (`columnar.decode_changelog`)."""
        self._append_changelog(changes, changes.rows, batch_id)

    def append_changelog_table(self, changes: Changes, table: pa.Table, batch_id: int) -> None:
        """Appends a changelog table built by another event family's path (Datastream's, which
        adds its `__hw_uuid`), with the same exactly-once commit."""
        self._append_changelog(changes, table, batch_id)

    def changelog_since(self, changes: Changes, since: str, keys: Sequence[str]
                        ) -> pa.Table | None:
        """The changelog's rows from source position `since` on (`changelog_once`): the
        files whose sequence statistics end before it are not read."""
        dt = self._open(self.table_path(changes))
        if dt is None:
            return None
        return dt.to_pyarrow_dataset().to_table(
            columns=[SEQ, "__op", *keys], filter=pc.field(SEQ) >= pa.scalar(since))

    def _append_changelog(self, changes: Changes, table: pa.Table, batch_id: int) -> None:
        path = self.table_path(changes)
        if self.already_applied(path, batch_id):
            log.info("batch %d already applied to %s: skipped", batch_id, path)
            return
        path.mkdir(parents=True, exist_ok=True)
        write_deltalake(str(path), table, mode="append", schema_mode="merge",
                        commit_properties=self._commit(batch_id))


def net_table(net: list[NetChange], columns: list[Column], keys: tuple[str, ...],
              toast: list[str]) -> pa.Table:
    """Event-by-event net changes as the column-wise path's rows (`columnar.decode_net`):
    the columns, `__hw_sequence`, `__hw_op`, then a TOAST flag per name in `toast`."""
    data: dict[str, list[Any]] = {c.name: [] for c in columns}
    seqs: list[str] = []
    ops: list[str] = []
    flags: dict[str, list[bool]] = {c: [] for c in toast}
    for n in net:
        row = n.row
        if row is None:  # delete: only the key is known
            for c in columns:
                data[c.name].append(None)
            for k, v in zip(keys, n.key, strict=True):
                data[k][-1] = v
        else:
            for c in columns:
                data[c.name].append(row.get(c.name))
        seqs.append(n.sequence)
        ops.append("d" if n.delete else "u")
        for name in toast:
            flags[name].append(name in n.unavailable)
    arrays = [pa.array(data[c.name], type=c.type.arrow) for c in columns]
    names = [c.name for c in columns]
    arrays += [pa.array(seqs, pa.string()), pa.array(ops, pa.string())]
    names += [SEQ, OP]
    for name in toast:
        arrays.append(pa.array(flags[name], pa.bool_()))
        names.append(TOAST_FLAG + name)
    return pa.Table.from_arrays(arrays, names=names)


def delta_tables(root: Path) -> list[Path]:
    """The Delta tables under `root` (directories holding a `_delta_log`), not looking
    inside a table."""
    found: list[Path] = []
    for parent, dirs, _files in os.walk(root):
        if "_delta_log" in dirs:
            found.append(Path(parent))
            dirs.clear()
    return sorted(found)


def read_table(path: Path | str) -> pa.Table:
    """A target table as its source would show it: without Headwater's bookkeeping column."""
    table = DeltaTable(str(path)).to_pyarrow_table()
    keep = [n for n in table.column_names if not n.startswith("__hw_")]
    return table.select(keep)

