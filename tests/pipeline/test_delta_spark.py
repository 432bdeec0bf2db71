"""The Delta target on Delta Lake's Spark connector (pipeline/delta_spark.py) against the
delta-rs target: the same tables from the same batches, tables of one continued by the other,
each batch once across replays and crashes between its commits, compaction.  A real local
Spark session with delta-spark; the tables are read back with delta-rs (`read_table`)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable as RsTable

from headwater.pipeline import columnar
from headwater.pipeline.change_frame import from_columnar
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.delta_spark import SparkDeltaTarget
from headwater.pipeline.delta_target import DeltaTarget, read_table
from headwater.pipeline.source import read_range
from tests.pipeline.test_columnar import (
    TOPIC,
    document,
    pg_source,
    row,
    scd1_by_events,
    scd2_workload,
    workload,
    write,
)
from tests.unit.test_delta_target import Crash

# Out of CI for now (issue 25 under way): the target is not yet the pipeline's default, and on
# a loaded 2-core machine its six tests took about 30 minutes (first delta-spark MERGEs of a
# table were 96-250 s there); run with --long.
pytestmark = [pytest.mark.integration, pytest.mark.long]


def net(root: Path, a: int, b: int) -> columnar.ColumnarChanges:
    ch = columnar.decode_net(TOPIC, columnar.scan(root, TOPIC, a, b, columnar.Positions()))
    assert ch is not None
    return ch


def version(path: Path) -> int:
    return RsTable(str(path)).version()


@pytest.mark.parametrize("toast", [False, True], ids=["plain", "unchanged-toast"])
def test_net_changes_equal_the_reference_and_continue_delta_rs_tables(
        tmp_path: Path, spark: Any, toast: bool) -> None:
    """Batch 0 by the delta-rs target (it creates the table), batch 2 event by event (delta-rs),
    the others by delta-spark, each twice (a replay): the table equals the event-by-event
    reference, and a replay by delta-spark commits nothing.  Batch 1 goes in as the driver's
    Arrow rows (`apply_scd1_net`: the state applied in Arrow), batch 3 as a DataFrame
    (`merge_net`, as rows netted by Spark tasks: the state applied by Spark joins)."""
    records = workload(random.Random(11), mysql=False, n=300, toast=toast)
    write(tmp_path / "topics", records)
    ref = DeltaTarget(tmp_path / "ref", "p")
    old = DeltaTarget(tmp_path / "mixed", "p")
    new = SparkDeltaTarget(spark, tmp_path / "mixed", "p")
    table = tmp_path / "mixed" / "public" / "t"
    for batch, (a, b) in enumerate(itertools.pairwise([0, 100, 200, 260, len(records)])):
        changes = decode_topic(TOPIC, list(read_range(tmp_path / "topics", TOPIC, a, b)))
        scd1_by_events(ref, changes, batch)
        if batch == 2:
            scd1_by_events(old, changes, batch)
            continue
        target = old if batch == 0 else new
        for replay in (False, True):
            before = version(table) if replay else -1
            if batch == 3:
                new.merge_net(from_columnar(spark, net(tmp_path / "topics", a, b)), batch)
            else:
                target.apply_scd1_net(net(tmp_path / "topics", a, b), batch)
            assert not replay or version(table) == before, "a replayed batch committed again"
    want = read_table(tmp_path / "ref" / "public" / "t").sort_by("id")
    got = read_table(table).sort_by("id")
    assert want.num_rows > 0
    assert got.to_pylist() == want.to_pylist()
    operations = [c.get("operation") for c in RsTable(str(table)).history()]
    assert operations.count("MERGE") >= 3, operations


def crash_before_table_commit(target: SparkDeltaTarget, m: pytest.MonkeyPatch) -> None:
    def crash(*_args: Any, **_kwargs: Any) -> bool:
        raise Crash
    m.setattr(target, "_merge_scd1_frame", crash)


def crash_after_table_commit(target: SparkDeltaTarget, m: pytest.MonkeyPatch) -> None:
    merge = target._merge_scd1_frame

    def commit_then_crash(*args: Any, **kwargs: Any) -> bool:
        merge(*args, **kwargs)
        raise Crash
    m.setattr(target, "_merge_scd1_frame", commit_then_crash)


@pytest.mark.parametrize("crash", [crash_before_table_commit, crash_after_table_commit],
                         ids=["after-state-commit", "after-table-commit"])
def test_a_crash_at_each_commit_step_applies_the_batch_once(
        tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch,
        crash: Callable[[SparkDeltaTarget, pytest.MonkeyPatch], None]) -> None:
    """A batch killed after its state commit (deletes remembered, table not merged) or after
    the table's commit, then replayed: its delete is applied once and remembered, so a later,
    older upsert of the deleted key stays out."""
    rng = random.Random(5)
    records = [document("c", 1, row(rng, 1), pg_source(100, 95)),
               document("c", 2, row(rng, 2), pg_source(110, 105)),
               document("d", 1, row(rng, 1), pg_source(300, 295)),
               document("u", 1, row(rng, 1), pg_source(200, 195))]  # late: before the delete
    write(tmp_path / "topics", records)
    root = tmp_path / "delta"
    table = root / "public" / "t"
    SparkDeltaTarget(spark, root, "p").apply_scd1_net(net(tmp_path / "topics", 0, 2), 0)
    killed = SparkDeltaTarget(spark, root, "p")
    with monkeypatch.context() as m:
        crash(killed, m)
        with pytest.raises(Crash):
            killed.apply_scd1_net(net(tmp_path / "topics", 2, 3), 1)
    assert spark.conf.get("spark.databricks.delta.write.txnVersion", None) is None
    state = read_table(root / "_headwater" / "state" / "public.t").to_pylist()
    assert state == [{"key": "[1]", "kind": "delete"}]  # (read_table drops __hw_ columns)
    restarted = SparkDeltaTarget(spark, root, "p")
    restarted.apply_scd1_net(net(tmp_path / "topics", 2, 3), 1)  # the replay
    assert read_table(table).column("id").to_pylist() == [2]
    merges = [c for c in RsTable(str(table)).history() if c.get("operation") == "MERGE"]
    assert len(merges) == 2, "the batch's MERGE committed twice (or never)"
    restarted.apply_scd1_net(net(tmp_path / "topics", 3, 4), 2)
    assert read_table(table).column("id").to_pylist() == [2]


def test_changelog_rows_equal_the_reference_and_are_appended_once(
        tmp_path: Path, spark: Any) -> None:
    records = workload(random.Random(3), mysql=False, n=300, toast=True)
    write(tmp_path / "topics", records)
    ref = DeltaTarget(tmp_path / "ref", "p")
    new = SparkDeltaTarget(spark, tmp_path / "new", "p")
    for batch, (a, b) in enumerate(itertools.pairwise([0, 120, len(records)])):
        ch = columnar.decode_changelog(
            TOPIC, columnar.scan(tmp_path / "topics", TOPIC, a, b, columnar.Positions()))
        assert ch is not None
        ref.append_changelog_rows(ch, batch)
        for _ in range(2):  # a replay appends nothing
            new.append_changelog_rows(ch, batch)
    want = RsTable(str(tmp_path / "ref" / "public" / "t")).to_pyarrow_table()
    got = RsTable(str(tmp_path / "new" / "public" / "t")).to_pyarrow_table()
    assert want.num_rows == sum(1 for _, v in records if v is not None)
    assert got.sort_by("__offset").to_pylist() == want.sort_by("__offset").to_pylist()


def test_compaction_through_delta_spark_keeps_rows_and_batch_ids(
        tmp_path: Path, spark: Any) -> None:
    rng = random.Random(5)
    records = [document("c", k, row(rng, k), pg_source(1000 + 10 * k, None)) for k in range(120)]
    write(tmp_path / "topics", records)
    target = SparkDeltaTarget(spark, tmp_path / "delta", "p", compact_interval_batches=4)
    bounds = list(range(0, 121, 10))
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        target.apply_scd1_net(net(tmp_path / "topics", a, b), batch)
        target.maintain(batch)
    table = tmp_path / "delta" / "public" / "t"
    history = [c.get("operation") for c in RsTable(str(table)).history()]
    assert history.count("OPTIMIZE") == 3, history
    assert len(RsTable(str(table)).file_uris()) == 1
    assert sorted(read_table(table).column("id").to_pylist()) == list(range(120))
    before = version(table)
    target.apply_scd1_net(net(tmp_path / "topics", 110, 120), len(bounds) - 2)
    assert version(table) == before  # still recognised as applied after compaction


def executors_config(tmp_path: Path, mode: str) -> Any:
    """A pipeline configuration with the Spark writer and every range on the executors."""
    from headwater.pipeline.config import load_pipeline_config

    config = tmp_path / "p.properties"
    config.write_text("topic.prefix=inv\nheadwater.pipeline.delta.writer=spark\n"
                      f"headwater.pipeline.mode={mode}\n"
                      "headwater.pipeline.executors.min.records=0\n"
                      f"headwater.pipeline.delta.path={tmp_path / 'delta'}\n"
                      f"headwater.pipeline.checkpoint.dir={tmp_path / 'cp'}\n")
    return load_pipeline_config(config)


@pytest.mark.parametrize("toast", [False, True], ids=["plain", "unchanged-toast"])
def test_batches_netted_and_merged_on_the_executors_equal_the_reference(
        tmp_path: Path, spark: Any, toast: bool) -> None:
    """The pipeline's batch with the Spark writer and every range on the executors: parts
    staged by Spark tasks, netted across parts by Spark tasks (`executor_net`), merged by
    delta-spark (`merge_net`), each batch applied twice (a replay commits nothing): the table
    equals the event-by-event reference."""
    from headwater.pipeline.runner import apply_batch

    records = workload(random.Random(21), mysql=False, n=400, toast=toast)
    write(tmp_path / "topics", records)
    cfg = executors_config(tmp_path, "scd1")
    ref = DeltaTarget(tmp_path / "ref", "p")
    target = SparkDeltaTarget(spark, tmp_path / "delta", cfg.pipeline_id)
    table = tmp_path / "delta" / "public" / "t"
    for batch, (a, b) in enumerate(itertools.pairwise([0, 150, len(records)])):
        scd1_by_events(ref, decode_topic(TOPIC, list(read_range(tmp_path / "topics", TOPIC,
                                                                 a, b))), batch)
        for replay in (False, True):
            before = version(table) if replay else -1
            assert apply_batch(tmp_path / "topics", {TOPIC: (a, b)}, batch, cfg, target,
                               spark=spark) == sum(v is not None for _k, v in records[a:b])
            assert not replay or version(table) == before, "a replayed batch committed again"
    want = read_table(tmp_path / "ref" / "public" / "t").sort_by("id")
    got = read_table(table).sort_by("id")
    assert want.num_rows > 0
    assert got.to_pylist() == want.to_pylist()
    assert [c.get("operation") for c in RsTable(str(table)).history()].count("MERGE") >= 2
    assert not list((tmp_path / "cp" / "staging").rglob("*.parquet"))


def test_changelog_batches_on_the_executors_equal_the_reference(
        tmp_path: Path, spark: Any) -> None:
    """The pipeline's changelog batch with the Spark writer and every range on the executors
    (`runner.apply_batch`: parts staged by Spark tasks, read by Spark, re-deliveries dropped
    by Spark, appended by delta-spark), each batch applied twice: the table equals the
    delta-rs target's from the driver's column-wise path, and a replay commits nothing."""
    from headwater.pipeline.runner import append_changelog_once, apply_batch

    records = workload(random.Random(23), mysql=False, n=300)
    write(tmp_path / "topics", records)
    cfg = executors_config(tmp_path, "changelog")
    ref = DeltaTarget(tmp_path / "ref", "p")
    target = SparkDeltaTarget(spark, tmp_path / "delta", cfg.pipeline_id)
    table = tmp_path / "delta" / "public" / "t"
    for batch, (a, b) in enumerate(itertools.pairwise([0, 170, len(records)])):
        ch = columnar.decode_changelog(
            TOPIC, columnar.scan(tmp_path / "topics", TOPIC, a, b, columnar.Positions()))
        assert ch is not None
        append_changelog_once(ref, ch, batch)
        for replay in (False, True):
            before = version(table) if replay else -1
            assert apply_batch(tmp_path / "topics", {TOPIC: (a, b)}, batch, cfg, target,
                               spark=spark) == sum(v is not None for _k, v in records[a:b])
            assert not replay or version(table) == before, "a replayed batch committed again"
    want = RsTable(str(tmp_path / "ref" / "public" / "t")).to_pyarrow_table()
    got = RsTable(str(table)).to_pyarrow_table()
    assert 0 < want.num_rows < sum(v is not None for _k, v in records)  # re-deliveries
    assert got.sort_by("__offset").to_pylist() == want.sort_by("__offset").to_pylist()
    assert not list((tmp_path / "cp" / "staging").rglob("*.parquet"))


def test_scd2_history_on_the_executors_equals_the_reference(
        tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline's SCD2 batch with the Spark writer and every range on the executors
    (parts staged by Spark tasks, the history rebuilt per key by Spark tasks, merged by
    delta-spark), each batch applied twice: the table equals the delta-rs target's history
    from the event path (`scd2.rebuild`), and a replay commits nothing.  The batch with the
    truncate first crashes after its truncate's UPDATE and the state's commit, before the
    table's MERGE: its replay still gives the reference's history."""
    from headwater.pipeline import delta_spark
    from headwater.pipeline.runner import apply_batch, apply_changes

    def crash(*_args: Any, **_kwargs: Any) -> str:
        raise Crash("killed before the table's MERGE")

    records = scd2_workload(random.Random(25))
    write(tmp_path / "topics", records)
    cfg = executors_config(tmp_path, "scd2")
    ref = DeltaTarget(tmp_path / "ref", "p")
    target = SparkDeltaTarget(spark, tmp_path / "delta", cfg.pipeline_id)
    table = tmp_path / "delta" / "public" / "t"
    bounds = [0, 70, 160, len(records)]
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        apply_changes(decode_topic(TOPIC, list(read_range(tmp_path / "topics", TOPIC, a, b))),
                      batch, ref, "scd2")
        if batch == 1:
            with monkeypatch.context() as m:
                m.setattr(delta_spark, "scd2_merge_sql", crash)
                with pytest.raises(Crash):
                    apply_batch(tmp_path / "topics", {TOPIC: (a, b)}, batch, cfg, target,
                                spark=spark)
        for replay in (False, True):
            before = version(table) if replay else -1
            assert apply_batch(tmp_path / "topics", {TOPIC: (a, b)}, batch, cfg, target,
                               spark=spark) == sum(v is not None for _k, v in records[a:b])
            assert not replay or version(table) == before, "a replayed batch committed again"
    order = ["id", "__START_AT"]
    want = read_table(tmp_path / "ref" / "public" / "t").sort_by(
        [(c, "ascending") for c in order])
    got = read_table(table).sort_by([(c, "ascending") for c in order])
    assert want.num_rows > 30 and None in want.column("__END_AT").to_pylist()
    assert got.to_pylist() == want.to_pylist()
    assert not list((tmp_path / "cp" / "staging").rglob("*.parquet"))
