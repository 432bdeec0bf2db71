"""Parallel initial snapshot of MariaDB (snapshot.max.threads): the same events as the serial
snapshot, one binlog position, one `last`, and a hand-over to streaming with nothing lost or
duplicated while the source is written to; plus the key-range chunk planner's edges."""

from __future__ import annotations

import collections
import itertools
import logging
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from headwater.config.loader import ConfigError
from headwater.connectors.mysql.config import validate_mysql_config
from headwater.connectors.mysql.snapshot_workers import chunk_sql, split_key
from headwater.relational.key_ranges import TableSize, plan_chunks
from headwater.relational.snapshot import RangeChunk
from headwater.testing.replay import events, replay
from headwater.topics import reader

from .conftest import Capture, MariaEnv, wait_for

BIG_ROWS = 40_000

# `big`: negative and sparse BIGINT keys; every awkward value the snapshot converts (NULLs,
# FLOAT read as DOUBLE, tabs/newlines/backslashes/quotes, 4-byte UTF-8, zero bytes, negative
# TIME with fractions, JSON, ENUM/SET, BIT, YEAR, the largest unsigned BIGINT).
SCHEMA = (
    "SET SESSION max_recursive_iterations = 1000000",
    """CREATE TABLE big (
      id BIGINT PRIMARY KEY, qty INT NOT NULL, price DECIMAL(12,2), f FLOAT, d DOUBLE,
      name VARCHAR(64) CHARACTER SET utf8mb4, note TEXT, at DATETIME(6), ts TIMESTAMP(3) NULL,
      tm TIME(6), raw VARBINARY(32), doc JSON, e ENUM('a','b','c'), st SET('x','y','z'),
      b BIT(5), y YEAR, u BIGINT UNSIGNED)""",
    f"""INSERT INTO big
      WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < {BIG_ROWS})
      SELECT (g - 20000) * 3, g % 97, IF(g % 11 = 0, NULL, (g % 100000) / 100.0),
             g / 7, IF(g % 13 = 0, -0.0, g * 1.000001e-3),
             CONCAT('item-', g, IF(g % 5 = 0, ' \U0001F600', '')),
             IF(g % 7 = 0, NULL, CONCAT('tab\there\nnew line \\\\ "q" ', MD5(g))),
             TIMESTAMP('2024-01-01 00:00:00') + INTERVAL g SECOND + INTERVAL g MICROSECOND,
             IF(g % 3 = 0, NULL, FROM_UNIXTIME(1700000000 + g) + INTERVAL 0.123 SECOND),
             SEC_TO_TIME(g - 20000.5), UNHEX(CONCAT('00', MD5(g))),
             JSON_OBJECT('g', g, 's', 'x"y'), ELT(1 + g % 3, 'a', 'b', 'c'),
             IF(g % 2 = 0, 'x,z', ''), g % 32, 1901 + g % 254, 18446744073709551615 - g
      FROM s""",
    "CREATE TABLE nokey (msg TEXT, n INT)",
    """INSERT INTO nokey WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s
       WHERE g < 3000) SELECT CONCAT('row ', g % 10), g % 3 FROM s""",
    "CREATE TABLE strkey (k VARCHAR(20) PRIMARY KEY, dt DATE, f DOUBLE)",
    """INSERT INTO strkey WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s
       WHERE g < 5000) SELECT CONCAT('k', g), DATE('2000-01-01') + INTERVAL g DAY, g / 3.0
       FROM s""",
    "CREATE TABLE ubig (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(10))",
    """INSERT INTO ubig WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s
       WHERE g < 6000) SELECT 18446744073709551615 - g * 1000, CONCAT('v', g) FROM s""",
    "CREATE TABLE pair (a INT, b INT, v TEXT, PRIMARY KEY (a, b))",
    "INSERT INTO pair VALUES (1, 1, 'x'), (1, 2, NULL), (2, 1, '')",
    "CREATE TABLE small (id TINYINT UNSIGNED PRIMARY KEY, v TEXT)",
    "INSERT INTO small VALUES (0, 'zero'), (255, NULL), (7, 'seven')",
    "CREATE TABLE empty (id INT PRIMARY KEY)",
    "ANALYZE TABLE big, nokey, strkey, ubig, pair, small, empty",
)
ROWS = {"big": BIG_ROWS, "nokey": 3000, "strkey": 5000, "ubig": 6000, "pair": 3, "small": 3,
        "empty": 0}


def _create(env: MariaEnv) -> None:
    for statement in SCHEMA:
        env.sql(statement)


def _snapshot(env: MariaEnv, threads: int, tag: str) -> tuple[Path, dict[str, Any]]:
    """Runs an initial_only snapshot into its own directory; returns it and the metrics."""
    root = env.tmp / tag
    cap = Capture(env.config({
        "snapshot.mode": "initial_only",
        "snapshot.max.threads": threads,
        "max.batch.size": 1000,
        "headwater.topics.dir": root / "topics",
        "offset.storage.file.filename": root / "offsets.json",
        "schema.history.internal.file.filename": root / "history.jsonl",
    })).start()
    cap.thread.join(300)
    assert not cap.thread.is_alive(), "snapshot did not finish"
    if cap.error is not None:
        raise cap.error
    metrics = cap.runtime.metrics.as_dict()
    assert metrics["SnapshotCompleted"] is True
    assert metrics["TotalTableCount"] == len(ROWS)
    assert metrics["RemainingTableCount"] == 0
    assert metrics["RowsScanned"] == {f"{env.db}.{t}": n for t, n in ROWS.items()}
    stored = orjson.loads((root / "offsets.json").read_bytes())
    assert "snapshot_completed" in orjson.dumps(stored).decode()
    return root / "topics", cap.runtime.metrics.rows_estimated


def _normalized(
    env: MariaEnv, root: Path
) -> tuple[collections.Counter[bytes], list[str | None], set[Any]]:
    """Every record with its times and binlog point stripped and `last` read as `true`, as a
    multiset; the marker of each topic's final record; the set of binlog points seen."""
    bag: collections.Counter[bytes] = collections.Counter()
    finals: list[str | None] = []
    points = set()
    for table in ROWS:
        marker = None
        for rec in reader.read(root, env.topic(table), from_offset=0):
            assert rec.value is not None
            value = orjson.loads(rec.value)
            payload = value["payload"]
            assert payload["op"] == "r"
            src = payload["source"]
            marker = src["snapshot"]
            points.add((src.pop("file"), src.pop("pos"), src.pop("gtid", None)))
            for times in (payload, src):  # processing and source times differ per run
                for field in ("ts_ms", "ts_us", "ts_ns"):
                    times.pop(field, None)
            src["snapshot"] = "true"
            bag[table.encode() + b"|" + (rec.key or b"") + b"|"
                + orjson.dumps(value, option=orjson.OPT_SORT_KEYS)] += 1
        finals.append(marker)
    return bag, finals, points


@pytest.mark.integration
def test_parallel_snapshot_equals_serial(menv: MariaEnv, caplog: pytest.LogCaptureFixture) -> None:
    _create(menv)
    root, estimated = _snapshot(menv, 1, "t1")
    serial, finals, points = _normalized(menv, root)
    assert sum(serial.values()) == sum(ROWS.values())
    assert finals.count("last") == 1 and len(points) == 1
    assert estimated[f"{menv.db}.big"] > 0  # the progress bars have a total
    for threads in (2, 4):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="headwater"):
            root, _ = _snapshot(menv, threads, f"t{threads}")
        messages = [r.getMessage() for r in caplog.records]
        plan = [m for m in messages if "chunks with" in m]
        assert plan and f"with {threads} worker processes" in plan[-1]
        assert int(plan[-1].split(" in ")[1].split()[0]) > len(ROWS)  # big and ubig were split
        # The lock was released only once every worker had opened its snapshot.
        opened = next(i for i, m in enumerate(messages) if "consistent snapshots open" in m)
        unlocked = next(i for i, m in enumerate(messages) if "unlocked" in m)
        assert opened < unlocked
        bag, finals, points = _normalized(menv, root)
        assert bag == serial, f"max.threads={threads} differs from the serial snapshot"
        assert len(points) == 1, points  # one binlog position for every event
        assert finals.count("last") == 1  # exactly one `last`, and it ends its topic
        assert all(f in ("true", "last", None) for f in finals)


PAUSE = 0.01  # seconds between the writer's transactions


def _writer(env: MariaEnv, stop: threading.Event, counts: dict[str, int]) -> None:
    """Inserts new rows, updates and deletes old ones, in small transactions, until stopped;
    paced (`PAUSE`), so that writes land all through the snapshot's chunks without the topic
    growing past what the scenario needs.  (Unpaced, its volume followed the machine's load:
    on a quiet machine 556 MB of topic, re-read whole every second by the catch-up check, and
    91 s; paced, 284 MB and 40 s.)"""
    conn = env.server.connect(env.db)
    next_id = 10_000_000
    n = 0
    try:
        with conn.cursor() as cur:
            while not stop.is_set() or n < 20:
                n += 1
                cur.execute("INSERT INTO big (id, qty, name) VALUES " + ", ".join(
                    f"({next_id + i}, 1, 'new')" for i in range(10)))
                next_id += 10
                cur.execute("UPDATE big SET qty = qty + 1000, note = 'upd' WHERE id = %s",
                            ((n * 37 % BIG_ROWS - 20000) * 3,))
                cur.execute("DELETE FROM big WHERE id = %s", ((BIG_ROWS - n - 20000) * 3,))
                counts["tx"] = n
                stop.wait(PAUSE)
    finally:
        conn.close()


@pytest.mark.integration
@pytest.mark.parametrize("threads", [2, pytest.param(4, marks=pytest.mark.long)])  # 4: --long
def test_writes_during_parallel_snapshot_are_neither_lost_nor_duplicated(
    menv: MariaEnv, threads: int
) -> None:
    _create(menv)
    stop = threading.Event()
    counts: dict[str, int] = {}
    writer = threading.Thread(target=_writer, args=(menv, stop, counts), daemon=True)
    writer.start()
    cap: Capture | None = None
    try:
        wait_for(lambda: counts.get("tx", 0) >= 5, what="writes before the snapshot")
        cap = menv.capture({"snapshot.max.threads": threads, "max.batch.size": 500})
        metrics = cap.runtime.metrics
        wait_for(lambda: metrics.snapshot_running or metrics.snapshot_completed, timeout=60,
                 what="snapshot start")
        before = counts["tx"]
        wait_for(lambda: metrics.snapshot_completed, timeout=240, what="snapshot completed")
        assert counts["tx"] > before, "the writer did not write during the snapshot"
        stop.set()
        writer.join(60)
        expected = {
            (("id", r[0]),): (r[1], r[2], r[3])
            for r in menv.sql("SELECT id, qty, name, note FROM big ORDER BY id")
        }

        def caught_up() -> bool:
            got = replay(menv.topics, menv.topic("big"))
            return {k: (v["qty"], v["name"], v["note"]) for k, v in got.items()} == expected

        wait_for(caught_up, timeout=240, interval=1.0, what="topic equal to the table")
    finally:
        stop.set()
        if cap is not None:
            cap.stop()
    ops: dict[Any, list[str]] = collections.defaultdict(list)
    lasts = 0
    for _, key, value in events(menv.topics, menv.topic("big")):
        if value is not None:
            ops[key["id"]].append(value["op"])
            lasts += value["source"]["snapshot"] == "last"
    assert lasts <= 1
    for key, seq in ops.items():
        assert seq.count("r") <= 1, f"id {key} read twice: {seq}"
        if key >= 10_000_000:  # inserted by the writer: seen once, by the snapshot or the stream
            assert (seq[0], seq.count("r") + seq.count("c")) in (("r", 1), ("c", 1)), seq
    # the writer's rows met both sides of the snapshot's binlog position: some read, some streamed
    assert {seq[0] for k, seq in ops.items() if k >= 10_000_000} == {"r", "c"}


# -- configuration and the chunk planner (no server) --------------------------------------------

_BASE = {"topic.prefix": "p", "database.hostname": "h", "database.user": "u",
         "database.server.id": "5"}


def test_max_threads_without_a_lock_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"snapshot\.locking\.mode to minimal or extended"):
        validate_mysql_config({**_BASE, "snapshot.max.threads": "2",
                               "snapshot.locking.mode": "none"})
    cfg, _ = validate_mysql_config({**_BASE, "snapshot.max.threads": "4",
                                    "snapshot.locking.mode": "extended"})
    assert cfg.snapshot_max_threads == 4
    assert validate_mysql_config(_BASE)[0].snapshot_max_threads == 1


def _ranges(chunks: list[RangeChunk], table: int) -> list[tuple[int | None, int | None]]:
    return [(c.low, c.high) for c in chunks if c.table == table]


@pytest.mark.parametrize(("low", "high"), [
    (-60_000, 60_000), (1, 40_000), (18446744073709551615 - 6_000_000, 18446744073709551615),
])
def test_key_ranges_cover_the_table_once(low: int, high: int) -> None:
    chunks = plan_chunks([TableSize(40_000, low, high)], 4)
    ranges = _ranges(chunks, 0)
    assert len(ranges) == 16  # 4 per worker
    assert ranges[0][0] is None and ranges[-1][1] is None  # open at both ends
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # contiguous
    bounds = [r[1] for r in ranges[:-1] if r[1] is not None]
    assert len(bounds) == 15 and bounds == sorted(bounds)
    assert all(low < b <= high for b in bounds)


def test_planner_edges() -> None:
    sizes = [
        TableSize(100, 1, 100),  # small: one chunk
        TableSize(50_000, 5, 7),  # key span of 3: at most 3 chunks
        TableSize(-1, None, None),  # not splittable, unknown size
        TableSize(9_000, 1, 9_000),  # 9000 // 2048 = 4 chunks
        TableSize(0, None, None),  # empty
    ]
    chunks = plan_chunks(sizes, 2)
    assert [c.table for c in chunks][:4] == [1, 1, 1, 3]  # largest estimate first
    assert _ranges(chunks, 0) == [(None, None)]
    assert _ranges(chunks, 1) == [(None, 6), (6, 7), (7, None)]
    assert len(_ranges(chunks, 3)) == 4
    assert _ranges(chunks, 2) == [(None, None)] and _ranges(chunks, 4) == [(None, None)]
    assert plan_chunks(sizes, 1) == [RangeChunk(i, None, None) for i in (1, 3, 0, 2, 4)]


def test_split_key_and_chunk_sql() -> None:
    from headwater.connectors.mysql.columns import MySqlColumn, MySqlTable

    def table(pk: tuple[str, ...], *cols: tuple[str, str]) -> MySqlTable:
        return MySqlTable("d", "t`x", tuple(MySqlColumn(n, t) for n, t in cols), pk)

    int_pk = table(("i d",), ("i d", "BIGINT"), ("f", "FLOAT"))
    assert split_key(int_pk) == "i d"
    assert split_key(table(("k",), ("k", "VARCHAR"))) is None
    assert split_key(table(("a", "b"), ("a", "INT"), ("b", "INT"))) is None
    assert split_key(table((), ("a", "INT"))) is None
    assert chunk_sql(int_pk, RangeChunk(0, -5, 10)) == (
        "SELECT `i d`, CAST(`f` AS DOUBLE) FROM `d`.`t``x` WHERE `i d` >= -5 AND `i d` < 10")
    assert chunk_sql(int_pk, RangeChunk(0, None, None)).endswith("FROM `d`.`t``x`")
