"""The document path's pure parts, without Spark or Delta: MongoDB event order, patches from
updateDescription, column types inferred from Extended JSON, and the per-document fold."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from headwater.connectors.mongodb.ordering import MONGODB_ORDER
from headwater.pipeline.documents import ejson, shapes
from headwater.pipeline.documents.events import decode_documents, dedup
from headwater.pipeline.documents.fold import Base, fold
from headwater.pipeline.documents.options import DocumentOptions
from headwater.pipeline.documents.patch import Update, apply_update, parse_update
from tests.pipeline.mongo_events import TOPIC, event, oid, source, tombstone

STRUCT = DocumentOptions()
JSON = DocumentOptions(nested="json")


def seq(ts_ms: int, ord: int = 1, snapshot: str = "false", offset: int = 0,
        total_order: int | None = None) -> str:
    return MONGODB_ORDER.sequence(source(ts_ms, ord, snapshot), total_order, offset)


# -- order --------------------------------------------------------------------------------------
def test_stream_order_is_time_then_increment_then_transaction_then_offset() -> None:
    ordered = [seq(1000, 1), seq(1000, 2), seq(1000, 300), seq(1001, 0), seq(2**40, 0),
               seq(2**40, 0, total_order=2), seq(2**40, 0, total_order=3, offset=1),
               seq(2**40, 0, total_order=3, offset=7)]
    assert sorted(ordered) == ordered
    assert len({len(s) for s in ordered}) == 1


@pytest.mark.parametrize("marker", ["true", "last", "first", "incremental"])
def test_snapshot_reads_rank_at_their_read_time_below_stream_events_of_that_time(
        marker: str) -> None:
    read = seq(5000, 77, marker, offset=9)
    assert seq(4999, 900) < read < seq(5000, 0) < seq(5001, 0)
    assert read == seq(5000, -1, marker, offset=9)  # the read's ord means nothing


def test_position_tells_redeliveries_from_changes() -> None:
    a, b = source(1000, 1), source(1000, 2)
    assert MONGODB_ORDER.position(a) == MONGODB_ORDER.position(source(1000, 1))
    assert MONGODB_ORDER.position(a) != MONGODB_ORDER.position(b)


# -- patches -----------------------------------------------------------------------------------
DOC: dict[str, Any] = {"_id": 1, "a": {"b": 1, "c": [1, 2, 3, 4]}, "name": "x",
                       "arr": [{"k": 1}, {"k": 2}]}


def test_patch_sets_dotted_paths_creates_parents_and_array_elements() -> None:
    out = apply_update(DOC, Update({"a.b": 2, "a.d.e": "new", "arr.1.k": 9, "arr.3": 5,
                                    "name": {"$date": "2024-01-01T00:00:00Z"}}, (), ()))
    assert out == {"_id": 1, "a": {"b": 2, "c": [1, 2, 3, 4], "d": {"e": "new"}},
                   "name": {"$date": "2024-01-01T00:00:00Z"},
                   "arr": [{"k": 1}, {"k": 9}, None, 5]}
    assert DOC["a"] == {"b": 1, "c": [1, 2, 3, 4]} and DOC["arr"][1] == {"k": 2}  # untouched


def test_patch_removes_fields_and_nulls_removed_array_elements() -> None:
    out = apply_update(DOC, Update({}, ("name", "a.b", "arr.0", "missing.path"), ()))
    assert out == {"_id": 1, "a": {"c": [1, 2, 3, 4]}, "arr": [None, {"k": 2}]}


def test_patch_truncates_arrays_before_setting_elements() -> None:
    update = parse_update({"updatedFields": '{"a.c.1": 20, "a.c.2": 30}', "removedFields": None,
                           "truncatedArrays": [{"field": "a.c", "size": 2}]})
    assert apply_update(DOC, update)["a"]["c"] == [1, 20, 30]


# -- types ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "arrow", "python"), [
    ({"$oid": "65f0c0ffee00000000000001"}, pa.string(), "65f0c0ffee00000000000001"),
    ({"$date": "2024-01-02T03:04:05.678Z"}, shapes.TIMESTAMP,
     datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)),
    ({"$date": {"$numberLong": "-62135596800000"}}, shapes.TIMESTAMP,
     datetime(1, 1, 1, tzinfo=UTC)),
    ({"$numberDecimal": "12.340"}, pa.string(), "12.340"),
    ({"$numberLong": "9223372036854775807"}, pa.int64(), 2**63 - 1),
    (42, pa.int64(), 42), (1.5, pa.float64(), 1.5), (True, pa.bool_(), True),
    ({"$numberDouble": "Infinity"}, pa.float64(), float("inf")),
    ({"$binary": {"base64": "AQID", "subType": "00"}}, pa.binary(), b"\x01\x02\x03"),
    ({"$timestamp": {"t": 10, "i": 1}}, shapes.TIMESTAMP, datetime(1970, 1, 1, 0, 0, 10,
                                                                   tzinfo=UTC)),
    ({"$regularExpression": {"pattern": "a", "options": ""}}, pa.string(),
     '{"$regularExpression":{"pattern":"a","options":""}}'),
])
def test_scalar_types(value: Any, arrow: pa.DataType, python: Any) -> None:
    assert shapes.infer(value, STRUCT) == arrow
    assert ejson.conform(value, arrow) == python


def test_nested_documents_and_arrays_as_structs_or_json() -> None:
    docs = [{"_id": 1, "a": {"b": 1, "t": ["x"]}}, {"_id": 2, "a": {"b": 2.5, "c": None}}]
    cols = shapes.columns(docs, STRUCT)
    final = shapes.finalize(cols["a"])
    assert final == pa.struct([("b", pa.float64()), ("t", pa.list_(pa.string()))])
    assert ejson.conform(docs[1]["a"], final) == {"b": 2.5, "t": None}
    assert shapes.columns(docs, JSON)["a"] == pa.string()
    assert ejson.conform(docs[0]["a"], pa.string()) == '{"b":1,"t":["x"]}'


def test_shape_conflicts_fall_back_to_extended_json_text() -> None:
    docs: list[dict[str, Any]] = [
        {"v": 1}, {"v": "one"}, {"v": {"$oid": "65f0c0ffee00000000000001"}},
        {"v": {"x": 1}}, {"v": {"$date": "2024-01-01T00:00:00Z"}}]
    typ = shapes.columns(docs, STRUCT)["v"]
    assert typ == pa.string()
    assert [ejson.conform(d["v"], typ) for d in docs] == [
        "1", "one", "65f0c0ffee00000000000001", '{"x":1}', '{"$date":"2024-01-01T00:00:00Z"}']


def test_join_is_order_independent_and_widens_numbers() -> None:
    types = [pa.null(), pa.int64(), pa.float64(), pa.struct([("a", pa.int64())]),
             pa.list_(pa.null()), pa.string(), pa.list_(pa.int64())]
    for a in types:
        for b in types:
            assert shapes.merge(a, b) == shapes.merge(b, a) or (
                pa.types.is_struct(a) and pa.types.is_struct(b))
    assert shapes.merge(pa.int64(), pa.float64()) == pa.float64()
    assert shapes.finalize(shapes.merge(pa.list_(pa.int64()), pa.list_(pa.null()))) == \
        pa.list_(pa.int64())
    assert shapes.finalize(pa.struct([("a", pa.null())])) is None


def test_flatten_struct_as_extract_new_document_state() -> None:
    opts = DocumentOptions(flatten_struct=True, delimiter="__")
    doc = {"_id": 1, "a": {"b": {"c": 1}, "d": [{"e": 1}]}, "f": {"$oid": "0" * 24}}
    assert shapes.fields(doc, opts) == {"_id": 1, "a__b__c": 1, "a__d": [{"e": 1}],
                                        "f": {"$oid": "0" * 24}}


# -- events and fold -----------------------------------------------------------------------------
def test_decode_and_fold_patches_on_batch_and_target_states() -> None:
    records = [event("c", oid(1), 100, after={"n": 1, "s": "a"}),
               event("u", oid(1), 200, updated={"n": 2}),
               event("u", oid(1), 200, updated={"n": 2}),  # re-delivered
               event("u", oid(1), 300, removed=["s"]),
               event("d", oid(2), 400), tombstone(oid(2)),
               event("u", oid(3), 500, updated={"n": 7})]
    batch = decode_documents(TOPIC, [(i, k, v) for i, (k, v) in enumerate(records)])
    assert (batch.db, batch.collection) == ("shop", "people")
    events = dedup(batch.events)
    assert [e.offset for e in events] == [0, 1, 3, 4, 6]
    one = fold('{"$oid":"000000000000000000000001"}', [e for e in events if e.offset < 4])
    assert [r.doc for r in one.resolved] == [
        {"_id": oid(1), "n": 1, "s": "a"}, {"_id": oid(1), "n": 2, "s": "a"},
        {"_id": oid(1), "n": 2}]
    three = [e for e in events if e.offset == 6]
    # against the target's row, newer than nothing in the batch
    based = fold("3", three, [Base(seq(450), {"_id": 3, "n": 1, "x": True})])
    assert based.resolved[-1].doc == {"_id": 3, "n": 7, "x": True} and based.unbased == 0
    # a delete in between: the patch has no state to apply to
    gone = fold("3", three, [Base(seq(450), None)])
    assert gone.resolved[-1].doc == {"_id": 3, "n": 7} and gone.unbased == 1
    # a late full image (older than the target's row) is not the patch's base
    late = decode_documents(TOPIC, [(10, *event("c", 3, 420, after={"n": 0}))]).events
    out = fold("3", [*late, *three], [Base(seq(450), {"_id": 3, "n": 1, "x": True})])
    assert out.resolved[-1].doc == {"_id": 3, "n": 7, "x": True}
    # a late patch before the target's row: applied to nothing, but superseded by the row
    early = decode_documents(TOPIC, [(11, *event("u", 3, 420, updated={"n": 0}))]).events
    out = fold("3", [*early, *three], [Base(seq(450), {"_id": 3, "n": 1, "x": True})])
    assert out.resolved[-1].doc == {"_id": 3, "n": 7, "x": True} and out.unbased == 0


def test_two_changes_in_one_transaction_are_not_taken_for_a_redelivery() -> None:
    a = event("u", 1, 100, updated={"n": 1})
    b = event("u", 1, 100, updated={"n": 2})  # same cluster time, same txn position
    events = decode_documents(TOPIC, [(0, *a), (1, *b), (2, *a)]).events
    assert [e.offset for e in dedup(events)] == [0, 1]


@pytest.mark.parametrize("mode", ["scd1", "scd2"])
def test_a_crash_between_a_batch_commits_never_forgets_its_deletes(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """Killed after the first of a batch's commits, the replayed batch still remembers its
    delete: a later, older full image does not bring the document back."""
    from headwater.pipeline.delta_target import DeltaTarget, read_table
    from headwater.pipeline.documents.delta import DocumentTarget
    from tests.unit.test_delta_target import Crash, crash_after_first_commit

    def apply(batch_id: int, *records: tuple[bytes, bytes], first: int) -> None:
        target = DocumentTarget(DeltaTarget(tmp_path, "p"), DocumentOptions())
        batch = decode_documents(TOPIC, [(first + i, k, v) for i, (k, v) in enumerate(records)])
        getattr(target, f"apply_{mode}")(batch, batch_id)

    apply(0, event("c", 1, 100, after={"n": 1}), event("c", 2, 100, after={"n": 2}), first=0)
    with monkeypatch.context() as m:
        crash_after_first_commit(m)
        with pytest.raises(Crash):
            apply(1, event("d", 1, 300), first=2)
    apply(1, event("d", 1, 300), first=2)  # the replay
    apply(2, event("c", 1, 200, after={"n": 9}), first=3)  # late: before the delete
    rows = read_table(tmp_path / "shop" / "people").to_pylist()
    if mode == "scd2":
        rows = [r for r in rows if r["__END_AT"] is None]
    assert sorted(r["n"] for r in rows) == [2]
