"""Random workloads captured from a real PostgreSQL, materialized by a real Spark into a JDBC
PostgreSQL database and a real MariaDB, compared in full with the source: clean, duplicated,
reordered; with the pipeline crashing between the staging write and the merge (and at the other
steps), and killed with kill -9 mid-run; and as Datastream files (JSON, Avro), the Delta
scenario's shuffled, copied and late files (`test_datastream_pipeline`), in every mode."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.jdbc_target import JdbcTarget, jdbc_jars
from headwater.pipeline.runner import start
from headwater.testing.replay import replay
from headwater.topics import reader
from tests.integration.postgres.conftest import Env, wait_for
from tests.pipeline import test_datastream_pipeline as datastream
from tests.pipeline.test_delta_variants import capture_workload, scramble, source_table
from tests.pipeline_jdbc.conftest import TargetDb

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def props_for(env: Env, target: TargetDb, **extra: Any) -> dict[str, Any]:
    return target.props(**{
        "skipped.operations": "none",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
        "headwater.pipeline.max.records.per.trigger": 50,  # many small batches
        **extra,
    })


def last_batch(target: TargetDb) -> int:
    """The newest batch applied to the table (-1 before the first)."""
    try:
        _, rows = target.query("SELECT max(batch_id) FROM _headwater_progress")
    except Exception:  # not created yet
        return -1
    return -1 if rows[0][0] is None else int(rows[0][0])


def target_table(target: TargetDb) -> dict[int, tuple[Any, ...]]:
    rows = target.rows("t")
    assert len({r["id"] for r in rows}) == len(rows), "duplicate keys in the target"
    return {r["id"]: (r["v"], r["n"]) for r in rows}


def run_once(spark: Any, config: Path) -> None:
    query = start(spark, load_pipeline_config(config), once=True)
    query.awaitTermination()
    assert query.exception() is None


def topic_offsets(env: Env) -> list[int]:
    return sorted(r.offset for r in reader.read(env.topics, f"{env.prefix}.public.t")
                  if r.value is not None)


# CI runs `clean` and `duplicated+reordered`, which has both the duplicates and the reordering
# across batches; `duplicated` (reordered within 5 records only) and `reordered` (no duplicates)
# are each a part of it and run with --long (together ~95 s of the file's 800 s on the loaded
# machine).
@pytest.mark.parametrize(
    ("name", "duplicate", "window"),
    [("clean", False, 1), pytest.param("duplicated", True, 5, marks=pytest.mark.long),
     pytest.param("reordered", False, None, marks=pytest.mark.long),
     ("duplicated+reordered", True, None)],
)
def test_target_equals_source(env: Env, target: TargetDb, jdbc_spark: Any, name: str,
                              duplicate: bool, window: int | None) -> None:
    props = props_for(env, target)
    seed = sum(map(ord, name)) + int(os.environ.get("HEADWATER_TEST_SEED", "0"))
    capture_workload(env, props, seed=seed, truncate=(name == "clean"))
    replayed = replay(env.topics, f"{env.prefix}.public.t")
    assert {k[0][1]: (r["v"], r["n"]) for k, r in replayed.items()} == source_table(env), (
        "the capture itself is incomplete")
    if duplicate or window is None:
        scramble(env, seed=5, duplicate=duplicate, shuffle_window=window)
        props["headwater.topics.dir"] = env.topics
    run_once(jdbc_spark, env.config(props))
    assert target_table(target) == source_table(env)
    assert not [n for n in target.tables() if n.startswith("_hw_stg_")], "staging left behind"
    assert last_batch(target) >= 5, "the events did not spread over batches"


def crash_at(monkeypatch: pytest.MonkeyPatch, point: str, after: int) -> list[int]:
    """Makes the `after`-th arrival at `point` raise, as a crash there would."""
    seen = [0]

    def fault(self: JdbcTarget, where: str) -> None:
        if where == point:
            seen[0] += 1
            if seen[0] == after:
                raise RuntimeError(f"simulated crash at {where}")

    monkeypatch.setattr(JdbcTarget, "_fault", fault)
    return seen


def run_crashing(spark: Any, config: Path) -> None:
    query = start(spark, load_pipeline_config(config), once=True)
    with pytest.raises(Exception, match="simulated crash"):
        query.awaitTermination()


def test_crash_between_staging_and_merge_then_restart(
        env: Env, target: TargetDb, jdbc_spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    props = props_for(env, target)
    capture_workload(env, props, seed=7, truncate=True)
    config = env.config(props)
    crash_at(monkeypatch, "staged", after=3)
    run_crashing(jdbc_spark, config)
    applied = target_table(target)
    monkeypatch.undo()
    # The restart replays the crashed batch (same batch id) from the checkpoint.
    run_once(jdbc_spark, config)
    assert target_table(target) == source_table(env)
    assert applied != target_table(target), "the crash came after everything was applied"


def test_crashes_at_every_step_apply_each_event_once(
        env: Env, target: TargetDb, jdbc_spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Changelog mode shows a batch applied twice (duplicate rows) or lost (missing rows)."""
    props = props_for(env, target, **{"headwater.pipeline.mode": "changelog"})
    capture_workload(env, props, seed=13)
    config = env.config(props)
    for point, after in (("staged", 2), ("merged", 2), ("committed", 2)):
        crash_at(monkeypatch, point, after)
        run_crashing(jdbc_spark, config)
        monkeypatch.undo()
    run_once(jdbc_spark, config)
    rows = target.rows("t")
    assert sorted(r["__offset"] for r in rows) == topic_offsets(env)


def progressed(target: TargetDb, before: int, proc: subprocess.Popen[bytes]) -> Any:
    return lambda: last_batch(target) > before or proc.poll() is not None


# One kill in CI; two with --long (the second run, restarted from the first's checkpoint, killed
# again).  Each kill costs a `headwater pipeline` process and its JVM's start: the two kills and
# the CLI's catch-up run took 160-220 s per target on the loaded 2-core machine.
@pytest.mark.parametrize("kills", [1, pytest.param(2, marks=pytest.mark.long)])
def test_pipeline_killed_mid_run_applies_exactly_once(env: Env, target: TargetDb,
                                                      jdbc_spark: Any, kills: int) -> None:
    props = props_for(env, target, **{"headwater.pipeline.mode": "changelog"})
    capture_workload(env, props, seed=11)
    config = env.config(props)
    # The subprocess's JVM gets the driver jars from the command line (runner.spark_session
    # sets spark.jars itself once it knows jdbc_jars; then this is redundant, not wrong).
    child_env = {**os.environ,
                 "PYSPARK_SUBMIT_ARGS": f"--jars {','.join(jdbc_jars())} pyspark-shell"}
    total = len(topic_offsets(env))
    rng = random.Random(2)
    partial = []
    for i in range(kills):  # each start costs a JVM start (10-30 s on a busy 2-core machine)
        before = last_batch(target)
        log = env.tmp / f"pipeline-{i}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "headwater.cli", "pipeline", str(config),
                 "--log-level", "WARNING"],
                stdout=subprocess.DEVNULL, stderr=out, env=child_env)
        try:
            # Kill inside the batches: once this run has applied one, after a random moment.
            wait_for(progressed(target, before, proc), timeout=120, interval=0.05,
                     what="a batch applied by the subprocess")
            time.sleep(rng.uniform(0, 1.5))
            assert proc.poll() is None, log.read_text()[-3000:]
        finally:  # also when the wait failed: a pipeline left running holds a core and a JVM
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        partial.append(len(target.rows("t")))
    assert 0 < partial[0] < total, f"the first kill was not mid-run: {partial} of {total}"
    # The catch-up run from the killed run's checkpoint, in this process's session (the killed
    # runs were the CLI's; a third JVM start would test nothing more).
    run_once(jdbc_spark, config)
    # Every event exactly once: no batch applied twice, none lost.
    assert sorted(r["__offset"] for r in target.rows("t")) == topic_offsets(env)


# The Datastream files scenario of tests/pipeline/test_datastream_pipeline.py (a capture killed
# once, its files shuffled into rounds, some copied again) into each database, in every mode.
# JSON types columns by their values (`amount` a double, kept a double in batches of integral
# amounts by the table's type read back); Avro by the schema (`amount` numeric(10,2)).
@pytest.mark.parametrize("fmt", ["json", pytest.param("avro", marks=pytest.mark.long)])
def test_datastream_files_equal_the_source(env: Env, target: TargetDb, jdbc_spark: Any,
                                           fmt: str) -> None:
    root = datastream.capture_with_one_kill(env, fmt)
    presented = env.tmp / "presented"
    presented.mkdir()
    rounds = datastream.present(datastream.event_files(root), random.Random(13))
    want = datastream.source_rows(env)
    q = '"' if target.kind == "postgres" else "`"

    def schema(mode: str) -> str:  # (MariaDB: a database of the server, shared by the tests)
        return f"{target.database}_{mode}"

    def rows(mode: str) -> list[dict[str, Any]]:
        names, found = target.query(f"SELECT * FROM {q}{schema(mode)}{q}.{q}t{q}")
        return [dict(zip(names, r, strict=True)) for r in found]

    def state(found: list[dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
        out: dict[int, tuple[Any, ...]] = {}
        for r in found:
            assert r["id"] not in out, f"two rows for key {r['id']}"
            amount = r["amount"]
            if fmt == "json":  # JSON events carry no types: numbers are doubles
                assert amount is None or isinstance(amount, float)
                amount = None if amount is None else Decimal(str(amount)).quantize(
                    Decimal("0.01"))
            out[r["id"]] = (r["ver"], r["note"], amount)
        return out

    for mode in ("scd1", "scd2", "changelog"):
        config = datastream.pipeline_config(env, mode, presented)
        config.write_text(config.read_text() + "".join(
            f"{k}={v}\n" for k, v in target.props(**{
                "headwater.pipeline.jdbc.schema": schema(mode)}).items()))
        if mode == "scd1":  # each round applied before the next lands (late files)
            for files in rounds:
                datastream.copy_round(files, root, presented)
                run_once(jdbc_spark, config)
        else:
            run_once(jdbc_spark, config)
    assert state(rows("scd1")) == want
    assert state([r for r in rows("scd2") if r["__END_AT"] is None]) == want
    uuids = [r["__hw_uuid"] for r in rows("changelog")]
    assert sorted(uuids) == sorted({e["uuid"] for e in datastream.read_events(root)})
