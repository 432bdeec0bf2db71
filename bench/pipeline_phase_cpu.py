"""CPU seconds of each phase of one executor-stage batch, in one process: each part's task
(read, decode, net, stage as Parquet), the net across parts in the driver (`part_net`), and
the delta-rs MERGE of the net rows into a new table and then into a table holding them.

CPU time, not wall time: on a machine shared with other work the load stretches wall time
far more than the CPU a phase needs.

    PYTHONPATH=src:. .venv/bin/python bench/pipeline_phase_cpu.py [--changes 300000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_delta import generate

from headwater.pipeline import tasks
from headwater.pipeline.delta_target import DeltaTarget


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=300_000)
    ap.add_argument("--keys", type=int, default=60_000)
    ap.add_argument("--parts", type=int, default=2, help="the cluster's executor cores")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headwater-phase-cpu-"))
    try:
        root = work / "topics"
        generate(root, args.changes, args.keys)
        topic = next(p.name for p in sorted(root.iterdir()) if not p.name.startswith("."))
        print(f"{args.changes:,} events, {args.keys:,} keys; load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        results = []
        for task in tasks.plan(root, {topic: (0, args.changes)}, args.parts):
            c0 = time.process_time()
            results += tasks.run_task(root, work / "staging", "scd1", task)
            print(f"task {task.part} [{task.start}, {task.end}): CPU "
                  f"{time.process_time() - c0:.2f} s", flush=True)
        rows = sum(pq.read_metadata(r.file).num_rows for r in results if r.file)
        for run in range(2):
            c0 = time.process_time()
            staged = tasks.net_across_parts(results, "scd1")
            assert staged is not None
            net = staged.to_columnar()
            print(f"net across parts ({rows:,} staged rows -> {net.rows.num_rows:,}), run "
                  f"{run}: CPU {time.process_time() - c0:.2f} s", flush=True)
        for batch in range(2):
            c0 = time.process_time()
            DeltaTarget(work / "delta", "bench").apply_scd1_net(net, batch)
            print(f"delta-rs MERGE, batch {batch}: CPU {time.process_time() - c0:.2f} s",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
