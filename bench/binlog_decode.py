"""Binlog decoding throughput: Headwater's BinlogClient + RowDecoder vs mariadb-binlog.

Generates N row changes (inserts, updates, deletes in transactions of 1 to 2000 rows, several
column types) into a fresh local MariaDB, in binlog files of their own.  Then, one after the
other, over the same files:

- `mariadb-binlog --read-from-remote-server --verbose --base64-output=DECODE-ROWS <files>`
  to /dev/null: the server's own tool decoding every row to pseudo-SQL, the reference;
- Headwater: `BinlogClient` from the first file, every rows event decoded to natural values
  by the cached `row_decoder` of its TABLE_MAP, until the end position.

Both run `--repeat` times, alternating, and the best time of each counts: the machines are
shared, and the minimum is the least disturbed measurement of either side.  Prints rows/s for
both and the ratio (goal >= 0.5).

    .venv/bin/python bench/binlog_decode.py [--rows 1000000] [--repeat 3] [--profile out.txt]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import time

from headwater.connectors.mysql.binlog.client import BinlogClient
from headwater.connectors.mysql.binlog.events import RowsEvent, TableMap
from headwater.connectors.mysql.binlog.rows import row_decoder
from headwater.testing.localmariadb import LocalMariaDB

TABLE = """
CREATE TABLE bench (
  id BIGINT PRIMARY KEY, qty INT NOT NULL, price DECIMAL(10,2), name VARCHAR(64),
  note TEXT, flag TINYINT UNSIGNED, updated DATETIME(6) NOT NULL)
"""
GEN = """
CREATE PROCEDURE gen(total INT)
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE n INT;
  DECLARE next_id BIGINT DEFAULT 1;
  DECLARE lo BIGINT DEFAULT 1;
  DECLARE r DOUBLE;
  DECLARE a BIGINT;
  DO RAND(42);
  WHILE done < total DO
    SET n = LEAST(total - done, 1 + FLOOR(POW(RAND(), 3) * 2000));
    SET r = RAND();
    START TRANSACTION;
    IF r < 0.5 OR next_id - lo < n + 10 THEN
      INSERT INTO bench (id, qty, price, name, note, flag, updated)
        SELECT next_id + seq - 1, seq % 100, (seq % 10000) / 100.0, CONCAT('item-', seq),
               MD5(seq), seq % 2, NOW(6)
        FROM seq_1_to_2000 WHERE seq <= n;
      SET next_id = next_id + n;
    ELSEIF r < 0.85 THEN
      SET a = lo + FLOOR((next_id - lo - n) * RAND());
      UPDATE bench SET qty = qty + 1, updated = NOW(6) WHERE id >= a AND id < a + n;
      SET n = ROW_COUNT();
    ELSE
      DELETE FROM bench WHERE id >= lo AND id < lo + n;
      SET n = ROW_COUNT();
      SET lo = lo + n;
    END IF;
    COMMIT;
    SET done = done + n;
  END WHILE;
END
"""


def headwater_decode(db: LocalMariaDB, first: str, end: tuple[str, int]) -> tuple[float, int]:
    """Streams from (first, 4) to `end`, decoding every row: (seconds, rows)."""
    client = BinlogClient("127.0.0.1", db.port, db.user, db.password, server_id=4242)
    rows = 0
    t0 = time.monotonic()
    client.start(file=first, pos=4)
    decoders = {}
    try:
        while True:
            event = client.read_event(timeout=30)
            if event is None:
                raise SystemExit("headwater: no event for 30 s before the end position")
            body = event.body
            if isinstance(body, RowsEvent):
                rows += len(decoders[body.table_id].decode(body))
            elif isinstance(body, TableMap):
                decoders[body.table_id] = row_decoder(body)
            if (event.file, event.log_pos) >= end and event.log_pos:
                break
    finally:
        client.close()
    return time.monotonic() - t0, rows


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side; best counts")
    ap.add_argument("--profile", help="write a cProfile report of the Headwater run here")
    args = ap.parse_args()
    db = LocalMariaDB(settings={"innodb_buffer_pool_size": "512M",
                                "max_binlog_size": "256M"})
    db.start()
    try:
        db.create_database("bench")
        conn = db.connect("bench")
        cur = conn.cursor()
        cur.execute(TABLE)
        cur.execute(GEN)
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW MASTER STATUS")
        first = cur.fetchone()[0]
        t0 = time.monotonic()
        cur.execute("CALL gen(%s)", (args.rows,))
        gen_s = time.monotonic() - t0
        cur.execute("SHOW MASTER STATUS")
        end_file, end_pos = cur.fetchone()[:2]
        cur.execute("SHOW BINARY LOGS")
        logs = [(name, size) for name, size, *_ in cur.fetchall()]
        files = [name for name, _ in logs if name >= first]
        size_mb = sum(size for name, size in logs if name >= first) / 1e6
        conn.close()
        print(f"generated {args.rows} row changes in {gen_s:.1f}s "
              f"({size_mb:.0f} MB of binlog in {len(files)} file(s))")

        ref_times, hw_times, ref_cpu, hw_cpu = [], [], [], []
        rows = 0
        for run in range(args.repeat):
            c0 = cpu(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            with open("/dev/null", "wb") as sink:
                subprocess.run(
                    ["mariadb-binlog", "--read-from-remote-server", "--host", "127.0.0.1",
                     "--port", str(db.port), "--user", db.user, f"--password={db.password}",
                     "--verbose", "--base64-output=DECODE-ROWS", *files],
                    check=True, stdout=sink)
            ref_times.append(time.monotonic() - t0)
            ref_cpu.append(cpu(resource.RUSAGE_CHILDREN) - c0)
            c0 = cpu(resource.RUSAGE_SELF)
            if args.profile and run == 0:
                import cProfile
                import pstats

                prof = cProfile.Profile()
                hw_s, rows = prof.runcall(headwater_decode, db, first, (end_file, end_pos))
                with open(args.profile, "w") as out:
                    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(30)
            else:
                hw_s, rows = headwater_decode(db, first, (end_file, end_pos))
            hw_times.append(hw_s)
            hw_cpu.append(cpu(resource.RUSAGE_SELF) - c0)
            print(f"run {run + 1}: mariadb-binlog {ref_times[-1]:.2f}s "
                  f"(CPU {ref_cpu[-1]:.2f}s), headwater {hw_s:.2f}s (CPU {hw_cpu[-1]:.2f}s)")
        ref_s, hw_s = min(ref_times), min(hw_times)
        ref_rate = args.rows / ref_s
        hw_rate = rows / hw_s
        print(f"mariadb-binlog --verbose: {ref_s:.2f}s, {ref_rate:,.0f} rows/s")
        print(f"headwater BinlogClient + RowDecoder: {hw_s:.2f}s, {rows} rows, "
              f"{hw_rate:,.0f} rows/s")
        print(f"ratio headwater / mariadb-binlog: {hw_rate / ref_rate:.2f} (goal >= 0.5)")
        # Client CPU time only (the server's dump thread works the same for both): steadier
        # than wall time when other processes compete for the cores.
        print(f"CPU-time ratio (client processes only): {min(ref_cpu) / min(hw_cpu):.2f}")
    finally:
        db.cleanup()


if __name__ == "__main__":
    main()
