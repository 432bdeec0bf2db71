"""MongoDB documents into PostgreSQL and MariaDB (`documents.jdbc`), driven with hand-made
Debezium MongoDB events: patches on the stored document, deletes remembered against late
events, sub-documents and arrays as JSON text whose declared types read back exactly, the
three modes equal to the Delta document table, and a field whose type changes (long ->
double -> string) recomputed from `__hw_doc`, including after a crash in the middle of it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from headwater.pipeline.delta_target import DeltaTarget
from headwater.pipeline.documents.delta import DocumentTarget
from headwater.pipeline.documents.events import decode_documents
from headwater.pipeline.documents.jdbc import JdbcDocuments
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.jdbc_dialect import STATE
from headwater.pipeline.jdbc_target import JdbcTarget
from tests.pipeline.mongo_events import TOPIC, event, oid
from tests.pipeline_jdbc.conftest import TargetDb
from tests.pipeline_jdbc.test_jdbc_target_rules import config

pytestmark = pytest.mark.integration

Records = list[tuple[bytes, bytes]]
DATE = {"$date": "2024-01-02T03:04:05.678Z"}
# Batches: inserts with nested values, patches (on the batch's and on the stored document),
# a delete, a re-delivery, and an event older than the delete that must not resurrect it.
BATCHES: list[Records] = [
    [event("c", oid(1), 100, after={"n": 1, "tags": ["a", "b"], "sub": {"x": 1}, "at": DATE}),
     event("c", oid(2), 110, after={"n": 2, "name": "two"}),
     event("u", oid(1), 120, updated={"sub.y": "new"}),
     event("c", 3, 130, after={"n": 3, "bin": {"$binary": {"base64": "AQID", "subType": "00"}}}),
     event("c", "3", 131, after={"n": 33})],  # the string "3": another document
    [event("u", oid(2), 200, removed=["name"], updated={"flag": True}),
     event("d", 3, 210),
     event("u", oid(1), 220, updated={"tags.1": "B"}),
     event("c", oid(2), 110, after={"n": 2, "name": "two"})],  # re-delivered
    [event("c", 3, 205, after={"n": 99}),  # older than the delete
     event("u", oid(2), 300, updated={"n": 5})],
]


def _run(writer: Any, mode: str, batches: list[Records], first_batch: int = 0) -> None:
    offset = 0
    for n, records in enumerate(batches):
        batch = decode_documents(TOPIC, [(offset + i, k, v) for i, (k, v)
                                         in enumerate(records)])
        offset += len(records)
        if mode == "scd1":
            writer.apply_scd1(batch, first_batch + n)
        elif mode == "scd2":
            writer.apply_scd2(batch, first_batch + n)
        else:
            writer.append_changelog(batch, first_batch + n)


def _jdbc(target: TargetDb, spark: Any, tmp: Path, mode: str) -> JdbcDocuments:
    return JdbcDocuments(JdbcTarget(config(target, tmp, mode), spark), DocumentOptions())


def _norm(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v.astimezone(dt.UTC)
    if isinstance(v, bool):
        return int(v)  # MariaDB's BOOLEAN is TINYINT(1)
    return v


def _rows(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[tuple[Any, ...],
                                                                     dict[str, Any]]:
    return {tuple(r[k] for k in keys): {n: _norm(v) for n, v in r.items()
                                         if v is not None}
            for r in rows}


KEYS = {"scd1": ("__hw_id",), "scd2": ("__hw_id", "__START_AT"),
        "changelog": ("__hw_id", "__hw_sequence")}


@pytest.mark.parametrize("mode", ["scd1", "scd2", "changelog"])
def test_documents_equal_the_delta_document_table(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path, mode: str) -> None:
    _run(_jdbc(target, jdbc_spark, tmp_path, mode), mode, BATCHES)
    # the same batches into Delta with nested=json: the same table, value for value
    delta = DocumentTarget(DeltaTarget(tmp_path / "delta", "p"), DocumentOptions(nested="json"))
    _run(delta, mode, BATCHES)
    want = _rows(DeltaTable(str(tmp_path / "delta" / "shop" / "people"))
                 .to_pyarrow_table().to_pylist(), KEYS[mode])
    got = _rows(target.rows("people", bookkeeping=True), KEYS[mode])
    assert got == want
    if mode == "scd1":
        current = {r["__hw_id"]: r for r in target.rows("people", bookkeeping=True)}
        assert set(current) == {'{"$oid":"000000000000000000000001"}',
                                '{"$oid":"000000000000000000000002"}', '"3"'}
        one = current['{"$oid":"000000000000000000000001"}']
        assert one["tags"] == '["a","B"]' and one["sub"] == '{"x":1,"y":"new"}'
        two = current['{"$oid":"000000000000000000000002"}']
        assert (two["n"], two["name"], _norm(two["flag"])) == (5, None, 1)
    # the declared types read back as the types the rows were written from
    jdbc = JdbcTarget(config(target, tmp_path, mode))
    probe = JdbcDocuments._changes(decode_documents(TOPIC, [(0, *BATCHES[0][0])]))
    types = jdbc.column_types(probe)
    assert types["n"] == pa.int64() and types["tags"] == pa.string()
    assert types["sub"] == pa.string() and types["bin"] == pa.binary()
    assert pa.types.is_timestamp(types["at"])


def _evolution_batches() -> list[Records]:
    """A first document, one with a new field, one that widens a field (long -> double)."""
    return [[event("c", 1, 100, after={"v": 1})],
            [event("c", 2, 200, after={"v": 2, "extra": "x"})],
            [event("c", 3, 300, after={"v": 3.5, "extra": "y"})]]


def _retype_batches() -> list[Records]:
    return [[event("c", 1, 100, after={"v": 1}), event("c", 2, 100, after={"v": 2})],
            [event("c", 3, 200, after={"v": 2.5})],  # long -> double
            [event("u", 1, 300, after={"v": "one"})]]  # double -> string


@pytest.mark.parametrize("mode", ["scd1", "scd2", "changelog"])
def test_a_field_whose_type_changes_is_recomputed_from_the_stored_documents(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path, mode: str) -> None:
    writer = _jdbc(target, jdbc_spark, tmp_path, mode)
    batches = _retype_batches()
    _run(writer, mode, batches[:2])
    probe = JdbcDocuments._changes(decode_documents(TOPIC, [(0, *batches[0][0])]))
    assert writer.jdbc.column_types(probe)["v"] == pa.float64()
    rows = target.rows("people", bookkeeping=True)
    assert sorted(r["v"] for r in rows) == [1.0, 2.0, 2.5]
    assert all(isinstance(r["v"], float) for r in rows)
    _run(writer, mode, batches[2:], first_batch=2)
    assert writer.jdbc.column_types(probe)["v"] == pa.string()
    rows = target.rows("people", bookkeeping=True)
    if mode == "scd2":
        rows = [r for r in rows if r["__END_AT"] is None]
    want = ["1", "2", "2.5", "one"] if mode == "changelog" else ["2", "2.5", "one"]
    assert sorted(r["v"] for r in rows) == want


class Crash(Exception):
    pass


def test_a_crash_in_the_middle_of_a_type_change_is_finished_on_restart(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after the column's new type (MariaDB: committed, its values NULL) and before
    its values are recomputed: the pending retype in the state table is finished by the
    next run, whose batch then applies."""
    batches = _retype_batches()
    _run(_jdbc(target, jdbc_spark, tmp_path, "scd1"), "scd1", batches[:1])

    def crash(self: JdbcTarget, point: str) -> None:
        if point == "retyped":
            raise Crash(point)

    with monkeypatch.context() as m:
        m.setattr(JdbcTarget, "_fault", crash)
        with pytest.raises(Crash):
            _run(_jdbc(target, jdbc_spark, tmp_path, "scd1"), "scd1", batches[1:2], 1)
    _, pending = target.query(f"SELECT slot FROM {_q(target, STATE)} WHERE kind = 'retype'")
    assert pending == [("v",)]
    if target.kind == "mariadb":  # the ALTER committed: the column is new and empty
        assert [r["v"] for r in target.rows("people")] == [None, None]
    _run(_jdbc(target, jdbc_spark, tmp_path, "scd1"), "scd1", batches[1:2], 1)
    assert sorted(r["v"] for r in target.rows("people")) == [1.0, 2.0, 2.5]
    _, pending = target.query(f"SELECT slot FROM {_q(target, STATE)} WHERE kind = 'retype'")
    assert pending == []


def _q(target: TargetDb, name: str) -> str:
    q = '"' if target.kind == "postgres" else "`"
    return f"{q}{target.schema}{q}.{q}{name}{q}"


def test_schema_evolution_modes_for_documents(
        target: TargetDb, jdbc_spark: Any, tmp_path: Path) -> None:
    """`ignore` leaves new fields out and still widens a type; `fail` refuses both, and the
    batch is not applied (a later run with `evolve` applies it)."""
    from headwater.pipeline.delta_target import SchemaEvolutionError

    def writer(evolution: str) -> JdbcDocuments:
        return JdbcDocuments(JdbcTarget(config(target, tmp_path, "scd1", evolution), jdbc_spark),
                             DocumentOptions())

    first, new_field, wider = _evolution_batches()
    _run(writer("evolve"), "scd1", [first])
    with pytest.raises(SchemaEvolutionError, match="extra"):
        _run(writer("fail"), "scd1", [new_field], first_batch=1)
    assert [r["_id"] for r in target.rows("people")] == [1]
    _run(writer("ignore"), "scd1", [new_field, wider], first_batch=1)
    rows = {r["_id"]: r for r in target.rows("people")}
    assert "extra" not in rows[1]
    assert {k: r["v"] for k, r in rows.items()} == {1: 1.0, 2: 2.0, 3: 3.5}
    with pytest.raises(SchemaEvolutionError, match="v"):
        _run(writer("fail"), "scd1", [[event("c", 4, 400, after={"v": "four"})]], first_batch=3)
    _run(writer("evolve"), "scd1", [[event("c", 4, 400, after={"v": "four"})]], first_batch=3)
    assert sorted(r["v"] for r in target.rows("people")) == ["1", "2", "3.5", "four"]
