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
state) are idempotent under the sequence rule, so a crash between them changes nothing.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError

from headwater.pipeline.decode import Column, TableChanges
from headwater.pipeline.net import NetChange

log = logging.getLogger("headwater.pipeline.delta")

SEQ = "__hw_sequence"
OP = "__hw_op"
STATE_SCHEMA = pa.schema([("key", pa.string()), ("kind", pa.string()), (SEQ, pa.string())])


def q(name: str) -> str:
    """A quoted SQL identifier for delta-rs (DataFusion) predicates."""
    return '"' + name.replace('"', '""') + '"'


def _key_json(key: tuple[Any, ...]) -> str:
    return orjson.dumps(list(key), default=str).decode()


class DeltaTarget:
    def __init__(self, root: Path, app_id: str) -> None:
        self.root = Path(root)
        self.app_id = app_id

    def table_path(self, changes: TableChanges) -> Path:
        schema = changes.schema_name or "default"
        return self.root / schema / (changes.table_name or changes.topic)

    def state_path(self, changes: TableChanges) -> Path:
        return self.root / "_headwater" / "state" / (
            f"{changes.schema_name or 'default'}.{changes.table_name or changes.topic}")

    def _commit(self, batch_id: int) -> CommitProperties:
        return CommitProperties(
            app_transactions=[Transaction(self.app_id, batch_id)],
            custom_metadata={"headwater.batch": str(batch_id)},
        )

    @staticmethod
    def _open(path: Path) -> DeltaTable | None:
        try:
            return DeltaTable(str(path))
        except TableNotFoundError:
            return None

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
            if tomb is not None and n.sequence <= tomb:
                continue  # older than a remembered delete of this key
            kept.append(n)
        arrow_schema = pa.schema(
            [pa.field(c.name, c.type.arrow) for c in columns] + [pa.field(SEQ, pa.string())]
        )
        dt = self._ensure_table(path, arrow_schema)
        if truncate is not None:
            dt.delete(f"{q(SEQ)} < '{truncate}'")
        toast = sorted({c for n in kept for c in n.unavailable})
        source = self._source_table(kept, columns, keys, toast)
        match = " AND ".join(f"t.{q(k)} = s.{q(k)}" for k in keys)
        updates = {
            q(c.name): (
                f"CASE WHEN s.{q('__hw_u_' + c.name)} THEN t.{q(c.name)} ELSE s.{q(c.name)} END"
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
        self._save_state(changes, kept, truncate, batch_id)

    def _source_table(
        self, net: list[NetChange], columns: list[Column], keys: tuple[str, ...],
        toast: list[str],
    ) -> pa.Table:
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
            names.append("__hw_u_" + name)
        return pa.Table.from_arrays(arrays, names=names)

    def _ensure_table(self, path: Path, schema: pa.Schema) -> DeltaTable:
        dt = self._open(path)
        if dt is None:
            path.mkdir(parents=True, exist_ok=True)
            write_deltalake(str(path), schema.empty_table(), mode="error")
            dt = DeltaTable(str(path))
        return dt

    # -- state: remembered deletes and truncates ----------------------------------------------
    def _load_state(self, changes: TableChanges) -> dict[str | None, str]:
        dt = self._open(self.state_path(changes))
        if dt is None:
            return {}
        table = dt.to_pyarrow_table()
        out: dict[str | None, str] = {}
        for key, kind, seq in zip(table.column("key").to_pylist(),
                                  table.column("kind").to_pylist(),
                                  table.column(SEQ).to_pylist(), strict=True):
            out[None if kind == "truncate" else key] = seq
        return out

    def _save_state(
        self, changes: TableChanges, net: list[NetChange], truncate: str | None, batch_id: int
    ) -> None:
        rows = [(_key_json(n.key), "delete", n.sequence) for n in net if n.delete]
        if truncate is not None:
            rows.append(("", "truncate", truncate))
        if not rows:
            return
        path = self.state_path(changes)
        source = pa.Table.from_pylist(
            [{"key": k, "kind": kind, SEQ: s} for k, kind, s in rows], schema=STATE_SCHEMA)
        dt = self._ensure_table(path, STATE_SCHEMA)
        (
            dt.merge(source, predicate="t.key = s.key AND t.kind = s.kind", source_alias="s",
                     target_alias="t", commit_properties=self._commit(batch_id))
            .when_matched_update_all(predicate=f"s.{q(SEQ)} > t.{q(SEQ)}")
            .when_not_matched_insert_all()
            .execute()
        )

    # -- changelog -----------------------------------------------------------------------------
    def append_changelog(self, changes: TableChanges, batch_id: int) -> None:
        path = self.table_path(changes)
        if self.already_applied(path, batch_id):
            return
        columns = changes.column_list
        meta: dict[str, list[Any]] = {
            "__op": [], SEQ: [], "__source_ts_ms": [], "__ts_ms": [], "__lsn": [],
            "__tx_id": [], "__snapshot": [], "__offset": [],
        }
        data: dict[str, list[Any]] = {c.name: [] for c in columns}
        for e in changes.events:
            meta["__op"].append(e.op)
            meta[SEQ].append(e.sequence)
            meta["__source_ts_ms"].append(e.source_ts_ms)
            meta["__ts_ms"].append(e.ts_ms)
            meta["__lsn"].append(e.lsn)
            meta["__tx_id"].append(None if e.tx_id is None else str(e.tx_id))
            meta["__snapshot"].append(e.snapshot)
            meta["__offset"].append(e.offset)
            row = e.row or {}
            for c in columns:
                data[c.name].append(row.get(c.name))
        types = {"__op": pa.string(), SEQ: pa.string(), "__source_ts_ms": pa.int64(),
                 "__ts_ms": pa.int64(), "__lsn": pa.int64(), "__tx_id": pa.string(),
                 "__snapshot": pa.string(), "__offset": pa.int64()}
        table = pa.Table.from_arrays(
            [pa.array(v, types[k]) for k, v in meta.items()]
            + [pa.array(data[c.name], c.type.arrow) for c in columns],
            names=list(meta) + [c.name for c in columns],
        )
        path.mkdir(parents=True, exist_ok=True)
        write_deltalake(str(path), table, mode="append", schema_mode="merge",
                        commit_properties=self._commit(batch_id))


def read_table(path: Path | str) -> pa.Table:
    """A target table as its source would show it: without Headwater's bookkeeping column."""
    table = DeltaTable(str(path)).to_pyarrow_table()
    keep = [n for n in table.column_names if not n.startswith("__hw_")]
    return table.select(keep)

