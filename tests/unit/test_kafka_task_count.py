"""`kafka_tasks.task_count` and `slices`: the tasks a Kafka batch is cut into, so that a
batch's tasks come out even over the cores (three partitions on two cores were three tasks:
two at once, then one alone)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from headwater.pipeline.kafka_tasks import task_count
from headwater.pipeline.tasks import MIN_TASK_RECORDS


def spark_split(sizes: list[int], min_partitions: int) -> list[int]:
    """Task sizes as Spark 4.1's KafkaOffsetRangeCalculator.getRanges cuts the ranges."""
    sizes = [n for n in sizes if n > 0]
    if len(sizes) >= min_partitions:
        return sizes
    total = sum(sizes)

    def parts(n: int, of: int, m: int) -> int:
        return max(round(n / of * m), 1)

    unsplit = [n for n in sizes if parts(n, total, min_partitions) == 1]
    rest, m = total - sum(unsplit), max(min_partitions - len(unsplit), 1)
    out = []
    for n in sizes:
        k = 1 if n in unsplit else parts(n, rest, m)
        remaining = n
        for i in range(k):
            out.append(remaining // (k - i))
            remaining -= out[-1]
    return out


def waves(tasks: list[int], cores: int) -> int:
    """The stage's length in records when each core takes the next task as it frees up."""
    busy = [0] * cores
    for n in tasks:
        busy[busy.index(min(busy))] += n
    return max(busy)


def test_three_partitions_on_two_cores_are_six_even_tasks() -> None:
    sizes = [70_100, 66_900, 68_000]  # murmur2 spreads keys about evenly
    n = task_count(sizes, 2)
    assert n == 6
    tasks = spark_split(sizes, n)
    assert len(tasks) == 6 and sum(tasks) == sum(sizes)
    # within 3 % of half the batch per core; one task per partition was a third more
    assert waves(tasks, 2) <= sum(sizes) / 2 * 1.03
    assert waves(spark_split(sizes, 3), 2) >= sum(sizes) / 2 * 1.3


def test_counts_follow_the_local_plan_otherwise() -> None:
    assert task_count([], 2) == 1
    assert task_count([5_000], 2) == 1  # a small batch: one task
    assert task_count([40_000], 2) == 2  # a task per core
    assert task_count([20_000, 20_000], 2) == 2
    assert task_count([600_000], 2) == 3  # none above MAX_TASK_RECORDS (250,000)
    # a small batch over three partitions: a task each (fewer tasks would be no quicker)
    small = [MIN_TASK_RECORDS // 4] * 3
    assert task_count(small, 2) == 3
    assert task_count([0, 30_000, 0], 2) == 2  # empty ranges are no partitions of the read
    assert task_count([30_000] * 3, 4) == math.lcm(3, 4)


def test_a_part_is_checked_by_its_first_live_value() -> None:
    """(`KafkaPart` refuses MongoDB documents by the first value that is not a tombstone.)"""
    import pyarrow as pa

    from headwater.pipeline.kafka_tasks import _first_valid

    tombstones = pa.array([None, None], pa.binary())
    assert _first_valid(pa.chunked_array([tombstones], pa.binary())) is None
    assert _first_valid(pa.chunked_array(
        [tombstones, pa.array([None, b"x", b"y"], pa.binary())])) == b"x"
    assert _first_valid(pa.chunked_array([pa.array([b"a"], pa.binary())])) == b"a"


def test_slices_cut_each_range_evenly() -> None:
    """`kafka_tasks.slices`: every record of every range in exactly one slice, the slices of a
    range in order and of sizes that differ by one at most, a range's share of `count` by its
    size (at least one slice, never an empty one)."""
    from headwater.pipeline.kafka_tasks import slices

    ranges = {"a": {0: (100, 40_100), 1: (0, 20_000), 2: (5, 6)}, "b": {0: (7, 7 + 40_000)}}
    cut = slices(ranges, 6)
    assert [(t, p) for t, p, _s, _e in cut].count(("a", 0)) == 2
    assert [(t, p) for t, p, _s, _e in cut].count(("a", 1)) == 1
    assert [(t, p) for t, p, _s, _e in cut].count(("a", 2)) == 1
    for (topic, partition), (start, end) in (((t, p), r) for t, ps in ranges.items()
                                             for p, r in ps.items()):
        mine = [(s, e) for t, p, s, e in cut if (t, p) == (topic, partition)]
        assert mine[0][0] == start and mine[-1][1] == end
        assert all(a[1] == b[0] for a, b in itertools.pairwise(mine))
        sizes = [e - s for s, e in mine]
        assert min(sizes) > 0 and max(sizes) - min(sizes) <= 1
    assert slices({"t": {0: (0, 3)}}, 10) == [("t", 0, 0, 1), ("t", 0, 1, 2), ("t", 0, 2, 3)]


class _Job:
    """A SparkContext's `parallelize(...).mapPartitions(...).collect()`, run in this process:
    Spark's split of a collection into consecutive runs (ParallelCollectionRDD.positions)."""

    def __init__(self, items: list[object], tasks: int) -> None:
        self.items, self.tasks = items, tasks
        self.work: object = None

    def mapPartitions(self, work: object) -> _Job:  # noqa: N802 (pyspark's name)
        self.work = work
        return self

    def collect(self) -> list[object]:
        n = len(self.items)
        runs = [self.items[i * n // self.tasks:(i + 1) * n // self.tasks]
                for i in range(self.tasks)]
        assert callable(self.work)
        return [r for run in runs for r in self.work(iter(run))]


def test_the_kafka_stage_is_the_local_logs_job_over_consecutive_slices(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`kafka_tasks.run_stage` runs its slices as the local log's stage runs its parts
    (`tasks.run_job`: one RDD job, a task per core, never more tasks than slices): each task
    reads its consecutive slices in order, the next one opened before the current one is
    staged, and the results come back per topic in part order (an empty slice stages
    nothing)."""
    from types import SimpleNamespace

    import numpy as np

    from headwater.pipeline import kafka_tasks
    from headwater.pipeline.kafka_source import group_ranges
    from headwater.pipeline.tasks import PartResult

    jobs: list[_Job] = []
    events: list[tuple[object, ...]] = []

    def parallelize(items: list[object], tasks: int) -> _Job:
        jobs.append(_Job(items, tasks))
        return jobs[-1]

    sc = SimpleNamespace(defaultParallelism=2, parallelize=parallelize,
                         setJobDescription=lambda _d: None)
    ranges = {"t#0": (0, 30_000), "t#1": (0, 30_000), "t#2": (0, 30_001)}
    empty = 5  # this slice's read comes back empty

    def read_slice(_consumer: object, number: int, _topic: str, _partition: int, _start: int,
                   _end: int, _decode: object, opened: object) -> object:
        events.append(("read", number, opened))
        return SimpleNamespace(offsets=np.zeros(0 if number == empty else 1), part=number)

    def open_slice(_consumer: object, topic: str, partition: int, start: int, end: int
                   ) -> tuple[str, int]:
        number = kafka_tasks.slices(group_ranges(ranges), 6).index(
            (topic, partition, start, end))
        events.append(("open", number))
        return ("opened", number)

    def run_part(part: SimpleNamespace, _staging: Path, _mode: str) -> list[PartResult]:
        events.append(("stage", part.part))
        return [PartResult("t", part.part, f"f{part.part}", 1, None, "[]", (), None, None, ())]

    monkeypatch.setattr(kafka_tasks, "read_slice", read_slice)
    monkeypatch.setattr(kafka_tasks, "open_slice", open_slice)
    monkeypatch.setattr(kafka_tasks, "run_part", run_part)
    out = kafka_tasks.run_stage(SimpleNamespace(sparkContext=sc), {}, tmp_path, 3, "scd1",
                                ranges)
    assert [(j.items, j.tasks) for j in jobs] == [(list(range(6)), 2)]
    assert events == [
        ("read", 0, None), ("open", 1), ("stage", 0), ("read", 1, ("opened", 1)), ("open", 2),
        ("stage", 1), ("read", 2, ("opened", 2)), ("stage", 2),
        ("read", 3, None), ("open", 4), ("stage", 3), ("read", 4, ("opened", 4)), ("open", 5),
        ("stage", 4), ("read", 5, ("opened", 5))]
    assert [r.part for r in out["t"]] == [0, 1, 2, 3, 4]
