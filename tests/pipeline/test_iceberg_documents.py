"""MongoDB documents into Iceberg (`documents.iceberg`), driven with hand-made Debezium MongoDB
events (the JDBC document test's batches): the three modes equal to the Delta document table,
a field whose type changes (long -> double -> string) recomputed from `__hw_doc` by add, fill
and swap, and a crash in the middle of that finished on restart.  A real local Spark session
with Iceberg's runtime and a Hadoop catalog in a temporary directory."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from headwater.pipeline.delta_target import DeltaTarget
from headwater.pipeline.documents.delta import DocumentTarget
from headwater.pipeline.documents.iceberg import RETYPE, IcebergDocuments
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.iceberg_target import IcebergTarget
from tests.pipeline.mongo_events import event
from tests.pipeline_jdbc.test_jdbc_documents import (
    BATCHES,
    KEYS,
    _evolution_batches,
    _retype_batches,
    _run,
)

pytestmark = pytest.mark.integration


def _writer(spark: Any, tmp: Path, catalog: str) -> IcebergDocuments:
    return IcebergDocuments(IcebergTarget(spark, tmp / "iceberg", catalog, "p"),
                            DocumentOptions())


def _catalog() -> str:
    return f"icedoc_{uuid.uuid4().hex[:12]}"


def _table(spark: Any, catalog: str) -> pa.Table:
    return spark.table(f"{catalog}.shop.people").toArrow()


def _norm(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v.astimezone(dt.UTC)
    return v


def _rows(rows: list[dict[str, Any]], keys: tuple[str, ...]
          ) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(r[k] for k in keys): {n: _norm(v) for n, v in r.items() if v is not None}
            for r in rows}


@pytest.mark.parametrize("mode", ["scd1", "scd2", "changelog"])
def test_documents_equal_the_delta_document_table(spark: Any, tmp_path: Path, mode: str) -> None:
    catalog = _catalog()
    _run(_writer(spark, tmp_path, catalog), mode, BATCHES)
    _run(_writer(spark, tmp_path, catalog), mode, BATCHES)  # replayed: every batch skipped
    delta = DocumentTarget(DeltaTarget(tmp_path / "delta", "p"), DocumentOptions(nested="json"))
    _run(delta, mode, BATCHES)
    want = DeltaTable(str(tmp_path / "delta" / "shop" / "people")).to_pyarrow_table()
    got = _table(spark, catalog)
    assert _rows(got.to_pylist(), KEYS[mode]) == _rows(want.to_pylist(), KEYS[mode])
    assert got.column_names == want.column_names  # the same layout, in the same order
    types = {f.name: f.type for f in got.schema}
    assert types["n"] == pa.int64() and types["tags"] == pa.string()
    assert types["sub"] == pa.string() and types["bin"] == pa.binary()
    assert pa.types.is_timestamp(types["at"])
    if mode == "scd1":
        current = {r["__hw_id"]: r for r in got.to_pylist()}
        assert set(current) == {'{"$oid":"000000000000000000000001"}',
                                '{"$oid":"000000000000000000000002"}', '"3"'}
        one = current['{"$oid":"000000000000000000000001"}']
        assert one["tags"] == '["a","B"]' and one["sub"] == '{"x":1,"y":"new"}'


@pytest.mark.parametrize("mode", ["scd1", "scd2", "changelog"])
def test_a_field_whose_type_changes_is_recomputed_from_the_stored_documents(
        spark: Any, tmp_path: Path, mode: str) -> None:
    catalog = _catalog()
    batches = _retype_batches()
    _run(_writer(spark, tmp_path, catalog), mode, batches[:2])
    got = _table(spark, catalog)
    assert got.schema.field("v").type == pa.float64()
    assert sorted(got.column("v").to_pylist()) == [1.0, 2.0, 2.5]
    _run(_writer(spark, tmp_path, catalog), mode, batches[2:], first_batch=2)
    got = _table(spark, catalog)
    assert got.schema.field("v").type == pa.string()
    assert not [n for n in got.column_names if n.startswith(RETYPE)]
    rows = got.to_pylist()
    if mode == "scd2":
        rows = [r for r in rows if r["__END_AT"] is None]
    want = ["1", "2", "2.5", "one"] if mode == "changelog" else ["2", "2.5", "one"]
    assert sorted(r["v"] for r in rows) == want
    # the retyped column stays where it was, and the table equals Delta's document table
    delta = DocumentTarget(DeltaTarget(tmp_path / "delta", "p"), DocumentOptions(nested="json"))
    _run(delta, mode, batches[:2])  # (the same runs: the sequences end with the offsets)
    _run(delta, mode, batches[2:], first_batch=2)
    want_table = DeltaTable(str(tmp_path / "delta" / "shop" / "people")).to_pyarrow_table()
    assert got.column_names == want_table.column_names
    assert _rows(got.to_pylist(), KEYS[mode]) == _rows(want_table.to_pylist(), KEYS[mode])


class Crash(Exception):
    pass


@pytest.mark.parametrize("point", ["retype-added", "retype-filled"])
def test_a_crash_in_the_middle_of_a_type_change_is_finished_on_restart(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """Killed after the new column is added (its values null) or filled (the old column still
    there): the `__hw_retype_v` column is the pending retype, finished by the next run before
    its batch applies."""
    catalog = _catalog()
    batches = _retype_batches()
    _run(_writer(spark, tmp_path, catalog), "scd1", batches[:1])

    def crash(self: IcebergDocuments, at: str) -> None:
        if at == point:
            raise Crash(at)

    with monkeypatch.context() as m:
        m.setattr(IcebergDocuments, "_fault", crash)
        with pytest.raises(Crash):
            _run(_writer(spark, tmp_path, catalog), "scd1", batches[1:2], 1)
    got = _table(spark, catalog)
    assert got.schema.field("v").type == pa.int64()  # not swapped yet
    assert got.schema.field(RETYPE + "v").type == pa.float64()
    filled = got.column(RETYPE + "v").to_pylist()
    assert filled == ([None, None] if point == "retype-added" else [1.0, 2.0])
    _run(_writer(spark, tmp_path, catalog), "scd1", batches[1:2], 1)
    got = _table(spark, catalog)
    assert got.schema.field("v").type == pa.float64()
    assert sorted(got.column("v").to_pylist()) == [1.0, 2.0, 2.5]
    assert RETYPE + "v" not in got.column_names


def test_schema_evolution_modes_for_documents(spark: Any, tmp_path: Path) -> None:
    """`ignore` leaves new fields out and still widens a type; `fail` refuses both, and the
    batch is not applied (a later run with `evolve` applies it)."""
    from headwater.pipeline.delta_target import SchemaEvolutionError

    catalog = _catalog()

    def writer(evolution: str) -> IcebergDocuments:
        return IcebergDocuments(IcebergTarget(spark, tmp_path / "iceberg", catalog, "p",
                                              schema_evolution=evolution), DocumentOptions())

    first, new_field, wider = _evolution_batches()
    _run(writer("evolve"), "scd1", [first])
    with pytest.raises(SchemaEvolutionError, match="extra"):
        _run(writer("fail"), "scd1", [new_field], first_batch=1)
    assert _table(spark, catalog).column("_id").to_pylist() == [1]
    _run(writer("ignore"), "scd1", [new_field, wider], first_batch=1)
    got = _table(spark, catalog)
    assert "extra" not in got.column_names
    assert dict(zip(got.column("_id").to_pylist(), got.column("v").to_pylist(),
                    strict=True)) == {1: 1.0, 2: 2.0, 3: 3.5}
    four = [[event("c", 4, 400, after={"v": "four"})]]
    with pytest.raises(SchemaEvolutionError, match="v"):
        _run(writer("fail"), "scd1", four, first_batch=3)
    _run(writer("evolve"), "scd1", four, first_batch=3)
    assert sorted(_table(spark, catalog).column("v").to_pylist()) == ["1", "2", "3.5", "four"]
