"""A full disk under the pipeline: its checkpoint (Spark's offset and commit logs) or its Delta
tables on a small file system that fills mid-run.  The pipeline must stop with an error naming
the cause and the path, and once space is freed a restart must apply every event exactly once
(changelog rows = events)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from headwater.pipeline.delta_target import read_table
from headwater.testing.small_disk import fill, small_disk
from headwater.topics import reader
from tests.integration.postgres.conftest import Env, wait_for
from tests.pipeline.test_delta_variants import capture_workload, props_for, run_once

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("on_disk", ["checkpoint", "delta"])
def test_full_disk_stops_the_pipeline_clearly_and_a_restart_applies_exactly_once(
        env: Env, spark: Any, on_disk: str) -> None:
    with small_disk(env.tmp / "disk", 24 * 1024) as disk:
        props = props_for(env, **{"headwater.pipeline.mode": "changelog",
                                  "headwater.pipeline.max.records.per.trigger": 40})
        key = ("headwater.pipeline.checkpoint.dir" if on_disk == "checkpoint"
               else "headwater.pipeline.delta.path")
        props[key] = disk / on_disk
        table = (disk / "delta" if on_disk == "delta" else env.tmp / "delta") / "public" / "t"
        capture_workload(env, props, seed=5)
        events = sum(1 for r in reader.read(env.topics, f"{env.prefix}.public.t")
                     if r.value is not None)
        config = env.config(props)
        proc = subprocess.Popen(
            [sys.executable, "-m", "headwater.cli", "pipeline", str(config),
             "--log-level", "WARNING"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: (table / "_delta_log").exists() or proc.poll() is not None,
                     timeout=300, what="the first batch")
            filler = fill(disk, leave_kb=0)
            wait_for(lambda: proc.poll() is not None, timeout=300, interval=0.5,
                     what="the pipeline to stop on the full disk")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
        assert proc.returncode != 0, err[-3000:]
        assert "No space left on device" in err and str(disk) in err, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        assert read_table(table).num_rows < events, "the disk filled after the last batch"

        filler.unlink()
        # The restart from the stopped run's checkpoint, in this process's session (the
        # stopped run was the CLI's; a second `headwater pipeline` JVM start, 20-35 s on the
        # loaded 2-core CI machine, would test nothing more).
        run_once(spark, config)
        assert read_table(table).num_rows == events  # none lost, none applied twice
