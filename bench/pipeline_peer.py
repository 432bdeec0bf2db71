"""Headwater's pipeline against the Spark job a user would write instead, on the same change
events, in one run and one Spark session (`local[2]`).

The peer is the job the Delta Lake and Spark guides lead to: Spark's JSON file source over the
topic log's segments (schema `offset, timestamp, key, value`, the value as its JSON text),
`from_json` with the Debezium envelope's schema, the newest change per key by
`max_by(..., source.lsn)`, and a Delta MERGE (delta-spark's `DeltaTable.merge`: delete when the
newest is a delete, else update or insert) in `foreachBatch`, run with `Trigger.AvailableNow`.
Headwater is `headwater.pipeline.runner` with its Delta target, SCD1 (`bench/pipeline_delta.py`
runs it the same way).  Both read the log in about `--micro-batches` micro-batches (the peer:
`maxFilesPerTrigger`, Headwater: `headwater.pipeline.max.records.per.trigger`); both run once
on a small log first (untimed), so the session's and the first query's start-up are left out.

For each variant (`bench/change_events.py`: clean; reordered and duplicated deliveries;
unchanged TOAST values) it prints each side's seconds and changes/s, the ratio (issue 25's
goal: Headwater at least 2x the peer) and whether each table equals the source's final state.
The peer orders by position only inside a micro-batch and merges without comparing positions,
so a late or repeated event that lands in a later micro-batch than a newer change of its key
overwrites it, and it writes the TOAST placeholder as the value: its table is expected to
differ there.  The exit status is 1 when Headwater's table differs from the source; no timing
is asserted.

    PYTHONPATH=src:. .venv/bin/python bench/pipeline_peer.py [--changes 300000] [--keys 60000]
        [--variant clean|reordered|duplicated|toast|all] [--micro-batches 3]
        [--property headwater.pipeline.executors.min.records=0 ...]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).parent))

import change_events
from pipeline_delta import run_pipeline

from headwater.pipeline.runner import spark_session

# What the user's job declares: a topic log line, and the part of the envelope it uses.
LINE_SCHEMA = "offset BIGINT, timestamp BIGINT, key STRING, value STRING"
ROW = "STRUCT<id: BIGINT, name: STRING, amount: STRING, qty: BIGINT>"
ENVELOPE_SCHEMA = (f"payload STRUCT<before: {ROW}, after: {ROW}, "
                   "source: STRUCT<lsn: BIGINT, txId: BIGINT, ts_ms: BIGINT>, "
                   "op: STRING, ts_ms: BIGINT>")
# A Kafka Connect decimal is its unscaled value's big-endian bytes in base64 (all positive here)
AMOUNT = ("CAST(CAST(conv(hex(unbase64(after.amount)), 16, 10) AS DECIMAL(20, 0)) / 100 "
          "AS DECIMAL(12, 2))")
COLUMNS = ("id", "name", "amount", "qty")
BYTES_PER_RECORD = 3000  # a rendered event with its embedded schema, about


def peer_run(spark: Any, topic_dir: Path, table: Path, checkpoint: Path,
             files_per_trigger: int) -> tuple[float, int]:
    """The user's job, from creating its table to the end of its stream; (seconds,
    micro-batches)."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)
    from pyspark.sql.types import DecimalType, LongType, StringType, StructField, StructType

    batches = [0]

    def upsert(batch: Any, batch_id: int) -> None:
        events = (batch.where(F.col("value").isNotNull())  # tombstones carry no change
                  .select(F.from_json("value", ENVELOPE_SCHEMA).alias("e"))
                  .select("e.payload.*"))
        rows = events.select(
            F.coalesce("after.id", "before.id").alias("id"), "op",
            F.col("after.name").alias("name"), F.expr(AMOUNT).alias("amount"),
            F.col("after.qty").alias("qty"), F.col("source.lsn").alias("lsn"))
        newest = (rows.groupBy("id")
                  .agg(F.max_by(F.struct("op", "name", "amount", "qty"), "lsn").alias("c"))
                  .select("id", "c.*"))
        values: dict[str, Any] = {c: f"s.{c}" for c in COLUMNS}
        (DeltaTable.forPath(spark, str(table)).alias("t")
         .merge(newest.alias("s"), "t.id = s.id")
         .whenMatchedDelete(condition="s.op = 'd'")
         .whenMatchedUpdate(condition="s.op <> 'd'", set=values)
         .whenNotMatchedInsert(condition="s.op <> 'd'", values=values)
         .execute())
        batches[0] += 1

    t0 = time.monotonic()
    (DeltaTable.createIfNotExists(spark).location(str(table))
     .addColumns(StructType([StructField("id", LongType(), False),
                             StructField("name", StringType()),
                             StructField("amount", DecimalType(12, 2)),
                             StructField("qty", LongType())]))
     .execute())
    query = (spark.readStream.schema(LINE_SCHEMA)
             .option("maxFilesPerTrigger", files_per_trigger).json(str(topic_dir))
             .writeStream.foreachBatch(upsert)
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"the peer's query failed: {query.exception()}")
    return time.monotonic() - t0, batches[0]


def table_rows(spark: Any, path: Path) -> dict[int, tuple[Any, ...]]:
    """A Delta table's rows as id -> (name, amount, qty), read through Spark."""
    got = spark.read.format("delta").load(str(path)).select(*COLUMNS).toArrow().to_pylist()
    return {r["id"]: (r["name"], r["amount"], r["qty"]) for r in got}


def verdict(problem: str) -> str:
    return "equals the source" if not problem else f"does NOT equal the source: {problem}"


def segment_bytes(changes: int, micro_batches: int) -> int:
    """Segments small enough that each of the peer's micro-batches reads several files."""
    return min(64 << 20, max(1 << 20, changes * BYTES_PER_RECORD // (8 * micro_batches)))


class Result(NamedTuple):
    variant: str
    headwater_s: float
    headwater_equal: bool
    peer_s: float
    peer_equal: bool


def run_variant(spark: Any, work: Path, variant: str, args: argparse.Namespace,
                extra: dict[str, str]) -> Result:
    """Both sides over one variant's log (removed afterwards, with both tables)."""
    topics = work / f"topics-{variant}"
    t0 = time.monotonic()
    state = change_events.write(topics, args.changes, args.keys, variant,
                                segment_bytes=segment_bytes(args.changes, args.micro_batches))
    files = sorted((topics / change_events.TOPIC).glob("*.jsonl"))
    records = 0
    for f in files:
        with f.open("rb") as fh:
            records += sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))
    want = change_events.expected_rows(state)
    print(f"\n[{variant}] {args.changes:,} changes over {args.keys:,} keys: {records:,} records "
          f"in {len(files)} segments ({sum(f.stat().st_size for f in files) / 2**20:,.0f} MiB), "
          f"{len(want):,} live rows at the source; written in {time.monotonic() - t0:.1f} s",
          flush=True)

    props = {"headwater.pipeline.max.records.per.trigger":
             str(math.ceil(records / args.micro_batches)), **extra}
    hw_s = run_pipeline(spark, work, f"headwater-{variant}", topics=topics.name, extra=props)
    hw_problem = change_events.differences(
        want, table_rows(spark, work / f"headwater-{variant}" / "public" / "items"))
    print(f"headwater: {hw_s:6.2f} s = {args.changes / hw_s:9,.0f} changes/s; "
          f"table {verdict(hw_problem)}", flush=True)

    peer_s, peer_batches = peer_run(spark, topics / change_events.TOPIC,
                                    work / f"peer-{variant}", work / f"peer-{variant}-checkpoint",
                                    math.ceil(len(files) / args.micro_batches))
    peer_problem = change_events.differences(want, table_rows(spark, work / f"peer-{variant}"))
    expected = "" if variant == "clean" else " (expected: not equal)"
    print(f"peer:      {peer_s:6.2f} s = {args.changes / peer_s:9,.0f} changes/s "
          f"({peer_batches} micro-batches); table {verdict(peer_problem)}{expected}")
    print(f"ratio, headwater / peer throughput: {peer_s / hw_s:.2f}x (goal >= 2)", flush=True)
    for leftover in (topics, work / f"headwater-{variant}", work / f"peer-{variant}"):
        shutil.rmtree(leftover, ignore_errors=True)
    return Result(variant, hw_s, not hw_problem, peer_s, not peer_problem)


def summary(results: list[Result], changes: int) -> None:
    print(f"\n{'variant':<11} {'headwater':>20} {'peer':>20}  ratio  equal to the source")
    for r in results:
        print(f"{r.variant:<11} {changes / r.headwater_s:>11,.0f} changes/s "
              f"{changes / r.peer_s:>11,.0f} changes/s {r.peer_s / r.headwater_s:>5.2f}x  "
              f"headwater {'yes' if r.headwater_equal else 'NO'}, "
              f"peer {'yes' if r.peer_equal else 'no'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=300_000)
    ap.add_argument("--keys", type=int, default=60_000)
    ap.add_argument("--variant", choices=[*change_events.VARIANTS, "all"], default="all")
    ap.add_argument("--micro-batches", type=int, default=3,
                    help="about how many micro-batches each side reads the log in")
    ap.add_argument("--property", action="append", default=[], metavar="NAME=VALUE",
                    help="a further property for Headwater's pipeline (repeatable)")
    args = ap.parse_args()
    if args.changes < 1 or args.keys < 1 or args.micro_batches < 1:
        ap.error("--changes, --keys and --micro-batches must be positive")
    extra = {}
    for item in args.property:
        name, sep, value = item.partition("=")
        if not sep or not name:
            ap.error(f"--property {item!r}: expected NAME=VALUE")
        extra[name.strip()] = value.strip()
    variants = change_events.VARIANTS if args.variant == "all" else (args.variant,)
    work = Path(tempfile.mkdtemp(prefix="headwater-peer-bench-"))
    results: list[Result] = []
    try:
        os.chdir(work)
        t0 = time.monotonic()
        spark = spark_session("headwater-peer-bench", master="local[2]",
                              spark_props={"spark.ui.showConsoleProgress": "false"})
        try:
            warm = work / "topics-warm"
            change_events.write(warm, 100, 10)
            run_pipeline(spark, work, "headwater-warm", topics=warm.name, extra=extra)
            peer_run(spark, warm / change_events.TOPIC, work / "peer-warm",
                     work / "peer-warm-checkpoint", 1)
            print(f"Spark session (local[2]) and a first run of each side on 100 events: "
                  f"{time.monotonic() - t0:.1f} s (not counted)", flush=True)
            for variant in variants:
                results.append(run_variant(spark, work, variant, args, extra))
        finally:
            spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary(results, args.changes)
    if not all(r.headwater_equal for r in results):
        print("\nHeadwater's table differs from the source (above)")
        sys.exit(1)


if __name__ == "__main__":
    main()
