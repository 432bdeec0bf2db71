"""A real PostgreSQL captured into Datastream files (JSON, Avro), applied by the real pipeline
(Spark streaming query, Delta tables) and compared with the source table row by row.

The capture is killed (-9) once while writing, so events are re-delivered (same uuids, in
other files).  The files are then presented to the pipeline in a shuffled order, in rounds
(late files land in minute folders older than files already processed), some of them copied
again under other names, with small micro-batches; the pipeline itself is killed (-9) once
mid-way and restarted from its checkpoint (JSON files; Avro and gzip JSON too with --long).
SCD1 must equal the table; SCD2's current versions too; the changelog holds each event once."""

from __future__ import annotations

import gzip
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastavro import reader as avro_reader

from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.runner import start
from headwater.pipeline.source import read_range
from headwater.testing.timeouts import scaled
from headwater.topics import reader
from tests.integration.postgres.conftest import Env, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

STREAM = "projects/hw/locations/local/streams/pg-ds"


def capture_props(env: Env, fmt: str) -> dict[str, Any]:
    """`fmt`: json, avro, or json.gz (JSON files with gzip compression)."""
    file_format, _, compressed = fmt.partition(".")
    return {"headwater.event.format": "datastream", "headwater.datastream.stream.name": STREAM,
            "headwater.destination": "files",
            "headwater.destination.files.dir": str(env.tmp / "files"),
            "headwater.destination.files.format": file_format,
            **({"headwater.destination.files.json.compression": "gzip"} if compressed else {}),
            "headwater.destination.files.max.ms": 200,
            "headwater.destination.files.max.bytes": 8192, "max.batch.size": 64}


def event_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".inflight" not in p.parts)


def read_events(root: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in event_files(root):
        if path.suffix == ".avro":
            with path.open("rb") as fh:
                out.extend(dict(r) for r in avro_reader(fh))  # type: ignore[arg-type]
        else:
            data = path.read_bytes()
            assert path.name.endswith(".jsonl.gz" if path.suffix == ".gz" else ".jsonl")
            data = gzip.decompress(data) if path.suffix == ".gz" else data
            out.extend(orjson.loads(line) for line in data.splitlines())
    return out


def files_state(events: list[dict[str, Any]]) -> dict[int, int]:
    latest: dict[int, dict[str, Any]] = {}
    for e in {e["uuid"]: e for e in events}.values():
        k = e["payload"]["id"]
        if k not in latest or e["sort_keys"] > latest[k]["sort_keys"]:
            latest[k] = e
    return {k: e["payload"]["ver"] for k, e in latest.items()
            if not e["source_metadata"]["is_deleted"]}


def workload(env: Env, rng: random.Random, seconds: float, ver: int) -> int:
    deadline = time.monotonic() + scaled(seconds)
    while time.monotonic() < deadline:
        ver += 1
        key = rng.randint(1, 150)
        roll = rng.random()
        if roll < 0.15:
            env.sql("DELETE FROM t WHERE id = %s", (key,))
        elif roll < 0.22:  # a primary-key change: DELETE + INSERT at one position
            env.sql("UPDATE t SET id = %s, ver = %s WHERE id = %s AND NOT EXISTS "
                    "(SELECT 1 FROM t WHERE id = %s)", (key + 150, ver, key, key + 150))
        else:
            env.sql("INSERT INTO t VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                    "ver = EXCLUDED.ver, note = EXCLUDED.note, amount = EXCLUDED.amount",
                    (key, ver, f"n{ver}" if ver % 3 else None, Decimal(ver % 1000) / 8))
        time.sleep(0.003)  # a few hundred changes: small files, many of them
    return ver


def source_rows(env: Env) -> dict[int, tuple[Any, ...]]:
    return {int(r[0]): (int(r[1]), r[2], None if r[3] is None else Decimal(r[3]))
            for r in env.sql("SELECT id, ver, note, amount FROM t")}


def delta_rows(path: Path, current_only: bool = False) -> dict[int, tuple[Any, ...]]:
    rows = read_table(path).to_pylist()
    if current_only:
        rows = [r for r in rows if r["__END_AT"] is None]
    out: dict[int, tuple[Any, ...]] = {}
    for r in rows:
        assert r["id"] not in out, f"two rows for key {r['id']}"
        amount = r["amount"]
        if isinstance(amount, float):  # JSON events carry no types: numbers are doubles
            amount = Decimal(str(amount)).quantize(Decimal("0.01"))
        out[r["id"]] = (r["ver"], r["note"], amount)
    return out


def capture_with_one_kill(env: Env, fmt: str) -> Path:
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver bigint NOT NULL, note text, "
            "amount numeric(10,2))")
    env.sql("ALTER TABLE t REPLICA IDENTITY FULL")
    env.sql("INSERT INTO t SELECT g, 0, 'n' || g, g / 4.0 FROM generate_series(1, 120) g")
    config = env.config(capture_props(env, fmt))
    rng = random.Random(7)
    proc = subprocess.Popen([sys.executable, "-m", "headwater.cli", "run", str(config),
                             "--log-level", "WARNING"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    root = env.tmp / "files"
    wait_for(lambda: root.exists() and len(read_events(root)) >= 120, timeout=60,
             what="backfill files")
    ver = workload(env, rng, 2.0, 0)
    assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
    os.kill(proc.pid, signal.SIGKILL)  # unpublished files lost: their events come again
    proc.wait()
    workload(env, rng, 1.0, ver)
    want = {k: v[0] for k, v in source_rows(env).items()}
    cap = env.capture(capture_props(env, fmt))
    try:
        wait_for(lambda: files_state(read_events(root)) == want, timeout=90,
                 what="files to catch up with the table")
    finally:
        cap.stop()
    return root


def present(files: list[Path], rng: random.Random) -> list[list[Path]]:
    """The files in a shuffled order, in rounds, a few copied again under another name."""
    order = files[:]
    rng.shuffle(order)
    copies = rng.sample(files, max(2, len(files) // 5))
    rounds: list[list[Path]] = [[], [], []]
    for i, f in enumerate(order):
        rounds[i * 3 // len(order)].append(f)
    for i, f in enumerate(copies):
        rounds[rng.randint(1, 2)].append(f.with_name(f"copy{i}_{f.name}"))
    return rounds


def copy_round(files: list[Path], root: Path, into: Path) -> None:
    for f in files:
        name = f.name.split("_", 1)[1] if f.name.startswith("copy") else f.name
        source = f.with_name(name)
        dest = into / f.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest.with_name(f".{dest.name}.tmp"))
        os.replace(dest.with_name(f".{dest.name}.tmp"), dest)  # published atomically


def pipeline_config(env: Env, mode: str, presented: Path) -> Path:
    path = env.tmp / f"pipeline-{mode}.properties"
    path.write_text(
        f"topic.prefix=inv\nheadwater.topics.dir={env.tmp / 'topics'}\n"
        "headwater.pipeline.source=datastream-files\n"
        f"headwater.pipeline.datastream.files.dir={presented}\n"
        f"headwater.pipeline.delta.path={env.tmp / ('delta-' + mode)}\n"
        f"headwater.pipeline.checkpoint.dir={env.tmp / ('ck-' + mode)}\n"
        f"headwater.pipeline.mode={mode}\n"
        "headwater.pipeline.datastream.max.files.per.trigger=4\n"
        "headwater.pipeline.trigger.interval.ms=200\n")
    return path


def run_once(spark: Any, config: Path) -> None:
    query = start(spark, load_pipeline_config(config), once=True)
    query.awaitTermination()
    assert query.exception() is None


# The pipeline's kill -9 (its own process, so a JVM start of 20-40 s on the loaded 2-core
# machine) runs once in CI, on JSON: what it tests (a restart from the checkpoint, whose offsets
# are file names) does not depend on the files' format.  Avro and gzip JSON go through the same
# rounds, each applied by a run in this process; with --long they get the kill too.
@pytest.mark.parametrize(("fmt", "kill"), [
    ("json", True), ("avro", False), ("json.gz", False),
    pytest.param("avro", True, marks=pytest.mark.long),
    pytest.param("json.gz", True, marks=pytest.mark.long)])
def test_files_out_of_order_with_duplicates_equal_the_source(
        env: Env, spark: Any, fmt: str, kill: bool) -> None:
    root = capture_with_one_kill(env, fmt)
    files = event_files(root)
    assert files and all(p.name.endswith({"json": ".jsonl", "avro": ".avro",
                                          "json.gz": ".jsonl.gz"}[fmt]) for p in files)
    rng = random.Random(13)
    presented = env.tmp / "presented"
    presented.mkdir()
    rounds = present(files, rng)
    scd1 = pipeline_config(env, "scd1", presented)
    copy_round(rounds[0], root, presented)
    if kill:
        pipeline_killed_mid_round(env, scd1, root, presented, rounds[1])
    else:  # each round applied before the next lands (its late files in older folders)
        run_once(spark, scd1)
        copy_round(rounds[1], root, presented)
        run_once(spark, scd1)
    copy_round(rounds[2], root, presented)
    run_once(spark, scd1)
    want = source_rows(env)
    assert delta_rows(env.tmp / "delta-scd1" / "public" / "t") == want
    scd2 = pipeline_config(env, "scd2", presented)
    run_once(spark, scd2)
    assert delta_rows(env.tmp / "delta-scd2" / "public" / "t", current_only=True) == want
    changelog = pipeline_config(env, "changelog", presented)
    run_once(spark, changelog)
    rows = read_table(env.tmp / "delta-changelog" / "public" / "t").num_rows
    assert rows == len({e["uuid"] for e in read_events(root)})


def pipeline_killed_mid_round(env: Env, scd1: Path, root: Path, presented: Path,
                              second_round: list[Path]) -> None:
    """The pipeline in its own process, killed -9 once it has committed a batch, while the
    second round's files land and a batch is in flight."""
    errors = env.tmp / "pipeline.err"
    with errors.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "headwater.cli", "pipeline", str(scd1)],
                                stdout=subprocess.DEVNULL, stderr=err)
    ck = env.tmp / "ck-scd1"

    def batches(folder: str) -> set[str]:
        return {p.name for p in (ck / folder).glob("[0-9]*")} if (ck / folder).is_dir() else set()

    try:
        wait_for(lambda: "0" in batches("commits") or proc.poll() is not None, timeout=120,
                 what="the pipeline's first batch")
        copy_round(second_round, root, presented)
        # killed while a batch is planned but not committed, when that can be seen
        wait_for(lambda: batches("offsets") - batches("commits") or proc.poll() is not None,
                 timeout=20, what="a batch in flight")
        assert proc.poll() is None, errors.read_text()[-3000:]
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def test_datastream_topics_from_a_real_capture_equal_the_source(env: Env, spark: Any) -> None:
    """`destination=topics`: each record's value is a Datastream event; the pipeline sees it
    from the first record (no property) and applies it like the files."""
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver bigint NOT NULL, note text, "
            "amount numeric(10,2))")
    env.sql("INSERT INTO t SELECT g, 0, 'n' || g, g / 4.0 FROM generate_series(1, 50) g")
    props = {"headwater.event.format": "datastream", "headwater.datastream.stream.name": STREAM}
    cap = env.capture(props)
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        workload(env, random.Random(3), 1.0, 0)
        env.sql("INSERT INTO t VALUES (1000000, 0, 'last', 0)")
        want = source_rows(env)

        def has_last() -> bool:
            topic = "inv.public.t"
            end = reader.list_topics(env.topics)[0].end_offset
            return any(b'"id":1000000' in (v or b"")
                       for _o, _k, v in read_range(env.topics, topic, 0, end))

        wait_for(has_last, timeout=60, what="the last change in the topic log")
    finally:
        cap.stop()
    path = env.tmp / "pipeline-topics.properties"
    path.write_text(f"topic.prefix=inv\nheadwater.topics.dir={env.tmp / 'topics'}\n"
                    f"headwater.pipeline.delta.path={env.tmp / 'delta'}\n"
                    f"headwater.pipeline.checkpoint.dir={env.tmp / 'ck'}\n"
                    "headwater.pipeline.max.records.per.trigger=40\n")
    run_once(spark, path)
    assert delta_rows(env.tmp / "delta" / "public" / "t") == want
