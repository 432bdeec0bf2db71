"""MongoDB topics through the real pipeline (Spark streaming query, Delta tables): SCD1 with
full images, patches, deletes, re-deliveries, late events and schema evolution; SCD2
versions; the changelog.  The events are Debezium 3.x MongoDB events written by hand
(`mongo_events`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.runner import start
from tests.pipeline.mongo_events import event, oid, tombstone, write

pytestmark = pytest.mark.integration

AT = {"$date": "2024-01-02T03:04:05.678Z"}


def config(tmp: Path, mode: str = "scd1", **extra: Any) -> PipelineConfig:
    return PipelineConfig(topic_prefix="m", topics_dir=tmp / "topics", delta_path=tmp / "delta",
                          checkpoint_dir=tmp / "checkpoint", topics_glob="m.*", mode=mode,
                          pipeline_id="test", **extra)


def run_once(spark: Any, cfg: PipelineConfig) -> None:
    query = start(spark, cfg, once=True)
    query.awaitTermination()
    assert query.exception() is None


def table(tmp: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = read_table(tmp / "delta" / "shop" / "people").to_pylist()
    return rows


def by_id(rows: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    return {r["_id"]: r for r in rows}


def as_rows(docs: dict[str, dict[str, Any]], columns: list[str]) -> dict[str, dict[str, Any]]:
    """Expected documents as the table's rows: every column, null where the field is absent."""
    return {k: {c: d.get(c) for c in columns} for k, d in docs.items()}


def test_scd1_documents_patches_deletes_late_events_and_schema_evolution(
        tmp_path: Path, spark: Any) -> None:
    from datetime import UTC, datetime

    at = datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    one, two, three, four, five = oid(1), oid(2), oid(3), oid(4), oid(5)
    patch = event("u", one, 2000, updated={"addr.city": "Bergen", "age": 31}, removed=["name"],
                  truncated=[("tags", 1)])
    write(tmp_path / "topics", [
        event("r", one, 1000, snapshot="true", after={
            "name": "Ann", "age": 30, "tags": ["a", "b", "c"],
            "addr": {"city": "Oslo", "zip": "0150"}, "at": AT}),
        event("r", two, 1000, snapshot="last", after={"name": "Bob", "age": 40}),
        event("c", three, 1500, after={"name": "Cy", "age": 25}),
        event("c", five, 1600, after={"age": 50, "tags": []}),  # untouched by the second run
        patch,
        event("u", two, 900, after={"name": "Bob-old", "age": 39}),  # before the read: loses
        event("d", three, 2500), tombstone(three),
        event("c", three, 1400, after={"name": "Cy-late", "age": 1}),  # older than the delete
        patch,  # re-delivered
    ])
    cfg = config(tmp_path)
    run_once(spark, cfg)
    rows = table(tmp_path)
    columns = list(rows[0])
    assert sorted(columns) == ["_id", "addr", "age", "at", "name", "tags"]
    assert by_id(rows) == as_rows({
        one["$oid"]: {"_id": one["$oid"], "age": 31, "tags": ["a"],
                          "addr": {"city": "Bergen", "zip": "0150"}, "at": at},
        two["$oid"]: {"_id": two["$oid"], "name": "Bob", "age": 40},
        five["$oid"]: {"_id": five["$oid"], "age": 50, "tags": []},
    }, columns)

    write(tmp_path / "topics", [
        event("u", one, 3000, updated={"nick": "A", "age": "thirty-two"}),  # new field, new type
        event("u", two, 3000, after={"name": "Bob", "age": 41,
                                     "extra": {"$numberDecimal": "2.50"}}),
        event("u", one, 1800, updated={"age": 0, "name": "late"}),  # older than the row: lost
        event("c", three, 2400, after={"name": "Cy-again"}),  # older than the remembered delete
        event("c", four, 3100, after={"name": "Di", "addr": {"city": "Rome", "floor": 3}}),
    ])
    run_once(spark, cfg)
    rows = table(tmp_path)
    columns = list(rows[0])
    assert sorted(columns) == ["_id", "addr", "age", "at", "extra", "name", "nick", "tags"]
    assert by_id(rows) == as_rows({
        one["$oid"]: {"_id": one["$oid"], "age": "thirty-two", "tags": ["a"],
                      "addr": {"city": "Bergen", "zip": "0150", "floor": None}, "at": at,
                      "nick": "A"},
        two["$oid"]: {"_id": two["$oid"], "name": "Bob", "age": "41", "extra": "2.50"},
        four["$oid"]: {"_id": four["$oid"], "name": "Di",
                       "addr": {"city": "Rome", "zip": None, "floor": 3}},
        # the type conflict rewrote the column: its long became its Extended JSON text
        five["$oid"]: {"_id": five["$oid"], "age": "50", "tags": []},
    }, columns)


def test_scd2_versions_of_documents(tmp_path: Path, spark: Any) -> None:
    write(tmp_path / "topics", [
        event("c", 7, 100, after={"name": "Ann", "city": "Oslo", "visits": 0}),
        event("u", 7, 200, updated={"city": "Bergen"}),
        event("u", 7, 300, updated={"visits": 5}),  # untracked: in place
        event("d", 7, 400), tombstone(7),
        event("c", 7, 500, after={"name": "Ann", "city": "Rome"}),
        event("c", 8, 150, after={"name": "Bob", "city": "Nice"}),
    ])
    run_once(spark, config(tmp_path, "scd2",
                           track_history_except_column_list=("visits",)))
    rows = sorted(table(tmp_path), key=lambda r: (r["_id"], r["__START_AT"]))
    got = [(r["_id"], r["city"], r["visits"], r["__END_AT"] is None) for r in rows]
    assert got == [(7, "Oslo", 0, False), (7, "Bergen", 5, False), (7, "Rome", None, True),
                   (8, "Nice", None, True)]
    assert rows[0]["__END_AT"] == rows[1]["__START_AT"]


def test_changelog_of_documents_with_nested_values_as_json(tmp_path: Path, spark: Any) -> None:
    write(tmp_path / "topics", [
        event("c", "a", 100, after={"n": {"x": [1, 2]}}),
        event("u", "a", 200, updated={"n.x.0": 5}),
        event("d", "a", 300, before={"_id": "a", "n": {"x": [5, 2]}}), tombstone("a"),
    ])
    run_once(spark, config(tmp_path, "changelog", documents=DocumentOptions(nested="json")))
    rows = sorted(table(tmp_path), key=lambda r: r["__offset"])
    assert [(r["__op"], r["_id"], r["n"]) for r in rows] == [
        ("c", "a", '{"x":[1,2]}'), ("u", "a", None), ("d", "a", '{"x":[5,2]}')]
