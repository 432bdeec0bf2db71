"""The Delta target on real Delta tables (delta-rs), without Spark: late events, remembered
deletes, exactly-once replays, TOAST, schema evolution modes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pytest
from deltalake import DeltaTable

from headwater.pipeline import delta_target
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.delta_target import DeltaTarget, SchemaEvolutionError, read_table
from headwater.pipeline.net import net_changes


def field(name: str, typ: str = "string", optional: bool = True) -> dict[str, Any]:
    return {"type": typ, "optional": optional, "field": name}


def ev(op: str, key: int, lsn: int, prev: int, cols: dict[str, Any],
       extra: list[dict[str, Any]] | None = None) -> tuple[bytes, bytes]:
    fields = [field("id", "int32", False), field("v"), *(extra or [])]
    row_schema = {"type": "struct", "optional": True, "fields": fields}
    row = {"id": key, **cols}
    value = {"schema": {"type": "struct", "fields": [{**row_schema, "field": "before"},
                                                     {**row_schema, "field": "after"}]},
             "payload": {"before": row if op == "d" else None, "after": None if op == "d" else row,
                         "source": {"connector": "postgresql", "schema": "public", "table": "t",
                                    "lsn": lsn, "txId": lsn,
                                    "snapshot": "false", "sequence": f'["{prev}","{lsn}"]'},
                         "op": op, "ts_ms": 0}}
    key_doc = {"schema": {"type": "struct", "fields": [field("id", "int32", False)]},
               "payload": {"id": key}}
    return orjson.dumps(key_doc), orjson.dumps(value)


def apply(target: DeltaTarget, batch_id: int, events: list[tuple[bytes, bytes]],
          first_offset: int = 0) -> None:
    ch = decode_topic("s.public.t", [(first_offset + i, k, v) for i, (k, v) in enumerate(events)])
    net, truncate = net_changes(ch.events, "public.t")
    target.apply_scd1(ch, net, truncate, batch_id)


def table(root: Path) -> dict[int, dict[str, Any]]:
    return {r["id"]: r for r in read_table(root / "public" / "t").to_pylist()}


def test_older_events_in_later_batches_never_win(tmp_path: Path) -> None:
    t = DeltaTarget(tmp_path, "test")
    apply(t, 0, [ev("c", 1, 100, 50, {"v": "new"}), ev("d", 2, 110, 50, {"v": None})])
    apply(t, 1, [ev("u", 1, 90, 40, {"v": "old"}),  # older than what the target holds
                 ev("c", 2, 80, 30, {"v": "resurrected?"})], first_offset=2)  # before the delete
    assert {k: r["v"] for k, r in table(tmp_path).items()} == {1: "new"}


def test_replayed_batch_is_applied_once(tmp_path: Path) -> None:
    t = DeltaTarget(tmp_path, "test")
    apply(t, 0, [ev("c", 1, 100, 50, {"v": "a"})])
    apply(t, 1, [ev("u", 1, 200, 150, {"v": "b"})], first_offset=1)
    version = t._open(tmp_path / "public" / "t").version()  # type: ignore[union-attr]
    apply(t, 1, [ev("u", 1, 200, 150, {"v": "b"})], first_offset=1)  # Spark replays batch 1
    assert t._open(tmp_path / "public" / "t").version() == version  # type: ignore[union-attr]
    assert table(tmp_path)[1]["v"] == "b"


def test_unchanged_toast_keeps_the_target_value(tmp_path: Path) -> None:
    t = DeltaTarget(tmp_path, "test")
    apply(t, 0, [ev("c", 1, 100, 50, {"v": "big value"})])
    apply(t, 1, [ev("u", 1, 200, 150, {"v": "__debezium_unavailable_value"})], first_offset=1)
    assert table(tmp_path)[1]["v"] == "big value"


@pytest.mark.parametrize("mode", ["evolve", "ignore", "fail"])
def test_schema_evolution_modes(tmp_path: Path, mode: str) -> None:
    t = DeltaTarget(tmp_path, "test", schema_evolution=mode)
    apply(t, 0, [ev("c", 1, 100, 50, {"v": "a"})])
    added = [ev("c", 2, 200, 150, {"v": "b", "extra": 7}, [field("extra", "int64")])]
    if mode == "fail":
        with pytest.raises(SchemaEvolutionError, match="extra"):
            apply(t, 1, added, first_offset=1)
        return
    apply(t, 1, added, first_offset=1)
    rows = table(tmp_path)
    if mode == "evolve":
        assert rows[2]["extra"] == 7 and rows[1]["extra"] is None
    else:
        assert "extra" not in rows[2] and rows[2]["v"] == "b"


def test_type_change_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    t = DeltaTarget(tmp_path, "test")
    apply(t, 0, [ev("c", 1, 100, 50, {"v": "a", "n": 1}, [field("n", "int32")])])
    with pytest.raises(SchemaEvolutionError, match="changed type"):
        apply(t, 1, [ev("c", 2, 200, 150, {"v": "b", "n": "x"}, [field("n", "string")])],
              first_offset=1)


class Crash(Exception):
    """A kill -9 between two Delta commits of one batch."""


def crash_after_first_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes the next MERGE or append commit, then raises: the batch's later commits never
    happen (an append: the column-wise path's first batch into an empty table)."""
    original = DeltaTable.merge
    armed = [True]
    write = deltalake.write_deltalake

    def append_then_crash(*args: Any, **kwargs: Any) -> None:
        write(*args, **kwargs)
        if armed[0] and kwargs.get("mode") == "append":
            armed[0] = False
            raise Crash

    monkeypatch.setattr(delta_target, "write_deltalake", append_then_crash)

    def merge(self: DeltaTable, *args: Any, **kwargs: Any) -> Any:
        merger = original(self, *args, **kwargs)
        execute = merger.execute

        def execute_then_crash() -> Any:
            result = execute()
            if armed[0]:
                armed[0] = False
                raise Crash
            return result

        merger.execute = execute_then_crash  # type: ignore[method-assign]
        return merger

    monkeypatch.setattr(DeltaTable, "merge", merge)


def scd1(target: DeltaTarget, batch_id: int, events: list[tuple[bytes, bytes]],
         first_offset: int) -> None:
    apply(target, batch_id, events, first_offset)


def scd2(target: DeltaTarget, batch_id: int, events: list[tuple[bytes, bytes]],
         first_offset: int) -> None:
    ch = decode_topic("s.public.t", [(first_offset + i, k, v) for i, (k, v) in enumerate(events)])
    target.apply_scd2(ch, ch.events, None, batch_id)


@pytest.mark.parametrize("mode", [scd1, scd2], ids=["scd1", "scd2"])
def test_a_crash_between_a_batch_commits_never_forgets_its_deletes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        mode: Callable[[DeltaTarget, int, list[tuple[bytes, bytes]], int], None]) -> None:
    """Killed after the first of a batch's commits (table or state), the replayed batch still
    remembers its delete, so an older upsert arriving later does not bring the row back."""
    mode(DeltaTarget(tmp_path, "p"), 0, [ev("c", 1, 100, 50, {"v": "a"}),
                                         ev("c", 2, 100, 50, {"v": "b"})], 0)
    deleted = [ev("d", 1, 300, 250, {"v": None})]
    with monkeypatch.context() as m:
        crash_after_first_commit(m)
        with pytest.raises(Crash):
            mode(DeltaTarget(tmp_path, "p"), 1, deleted, 2)
    restarted = DeltaTarget(tmp_path, "p")
    mode(restarted, 1, deleted, 2)  # Spark replays the batch in flight
    mode(restarted, 2, [ev("u", 1, 200, 150, {"v": "late"})], 3)  # older than the delete
    rows = read_table(tmp_path / "public" / "t").to_pylist()
    if mode is scd2:
        rows = [r for r in rows if r["__END_AT"] is None]
    assert sorted((r["id"], r["v"]) for r in rows) == [(2, "b")]


def test_scd2_of_a_keyless_table_is_refused_not_skipped(tmp_path: Path) -> None:
    """A table without a key (null record keys) cannot keep SCD2 history: delta-rs's SCD2
    used to skip its events without a word; it stops naming the table, as SCD1 and the JDBC
    target do, and writes nothing."""
    from headwater.pipeline.net import KeylessTableError

    target = DeltaTarget(tmp_path, "test")
    keyless = [(None, v) for _k, v in (ev("c", 1, 10, 0, {"v": "a"}),
                                         ev("c", 2, 11, 10, {"v": "b"}))]
    ch = decode_topic("s.public.t", [(i, k, v) for i, (k, v) in enumerate(keyless)])
    assert ch.events and all(e.key is None for e in ch.events)
    with pytest.raises(KeylessTableError, match=r"public\.t has no key.*message\.key\.columns"):
        target.apply_scd2(ch, ch.events, None, 0)
    assert not (tmp_path / "public" / "t" / "_delta_log").exists() or not table(tmp_path)
