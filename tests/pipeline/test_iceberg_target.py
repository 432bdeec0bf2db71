"""The Iceberg target (pipeline/iceberg_target.py) against the delta-rs target, the pipeline's
reference: the same tables from the same duplicated and reordered batches, deletes, a
truncate, each batch once across replays and a crash between its commits, changelog rows,
new source columns.  A real local Spark session with Iceberg's runtime and a Hadoop catalog
in a temporary directory; the tables are read back with Spark."""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.pipeline import columnar
from headwater.pipeline.decode import TableChanges, decode_topic
from headwater.pipeline.delta_target import DeltaTarget, read_table
from headwater.pipeline.iceberg_target import IcebergTarget
from headwater.pipeline.net import net_changes
from headwater.pipeline.source import read_range
from tests.pipeline.test_columnar import (
    ROW_FIELDS,
    TOPIC,
    document,
    f,
    pg_source,
    row,
    scd2_workload,
    workload,
    write,
)
from tests.unit.test_delta_target import Crash

pytestmark = pytest.mark.integration


def catalog() -> str:
    return f"ice_{uuid.uuid4().hex[:12]}"


def iceberg(spark: Any, root: Path) -> IcebergTarget:
    """A target on its own warehouse; the catalog's name is the warehouse's (a session keeps
    a catalog once loaded, and the tests share one session)."""
    return IcebergTarget(spark, root, catalog(), "p")


def table(spark: Any, target: IcebergTarget, hw: bool = False) -> list[dict[str, Any]]:
    """The Iceberg table `public.t` as rows, sorted by id (and a changelog's offset, a
    history's start), without `__hw_` columns unless `hw`."""
    rows = spark.table(f"{target.catalog}.public.t").toArrow()
    keep = [n for n in rows.column_names if hw or not n.startswith("__hw_")]
    return sorted(rows.select(keep).to_pylist(),
                  key=lambda r: (r["id"] is None, r["id"], r.get("__offset", 0),
                                 r.get("__START_AT", "")))


def snapshots(spark: Any, target: IcebergTarget) -> list[tuple[str, dict[str, str]]]:
    found = spark.sql(f"SELECT operation, summary FROM {target.catalog}.public.t.snapshots "
                      "ORDER BY committed_at").collect()
    return [(r.operation, dict(r.summary)) for r in found]


def net(root: Path, a: int, b: int) -> columnar.ColumnarChanges:
    ch = columnar.decode_net(TOPIC, columnar.scan(root, TOPIC, a, b, columnar.Positions()))
    assert ch is not None
    return ch


def by_events(target: DeltaTarget | IcebergTarget, changes: TableChanges, batch: int) -> None:
    found, truncate = net_changes(changes.events, "public.t")
    target.apply_scd1(changes, found, truncate, batch)


def reference(root: Path, bounds: list[int]) -> list[dict[str, Any]]:
    """The delta-rs target's table from the same batches, event by event, as rows by id."""
    ref = DeltaTarget(root / "ref", "p")
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        by_events(ref, decode_topic(TOPIC, list(read_range(root / "topics", TOPIC, a, b))),
                  batch)
    return sorted(read_table(root / "ref" / "public" / "t").to_pylist(),
                  key=lambda r: (r["id"] is None, r["id"]))


def test_duplicated_reordered_net_changes_equal_the_reference_and_replays_apply_once(
        tmp_path: Path, spark: Any) -> None:
    """A duplicated, reordered workload with deletes and unchanged-TOAST updates, in three
    batches (column-wise, event by event, column-wise), each applied twice: the table equals
    the delta-rs reference, and a replay commits no snapshot."""
    records = workload(random.Random(11), mysql=False, n=240, toast=True)
    write(tmp_path / "topics", records)
    bounds = [0, 110, 200, len(records)]
    target = iceberg(spark, tmp_path / "ice")
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        for replay in (False, True):
            before = len(snapshots(spark, target)) if replay else -1
            if batch == 1:
                changes = decode_topic(TOPIC, list(read_range(tmp_path / "topics", TOPIC, a, b)))
                by_events(target, changes, batch)
            else:
                target.apply_scd1_net(net(tmp_path / "topics", a, b), batch)
            assert not replay or len(snapshots(spark, target)) == before, "replay committed"
    want = reference(tmp_path, bounds)
    assert len(want) > 5
    assert table(spark, target) == want
    marks = [(s.get("headwater.pipeline"), s.get("headwater.batch"))
             for _op, s in snapshots(spark, target)]
    assert marks == [("p", "0"), ("p", "1"), ("p", "2")], marks
    deletes = [s for op, s in snapshots(spark, target) if int(s.get("added-delete-files", 0))]
    assert deletes, "no batch wrote a row-level delete file (merge-on-read)"


def test_truncate_drops_older_rows_and_keeps_out_late_ones(tmp_path: Path, spark: Any) -> None:
    """Rows before a truncate go with it, rows after stay; an upsert older than the
    truncate arriving in a later batch stays out (the remembered truncate)."""
    rng = random.Random(3)
    records = [document("c", 1, row(rng, 1), pg_source(100, 95)),
               document("c", 2, row(rng, 2), pg_source(110, 105)),
               document("t", 1, None, pg_source(200, 195)),
               document("c", 3, row(rng, 3), pg_source(210, 205)),
               document("u", 2, row(rng, 2), pg_source(150, 145)),  # late: before the truncate
               document("c", 4, row(rng, 4), pg_source(300, 295))]
    write(tmp_path / "topics", records)
    bounds = [0, 2, 4, len(records)]
    target = iceberg(spark, tmp_path / "ice")
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        by_events(target, decode_topic(TOPIC, list(read_range(tmp_path / "topics", TOPIC, a, b))),
                  batch)
    got = table(spark, target)
    assert [r["id"] for r in got] == [3, 4]
    assert got == reference(tmp_path, bounds)


def crash_after_state_commit(target: IcebergTarget, m: pytest.MonkeyPatch) -> None:
    def crash(*_args: Any, **_kwargs: Any) -> None:
        raise Crash
    m.setattr(target, "_merge_table", crash)


def crash_after_table_commit(target: IcebergTarget, m: pytest.MonkeyPatch) -> None:
    merge = target._merge_table

    def commit_then_crash(*args: Any, **kwargs: Any) -> None:
        merge(*args, **kwargs)
        raise Crash
    m.setattr(target, "_merge_table", commit_then_crash)


@pytest.mark.parametrize("crash", [crash_after_state_commit, crash_after_table_commit],
                         ids=["after-state-commit", "after-table-commit"])
def test_a_crash_at_each_commit_step_applies_the_batch_once(
        tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch,
        crash: Callable[[IcebergTarget, pytest.MonkeyPatch], None]) -> None:
    """A batch killed after its state commit (delete remembered, table not merged) or after
    the table's commit, then replayed by a new target: the delete is applied once and
    remembered, so a later, older upsert of the deleted key stays out."""
    rng = random.Random(5)
    records = [document("c", 1, row(rng, 1), pg_source(100, 95)),
               document("c", 2, row(rng, 2), pg_source(110, 105)),
               document("d", 1, row(rng, 1), pg_source(300, 295)),
               document("u", 1, row(rng, 1), pg_source(200, 195))]  # late: before the delete
    write(tmp_path / "topics", records)
    root = tmp_path / "ice"
    first = iceberg(spark, root)
    first.apply_scd1_net(net(tmp_path / "topics", 0, 2), 0)
    with monkeypatch.context() as m:
        crash(first, m)
        with pytest.raises(Crash):
            first.apply_scd1_net(net(tmp_path / "topics", 2, 3), 1)
    assert spark.conf.get("spark.sql.iceberg.snapshot-property.headwater.batch", None) is None
    state = spark.table(f"{first.catalog}._headwater_state.public.t").collect()
    assert [(r.key, r.kind) for r in state] == [("[1]", "delete")]
    restarted = IcebergTarget(spark, root, first.catalog, "p")
    restarted.apply_scd1_net(net(tmp_path / "topics", 2, 3), 1)  # the replay
    assert [r["id"] for r in table(spark, restarted)] == [2]
    assert [s.get("headwater.batch") for _op, s in snapshots(spark, restarted)] == ["0", "1"]
    restarted.apply_scd1_net(net(tmp_path / "topics", 3, 4), 2)
    assert [r["id"] for r in table(spark, restarted)] == [2]


def test_changelog_rows_equal_the_reference_and_are_appended_once(
        tmp_path: Path, spark: Any) -> None:
    """Every event once, column-wise and event by event, each batch applied twice."""
    records = workload(random.Random(3), mysql=False, n=200, toast=True)
    write(tmp_path / "topics", records)
    ref = DeltaTarget(tmp_path / "ref", "p")
    target = iceberg(spark, tmp_path / "ice")
    for batch, (a, b) in enumerate(itertools.pairwise([0, 120, len(records)])):
        ch = columnar.decode_changelog(
            TOPIC, columnar.scan(tmp_path / "topics", TOPIC, a, b, columnar.Positions()))
        assert ch is not None
        ref.append_changelog_rows(ch, batch)
        for _ in range(2):  # a replay appends nothing
            if batch:
                target.append_changelog(
                    decode_topic(TOPIC, list(read_range(tmp_path / "topics", TOPIC, a, b))),
                    batch)
            else:
                target.append_changelog_rows(ch, batch)
    want = read_table(tmp_path / "ref" / "public" / "t").sort_by("__offset").to_pylist()
    got = spark.table(f"{target.catalog}.public.t").toArrow()
    assert len(want) == sum(1 for _, v in records if v is not None)
    assert got.drop_columns([columnar.SEQ]).sort_by("__offset").to_pylist() == want


@pytest.mark.parametrize("mode", ["evolve", "ignore", "fail"])
def test_new_source_columns_follow_the_schema_evolution_rule(
        tmp_path: Path, spark: Any, mode: str) -> None:
    rng = random.Random(9)
    wider = [*ROW_FIELDS, f("extra", "string")]
    first = row(rng, 1)
    records = [document("c", 1, first, pg_source(100, 95)),
               document("c", 2, {**row(rng, 2), "extra": "x"}, pg_source(110, 105),
                        fields=wider)]
    write(tmp_path / "topics", records)
    target = IcebergTarget(spark, tmp_path / "ice", catalog(),
                           "p", schema_evolution=mode)
    target.apply_scd1_net(net(tmp_path / "topics", 0, 1), 0)
    if mode == "fail":
        with pytest.raises(ValueError, match=r"added column.*extra.*evolution=fail"):
            target.apply_scd1_net(net(tmp_path / "topics", 1, 2), 1)
        return
    target.apply_scd1_net(net(tmp_path / "topics", 1, 2), 1)
    got = table(spark, target)
    assert [r["id"] for r in got] == [1, 2]
    if mode == "evolve":
        assert [r["extra"] for r in got] == [None, "x"]
    else:
        assert "extra" not in got[0]


def test_a_second_warehouse_under_a_loaded_catalog_name_is_refused(
        tmp_path: Path, spark: Any) -> None:
    name = catalog()
    IcebergTarget(spark, tmp_path / "a", name, "p")
    with pytest.raises(ValueError, match=f"catalog {name!r} on .*give this warehouse another"):
        IcebergTarget(spark, tmp_path / "b", name, "p")



@pytest.mark.parametrize("mode", ["scd1", "changelog",
                                  pytest.param("scd2", marks=pytest.mark.long)])
def test_the_pipeline_writes_iceberg_and_a_batch_replayed_by_spark_is_applied_once(
        tmp_path: Path, spark: Any, mode: str) -> None:
    """The streaming query with `headwater.pipeline.target=iceberg`, in batches of 100
    records; then its last batch's commit is removed from the checkpoint (a kill after the
    batch wrote, before Spark recorded it) and the query runs again: Spark replays the batch,
    the target skips it.  SCD2 reads, decodes and rebuilds its history on the executors
    (`headwater.pipeline.executors.min.records=0`)."""
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import start

    records = (scd2_workload(random.Random(21)) if mode == "scd2"
               else workload(random.Random(21), mysql=False, n=260))
    write(tmp_path / "topics", records)
    name = catalog()
    config = tmp_path / "p.properties"
    config.write_text(f"topic.prefix={TOPIC.split('.')[0]}\nheadwater.topics.dir=topics\n"
                      "headwater.pipeline.checkpoint.dir=checkpoint\n"
                      f"headwater.pipeline.mode={mode}\nheadwater.pipeline.target=iceberg\n"
                      f"headwater.pipeline.iceberg.catalog={name}\n"
                      "headwater.pipeline.iceberg.warehouse=ice\n"
                      "headwater.pipeline.max.records.per.trigger=100\n"
                      + ("headwater.pipeline.executors.min.records=0\n" if mode == "scd2"
                         else ""))
    cfg = load_pipeline_config(config)

    def run() -> None:
        query = start(spark, cfg, once=True)
        query.awaitTermination()
        assert query.exception() is None

    run()
    commits = sorted(int(p.name) for p in (tmp_path / "checkpoint" / "commits").iterdir()
                     if p.name.isdigit())
    assert len(commits) >= 3, commits
    target = IcebergTarget(spark, tmp_path / "ice", name, cfg.pipeline_id)
    before = snapshots(spark, target)
    assert before[-1][1].get("headwater.batch") == str(commits[-1])
    first = table(spark, target, hw=True)
    for p in (tmp_path / "checkpoint" / "commits").iterdir():
        if p.name.removeprefix(".").removesuffix(".crc") == str(commits[-1]):
            p.unlink()
    run()
    assert snapshots(spark, target) == before, "the replayed batch committed again"
    assert table(spark, target, hw=True) == first
    if mode == "changelog":  # each source event once: the workload's re-deliveries dropped
        assert len(first) == len({v for _, v in records if v is not None})
    elif mode == "scd2":
        bounds = [*range(0, len(records), 100), len(records)]
        assert len(commits) == len(bounds) - 1
        assert history(table(spark, target)) == scd2_reference(tmp_path, bounds)
    else:
        assert table(spark, target) == reference(tmp_path, [0, len(records)])


def scd2_reference(root: Path, bounds: list[int], track: list[str] | None = None
                   ) -> list[dict[str, Any]]:
    """The delta-rs target's SCD2 history from the same batches, event by event (`track`:
    `headwater.pipeline.track.history.column.list`)."""
    from headwater.pipeline.runner import apply_changes

    ref = DeltaTarget(root / "ref", "p")
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        apply_changes(decode_topic(TOPIC, list(read_range(root / "topics", TOPIC, a, b))),
                      batch, ref, "scd2", track)
    return history(read_table(root / "ref" / "public" / "t").to_pylist())


def history(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["id"], r["__START_AT"]))


@pytest.mark.parametrize("track", [None, pytest.param(["id", "v", "x"], marks=pytest.mark.long)],
                         ids=["every-column", "tracked-columns"])
def test_scd2_history_equals_the_reference_and_replays_apply_once(
        tmp_path: Path, spark: Any, track: list[str] | None) -> None:
    """Duplicated, reordered events with deletes, unchanged-TOAST placeholders, a key change
    and a truncate, in two batches (decoded column-wise with the truncate, then event by event
    on its stored floor and versions), each applied twice: the history equals the delta-rs
    target's (`scd2.rebuild`), and a replay commits no snapshot.  With tracked columns, a
    change of the others updates the open version in place, as there."""
    from headwater.pipeline.runner import apply_changes

    records = scd2_workload(random.Random(27))
    write(tmp_path / "topics", records)
    bounds = [0, 150, len(records)]
    target = iceberg(spark, tmp_path / "ice")
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        for replay in (False, True):
            before = len(snapshots(spark, target)) if replay else -1
            if batch == 1:
                apply_changes(decode_topic(TOPIC, list(read_range(tmp_path / "topics", TOPIC,
                                                                   a, b))), batch, target, "scd2",
                              track)
            else:
                ch = columnar.decode_changelog(TOPIC, columnar.scan(
                    tmp_path / "topics", TOPIC, a, b, columnar.Positions()), flags=True)
                assert ch is not None
                target.apply_scd2_rows(ch, batch, None if track is None else frozenset(track))
            assert not replay or len(snapshots(spark, target)) == before, "replay committed"
    want = scd2_reference(tmp_path, bounds, track)
    assert len(want) > 30 and any(r["__END_AT"] is None for r in want)
    assert history(table(spark, target)) == want
    marks = [(s.get("headwater.pipeline"), s.get("headwater.batch"))
             for _op, s in snapshots(spark, target) if s.get("headwater.batch")]
    assert marks == [("p", "0"), ("p", "1")], marks
    assert "t" in [orjson.loads(v)["payload"]["op"] for _k, v in records[:150] if v], "truncate"


def test_maintenance_compacts_expires_and_keeps_rows_and_batch_marks(
        tmp_path: Path, spark: Any) -> None:
    """Every third batch: small data files and those with position deletes rewritten, old
    snapshots expired (the table lets them expire at once here); the rows stay, and the
    batch marks survive, so a replayed batch is still skipped."""
    rng = random.Random(5)
    records = [document("c", k, row(rng, k), pg_source(1000 + 10 * k, None)) for k in range(40)]
    records += [document("d", k, row(rng, k), pg_source(2000 + 10 * k, None))
                for k in range(0, 40, 4)]
    write(tmp_path / "topics", records)
    target = IcebergTarget(spark, tmp_path / "ice", catalog(), "p",
                           compact_interval_batches=3)
    bounds = [0, 10, 20, 30, 40, len(records)]
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        target.apply_scd1_net(net(tmp_path / "topics", a, b), batch)
        if batch == 0:
            spark.sql(f"ALTER TABLE {target.catalog}.public.t SET TBLPROPERTIES "
                      "('history.expire.max-snapshot-age-ms' = '1')")
        target.maintain(batch)
    assert ("public", "t") in target.tables()
    assert ("_headwater_state", "public", "t") in target.tables()
    files = spark.sql(f"SELECT count(*) FROM {target.catalog}.public.t.data_files").first()[0]
    ops = [op for op, _s in snapshots(spark, target)]
    assert "replace" in ops, ops  # batch 2's compaction
    assert len(ops) < len(bounds) - 1, f"no snapshot expired: {ops}"
    before = snapshots(spark, target)
    assert [r["id"] for r in table(spark, target)] == [k for k in range(40) if k % 4]
    target.apply_scd1_net(net(tmp_path / "topics", 40, len(records)), len(bounds) - 2)
    assert snapshots(spark, target) == before  # still recognised as applied
    target.maintain(5)  # batch 5: all 5 batches' files into one, the deletes applied
    assert spark.sql(
        f"SELECT count(*) FROM {target.catalog}.public.t.data_files").first()[0] < files
    assert spark.sql(
        f"SELECT count(*) FROM {target.catalog}.public.t.delete_files").first()[0] == 0
    assert [r["id"] for r in table(spark, target)] == [k for k in range(40) if k % 4]
