"""The executor stage (`pipeline.tasks`) against the driver's column-wise path: a batch cut into
random parts, each decoded and netted by the task function (column-wise, or event by event
where forced), then netted across parts (in Arrow, by the driver), gives exactly
`columnar.read_net`'s rows of the whole batch (duplicates and reordering across parts,
unchanged TOAST values, deletes), and the changelog gives `decode_changelog`'s rows."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater.pipeline import columnar, tasks
from headwater.topics.segment import live_segments
from tests.pipeline.test_columnar import TOPIC, workload, write


def cuts(rng: random.Random, end: int, parts: int) -> list[tasks.Task]:
    points = sorted(rng.sample(range(1, end), parts - 1))
    bounds = [0, *points, end]
    return [tasks.Task(TOPIC, a, b, i) for i, (a, b) in enumerate(itertools.pairwise(bounds))]


def by_parts(root: Path, staging: Path, parts: list[tasks.Task], mode: str,
             events_at: set[int] = frozenset()) -> columnar.ColumnarChanges | None:  # type: ignore[assignment]
    results = []
    for t in parts:
        if t.part in events_at:
            part = tasks.LogPart(root, t)
            decoded, fields = tasks._by_events(part)
            results.append(tasks._stage(staging, part, decoded, fields) if decoded is not None
                           else tasks.PartResult(TOPIC, t.part, None, 0, None, "[]", (), None,
                                                 None, ()))
        else:
            results += tasks.run_task(root, staging, mode, t)
    assert all(r.refused is None for r in results), [r.refused for r in results]
    staged = tasks.net_across_parts(results, mode)
    return None if staged is None else staged.to_columnar()


def assert_same(got: columnar.ColumnarChanges, want: columnar.ColumnarChanges) -> None:
    assert got.toast == want.toast
    assert got.key_columns == want.key_columns
    assert got.events == want.events
    assert got.rows.schema == want.rows.schema
    assert got.rows.to_pylist() == want.rows.to_pylist()


@pytest.mark.parametrize("seed", range(6))
def test_net_across_parts_equals_the_driver_path(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    records = workload(rng, mysql=seed % 3 == 2, toast=seed % 3 != 2, n=500, keys=25)
    write(tmp_path / "topics", records, segment_bytes=64 << 10)
    want = columnar.read_net(tmp_path / "topics", TOPIC, 0, len(records), columnar.Positions())
    assert want is not None
    for trial in range(3):
        parts = cuts(rng, len(records), rng.choice((2, 3, 5)))
        forced = {p.part for p in parts if trial and rng.random() < 0.4}
        got = by_parts(tmp_path / "topics", tmp_path / "staging" / str(trial), parts,
                       "scd1", forced)
        assert got is not None
        assert_same(got, want)
    if seed % 3 != 2:
        assert want.toast and any(any(r[columnar.TOAST_FLAG + c] for c in want.toast)
                                  for r in want.rows.to_pylist())


def test_a_delete_in_another_part_cuts_the_toast_carry(tmp_path: Path) -> None:
    """Sent (part 0), deleted (part 1, earlier offset than... a later position), unsent (part 2):
    the column stays flagged, as the event path says."""
    from tests.pipeline.test_columnar import PLACEHOLDER, document, pg_source, row

    rng = random.Random(7)
    image = row(rng, 1)
    unsent = {**row(rng, 1), "v": PLACEHOLDER}
    records = [document("u", 1, image, pg_source(100, 95)),
               document("d", 1, image, pg_source(200, 195)),
               document("c", 1, unsent, pg_source(300, 295))]
    write(tmp_path / "topics", records)
    want = columnar.read_net(tmp_path / "topics", TOPIC, 0, 3, columnar.Positions())
    assert want is not None and want.rows.column(columnar.TOAST_FLAG + "v").to_pylist() == [True]
    parts = [tasks.Task(TOPIC, i, i + 1, i) for i in range(3)]
    got = by_parts(tmp_path / "topics", tmp_path / "staging", parts, "scd1")
    assert got is not None
    assert_same(got, want)


@pytest.mark.parametrize("seed", range(6))
def test_the_one_key_net_equals_the_general_net(tmp_path: Path, seed: int) -> None:
    """`part_net`'s numpy path for one key column without TOAST gives the general path's rows,
    re-deliveries across parts (which keep their first delivery's sequence) included, and
    the whole batch's net as the driver's path computes it; seeds 4 and 5 deliver the
    events in order, once, so that the parts' fragments need no sort."""
    from headwater.pipeline import part_net

    rng = random.Random(200 + seed)
    in_order = seed >= 4
    records = workload(rng, mysql=seed % 2 == 0, n=600, keys=30, duplicates=not in_order,
                       shuffle=not in_order)
    sent = len(records)
    parts = cuts(rng, sent, 4)
    if not in_order:  # the last 40 records delivered again (a restart), in a part of their own
        records += records[-40:]
        parts = [*cuts(rng, sent, 3), tasks.Task(TOPIC, sent, len(records), 3)]
    write(tmp_path / "topics", records, segment_bytes=64 << 10)
    results = []
    for t in parts:
        results += tasks.run_task(tmp_path / "topics", tmp_path / "staging", "scd1", t)
    batch = tasks.staged_batch(results)
    assert batch is not None
    changes, files = batch
    assert changes.key_columns == ("id",) and not changes.toast
    rows = pa.concat_tables([pq.read_table(f) for f in files], promote_options="permissive")
    fast = part_net.net_fragments(rows, list(changes.columns), changes.key_columns, [])
    general = part_net._net_general(rows, list(changes.columns), changes.key_columns, [])
    assert fast.schema == general.schema
    assert fast.to_pylist() == general.to_pylist()
    sequences = rows.column(columnar.SEQ).to_pylist()
    assert (sequences == sorted(sequences)) == in_order
    if not in_order:  # a winner re-delivered: its sequence is not the newest fragment's
        newest: dict[int, str] = {}
        for r in rows.to_pylist():
            newest[r["id"]] = max(newest.get(r["id"], ""), r[columnar.SEQ])
        assert any(r[columnar.SEQ] != newest[r["id"]] for r in fast.to_pylist())
    want = columnar.read_net(tmp_path / "topics", TOPIC, 0, len(records), columnar.Positions())
    assert want is not None
    assert fast.to_pylist() == want.rows.to_pylist()


@pytest.mark.parametrize("seed", range(2))
def test_changelog_across_parts_equals_the_driver_path(tmp_path: Path,
                                                       seed: int) -> None:
    rng = random.Random(50 + seed)
    records = workload(rng, mysql=seed == 1, n=300)
    write(tmp_path / "topics", records, segment_bytes=64 << 10)
    want = columnar.decode_changelog(TOPIC, columnar.scan(
        tmp_path / "topics", TOPIC, 0, len(records), columnar.Positions()))
    assert want is not None
    got = by_parts(tmp_path / "topics", tmp_path / "staging",
                   cuts(rng, len(records), 4), "changelog")
    assert got is not None
    assert_same(got, want)


def test_the_stage_runs_as_spark_tasks_and_plans_by_segments(spark: Any, tmp_path: Path) -> None:
    rng = random.Random(3)
    records = workload(rng, mysql=False, toast=True, n=600)
    root = tmp_path / "topics"
    write(root, records, segment_bytes=32 << 10)
    planned = tasks.plan(root, {TOPIC: (0, len(records))}, parallelism=3, min_records=100)
    assert planned[0].start == 0 and planned[-1].end == len(records)
    assert len(planned) == 3
    assert all(a.end == b.start for a, b in itertools.pairwise(planned))
    bases = {s.base for s in live_segments(root / TOPIC)}
    assert all(t.start in bases for t in planned)  # cut at segments' first offsets
    # a big range: more parts than cores, none above the cap; a small one: a single part
    big = tasks.plan(root, {TOPIC: (0, 600)}, parallelism=2, min_records=10, max_records=150)
    assert len(big) == 4 and all(t.end - t.start <= 150 * 1.5 for t in big)
    # more parts than cores: whole rounds of them (700 / 150 makes 5 parts, 3 rounds on 2)
    assert len(tasks.plan(root, {TOPIC: (0, 700)}, parallelism=2, min_records=10,
                          max_records=150)) == 6
    assert len(tasks.plan(root, {TOPIC: (0, 600)}, parallelism=2)) == 1
    results = tasks.run_stage(spark, root, tmp_path / "ckpt", 4, "scd1",
                              {TOPIC: (0, len(records))}, min_records=100)
    parts = results[TOPIC]
    assert len(parts) == min(int(spark.sparkContext.defaultParallelism), len(records) // 100)
    assert all(p.file is not None and Path(p.file).parent ==
               tmp_path / "ckpt" / "staging" / "4" / TOPIC for p in parts)
    staged = tasks.net_across_parts(parts, "scd1")
    assert staged is not None
    want = columnar.read_net(root, TOPIC, 0, len(records), columnar.Positions())
    assert want is not None
    assert_same(staged.to_columnar(), want)
    # a replay of the batch stages it again from nothing; a later batch clears it
    (tmp_path / "ckpt" / "staging" / "4" / TOPIC / "part-9.parquet").write_bytes(b"stale")
    tasks.run_stage(spark, root, tmp_path / "ckpt", 4, "scd1", {TOPIC: (0, 10)})
    assert not (tmp_path / "ckpt" / "staging" / "4" / TOPIC / "part-9.parquet").exists()


def test_a_schema_change_between_parts_is_refused(tmp_path: Path) -> None:
    from tests.pipeline.test_columnar import ROW_FIELDS, document, f, pg_source, row

    rng = random.Random(9)
    wider = [*ROW_FIELDS, f("extra", "int32")]
    records = [document("c", 1, row(rng, 1), pg_source(100, 95)),
               document("c", 2, {**row(rng, 2), "extra": 5}, pg_source(200, 195), wider)]
    write(tmp_path / "topics", records)
    results = [r for i in range(2) for r in tasks.run_task(
        tmp_path / "topics", tmp_path / "s", "scd1", tasks.Task(TOPIC, i, i + 1, i))]
    with pytest.raises(tasks.Refused, match="schema changes inside the batch"):
        tasks.net_across_parts(results, "scd1")


def test_a_truncate_is_left_to_the_event_path(tmp_path: Path) -> None:
    from tests.pipeline.test_columnar import document, pg_source, row

    trunc = document("t", 1, None, pg_source(300, 295))
    records = [document("c", 1, row(random.Random(1), 1), pg_source(100, 95)),
               (None, trunc[1])]
    write(tmp_path / "topics", records)
    [result] = tasks.run_task(tmp_path / "topics", tmp_path / "s", "scd1",
                              tasks.Task(TOPIC, 0, 2, 0))
    assert result.refused == "a truncate" and result.file is None


def test_parquet_round_trip_keeps_the_types(tmp_path: Path) -> None:
    """Every type the column-wise decoders give comes back from Spark as it went in."""
    records = workload(random.Random(11), mysql=False, n=50)
    write(tmp_path / "topics", records)
    want = columnar.read_net(tmp_path / "topics", TOPIC, 0, len(records), columnar.Positions())
    assert want is not None
    got = by_parts(tmp_path / "topics", tmp_path / "s",
                   [tasks.Task(TOPIC, 0, len(records), 0)], "scd1")
    assert got is not None
    assert got.rows.schema == want.rows.schema
    assert pa.Table.equals(got.rows, want.rows)


def test_a_late_task_of_a_killed_driver_cannot_replace_a_replayed_part(
        tmp_path: Path) -> None:
    """A driver killed mid-batch leaves tasks that may still finish on the executors while the
    next driver replays the batch, planned with other cuts (another parallelism, segments
    rolled since).  A late write of such a task lands beside the replay's parts, never over
    one of them, so the replay's net is the batch's."""
    rng = random.Random(5)
    records = workload(rng, mysql=False, toast=True, n=400, keys=30)
    root, staging = tmp_path / "topics", tmp_path / "staging"
    write(root, records, segment_bytes=32 << 10)
    end = len(records)
    replay = [tasks.Task(TOPIC, 0, end // 2, 0), tasks.Task(TOPIC, end // 2, end, 1)]
    results = [r for t in replay for r in tasks.run_task(root, staging, "scd1", t)]
    assert results[0].file is not None
    before = pq.read_table(results[0].file)
    # the killed driver's plan: four parts, its part 0 finishing late
    [late] = tasks.run_task(root, staging, "scd1", tasks.Task(TOPIC, 0, end // 4, 0))
    assert late.file is not None and late.file not in {r.file for r in results}
    assert pq.read_table(results[0].file).equals(before)
    staged = tasks.net_across_parts(results, "scd1")
    assert staged is not None
    want = columnar.read_net(root, TOPIC, 0, end, columnar.Positions())
    assert want is not None
    assert_same(staged.to_columnar(), want)


def staged_results(root: Path, staging: Path, parts: list[tasks.Task], mode: str,
                   events_at: set[int]) -> list[tasks.PartResult]:
    results = []
    for t in parts:
        part = tasks.LogPart(root, t)
        if t.part in events_at:
            decoded, fields = tasks._by_events(part)
            assert decoded is not None
            results.append(tasks._stage(staging, part, decoded, fields))
        else:
            results += tasks.run_task(root, staging, mode, t)
    return results


@pytest.mark.parametrize("seed", range(3))
def test_net_on_the_executors_equals_the_drivers_net(spark: Any, tmp_path: Path,
                                                      seed: int) -> None:
    """`executor_net.net_frame` (the parts read by Spark, shuffled by key, netted in
    `mapInArrow` tasks) gives the rows of the driver's net across the same parts: TOAST
    carries and re-deliveries across parts, event-by-event parts, deletes."""
    from headwater.pipeline import executor_net

    rng = random.Random(80 + seed)
    records = workload(rng, mysql=seed == 2, toast=seed != 2, n=500, keys=25)
    write(tmp_path / "topics", records, segment_bytes=64 << 10)
    parts = cuts(rng, len(records), 4)
    results = staged_results(tmp_path / "topics", tmp_path / "staging", parts, "scd1",
                             {parts[1].part} if seed else set())
    want = tasks.net_across_parts(results, "scd1")
    frame = executor_net.net_frame(spark, results)
    assert want is not None and frame is not None
    want_rows = want.to_columnar().rows
    got = frame.rows.toArrow()
    # (netted by Spark tasks, then staged beside the parts for the target's reads)
    assert list((tmp_path / "staging" / TOPIC / "net").glob("part-*.parquet"))
    assert got.column_names == want_rows.column_names
    assert (frame.events, frame.key_columns, list(frame.toast)) == (
        want.changes.events, want.changes.key_columns, want.changes.toast)
    assert want_rows.num_rows > 0
    by_seq = [("__hw_sequence", "ascending")]
    assert got.sort_by(by_seq).to_pylist() == want_rows.sort_by(by_seq).to_pylist()
    if seed != 2:
        assert any(r[columnar.TOAST_FLAG + c] for r in got.to_pylist() for c in frame.toast)


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.long)])
def test_changelog_on_the_executors_equals_the_drivers(spark: Any, tmp_path: Path,
                                                       seed: int) -> None:
    """The changelog with the Spark writer and every range on the executors: the staged
    parts read by Spark (`executor_net.changelog_frame`), re-deliveries dropped by Spark
    (within the batch and against the changelog's rows, `spark_merge.first_deliveries`) and
    appended by delta-spark (`append_changelog_net`) give the table of the driver's path
    (parts put in order in Arrow, `changelog_once`, delta-rs) on two batches whose duplicates
    cross parts and batches; a re-applied batch appends nothing."""
    from deltalake import DeltaTable as RsTable

    from headwater.pipeline import executor_net
    from headwater.pipeline.delta_spark import SparkDeltaTarget
    from headwater.pipeline.delta_target import DeltaTarget
    from headwater.pipeline.runner import append_changelog_once

    rng = random.Random(90 + seed)
    records = workload(rng, mysql=seed == 1, n=240, keys=20)
    root = tmp_path / "topics"
    write(root, records, segment_bytes=32 << 10)
    driver = DeltaTarget(tmp_path / "driver", "p")
    executors = SparkDeltaTarget(spark, tmp_path / "executors", "p")
    middle = len(records) // 2 + rng.randrange(-20, 20)
    for batch, (a, b) in enumerate(itertools.pairwise([0, middle, len(records)])):
        points = sorted(rng.sample(range(a + 1, b), 2))
        parts = [tasks.Task(TOPIC, s, e, i)
                 for i, (s, e) in enumerate(itertools.pairwise([a, *points, b]))]
        results = staged_results(root, tmp_path / "staging" / str(batch), parts,
                                 "changelog", set())
        want = tasks.net_across_parts(results, "changelog")
        assert want is not None
        append_changelog_once(driver, want.to_columnar(), batch)
        table = str(executors.table_path(want.changes))
        for replay in (False, True):
            before = RsTable(table).version() if replay else -1
            frame = executor_net.changelog_frame(spark, results)
            assert frame is not None and frame.events == want.changes.events
            executors.append_changelog_net(frame, batch)
            assert not replay or RsTable(table).version() == before
    got = RsTable(table).to_pyarrow_table().sort_by("__offset")
    assert want is not None  # (the last batch's)
    ref = RsTable(str(driver.table_path(want.changes))).to_pyarrow_table().sort_by("__offset")
    events = sum(v is not None for _k, v in records)
    assert 0 < ref.num_rows < events  # re-deliveries were dropped
    assert got.schema == ref.schema
    assert got.to_pylist() == ref.to_pylist()


def _worker_imports(_: Any) -> Iterator[tuple[str, list[str]]]:
    import sys
    import zipimport

    import pyspark

    archives = [entry for entry, finder in sys.path_importer_cache.items()
                if isinstance(finder, zipimport.zipimporter)]
    yield str(pyspark.__file__), archives


def test_the_python_workers_import_the_installed_pyspark_not_its_zip(spark: Any) -> None:
    """`pipeline.spark_daemon`: no importer over pyspark's zip or jars, whose directories each
    task's cache invalidation would re-read (0.13 s a task with them)."""
    import pyspark

    assert spark.conf.get("spark.python.daemon.module") == "headwater.pipeline.spark_daemon"
    got = spark.sparkContext.parallelize(range(2), 2).mapPartitions(_worker_imports).collect()
    package = str(Path(pyspark.__file__).parent)
    for origin, archives in got:
        assert origin.startswith(package) and ".zip" not in origin, origin
        assert not [a for a in archives if a.startswith(package)], archives
