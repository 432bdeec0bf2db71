"""One huge transaction: capture throughput and peak memory of `headwater run`.

A single transaction inserts N rows (default 2,000,000) with ``INSERT ... SELECT
generate_series`` into a fresh local PostgreSQL (default ``logical_decoding_work_mem``, 64MB).
`headwater run` (snapshot.mode=no_data, a slot created beforehand) captures it into the topic
log; the run ends when the stored offset reaches the end of the commit.  Two scenarios:

- ``live``: the capture runs while the transaction runs; with pgoutput protocol 2 the server
  streams the transaction in segments as it goes, Headwater spills them to disk and replays
  them at the commit;
- ``committed``: the transaction is committed before the capture starts (the server decodes
  it from the WAL and streams it all the same).

Prints, per scenario: rows/s (over the capture's run time, and from the commit to durable),
the capture process's peak RSS (VmHWM of /proc/<pid>/status, read just before it is
stopped), the peak size of its spill files, and what the server says it streamed
(pg_stat_replication_slots).  Goal: peak RSS under 300 MB.

    .venv/bin/python bench/huge_transaction.py [--rows 2000000] [--scenario live|committed|both]
        [--no-streaming] [--verify] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from headwater.testing.localpg import LocalPostgres

TABLE = """
CREATE TABLE public.huge (
  id bigint PRIMARY KEY, qty integer NOT NULL, price numeric(10,2), name varchar(64),
  note text, created timestamptz NOT NULL DEFAULT now());
CREATE PUBLICATION huge_pub FOR ALL TABLES;
"""
INSERT = """
INSERT INTO huge (id, qty, price, name, note)
SELECT g, g %% 100, (g %% 10000) / 100.0, 'item-' || g, md5(g::text)
FROM generate_series(1, %s) g
"""


def lsn(text: str) -> int:
    hi, lo = text.strip().split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


class Sampler(threading.Thread):
    """Samples the capture process's memory and the size of its spill files."""

    def __init__(self, pid: int, spill_root: Path) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.spill_root = spill_root
        self.halt = threading.Event()
        self.hwm_kb = 0
        self.peak_spill = 0
        self.first_spill: float | None = None  # when a spill file first had data
        self.last_growth: float | None = None  # when the spill files last grew

    def vm_hwm_kb(self) -> int:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def sample(self) -> None:
        self.hwm_kb = max(self.hwm_kb, self.vm_hwm_kb())
        size = 0
        for p in self.spill_root.rglob("*.spill"):
            with contextlib.suppress(OSError):  # deleted meanwhile
                size += p.stat().st_size
        if size > self.peak_spill:
            self.peak_spill = size
            self.last_growth = time.monotonic()
            if self.first_spill is None:
                self.first_spill = self.last_growth

    def run(self) -> None:
        while not self.halt.wait(0.2):
            self.sample()


class Scenario:
    def __init__(self, pg: LocalPostgres, work: Path, name: str, rows: int, streaming: bool):
        self.pg = pg
        self.work = work
        self.name = name
        self.rows = rows
        self.db = f"huge_{name}"
        self.slot = f"hw_huge_{name}"
        self.offsets = work / "offsets.json"
        self.config = work / "huge.properties"
        self.tmp = work / "tmp"  # the capture's temp directory: spill files land on this disk
        work.mkdir(parents=True)
        self.tmp.mkdir()
        self.config.write_text(
            "connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
            f"database.hostname=127.0.0.1\ndatabase.port={pg.port}\n"
            f"database.user={pg.user}\ndatabase.dbname={self.db}\ntopic.prefix=huge\n"
            f"slot.name={self.slot}\npublication.name=huge_pub\nsnapshot.mode=no_data\n"
            f"offset.storage.file.filename={self.offsets}\n"
            f"headwater.topics.dir={work / 'topics'}\n"
            f"headwater.pgoutput.streaming={'true' if streaming else 'false'}\n"
        )
        pg.create_database(self.db)
        self.conn = pg.connect(self.db)
        self.cur = self.conn.cursor()
        self.cur.execute(TABLE)
        self.cur.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')",
                         (self.slot,))
        self.proc: subprocess.Popen[bytes] | None = None
        self.sampler: Sampler | None = None

    def one(self, sql: str, args: tuple[Any, ...] = ()) -> Any:
        self.cur.execute(sql, args)
        row = self.cur.fetchone()
        return None if row is None else row[0]

    def start_capture(self) -> None:
        cmd = [sys.executable, "-m", "headwater.cli", "run", str(self.config),
               "--log-level", "WARNING"]
        self.proc = subprocess.Popen(cmd, env={**os.environ, "TMPDIR": str(self.tmp)})
        self.sampler = Sampler(self.proc.pid, self.work)
        self.sampler.start()

    def check_alive(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise SystemExit(f"headwater exited with {self.proc.returncode}")

    def transaction(self) -> tuple[float, float, int]:
        """Runs the transaction: (start time, commit time, WAL position after the commit)."""
        tx = self.pg.connect(self.db, autocommit=False)
        cur = tx.cursor()
        t0 = time.monotonic()
        cur.execute(INSERT, (self.rows,))
        tx.commit()
        t_commit = time.monotonic()
        # the insert position: with synchronous_commit=off the write position may lag
        cur.execute("SELECT pg_current_wal_insert_lsn()::text")
        end = lsn(cur.fetchone()[0])
        tx.close()
        return t0, t_commit, end

    def stored_lsn(self) -> int:
        try:
            return int(json.loads(self.offsets.read_text())["offset"]["lsn"])
        except (OSError, ValueError, KeyError, TypeError):
            return -1

    def run(self, verify: bool) -> None:
        try:
            self._run(verify)
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            if self.sampler is not None:
                self.sampler.halt.set()
            self.one("SELECT pg_drop_replication_slot(%s)", (self.slot,))
            self.conn.close()

    def _run(self, verify: bool) -> None:
        name, rows = self.name, self.rows
        if name == "live":
            self.start_capture()
            while not self.one("SELECT active FROM pg_replication_slots WHERE slot_name = %s",
                               (self.slot,)):
                self.check_alive()
                time.sleep(0.05)
            t_start, t_commit, end_lsn = self.transaction()
            t_capture = t_start
        else:
            t_start, t_commit, end_lsn = self.transaction()
            self.start_capture()
            t_capture = time.monotonic()
        while self.stored_lsn() < end_lsn:
            self.check_alive()
            time.sleep(0.05)
        t_done = time.monotonic()
        assert self.proc is not None and self.sampler is not None
        self.sampler.sample()  # VmHWM is the peak so far: read it before stopping
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)
        self.sampler.halt.set()
        self.sampler.join()
        self.cur.execute("SELECT stream_txns, stream_count, stream_bytes, spill_bytes "
                         "FROM pg_stat_replication_slots WHERE slot_name = %s", (self.slot,))
        stream_txns, stream_count, stream_bytes, spill_bytes = self.cur.fetchone() or (0,) * 4
        capture_s = t_done - t_capture
        after_commit_s = t_done - t_commit
        size = sum(f.stat().st_size for f in (self.work / "topics").rglob("*") if f.is_file())
        mib = 2**20
        print(f"[{name}] transaction of {rows:,} rows: {t_commit - t_start:.1f} s in PostgreSQL")
        print(f"[{name}] capture: {capture_s:7.1f} s  {rows / capture_s:10,.0f} rows/s "
              f"(commit -> durable {after_commit_s:.1f} s, "
              f"{rows / after_commit_s:,.0f} rows/s after the commit)")
        print(f"[{name}] peak RSS {self.sampler.hwm_kb / 1024:,.0f} MB (goal < 300 MB); "
              f"peak spill files {self.sampler.peak_spill / mib:,.0f} MiB; "
              f"topic log {size / mib:,.0f} MiB")
        s = self.sampler
        if s.first_spill is not None and s.last_growth is not None:
            print(f"[{name}] phases: spilling {s.last_growth - s.first_spill:.1f} s (from "
                  f"{s.first_spill - t_capture:.1f} s), replay + topic log "
                  f"{t_done - s.last_growth:.1f} s (sampled every 0.2 s)")
        print(f"[{name}] server: stream_txns={stream_txns} stream_count={stream_count} "
              f"stream_bytes={int(stream_bytes) / mib:,.0f} MiB "
              f"spill_bytes={int(spill_bytes) / mib:,.0f} MiB "
              f"({'streamed: protocol 2' if stream_txns else 'not streamed'})")
        leftovers = list(self.work.rglob("*.spill"))
        if leftovers:
            print(f"[{name}] WARNING: spill files left: {leftovers}")
        if verify:
            from headwater.topics import reader

            n = sum(1 for r in reader.read(self.work / "topics", "huge.public.huge",
                                           from_offset=0) if r.value is not None)
            print(f"[{name}] verify: {n:,} events in the topic (expected {rows:,})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--scenario", choices=("live", "committed", "both"), default="both")
    ap.add_argument("--no-streaming", action="store_true",
                    help="headwater.pgoutput.streaming=false (pgoutput protocol 1)")
    ap.add_argument("--verify", action="store_true", help="count the events in the topic")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="headwater-huge-"))
    pg = LocalPostgres(settings={"max_wal_size": "8GB", "checkpoint_timeout": "30min"})
    pg.start()
    try:
        names = ("live", "committed") if args.scenario == "both" else (args.scenario,)
        for name in names:
            Scenario(pg, work / name, name, args.rows, not args.no_streaming).run(args.verify)
    finally:
        pg.cleanup()
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
