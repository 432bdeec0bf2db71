"""The JDBC target's rules on both databases, driven directly with hand-made batches: the
sequence guard, remembered deletes and truncates, unchanged TOAST, new columns, every type,
keys that differ only in case or trailing spaces, and a crash at each step then the replay."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.config.secrets import Secret
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.connect_types import FieldType
from headwater.pipeline.decode import ChangeEvent, Column, TableChanges
from headwater.pipeline.delta_target import SchemaEvolutionError
from headwater.pipeline.jdbc_target import JdbcTarget
from headwater.pipeline.net import NetChange
from tests.pipeline_jdbc.conftest import TargetDb

pytestmark = pytest.mark.integration


def _same(v: Any) -> Any:
    return v


def make_changes(columns: dict[str, pa.DataType], keys: tuple[str, ...] = ("id",),
                 table: str = "x") -> TableChanges:
    ch = TableChanges(f"p.public.{table}")
    ch.schema_name, ch.table_name, ch.key_columns = "public", table, keys
    ch.columns = {n: Column(n, FieldType(t, _same), n not in keys) for n, t in columns.items()}
    return ch


def seq(n: int) -> str:
    return format(n, "057x")


def up(key: Any, seq_no: int, unavailable: tuple[str, ...] = (), **row: Any) -> NetChange:
    return NetChange((key,), False, seq(seq_no), {"id": key, **row}, frozenset(unavailable))


def rm(key: Any, seq_no: int) -> NetChange:
    return NetChange((key,), True, seq(seq_no), None, frozenset())


def config(target: TargetDb, tmp: Path, mode: str = "scd1",
           evolution: str = "evolve") -> PipelineConfig:
    return PipelineConfig(
        topic_prefix="p", topics_dir=tmp, delta_path=tmp, checkpoint_dir=tmp, topics_glob="p.*",
        mode=mode, pipeline_id="rules", target="jdbc", jdbc_url=target.url,
        jdbc_user=target.user, schema_evolution=evolution,
        jdbc_password=Secret(target.password) if target.password else None)


def table(target: TargetDb, name: str = "x") -> dict[Any, dict[str, Any]]:
    return {r["id"]: r for r in target.rows(name)}


def values(target: TargetDb, name: str = "x", col: str = "v") -> dict[Any, Any]:
    return {k: r[col] for k, r in table(target, name).items()}


def test_scd1_sequence_guard_deletes_truncates_and_replays(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path) -> None:
    t = JdbcTarget(config(target, tmp_path), jdbc_spark)
    ch = make_changes({"id": pa.int32(), "v": pa.string()})
    t.apply_scd1(ch, [up(1, 10, v="a"), up(2, 10, v="b"), up(3, 10, v="c")], None, 0)
    assert values(target) == {1: "a", 2: "b", 3: "c"}
    # The same batch id again, whatever it holds, changes nothing.
    t.apply_scd1(ch, [up(1, 99, v="replayed"), rm(2, 99)], None, 0)
    assert values(target) == {1: "a", 2: "b", 3: "c"}
    # Older events lose to newer rows; deletes older than the row are ignored.
    t.apply_scd1(ch, [up(1, 5, v="old"), up(2, 20, v="B"), rm(3, 9)], None, 1)
    assert values(target) == {1: "a", 2: "B", 3: "c"}
    # A delete is remembered: an older upsert arriving later does not resurrect the row,
    # a newer one does.
    t.apply_scd1(ch, [rm(1, 30), rm(4, 30)], None, 2)
    t.apply_scd1(ch, [up(1, 25, v="late"), up(4, 29, v="late")], None, 3)
    assert values(target) == {2: "B", 3: "c"}
    t.apply_scd1(ch, [up(1, 31, v="back")], None, 4)
    assert values(target) == {1: "back", 2: "B", 3: "c"}
    # A truncate removes the older rows and is remembered for later batches.
    t.apply_scd1(ch, [up(5, 45, v="after")], seq(40), 5)
    assert values(target) == {5: "after"}
    t.apply_scd1(ch, [up(6, 39, v="before truncate"), up(7, 41, v="after")], None, 6)
    assert values(target) == {5: "after", 7: "after"}
    # Sequences are kept as they came.
    assert {r["id"]: r["__hw_sequence"] for r in target.rows("x", bookkeeping=True)} == {
        5: seq(45), 7: seq(41)}


def test_scd1_toast_new_columns_and_text_keys(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path) -> None:
    t = JdbcTarget(config(target, tmp_path), jdbc_spark)
    ch = make_changes({"id": pa.string(), "v": pa.string(), "big": pa.string()})
    big = "x" * 100_000
    keys = ["a", "A", "a ", "ä", "😀"]
    t.apply_scd1(ch, [up(k, 1, v=f"v{i}", big=big + k) for i, k in enumerate(keys)], None, 0)
    assert values(target) == {k: f"v{i}" for i, k in enumerate(keys)}
    # Unchanged TOAST: the column was not sent, the target keeps its value.
    t.apply_scd1(ch, [up("a", 2, ("big",), v="new", big=None),
                      up("zz", 2, ("big",), v="fresh", big=None)], None, 1)
    rows = table(target)
    assert rows["a"]["v"] == "new" and rows["a"]["big"] == big + "a"
    assert rows["zz"]["big"] is None  # nothing to keep: as Delta, NULL
    # A column added at the source appears; older rows have NULL in it.
    ch2 = make_changes({"id": pa.string(), "v": pa.string(), "big": pa.string(),
                        "extra": pa.int64()})
    t.apply_scd1(ch2, [up("A", 3, v="w", big="small", extra=7)], None, 2)
    rows = table(target)
    assert rows["A"]["extra"] == 7 and rows["a"]["extra"] is None and rows["a"]["v"] == "new"
    assert len(rows) == len(keys) + 1


TYPES: dict[str, pa.DataType] = {
    "id": pa.int64(), "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(),
    "f32": pa.float32(), "f64": pa.float64(), "ok": pa.bool_(), "s": pa.string(),
    "b": pa.binary(), "d": pa.decimal128(12, 3), "vsd": pa.decimal128(38, 18),
    "day": pa.date32(), "ts": pa.timestamp("us"), "tsms": pa.timestamp("ms"),
    "tz": pa.timestamp("us", tz="UTC"), "tod": pa.string(), "arr": pa.list_(pa.int32()),
    "m": pa.map_(pa.string(), pa.int32()), "st": pa.struct([("x", pa.int32()),
                                                            ("y", pa.string())]),
}
ROW: dict[str, Any] = {
    "i8": -128, "i16": 32767, "i32": -2147483648, "f32": 1.5, "f64": -0.1,
    "ok": True, "s": "naïve 'quoted' \"text\"", "b": b"\x00\xff\x01",
    "d": Decimal("-123456789.125"),
    "vsd": Decimal("12345678901234567890.123456789012345678"),
    "day": dt.date(1999, 12, 31), "ts": dt.datetime(2024, 3, 31, 2, 30, 0, 123456),
    "tsms": dt.datetime(2024, 1, 1, 0, 0, 0, 5000),
    "tz": dt.datetime(2024, 6, 1, 23, 59, 59, 999999, tzinfo=dt.UTC), "tod": "23:59:59.5",
    "arr": [1, None, 3], "m": [("k", 1)], "st": {"x": 1, "y": None},
}


def test_every_type_round_trips(target: TargetDb, jdbc_spark: Any, tmp_path: Path) -> None:
    t = JdbcTarget(config(target, tmp_path), jdbc_spark)
    ch = make_changes(TYPES, table="typed")
    nulls: dict[str, Any] = dict.fromkeys(ROW)
    t.apply_scd1(ch, [up(1, 1, **ROW), up(2, 1, **nulls)], None, 0)
    # A second batch into the table: the declared types are recognized as unchanged.
    t.apply_scd1(ch, [up(3, 2, **ROW)], None, 1)
    rows = table(target, "typed")
    assert rows[3] == {**rows[1], "id": 3}
    assert all(v is None for k, v in rows[2].items() if k != "id")
    got = rows[1]
    expected = {**ROW, "arr": [1, None, 3], "m": {"k": 1}, "st": {"x": 1, "y": None}}
    if target.kind == "mariadb":
        expected["tz"] = ROW["tz"].replace(tzinfo=None)  # DATETIME(6): the UTC wall time
    for name, want in expected.items():
        have = json.loads(got[name]) if name in ("arr", "m", "st") else got[name]
        assert have == want, name


@pytest.mark.parametrize("point", ["staged", "merged", "committed"])
def test_crash_at_each_step_then_replay(target: TargetDb, jdbc_spark: Any, tmp_path: Path,
                                        point: str, monkeypatch: pytest.MonkeyPatch) -> None:
    t = JdbcTarget(config(target, tmp_path), jdbc_spark)
    ch = make_changes({"id": pa.int32(), "v": pa.string()})
    t.apply_scd1(ch, [up(1, 1, v="a"), up(2, 1, v="b")], None, 0)
    batch = [up(1, 2, v="A"), rm(2, 2), up(3, 2, v="c")]

    def crash(self: JdbcTarget, where: str) -> None:
        if where == point:
            raise RuntimeError(f"crash at {where}")

    monkeypatch.setattr(JdbcTarget, "_fault", crash)
    with pytest.raises(RuntimeError, match="crash at"):
        t.apply_scd1(ch, batch, seq(2) if point == "merged" else None, 1)
    before = {1: "a", 2: "b"}
    assert values(target) == (before if point != "committed" else {1: "A", 3: "c"})
    monkeypatch.undo()
    # The restart replays the batch (a fresh target object, as after a process restart).
    again = JdbcTarget(config(target, tmp_path), jdbc_spark)
    again.apply_scd1(ch, batch, seq(2) if point == "merged" else None, 1)
    assert values(target) == {1: "A", 3: "c"}
    assert not [n for n in target.tables() if n.startswith("_hw_stg_")], "staging left behind"
    _, progress = target.query("SELECT table_name, batch_id FROM _headwater_progress")
    assert progress == [(f"{target.schema}.x", 1)]


def test_changelog_and_scd2_replays_are_skipped(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path) -> None:
    t = JdbcTarget(config(target, tmp_path), jdbc_spark)
    ch = make_changes({"id": pa.int32(), "v": pa.string()}, table="log")
    ch.events = [ChangeEvent("c", (i,), {"id": i, "v": str(i)}, seq(i), (i,), i, frozenset(),
                             None, None, None, None, None) for i in range(5)]
    t.append_changelog(ch, 0)
    t.append_changelog(ch, 0)
    assert sorted(r["__offset"] for r in target.rows("log")) == [0, 1, 2, 3, 4]
    h = make_changes({"id": pa.int32(), "v": pa.string()}, table="hist")
    ev = [ChangeEvent("c", (1,), {"id": 1, "v": "a"}, seq(1), (1,), 0, frozenset(), None, None,
                      None, None, None),
          ChangeEvent("u", (1,), {"id": 1, "v": "b"}, seq(2), (2,), 1, frozenset(), None, None,
                      None, None, None)]
    t.apply_scd2(h, ev, None, 0)
    t.apply_scd2(h, [ev[0]._replace(row={"id": 1, "v": "zzz"}, sequence=seq(3))], None, 0)
    rows = sorted(target.rows("hist"), key=lambda r: r["__START_AT"])
    assert [(r["v"], r["__START_AT"], r["__END_AT"]) for r in rows] == [
        ("a", seq(1), seq(2)), ("b", seq(2), None)]


def test_schema_evolution_modes_and_type_changes(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path) -> None:
    base = make_changes({"id": pa.int32(), "v": pa.string(), "d": pa.decimal128(10, 2),
                         "at": pa.timestamp("us", tz="UTC")})
    wider = make_changes({"id": pa.int32(), "v": pa.string(), "d": pa.decimal128(10, 2),
                          "at": pa.timestamp("us", tz="UTC"), "w": pa.int64()})
    row: dict[str, Any] = {"v": "a", "d": Decimal("1.25"),
                           "at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}
    JdbcTarget(config(target, tmp_path), jdbc_spark).apply_scd1(base, [up(1, 1, **row)],
                                                                 None, 0)
    # fail: a new source column stops the pipeline, nothing of the batch is applied.
    failing = JdbcTarget(config(target, tmp_path, evolution="fail"), jdbc_spark)
    with pytest.raises(SchemaEvolutionError, match="added column"):
        failing.apply_scd1(wider, [up(1, 2, **row, w=5)], None, 1)
    assert "w" not in table(target)[1]
    # ignore: the new column is left out, the rest applies.
    ignoring = JdbcTarget(config(target, tmp_path, evolution="ignore"), jdbc_spark)
    ignoring.apply_scd1(wider, [up(1, 3, **{**row, "v": "b"}, w=5), up(2, 3, **row, w=6)],
                        None, 1)
    assert values(target) == {1: "b", 2: "a"} and "w" not in table(target)[1]
    # evolve: it is added.
    evolving = JdbcTarget(config(target, tmp_path), jdbc_spark)
    evolving.apply_scd1(wider, [up(2, 4, **row, w=7)], None, 2)
    assert {k: r["w"] for k, r in table(target).items()} == {1: None, 2: 7}
    # A changed type is refused in every mode, clearly.
    retyped = make_changes({"id": pa.int32(), "v": pa.int64(), "d": pa.decimal128(10, 2),
                            "at": pa.timestamp("us", tz="UTC"), "w": pa.int64()})
    with pytest.raises(SchemaEvolutionError, match="changed type"):
        evolving.apply_scd1(retyped, [up(2, 5, **{**row, "v": 1}, w=7)], None, 3)
    assert values(target) == {1: "b", 2: "a"}


def test_a_flow_names_its_target_table(target: TargetDb, jdbc_spark: Any,
                                       tmp_path: Path) -> None:
    ch = make_changes({"id": pa.int32(), "v": pa.string()})
    ch.target = "customers_current"
    JdbcTarget(config(target, tmp_path), jdbc_spark).apply_scd1(ch, [up(1, 1, v="a")], None, 0)
    assert values(target, "customers_current") == {1: "a"}
    assert "x" not in target.tables()


def event(op: str, key: int, seq_no: int, **row: Any) -> ChangeEvent:
    return ChangeEvent(op, (key,), {"id": key, **row} if row else None, seq(seq_no),
                       (key, seq_no, op), seq_no, frozenset(), None, None, None, None, None)


def test_scd2_late_events_rewrite_stored_history(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path) -> None:
    t = JdbcTarget(config(target, tmp_path, mode="scd2"), jdbc_spark)
    h = make_changes({"id": pa.int32(), "city": pa.string(), "visits": pa.int32()},
                     table="h")
    tracked = frozenset({"id", "city"})

    def history() -> list[tuple[Any, ...]]:
        rows = sorted(target.rows("h"), key=lambda r: (r["id"], r["__START_AT"]))
        return [(r["id"], r["city"], r["visits"], int(r["__START_AT"], 16),
                 None if r["__END_AT"] is None else int(r["__END_AT"], 16)) for r in rows]

    t.apply_scd2(h, [event("c", 1, 1, city="Oslo", visits=0),
                     event("u", 1, 3, city="Rome", visits=1)], None, 0, tracked)
    assert history() == [(1, "Oslo", 0, 1, 3), (1, "Rome", 1, 3, None)]
    # A late event at 2 moves to Rome first: the stored version starting at 3 is now only an
    # untracked change of it, so it is folded in and its row goes away.
    t.apply_scd2(h, [event("u", 1, 2, city="Rome", visits=5)], None, 1, tracked)
    assert history() == [(1, "Oslo", 0, 1, 2), (1, "Rome", 1, 2, None)]
    # A delete is remembered: an upsert older than it, arriving later, stays closed.
    # Also for a key that has no stored version to carry it (the delete came first).
    t.apply_scd2(h, [event("d", 1, 6), event("d", 3, 6)], None, 2, tracked)
    t.apply_scd2(h, [event("u", 1, 5, city="Pisa", visits=2),
                     event("u", 3, 5, city="Bari", visits=0)], None, 3, tracked)
    assert history() == [(1, "Oslo", 0, 1, 2), (1, "Rome", 1, 2, 5), (1, "Pisa", 2, 5, 6),
                         (3, "Bari", 0, 5, 6)]
    # A truncate closes what is open at its sequence, and later batches respect it.
    t.apply_scd2(h, [event("c", 2, 7, city="Nice", visits=0)], None, 4, tracked)
    t.apply_scd2(h, [], seq(8), 5, tracked)
    assert [v for v in history() if v[0] == 2] == [(2, "Nice", 0, 7, 8)]
    t.apply_scd2(h, [event("u", 2, 7, city="Nice", visits=0)], None, 6, tracked)  # redelivered
    assert [v for v in history() if v[0] == 2] == [(2, "Nice", 0, 7, 8)]
    assert len(history()) == 5


@pytest.mark.parametrize("mode", ["scd1", "changelog"])
def test_datastream_json_columns_keep_the_tables_types(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path, mode: str) -> None:
    """JSON Datastream events carry no types: a later batch's values are read with the
    table's column types (`JdbcTarget.column_types`, the dialect's reverse map), where they
    fit, as into Delta; a changelog drops a re-delivery of an event it holds (by uuid)."""
    from headwater.pipeline.datastream.apply import apply_events
    from headwater.pipeline.datastream.events import raw_events
    from tests.unit.datastream.test_pipeline_order import event as ds_event

    def batch(*events: dict[str, Any]) -> list[Any]:
        return raw_events((i, None, json.dumps(e).encode()) for i, e in enumerate(events))

    t = JdbcTarget(config(target, tmp_path, mode=mode), jdbc_spark)
    first = ds_event(1, [1, 0], extra={"price": 1.5, "note": "a", "flag": True,
                                       "tags": {"k": [1]}, "at": "2024-01-02T03:04:05Z"})
    bare = ds_event(3, [1, 1])  # no other columns: re-delivered, it types none of them
    assert apply_events(batch(first, bare), "p.public.t", 0, mode, t) == 2
    types = {n: t for n, t in t.column_types(make_changes({}, table="t")).items()
             if not n.startswith("__")}
    assert types == {"id": pa.int64(), "ver": pa.int64(), "price": pa.float64(),
                     "note": pa.string(), "flag": pa.bool_(), "tags": pa.string(),
                     "at": pa.string()}
    # An integral price, a number into the text column, a null-only flag, a new column: the
    # table's types hold (without them the batch would be bigint where the table is double
    # precision and text, and refused as a changed type).
    second = ds_event(2, [2, 0], extra={"price": 2, "note": 7, "flag": None,
                                        "tags": [2], "at": None, "qty": 3})
    assert apply_events(batch(second, bare), "p.public.t", 1, mode, t) == 2
    rows = sorted(target.rows("t"), key=lambda r: r["id"])
    got = [(r["id"], r["price"], r["note"], r["flag"], r["tags"], r["qty"]) for r in rows]
    flag = True if target.kind == "postgres" else 1  # MariaDB's BOOLEAN is TINYINT(1)
    assert got == [(1, 1.5, "a", flag, '{"k":[1]}', None), (2, 2.0, "7", None, "[2]", 3),
                   (3, None, None, None, None, None)]
    assert isinstance(rows[1]["price"], float)
    if mode == "changelog":
        assert sorted(r["__hw_uuid"] for r in target.rows("t", bookkeeping=True)) == sorted(
            e["uuid"] for e in (first, bare, second))
