"""Datastream topics in the executor stage (`tasks.run_part` with the Datastream model,
`datastream.staged`) against the driver's event path (`datastream.apply.apply_events`): a
topic holding two objects (tables), its batches cut into random parts, gives exactly the
driver path's Delta tables, `__hw_sequence` and column types included: re-deliveries (same
`uuid`) inside and across parts and batches, reordering, deletes, backfill rows, primary-key
changes, unchanged-TOAST placeholders, JSON columns whose kinds differ between parts (long in
one part, double in another; text and numbers) and columns the target table already types.
A column added at the source inside a batch is refused by the stage and that batch goes the
driver's way, still to the same table.  Through `apply_batch` with a Spark session, the parts
run as Spark tasks and the topic is applied from the staged parts (no event-by-event line)."""

from __future__ import annotations

import functools
import itertools
import logging
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.model.topic import TopicRecord
from headwater.pipeline import capabilities, runner, tasks
from headwater.pipeline.config import PipelineConfig
from headwater.pipeline.decode import PLACEHOLDER
from headwater.pipeline.delta_target import DeltaTarget, read_table
from headwater.topics.log import TopicLog

TOPIC = "ds.public.mixed"
OBJECTS = ("public_t", "public_u")


def workload(rng: random.Random, n: int, added_at: int | None = None
             ) -> list[dict[str, Any]]:
    """The events of two tables in change order, then reordered locally, with re-deliveries
    (the same event again later: same uuid and sort_keys).  `added_at`: from that change on,
    table t's events carry a new column."""
    live: dict[tuple[str, int], dict[str, Any]] = {}
    events: list[dict[str, Any]] = []
    for i in range(n):
        obj = OBJECTS[rng.random() < 0.3]
        key = rng.randint(1, 25)
        old = live.get((obj, key))
        backfill = i < 15
        added = added_at is not None and obj == "public_t" and i >= added_at
        roll = rng.random()
        if old is not None and roll < 0.05 and (obj, key + 25) not in live:
            # a primary-key change: its two halves at one position (the same sort_keys)
            gone = {**old, **({"extra": old.get("extra")} if added else {})}
            halves = [event(obj, key, i, "UPDATE-DELETE", gone, False),
                      event(obj, key + 25, i, "UPDATE-INSERT", gone, False)]
            halves[1]["uuid"] += "-insert"
            events += halves
            live[(obj, key + 25)] = live.pop((obj, key))
            continue
        if old is not None and roll < 0.2:
            op, values = "DELETE", {**old, **({"extra": old.get("extra")} if added else {})}
            del live[(obj, key)]
        else:
            op = "INSERT" if old is None else "UPDATE"
            values = row(rng, obj, i, old)
            if added:
                values["extra"] = f"x{i}"
            live[(obj, key)] = values
            if old is not None and values.get("note") == PLACEHOLDER:  # unchanged: the old
                live[(obj, key)] = {**values, "note": old["note"]}
        events.append(event(obj, key, i, op, values, backfill))
    # local reordering (across keys and within a key), then re-deliveries
    for i in range(0, len(events) - 1, 2):
        if rng.random() < 0.3:
            events[i], events[i + 1] = events[i + 1], events[i]
    out: list[dict[str, Any]] = []
    for e in events:
        out.append(e)
        if rng.random() < 0.12:
            at = min(len(out), len(out) - rng.randint(0, 40))
            out.insert(max(0, at), e)  # an earlier copy: the first delivery moves up
    return out


def row(rng: random.Random, obj: str, i: int, old: dict[str, Any] | None) -> dict[str, Any]:
    if obj == "public_t":
        note = (PLACEHOLDER if old is not None and rng.random() < 0.35
                else rng.choice([f"note {i}", None]))
        amount = rng.choice([i, i + 0.25, None])  # long in one part, double in another
        tag = rng.choice([f"t{i}", i, True])  # text and numbers: JSON text
        return {"id": 0, "ver": i, "note": note, "amount": amount, "tag": tag,
                "doc": rng.choice([{"a": i, "b": [1, 2]}, [i], None])}
    # u: `score` a double in the first batch's table, later batches' integers stay double;
    # `gone` text in the table, null in later events: the target's type
    return {"id": 0, "name": f"n{i}", "score": i + 0.5 if i < 100 else i,
            "gone": f"g{i}" if i < 100 else None}


def event(obj: str, key: int, i: int, change: str, values: dict[str, Any],
          backfill: bool) -> dict[str, Any]:
    schema, _, table = obj.partition("_")
    return {
        "stream_name": "s", "object": obj, "schema_key": "k", "uuid": f"{obj}-{i}",
        "read_method": "postgresql-backfill" if backfill else "postgres-cdc-wal",
        "read_timestamp": "2024-01-02T03:04:05.678Z",
        "source_timestamp": "2024-01-02T03:04:05.001Z", "sort_keys": [1000 + i, 7, i],
        "source_metadata": {"schema": schema, "table": table,
                            "is_deleted": change.endswith("DELETE"),
                            "change_type": change, "tx_id": str(i), "lsn": f"0/{i:X}",
                            "primary_keys": ["id"]},
        "payload": {**values, "id": key},
    }


def write(root: Path, events: list[dict[str, Any]]) -> None:
    with TopicLog(root, segment_bytes=64 << 10) as log:
        for i in range(0, len(events), 37):
            log.append({TOPIC: [TopicRecord(None, orjson.dumps(e), 0)
                                for e in events[i:i + 37]]})


def config(tmp_path: Path, name: str) -> PipelineConfig:
    return PipelineConfig(topic_prefix="ds", topics_dir=tmp_path / "topics",
                          delta_path=tmp_path / name, checkpoint_dir=tmp_path / f"cp-{name}",
                          topics_glob="*", mode="scd1", pipeline_id="p",
                          executors_min_records=1)


def tables(cfg: PipelineConfig) -> dict[str, list[Any]]:
    """Each table's schema, then its rows by key."""
    out: dict[str, list[Any]] = {}
    for obj in OBJECTS:
        path = cfg.delta_path / "public" / obj.partition("_")[2]
        if path.exists():
            table = read_table(path)
            out[obj] = [str(table.schema), *table.sort_by("id").to_pylist()]
    return out


def driver_path(tmp_path: Path, bounds: list[int]) -> dict[str, list[Any]]:
    cfg = config(tmp_path, "driver")
    target = DeltaTarget(cfg.delta_path, cfg.pipeline_id)
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        runner.apply_batch(cfg.topics_dir, {TOPIC: (a, b)}, batch, cfg, target)
    return tables(cfg)


@pytest.mark.parametrize("seed", range(4))
def test_parts_netted_across_equal_the_driver_path(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    n = 360
    events = workload(rng, n, added_at=200 if seed == 3 else None)
    write(tmp_path / "topics", events)
    end = len(events)
    bounds = [0, end // 3, 2 * end // 3, end]
    want = driver_path(tmp_path, bounds)
    cfg = config(tmp_path, "executors")
    target = DeltaTarget(cfg.delta_path, cfg.pipeline_id)
    refused, flagged = [], False
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        points = sorted(rng.sample(range(a + 1, b), rng.choice((1, 2, 4))))
        parts = [tasks.Task(TOPIC, s, e, i, capabilities.DATASTREAM)
                 for i, (s, e) in enumerate(itertools.pairwise([a, *points, b]))]
        results = [r for t in parts for r in tasks.run_task(
            cfg.topics_dir, tmp_path / "staging" / str(batch), "scd1", t)]
        flagged = flagged or any(r.toast for r in results)
        got = runner.apply_staged(None, TOPIC, results, batch, cfg, target.apply_scd1_net,
                                  target)
        if got is None:  # as `apply_batch` does: the driver's path for the topic
            refused.append(batch)
            got = runner._apply_topic(cfg.topics_dir, TOPIC, a, b, batch, cfg, target, None)
        else:
            assert {r.table for r in results} == set(OBJECTS)
            assert all(r.model == capabilities.DATASTREAM for r in results)
        assert got == b - a  # every event counted, re-deliveries included, as the driver
    assert refused == ([1] if seed == 3 else [])  # the batch where the column appears
    assert flagged
    got_tables = tables(cfg)
    assert got_tables == want
    keys = {(e["object"], e["payload"]["id"]) for e in events}
    assert 0 < sum(len(rows) - 1 for rows in want.values()) < len(keys)  # keys deleted
    rows = want["public_t"][1:]
    assert any(r["note"] is None for r in rows) and any(r["note"] for r in rows)


def test_re_deliveries_across_parts_are_known_by_their_uuid(tmp_path: Path) -> None:
    """Two changes of a key with the same `sort_keys` (other uuids), then a re-delivery of the
    first in a later part: the driver keeps the second (dedup by uuid, then the later of
    equal sequences), and so must the parts, which a sequence alone cannot tell apart."""
    rng = random.Random(1)
    first = event("public_t", 1, 1, "INSERT", row(rng, "public_t", 1, None), False)
    second = {**event("public_t", 1, 2, "UPDATE", row(rng, "public_t", 2, None), False),
              "sort_keys": first["sort_keys"]}
    events = [first, second, first]
    write(tmp_path / "topics", events)
    want = driver_path(tmp_path, [0, 3])["public_t"]
    assert want[1]["ver"] == 2
    cfg = config(tmp_path, "executors")
    target = DeltaTarget(cfg.delta_path, cfg.pipeline_id)
    results = [r for i in range(3) for r in tasks.run_task(
        cfg.topics_dir, tmp_path / "staging", "scd1",
        tasks.Task(TOPIC, i, i + 1, i, capabilities.DATASTREAM))]
    assert runner.apply_staged(None, TOPIC, results, 0, cfg, target.apply_scd1_net,
                               target) == 3
    got = read_table(cfg.delta_path / "public" / "t")
    assert [str(got.schema), *got.to_pylist()] == want


def test_a_part_of_a_datastream_topic_outside_scd1_is_refused(tmp_path: Path) -> None:
    events = workload(random.Random(5), 40)
    write(tmp_path / "topics", events)
    task = tasks.Task(TOPIC, 0, len(events), 0, capabilities.DATASTREAM)
    for mode in ("scd2", "changelog"):
        [result] = tasks.run_task(tmp_path / "topics", tmp_path / "s", mode, task)
        assert result.file is None and result.refused is not None and mode in result.refused


def test_apply_batch_stages_datastream_on_spark_tasks(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    events = workload(random.Random(11), 600)
    write(tmp_path / "topics", events)
    end = len(events)
    bounds = [0, end // 2, end]
    want = driver_path(tmp_path, bounds)
    # parts of 100 records (the default floor makes a small batch one part)
    monkeypatch.setattr(tasks, "plan", functools.partial(tasks.plan, max_records=100))
    staged: list[dict[str, list[tasks.PartResult]]] = []
    run_stage = tasks.run_stage

    def spy(*args: Any, **kwargs: Any) -> dict[str, list[tasks.PartResult]]:
        staged.append(run_stage(*args, **kwargs))
        return staged[-1]

    monkeypatch.setattr(tasks, "run_stage", spy)
    cfg = config(tmp_path, "executors")
    target = DeltaTarget(cfg.delta_path, cfg.pipeline_id)
    with caplog.at_level(logging.INFO, logger="headwater.pipeline"):
        for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
            runner.apply_batch(cfg.topics_dir, {TOPIC: (a, b)}, batch, cfg, target,
                               spark=spark)
    assert tables(cfg) == want
    assert len(staged) == 2
    for results in staged:
        parts = results[TOPIC]
        assert len({p.part for p in parts}) >= 3
        assert all(p.file is not None and p.refused is None for p in parts)
        assert {p.table for p in parts} == set(OBJECTS)
    lines = [r.getMessage() for r in caplog.records]
    for batch, (a, b) in enumerate(itertools.pairwise(bounds)):
        assert [m for m in lines if f"batch {batch}: {TOPIC}: {b - a} events of 2 tables" in m]
    assert not [m for m in lines if "event by event" in m]
