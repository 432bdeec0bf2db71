"""Capture throughput: Headwater into the topic log vs pg_recvlogical, over the same WAL.

Generates N row changes (inserts, updates, deletes in transactions of mixed sizes, 1 to 2000
rows) into a fresh local PostgreSQL, with two pgoutput slots created beforehand so both readers
decode exactly the same WAL.  Then, one after the other:

- `pg_recvlogical --start -o proto_version=1 -o publication_names=... -E <end LSN> -f /dev/null`:
  the server's decoding speed, the ceiling for any pgoutput client;
- `headwater run` (snapshot.mode=no_data) until its stored offset reaches the end LSN: decode,
  convert, render Debezium JSON with schemas, append + fsync to the topic log, store offsets.

Prints events/s for both and the ratio (goal >= 0.8), plus Headwater's peak RSS.

    .venv/bin/python bench/capture_vs_pg_recvlogical.py [--changes 1000000]
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
    pg: LocalPostgres, work: Path, end_lsn: int, schemas: bool, profile: str | None
) -> tuple[float, float, int]:
    """Runs `headwater run` until its stored offset reaches `end_lsn`: (seconds, RSS MB, bytes)."""
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
        f"offset.storage.file.filename={offsets}\nheadwater.topics.dir={work / 'topics'}\n"
    )
    cmd = [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"]
    if profile:
        spy = Path(sys.executable).with_name("py-spy")
        cmd = [str(spy), "record", "-r", "250", "--format", "raw", "-o",
               f"{profile}.{slot}", "--", *cmd]
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
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    size = sum(f.stat().st_size for f in (work / "topics").rglob("*") if f.is_file())
    return seconds, rss_mb, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=1_000_000)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--profile", help="run headwater under py-spy, writing this flame file")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headwater-bench-"))
    pg = LocalPostgres(settings={"max_wal_size": "8GB", "checkpoint_timeout": "30min"})
    pg.start()
    try:
        pg.create_database("bench")
        conn = pg.connect("bench")
        cur = conn.cursor()
        cur.execute(GEN)
        for slot in ("ref_slot", "hw_slot_with", "hw_slot_without"):
            cur.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        t0 = time.monotonic()
        cur.execute("CALL gen(%s)", (args.changes,))
        cur.execute("SELECT pg_current_wal_insert_lsn()::text")
        end_lsn = lsn(cur.fetchone()[0])
        gen_s = time.monotonic() - t0
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
        for schemas in (True, False):
            hw_s, rss_mb, size = run_headwater(
                pg, work / ("with" if schemas else "without"), end_lsn, schemas, args.profile)
            ratio = ref_s / hw_s
            label = "schemas.enable=true " if schemas else "schemas.enable=false"
            print(f"headwater      : {hw_s:7.2f} s  {args.changes / hw_s:10,.0f} events/s  "
                  f"ratio {ratio:.2f} (goal >= 0.80)  [{label}; topic log "
                  f"{size / 2**20:,.0f} MiB, {size / args.changes:,.0f} B/event, "
                  f"peak RSS {rss_mb:,.0f} MB]")
    finally:
        pg.cleanup()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory kept: {work}")
        os.sync()


if __name__ == "__main__":
    main()
