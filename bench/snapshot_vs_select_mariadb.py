"""MariaDB initial snapshot throughput: Headwater against a bare `SELECT` of the same rows.

Issue 27 asks for a MariaDB snapshot at >= 0.25 of what a plain read of the table costs.  One
run, on a fresh local MariaDB (headwater.testing.localmariadb):

1. N rows (default 300k) of a table with the common MySQL types (integers of several widths,
   BOOLEAN, DECIMAL, DOUBLE, FLOAT, VARCHAR, TEXT, ENUM, SET, DATE, TIME(3), DATETIME(6),
   TIMESTAMP(3), YEAR, JSON, VARBINARY, BIT);
2. the references, each best of two:
   - `SELECT * FROM bench` streamed with the connector's own driver and decoders (PyMySQL,
     unbuffered `SSCursor`, `snapshot_conversions`, `fetchmany` of max.batch.size): what
     reading the rows into Python costs, the floor of any PyMySQL-based snapshot;
   - the `mariadb` client, `--batch --quick`, to /dev/null (if installed): the server and C
     client alone;
3. `headwater run` with snapshot.mode=initial_only (snapshot, then stop): its snapshot phase
   runs from the "read lock acquired" log line to the moment the stored offset says the
   snapshot is complete (the events durable in the topic log); the whole process time too.

Prints rows/s of each, the ratio Headwater / SELECT (goal >= 0.25), and the capture's peak RSS
and CPU time (start-up included); also the CPU ratio (the SELECT's CPU seconds over the
capture's), which the neighbours' load on a shared machine moves much less than wall time.

    .venv/bin/python bench/snapshot_vs_select_mariadb.py [--rows 300000] [--threads 1]
        [--batch 2048] [--topics-dir /dev/shm] [--profile stacks.txt]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import snapshot_vs_copy as common

from headwater.connectors.mysql.text_values import snapshot_conversions
from headwater.testing.localmariadb import LocalMariaDB

TABLE = """CREATE TABLE bench (
  id BIGINT PRIMARY KEY, qty INT NOT NULL, small SMALLINT, flag BOOLEAN,
  price DECIMAL(10,2), ratio DOUBLE, score FLOAT, name VARCHAR(64), note TEXT,
  status ENUM('new','paid','shipped'), tags SET('a','b','c'), day DATE, at_time TIME(3),
  updated DATETIME(6) NOT NULL, created TIMESTAMP(3) NULL, yr YEAR, doc JSON,
  raw VARBINARY(16), bits BIT(8))"""

GEN = (
    "SET SESSION max_recursive_iterations = 100000000",
    "SET SESSION time_zone = '+00:00'",
    TABLE,
    """INSERT INTO bench WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s
       WHERE g < {rows}) SELECT g, g % 100, g % 30000 - 15000, g % 2, (g % 10000) / 100.0,
       g / 7.0, g / 3.0, CONCAT('item-', g), MD5(g), ELT(1 + g % 3, 'new', 'paid', 'shipped'),
       ELT(1 + g % 4, '', 'a', 'b,c', 'a,b,c'),
       DATE('2024-01-01') + INTERVAL (g % 3000) DAY,
       SEC_TO_TIME(g % 86400) + INTERVAL (g % 1000) * 1000 MICROSECOND,
       TIMESTAMP('2024-01-01') + INTERVAL g SECOND + INTERVAL g % 1000000 MICROSECOND,
       IF(g % 10 = 0, NULL, TIMESTAMP('2020-01-01') + INTERVAL g * 7 SECOND),
       1901 + g % 254, JSON_OBJECT('g', g, 'tag', CONCAT('t', g % 10)),
       UNHEX(SUBSTRING(MD5(g), 1, 16)), g % 256
       FROM s""",
    "ANALYZE TABLE bench",
)


def select_reference(server: LocalMariaDB, batch: int) -> tuple[float, float, int]:
    """Seconds to stream `SELECT * FROM bench` through PyMySQL's unbuffered cursor with the
    snapshot's decoders (best of two), the CPU seconds of that run, and the rows read."""
    import pymysql  # type: ignore[import-untyped]
    import pymysql.cursors  # type: ignore[import-untyped]

    best, cpu, rows = float("inf"), 0.0, 0
    for _ in range(2):
        conn = pymysql.connect(host="127.0.0.1", port=server.port, user=server.user,
                               password=server.password, database="bench",
                               conv=snapshot_conversions(), charset="utf8mb4")
        try:
            cur = conn.cursor(pymysql.cursors.SSCursor)
            cur.execute("SET time_zone = '+00:00'")
            t0, c0 = time.monotonic(), time.process_time()
            cur.execute("SELECT * FROM bench")
            rows = 0
            while chunk := cur.fetchmany(batch):
                rows += len(chunk)
            if time.monotonic() - t0 < best:
                best, cpu = time.monotonic() - t0, time.process_time() - c0
            cur.close()
        finally:
            conn.close()
    return best, cpu, rows


def client_reference(server: LocalMariaDB) -> float | None:
    """Seconds for `mariadb --batch --quick` to print the table into /dev/null (best of two),
    None without the client."""
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        return None
    cmd = [client, "--batch", "--quick", "-h", "127.0.0.1", "-P", str(server.port),
           "-u", server.user, f"-p{server.password}", "bench", "-e", "SELECT * FROM bench"]
    best = float("inf")
    for _ in range(2):
        t0 = time.monotonic()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.monotonic() - t0)
    return best


def run_headwater(server: LocalMariaDB, work: Path, threads: int,
                  batch: int) -> tuple[float, float]:
    """An initial_only snapshot: (snapshot phase seconds, whole process seconds)."""
    return common._run_until_snapshot_completed(work, (
        "connector.class=io.debezium.connector.mysql.MySqlConnector\n"
        f"database.hostname=127.0.0.1\ndatabase.port={server.port}\n"
        f"database.user={server.user}\ndatabase.password={server.password}\n"
        f"database.server.id={5600 + threads}\ndatabase.include.list=bench\n"
        "topic.prefix=bench\nsnapshot.mode=initial_only\n"
        f"snapshot.max.threads={threads}\nmax.batch.size={batch}\n"
        f"max.queue.size={4 * batch}\n"
        f"schema.history.internal.file.filename={work / 'history.jsonl'}\n"
    ), "read lock acquired")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--threads", type=int, default=1,
                    help="snapshot.max.threads (a second run with it when > 1)")
    ap.add_argument("--batch", type=int, default=2048, help="max.batch.size (and fetchmany)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--profile", metavar="FILE",
                    help="run the capture under `py-spy record` (raw collapsed stacks to FILE; "
                    "the rates then include the sampler's overhead)")
    ap.add_argument("--topics-dir", type=Path,
                    help="write the topic logs under this directory (e.g. /dev/shm)")
    args = ap.parse_args()
    if args.topics_dir:
        common.TOPICS_DIR.append(
            Path(tempfile.mkdtemp(prefix="headwater-bench-", dir=args.topics_dir)))
    if args.profile:
        common.PROFILER[:] = ["py-spy", "record", "--subprocesses", "-r", "50", "-f", "raw",
                              "-o", args.profile, "--"]
    work = Path(tempfile.mkdtemp(prefix="headwater-bench-"))
    server = common.loaded_mariadb(GEN, args.rows, "512M")
    try:
        ref_s, ref_cpu, ref_rows = select_reference(server, args.batch)
        if ref_rows != args.rows:
            raise SystemExit(f"the reference read {ref_rows} rows, not {args.rows}")
        ref_rate = args.rows / ref_s
        print(f"SELECT * (PyMySQL SSCursor): {ref_s:7.2f} s  {ref_rate:10,.0f} rows/s  "
              f"CPU {ref_cpu:.1f} s = {ref_cpu / args.rows * 1e6:.1f} µs/row")
        client_s = client_reference(server)
        if client_s is not None:
            print(f"mariadb --batch > null     : {client_s:7.2f} s  "
                  f"{args.rows / client_s:10,.0f} rows/s")
        for threads in dict.fromkeys((1, args.threads)):
            snap_s, total_s = run_headwater(server, work / f"t{threads}", threads, args.batch)
            if not args.keep:
                base = common.TOPICS_DIR[0] if common.TOPICS_DIR else work
                shutil.rmtree(base / f"t{threads}" / "topics", ignore_errors=True)
            rate = args.rows / snap_s
            print(f"headwater max.threads={threads:<2}  : {snap_s:7.2f} s  {rate:10,.0f} rows/s"
                  f"  ratio {rate / ref_rate:.2f} of SELECT (goal >= 0.25)"
                  + (f", {rate * client_s / args.rows:.2f} of the client" if client_s else "")
                  + f"  [whole process {total_s:.1f}s]  {common._rss_text(args.rows)}")
            # On a shared machine wall-clock rates swing with the neighbours' load; CPU time
            # much less (the capture's includes its start-up, ~3-4 s here).
            if common.CPU_S and common.CPU_S[0]:
                print(f"  CPU ratio (SELECT's CPU / capture's CPU): "
                      f"{ref_cpu / common.CPU_S[0]:.2f}")
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        server.cleanup()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            for d in common.TOPICS_DIR:
                shutil.rmtree(d, ignore_errors=True)
        else:
            print(f"work directory kept: {work}")


if __name__ == "__main__":
    main()
