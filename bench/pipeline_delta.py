"""Pipeline throughput: N change events in the topic log into Delta (SCD type 1).

In the same run it times a bare delta-rs MERGE of the same net changes (computed directly
from the generated rows, no JSON, no Spark) and prints changes/s for both and the ratio
(goal >= 0.5).  With `--freshness` it also runs PostgreSQL -> capture -> continuous pipeline
under a steady write load and prints the source-commit-to-visible-in-Delta latency, p50 and
p99 (goal: p99 under 5 s).

    .venv/bin/python bench/pipeline_delta.py [--changes 1000000] [--event-path] [--changelog]
                                             [--freshness]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import change_events
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from headwater.pipeline.runner import spark_session


def generate(
    root: Path, changes: int, keys: int, seed: int = 1
) -> dict[int, tuple[Any, ...] | None]:
    """Writes `changes` events to the topic log; returns the final state per key."""
    return change_events.write(root, changes, keys, seed=seed)


def bare_merge(path: Path, state: dict[int, tuple[Any, ...] | None]) -> float:
    """A delta-rs MERGE of the net changes (upserts and deletes), as a reference."""
    ids, names, amounts, qtys, deletes = [], [], [], [], []
    for key, row in state.items():
        ids.append(key)
        if row is None:
            names.append(None), amounts.append(None), qtys.append(None), deletes.append(True)
        else:
            names.append(row[1])
            amounts.append(row[2].value)
            qtys.append(row[3])
            deletes.append(False)
    source = pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string()),
                       "amount": pa.array(amounts, pa.decimal128(12, 2)),
                       "qty": pa.array(qtys, pa.int64()), "deleted": pa.array(deletes)})
    write_deltalake(str(path), source.drop_columns(["deleted"]).schema.empty_table())
    dt = DeltaTable(str(path))
    t0 = time.monotonic()
    (dt.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
       .when_matched_delete("s.deleted")
       .when_matched_update({"name": "s.name", "amount": "s.amount", "qty": "s.qty"},
                            "NOT s.deleted")
       .when_not_matched_insert({"id": "s.id", "name": "s.name", "amount": "s.amount",
                                 "qty": "s.qty"}, "NOT s.deleted")
       .execute())
    return time.monotonic() - t0


def pipeline_config(work: Path, name: str, topics: str = "topics", mode: str = "scd1",
                    extra: dict[str, str] | None = None) -> Path:
    config = work / f"{name}.properties"
    config.write_text(
        f"topic.prefix=bench\nheadwater.topics.dir={topics}\nheadwater.pipeline.mode={mode}\n"
        f"headwater.pipeline.delta.path={name}\nheadwater.pipeline.checkpoint.dir={name}-checkpoint\n"
        + "".join(f"{k}={v}\n" for k, v in (extra or {}).items())
    )
    return config


def run_pipeline(spark: Any, work: Path, name: str, columnar: bool = True,
                 topics: str = "topics", mode: str = "scd1",
                 extra: dict[str, str] | None = None) -> float:
    """One `--once` run of the pipeline in this process's Spark session (`extra`: more
    properties for its configuration); returns its seconds."""
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import start

    os.environ["HEADWATER_PIPELINE_COLUMNAR"] = "1" if columnar else "0"
    cfg = load_pipeline_config(pipeline_config(work, name, topics, mode, extra))
    t0 = time.monotonic()
    query = start(spark, cfg, once=True)
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return time.monotonic() - t0


def check(work: Path, name: str, state: dict[int, tuple[Any, ...] | None]) -> None:
    got = DeltaTable(str(work / name / "public" / "items")).to_pyarrow_table()
    live = sum(1 for r in state.values() if r is not None)
    assert got.num_rows == live, f"{name}: pipeline produced {got.num_rows} rows, expected {live}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--freshness", action="store_true")
    ap.add_argument("--freshness-only", action="store_true")
    ap.add_argument("--seconds", type=int, default=60, help="freshness measuring time")
    ap.add_argument("--event-path", action="store_true",
                    help="also run the event-by-event path (HEADWATER_PIPELINE_COLUMNAR=0)")
    ap.add_argument("--changelog", action="store_true",
                    help="also append every event in changelog mode (both paths with "
                         "--event-path)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headwater-pipeline-bench-"))
    if args.freshness_only:
        try:
            freshness(work, seconds=args.seconds)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    try:
        t0 = time.monotonic()
        state = generate(work / "topics", args.changes, args.keys)
        size = sum(f.stat().st_size for f in (work / "topics").rglob("*.jsonl"))
        print(f"generated {args.changes:,} events over {args.keys:,} keys in "
              f"{time.monotonic() - t0:.1f}s ({size / 2**20:,.0f} MiB of topic log)")
        ref_s = bare_merge(work / "bare", state)
        print(f"bare delta-rs MERGE of {len(state):,} net changes: {ref_s:6.2f} s "
              f"({args.changes / ref_s:,.0f} changes/s equivalent)")
        os.chdir(work)
        t0 = time.monotonic()
        spark = spark_session("headwater-bench")
        generate(work / "warm-topics", 100, 10)
        run_pipeline(spark, work, "warm", topics="warm-topics")  # the first query's set-up
        start_s = time.monotonic() - t0
        print(f"Spark session start-up and a first query of 100 events: {start_s:6.2f} s")
        try:
            bounds(spark, work, ref_s)
            pipe_s = run_pipeline(spark, work, "delta")
            check(work, "delta", state)
            report("columnar path", args.changes, pipe_s, start_s, ref_s)
            if args.event_path:
                slow_s = run_pipeline(spark, work, "delta-events", columnar=False)
                check(work, "delta-events", state)
                report("event-by-event path", args.changes, slow_s, start_s, ref_s)
                print(f"columnar / event-by-event speed-up (processing): {slow_s / pipe_s:.1f}x")
            if args.changelog:
                changelog(spark, work, args.changes, args.event_path)
        finally:
            spark.stop()
        if args.freshness:
            freshness(work, seconds=args.seconds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def changelog(spark: Any, work: Path, changes: int, event_path: bool) -> None:
    """The changelog mode (every event appended, no MERGE): no bare reference of its own, so
    it prints changes/s and, with the event path, the column-wise speed-up."""
    paths = [("columnar path", True)] + ([("event-by-event path", False)] if event_path else [])
    took = {}
    for name, columnar in paths:
        table = f"changelog-{int(columnar)}"
        took[columnar] = run_pipeline(spark, work, table, columnar=columnar, mode="changelog")
        rows = DeltaTable(str(work / table / "public" / "items")).to_pyarrow_table().num_rows
        assert rows == changes, f"{table}: {rows} changelog rows, expected {changes}"
        print(f"headwater pipeline, changelog, {name}: {took[columnar]:6.2f} s = "
              f"{changes / took[columnar]:,.0f} changes/s")
    if event_path:
        print(f"  columnar / event-by-event speed-up: {took[False] / took[True]:.1f}x")


def bounds(spark: Any, work: Path, ref_s: float) -> None:
    """What no pipeline of this shape can go below, measured here: reading the topic log's
    bytes once (memchr over the mapped segments), parsing its payloads with pyarrow's JSON
    reader (multithreaded C++), and a Spark --once query of 10 events."""
    import mmap

    import numba
    import numpy as np

    from headwater.pipeline import columnar
    from headwater.pipeline import scan_kernel as kernel

    newline = kernel._newline

    @numba.njit(nogil=True)
    def count_lines(data: Any) -> int:
        n, i, end = 0, 0, data.shape[0]
        while True:
            i = newline(data, i, end) + 1
            if i == 0:
                return n
            n += 1

    count_lines(np.frombuffer(b"x\n", np.uint8))  # compile outside the timing
    files = sorted((work / "topics").rglob("*.jsonl"))
    t0 = time.monotonic()
    lines = 0
    for f in files:
        with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            view = np.frombuffer(m, np.uint8)
            lines += count_lines(view)
            del view
    read_s = time.monotonic() - t0
    topic = files[0].parent.name
    parse_s = 0.0
    for first in range(0, lines, 500_000):
        scanned = columnar.scan(work / "topics", topic, first, first + 500_000)
        if scanned.count:
            order = columnar.lines_order(topic, scanned)
            sh = columnar.shape(scanned.key_head, scanned.value_head, order.columnar_position)
            t0 = time.monotonic()
            columnar._read_json(scanned.value_lines, sh.value_schema)
            parse_s += time.monotonic() - t0
    generate(work / "tiny-topics", 10, 10)
    query_s = run_pipeline(spark, work, "tiny", topics="tiny-topics")
    print(f"floors: reading the {lines:,} lines once {read_s:.2f} s; pyarrow JSON parse of "
          f"their payloads {parse_s:.2f} s; a Spark --once query of 10 events {query_s:.2f} s")
    print(f"  so the ratio cannot exceed {ref_s / (read_s + parse_s + query_s):.2f} with this "
          f"topic format and one Spark query ({ref_s / read_s:.2f} on the bytes alone)")


def report(name: str, changes: int, pipe_s: float, start_s: float, ref_s: float) -> None:
    total = pipe_s + start_s
    print(f"headwater pipeline, {name} (Spark source + read + decode + SCD1 MERGE): "
          f"{pipe_s:6.2f} s = {changes / pipe_s:,.0f} changes/s; with Spark start-up "
          f"{total:6.2f} s = {changes / total:,.0f} changes/s")
    print(f"  ratio to the bare MERGE: {ref_s / pipe_s:.3f} (processing), "
          f"{ref_s / total:.3f} (with start-up); goal >= 0.5")


def freshness(work: Path, rate: int = 5000, seconds: int = 60) -> None:
    """PostgreSQL -> capture -> continuous pipeline; latency from commit to visible in Delta."""
    from headwater.testing.localpg import LocalPostgres

    pg = LocalPostgres().start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        pg.create_database("fresh")
        conn = pg.connect("fresh")
        cur = conn.cursor()
        cur.execute("CREATE TABLE load (id int PRIMARY KEY, n int)")
        cur.execute("CREATE TABLE probe (id int PRIMARY KEY, at timestamptz)")
        d = work / "fresh"
        d.mkdir()
        config = d / "c.properties"
        config.write_text(
            "connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
            f"database.hostname=127.0.0.1\ndatabase.port={pg.port}\ndatabase.user=postgres\n"
            "database.dbname=fresh\ntopic.prefix=fresh\nslot.name=fresh\n"
            "headwater.topics.dir=topics\nheadwater.topics.segment.ms=500\n"
            "offset.storage.file.filename=offsets.json\npoll.interval.ms=50\n"
            "headwater.pipeline.delta.path=delta\nheadwater.pipeline.checkpoint.dir=ckpt\n"
            "headwater.pipeline.trigger.interval.ms=500\n"
        )
        pipeline_log = open(d / "pipeline.log", "wb")  # noqa: SIM115 (closed below)
        for cmd in ("run", "pipeline"):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "headwater.cli", cmd, str(config), "--log-level",
                 "INFO" if cmd == "pipeline" else "WARNING"],
                stderr=pipeline_log if cmd == "pipeline" else None))
        probe_path = d / "delta" / "public" / "probe"
        # Steady state only: wait until the pipeline (Spark start-up) shows a first probe.
        cur.execute("INSERT INTO probe VALUES (0, now())")
        started = time.monotonic()
        while time.monotonic() - started < 300:
            try:
                if DeltaTable(str(probe_path)).to_pyarrow_table(columns=["id"]).num_rows:
                    break
            except Exception:
                pass
            time.sleep(0.5)
        print(f"pipeline up after {time.monotonic() - started:.0f}s; measuring {seconds}s")
        stop = threading.Event()
        written = [0]

        def load() -> None:
            c = pg.connect("fresh")
            k = c.cursor()
            i = 0
            while not stop.is_set():
                t = time.monotonic()
                k.execute("INSERT INTO load SELECT g, 0 FROM generate_series(%s, %s) g "
                          "ON CONFLICT (id) DO UPDATE SET n = load.n + 1",
                          ((i * 500) % 50_000, (i * 500) % 50_000 + 499))
                i += 1
                written[0] += 500
                time.sleep(max(0.0, 500 / rate - (time.monotonic() - t)))
            c.close()

        threading.Thread(target=load, daemon=True).start()
        time.sleep(5)  # past the first (largest) batch of the load
        latencies: list[float] = []
        committed: dict[int, float] = {}
        load_start, load_written = time.monotonic(), written[0]
        deadline = time.monotonic() + seconds
        pid = 0
        drain = deadline + 30  # probes of the last seconds: wait for them (load still on)
        while time.monotonic() < (deadline if time.monotonic() < deadline else drain):
            if time.monotonic() < deadline:
                pid += 1
                cur.execute("INSERT INTO probe VALUES (%s, now())", (pid,))
                committed[pid] = time.monotonic()
            elif not committed:
                break
            time.sleep(0.25)
            try:
                seen = DeltaTable(str(probe_path)).to_pyarrow_table(columns=["id"])
            except Exception:
                continue
            now = time.monotonic()
            for i in seen.column("id").to_pylist():
                if i in committed:
                    latencies.append(now - committed.pop(i))
        achieved = (written[0] - load_written) / (time.monotonic() - load_start)
        stop.set()
        lost = len(committed)  # never seen: counted at the longest wait
        latencies += [drain - t for t in committed.values()]
        print(f"load: {achieved:,.0f} changes/s written; {lost} probes not visible 30 s after "
              "the end")
        if len(latencies) > 10:
            latencies.sort()
            p50 = statistics.median(latencies)
            p99 = latencies[int(len(latencies) * 0.99) - 1]
            print(f"freshness at ~{rate} changes/s: p50 {p50:.2f} s, p99 {p99:.2f} s "
                  f"({len(latencies)} probes; goal p99 < 3 s)")
        else:
            print("freshness: too few probes became visible")
        batch_costs(d / "pipeline.log")
    finally:
        for p in procs:
            p.terminate()
            p.wait(30)
        pg.cleanup()


def batch_costs(path: Path) -> None:
    """Medians of the pipeline's own per-batch timings (from its log)."""
    pattern = re.compile(rb"(\d+) records; ranges ([0-9.]+)s, read\+decode\+apply ([0-9.]+)s")
    found = [tuple(float(x) for x in m.groups()) for m in pattern.finditer(path.read_bytes())]
    if found:
        recs, ranges, apply = (statistics.median(c) for c in zip(*found, strict=True))
        print(f"pipeline: {len(found)} batches; median {recs:,.0f} records, ranges {ranges:.2f}s,"
              f" read+decode+apply {apply:.2f}s")


if __name__ == "__main__":
    main()
