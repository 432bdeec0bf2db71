"""SCD2 into Delta with delta-rs, column-wise (`DeltaTarget.apply_scd2_rows`): the pipeline's
batches, decoded by the driver or staged by the executors, give the history the event
path's rules give (events decoded one by one, `decode_topic`; `scd2.rebuild` per key and
batch, in memory: `event_history`).  The workloads hold re-deliveries, events reordered
within and across batches, deletes, a primary key change, a truncate and unchanged-TOAST
placeholders; the history is tracked on every column or on a list.  Each batch goes the
column-wise way (its log line), a replayed batch commits nothing, and a crash after a
batch's first commit loses nothing."""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from headwater.pipeline.config import PipelineConfig, load_pipeline_config
from headwater.pipeline.decode import decode_topic
from headwater.pipeline.delta_target import DeltaTarget, delta_tables, read_table
from headwater.pipeline.net import dedup
from headwater.pipeline.runner import apply_batch
from headwater.pipeline.scd2 import Point, Version, rebuild, tracked_columns
from headwater.pipeline.source import read_range
from tests.pipeline.test_columnar import (
    TOPIC,
    document,
    pg_source,
    row,
    scd2_workload,
    workload,
    write,
)
from tests.unit.test_delta_target import Crash, crash_after_first_commit

Records = list[tuple[bytes | None, bytes | None]]
COLUMN_WISE = "(SCD2, column-wise)"


def config(tmp_path: Path, track: str, executors: bool) -> PipelineConfig:
    path = tmp_path / "p.properties"
    path.write_text(
        "topic.prefix=inv\nheadwater.pipeline.mode=scd2\n"
        f"headwater.pipeline.delta.path={tmp_path / 'delta'}\n"
        f"headwater.pipeline.checkpoint.dir={tmp_path / 'cp'}\n"
        + ("headwater.pipeline.executors.min.records=0\n" if executors else "")
        + (f"headwater.pipeline.track.history.column.list={track}\n" if track else ""))
    return load_pipeline_config(path)


def event_history(root: Path, bounds: Sequence[int], cfg: PipelineConfig
                  ) -> list[dict[str, Any]]:
    """The expected history: the event path's rules, batch by batch, in memory.  Each
    batch's events decoded one by one (`decode_topic`), re-deliveries dropped (`net.dedup`);
    a truncate closes every open version older than it and stays the floor; each touched
    key rebuilt by `scd2.rebuild` from its versions so far, the delete points remembered
    from earlier batches and the batch's events."""
    versions: dict[Any, list[Version]] = {}
    deleted: dict[Any, list[str]] = {}
    floor: str | None = None
    names: list[str] = []
    for a, b in itertools.pairwise(bounds):
        changes = decode_topic(TOPIC, list(read_range(root, TOPIC, a, b)))
        names = names or [c.name for c in changes.column_list]
        tracked = tracked_columns(names, cfg.track_history_column_list,
                                  cfg.track_history_except_column_list)
        events = dedup(changes.events)
        truncate = max((e.sequence for e in events if e.op == "t"), default=None)
        if truncate is not None:
            floor = max(floor or "", truncate)
            versions = {k: [v._replace(end=truncate) if v.end is None and v.start < truncate
                            else v for v in vs] for k, vs in versions.items()}
        points: dict[Any, list[Point]] = {}
        for e in events:
            if e.op != "t":
                points.setdefault(e.key, []).append(
                    Point(e.sequence, e.op == "d", e.row, e.unavailable))
        for key, pts in points.items():
            old = [Point(s, True, None) for s in deleted.get(key, [])]
            versions[key] = rebuild(versions.get(key, []), [*old, *pts], tracked, floor)
            deleted.setdefault(key, []).extend(p.sequence for p in pts if p.delete)
    rows = [{**{n: v.row.get(n) for n in names}, "id": key[0], "__START_AT": v.start,
             "__END_AT": v.end} for key, vs in versions.items() for v in vs]
    return sorted(rows, key=lambda r: (r["id"], r["__START_AT"]))


def history(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    (table,) = [p for p in delta_tables(tmp_path / "delta") if "_headwater" not in p.parts]
    rows = read_table(table).to_pylist()
    return table, sorted(rows, key=lambda r: (r["id"], r["__START_AT"]))


def run_batches(tmp_path: Path, records: Records, bounds: Sequence[int], cfg: PipelineConfig,
                spark: Any, monkeypatch: pytest.MonkeyPatch,
                caplog: pytest.LogCaptureFixture) -> None:
    """Each batch by the pipeline's `apply_batch`; the second crashes once after its first
    commit, and every batch is applied again (Spark's replay), committing nothing."""
    root = tmp_path / "topics"
    target = DeltaTarget(tmp_path / "delta", cfg.pipeline_id)
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="headwater.pipeline"):
            if batch == 1:
                with monkeypatch.context() as m:
                    crash_after_first_commit(m)
                    with pytest.raises(Crash):
                        apply_batch(root, {TOPIC: (a, b)}, batch, cfg, target, spark=spark)
                target = DeltaTarget(tmp_path / "delta", cfg.pipeline_id)  # (restarted)
            applied = apply_batch(root, {TOPIC: (a, b)}, batch, cfg, target, spark=spark)
        assert applied == sum(v is not None for _k, v in records[a:b])
        # (the event path logs "events applied"; the crashed batch's MERGE may have been its
        # last commit, so that its replay finds it applied)
        assert "events applied (scd2)" not in caplog.text
        assert COLUMN_WISE in caplog.text or (batch == 1 and "already applied" in caplog.text)
        table, _rows = history(tmp_path)
        version = DeltaTable(str(table)).version()
        apply_batch(root, {TOPIC: (a, b)}, batch, cfg, target, spark=spark)
        assert DeltaTable(str(table)).version() == version, "a replayed batch committed again"


@pytest.mark.parametrize(("seed", "track"), [(0, ""), (1, "id,ok,small"), (2, ""),
                                             (3, "id,ok")])
def test_driver_batches_equal_the_event_path_history(
        tmp_path: Path, seed: int, track: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    rng = random.Random(seed)
    records = (scd2_workload(rng) if seed % 2 == 0
               else workload(rng, mysql=False, n=300, keys=25, toast=True))
    write(tmp_path / "topics", records)
    bounds = [0, *sorted(rng.sample(range(1, len(records)), 3)), len(records)]
    cfg = config(tmp_path, track, executors=False)
    run_batches(tmp_path, records, bounds, cfg, None, monkeypatch, caplog)
    want = event_history(tmp_path / "topics", bounds, cfg)
    _table, got = history(tmp_path)
    assert len(want) > 30 and any(r["__END_AT"] is None for r in want)
    assert any(r["__END_AT"] is not None for r in want)
    assert got == want


def test_staged_batches_equal_the_event_path_history(
        tmp_path: Path, spark: Any, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """The executors decode the parts (Spark tasks, `tasks` mode scd2); the driver puts the
    staged events in order in Arrow and writes the history with delta-rs."""
    rng = random.Random(25)
    records = scd2_workload(rng)
    write(tmp_path / "topics", records, segment_bytes=16 << 10)
    bounds = [0, 70, 160, len(records)]
    cfg = config(tmp_path, "id,ok", executors=True)
    run_batches(tmp_path, records, bounds, cfg, spark, monkeypatch, caplog)
    assert "on executors (scd2)" in caplog.text
    _table, got = history(tmp_path)
    assert got == event_history(tmp_path / "topics", bounds, cfg)
    assert not list((tmp_path / "cp" / "staging").rglob("*.parquet"))


def test_late_events_of_keys_new_to_the_table_meet_the_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Keys with no stored version: a late insert older than the key's remembered delete
    ends at that delete; one older than a truncate of an earlier batch ends at the truncate
    (a key whose only point is one event is rebuilt column-wise); a newer one stays open."""
    rng = random.Random(5)
    rows = {k: row(rng, k) for k in (7, 8, 9)}
    records: Records = [
        document("t", 1, None, pg_source(500, 495)),
        document("d", 9, rows[9], pg_source(300, 295)),  # a key the table never held
        document("c", 9, rows[9], pg_source(200, 195)),  # late: before its delete
        document("c", 7, rows[7], pg_source(400, 395)),  # late: before the truncate
        document("c", 8, rows[8], pg_source(600, 595)),
    ]
    write(tmp_path / "topics", records)
    bounds = [0, 2, len(records)]
    cfg = config(tmp_path, "", executors=False)
    run_batches(tmp_path, records, bounds, cfg, None, monkeypatch, caplog)
    _table, got = history(tmp_path)
    assert got == event_history(tmp_path / "topics", bounds, cfg)
    seqs = {r["id"]: r["__START_AT"] for r in got}
    truncate_seq = max(r["__END_AT"] for r in got if r["id"] == 7)
    assert [(r["id"], r["__END_AT"] is None) for r in got] == [(7, False), (8, True), (9, False)]
    assert seqs[7] < truncate_seq < seqs[8]
    assert seqs[9] < next(r["__END_AT"] for r in got if r["id"] == 9) < truncate_seq
