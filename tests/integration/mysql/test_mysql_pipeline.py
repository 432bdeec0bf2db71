"""MariaDB → topic log → Spark pipeline → Delta, compared in full with the source.

A random workload (inserts, updates of random columns, single- and multi-row statements,
deletes, primary-key changes of one row and of many rows in one statement, transactions
spanning both tables) runs on two tables while the real connector captures them (snapshot,
then binlog).  The pipeline then materializes both topics into Delta (SCD1, ``once``), in small
micro-batches, once from the topics as captured and once from a copy with every record
duplicated and the order shuffled across batches: only the per-event binlog sequence (file,
position, row) can put the events back in order.  Each Delta table must equal its source
table, every column, with types normalized (TIMESTAMP as UTC instants, BIT(1) as booleans,
TIME as the pipeline's ``HH:MM:SS[.ffffff]`` text).
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from headwater.model.topic import TopicRecord
from headwater.pipeline.config import load_pipeline_config
from headwater.pipeline.delta_target import read_table
from headwater.pipeline.runner import start
from headwater.testing.replay import replay
from headwater.topics import reader
from headwater.topics.log import TopicLog

from .conftest import MariaEnv, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ORDERS = """
CREATE TABLE orders (
  id INT NOT NULL PRIMARY KEY,
  ver INT NOT NULL,
  customer VARCHAR(40) NOT NULL,
  amount DECIMAL(12,2) NOT NULL,
  qty INT UNSIGNED,
  ratio DOUBLE,
  placed DATETIME(6) NOT NULL,
  changed TIMESTAMP(3) NULL,
  due DATE,
  note TEXT,
  paid BIT(1),
  status ENUM('new','paid','shipped'),
  token VARBINARY(16)
) DEFAULT CHARSET=utf8mb4"""

ITEMS = """
CREATE TABLE items (
  order_id INT NOT NULL,
  line INT NOT NULL,
  ver INT NOT NULL,
  sku CHAR(8) CHARACTER SET latin1 NOT NULL,
  price DECIMAL(8,3),
  big BIGINT UNSIGNED,
  took TIME(3),
  tags SET('a','b','c'),
  PRIMARY KEY (order_id, line)
) DEFAULT CHARSET=utf8mb4"""

NAMES = ["Sally", "Zoë 😀", "O'Brien", "Łukasz", "", "a" * 40]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from headwater.pipeline.runner import spark_session

    session = spark_session("headwater-mysql-tests", master="local[2]")
    try:
        yield session
    finally:
        session.stop()


class Workload:
    """Random changes to both tables; keys are tracked here, so every statement succeeds."""

    def __init__(self, env: MariaEnv, seed: int) -> None:
        self.env = env
        self.rng = random.Random(seed)
        self.orders: set[int] = set()
        self.items: dict[int, set[int]] = {}  # order_id -> lines
        self.next_id = 1

    def fresh(self) -> int:
        self.next_id += 1
        return self.next_id

    # -- values ---------------------------------------------------------------------------

    def maybe(self, value: Any) -> Any:
        return None if self.rng.random() < 0.15 else value

    def order_values(self) -> dict[str, Any]:
        r = self.rng
        return {
            "customer": r.choice(NAMES),
            "amount": Decimal(r.randint(-10**11, 10**11)) / 100,
            "qty": self.maybe(r.choice([0, 1, r.randint(0, 2**32 - 1)])),
            "ratio": self.maybe(r.choice([0.1, -1.5e300, r.random(), 5e-324])),
            "placed": dt.datetime(2000, 1, 1) + dt.timedelta(
                microseconds=r.randint(-(10**15), 10**15)),
            "changed": self.maybe(dt.datetime(2001, 1, 1) + dt.timedelta(
                microseconds=r.randint(0, 10**15) // 1000 * 1000)),
            "due": self.maybe(dt.date(1000, 1, 1) + dt.timedelta(days=r.randint(0, 3_000_000))),
            "note": self.maybe(r.choice(["", "x", "multi\nline\ttext", "é" * 3000])),
            "paid": self.maybe(r.randint(0, 1)),
            "status": self.maybe(r.choice(["new", "paid", "shipped"])),
            "token": self.maybe(r.randbytes(r.randint(0, 16))),
        }

    def item_values(self) -> dict[str, Any]:
        r = self.rng
        return {
            "sku": r.choice(["ABC", "ÄÖÜ€", "", "12345678"]),
            "price": self.maybe(Decimal(r.randint(-99999999, 99999999)) / 1000),
            "big": self.maybe(r.choice([0, 2**64 - 1, 2**63, r.randint(0, 2**64 - 1)])),
            "took": self.maybe(dt.timedelta(milliseconds=r.randint(0, 838 * 3600 * 1000))),
            "tags": self.maybe(r.choice(["", "a", "a,c", "a,b,c"])),
        }

    # -- statements -----------------------------------------------------------------------

    def insert_order(self) -> None:
        key = self.fresh()
        values = {"id": key, "ver": 0, **self.order_values()}
        self.env.sql(f"INSERT INTO orders ({', '.join(values)}) "
                     f"VALUES ({', '.join(['%s'] * len(values))})", list(values.values()))
        self.orders.add(key)
        for _ in range(self.rng.randint(0, 3)):
            self.insert_item(key)

    def insert_item(self, order_id: int) -> None:
        line = self.fresh()
        values = {"order_id": order_id, "line": line, "ver": 0, **self.item_values()}
        self.env.sql(f"INSERT INTO items ({', '.join(values)}) "
                     f"VALUES ({', '.join(['%s'] * len(values))})", list(values.values()))
        self.items.setdefault(order_id, set()).add(line)

    def update_order(self) -> None:
        if not self.orders:
            return
        values = self.order_values()
        chosen = self.rng.sample(sorted(values), self.rng.randint(1, 4))
        sets = ", ".join(f"{c} = %s" for c in chosen)
        self.env.sql(f"UPDATE orders SET ver = ver + 1, {sets} WHERE id = %s",
                     [values[c] for c in chosen] + [self.rng.choice(sorted(self.orders))])

    def update_many_orders(self) -> None:
        """One statement, one row event carrying many rows: their order is the row index."""
        modulus = self.rng.randint(3, 9)
        self.env.sql("UPDATE orders SET ver = ver + 1, qty = COALESCE(qty, 0) DIV 2, "
                     "note = CONCAT(COALESCE(note, ''), '+') WHERE id %% %s = %s",
                     [modulus, self.rng.randrange(modulus)])

    def update_item(self) -> None:
        keys = [(o, line) for o, lines in self.items.items() for line in lines]
        if not keys:
            return
        values = self.item_values()
        chosen = self.rng.sample(sorted(values), self.rng.randint(1, 3))
        sets = ", ".join(f"{c} = %s" for c in chosen)
        order_id, line = self.rng.choice(sorted(keys))
        self.env.sql(f"UPDATE items SET ver = ver + 1, {sets} WHERE order_id = %s AND line = %s",
                     [values[c] for c in chosen] + [order_id, line])

    def delete_order(self) -> None:
        if not self.orders:
            return
        key = self.rng.choice(sorted(self.orders))
        self.env.sql("DELETE FROM orders WHERE id = %s", [key])
        self.orders.discard(key)
        if self.rng.random() < 0.5:  # and its items, in one multi-row statement
            self.env.sql("DELETE FROM items WHERE order_id = %s", [key])
            self.items.pop(key, None)

    def change_order_key(self) -> None:
        if not self.orders:
            return
        old, new = self.rng.choice(sorted(self.orders)), self.fresh()
        self.env.sql("UPDATE orders SET id = %s, ver = ver + 1 WHERE id = %s", [new, old])
        self.orders.discard(old)
        self.orders.add(new)

    def move_items(self) -> None:
        """Primary-key changes of several rows in one statement."""
        if not self.items:
            return
        old, new = self.rng.choice(sorted(self.items)), self.fresh()
        self.env.sql("UPDATE items SET order_id = %s, ver = ver + 1 WHERE order_id = %s",
                     [new, old])
        self.items[new] = self.items.pop(old)

    def seed(self, orders: int) -> None:
        self.env.sql("BEGIN")
        for _ in range(orders):
            self.insert_order()
        self.env.sql("COMMIT")

    def run(self, transactions: int) -> None:
        ops = [(self.insert_order, 0.25), (self.update_order, 0.25),
               (self.update_many_orders, 0.05), (self.update_item, 0.2),
               (self.delete_order, 0.1), (self.change_order_key, 0.08),
               (self.move_items, 0.07)]
        functions, weights = zip(*ops, strict=True)
        for _ in range(transactions):
            self.env.sql("BEGIN")
            for op in self.rng.choices(functions, weights, k=self.rng.randint(1, 5)):
                op()
            self.env.sql("COMMIT")


# ---------------------------------------------------------------------------------------------
# Source and target, normalized
# ---------------------------------------------------------------------------------------------

KEYS = {"orders": ("id",), "items": ("order_id", "line")}


def time_text(value: dt.timedelta) -> str:
    """A non-negative TIME as the pipeline writes it: HH:MM:SS[.ffffff], hours may pass 24."""
    micros = value // dt.timedelta(microseconds=1)
    seconds, frac = divmod(micros, 1_000_000)
    h, rem = divmod(seconds, 3600)
    text = f"{h:02d}:{rem // 60:02d}:{rem % 60:02d}"
    return f"{text}.{frac:06d}" if frac else text


def normalized(column: str, value: Any) -> Any:
    """A source value as the Delta table holds it."""
    if value is None:
        return None
    if column == "changed":  # TIMESTAMP, read in a UTC session: an instant
        return value.replace(tzinfo=dt.UTC)
    if column == "paid":  # BIT(1) → boolean
        return bool(int.from_bytes(value, "big"))
    if column == "took":
        return time_text(value)
    return value


def source_table(env: MariaEnv, table: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    conn = env.server.connect(env.db)
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
            cur.execute(f"SELECT * FROM `{table}`")
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    finally:
        conn.close()
    return {tuple(r[k] for k in KEYS[table]): {c: normalized(c, v) for c, v in r.items()}
            for r in rows}


def delta_table(env: MariaEnv, table: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    rows = read_table(env.tmp / "delta" / env.db / table).to_pylist()
    out = {tuple(r[k] for k in KEYS[table]): r for r in rows}
    assert len(out) == len(rows), f"duplicate keys in the target {table}"
    return out


def versions(rows: dict[Any, dict[str, Any]]) -> dict[Any, int]:
    return {k: r["ver"] for k, r in rows.items()}


def captured_versions(env: MariaEnv, table: str) -> dict[tuple[Any, ...], int]:
    return {tuple(dict(k)[c] for c in KEYS[table]): r["ver"]
            for k, r in replay(env.topics, env.topic(table)).items()}


def differences(source: dict[Any, dict[str, Any]], target: dict[Any, dict[str, Any]]) -> list[str]:
    out = [f"missing in the target: {k}" for k in sorted(source.keys() - target.keys())]
    out += [f"not in the source: {k}" for k in sorted(target.keys() - source.keys())]
    for k in sorted(source.keys() & target.keys()):
        s, t = source[k], target[k]
        if set(s) != set(t):
            out.append(f"{k}: columns {sorted(s)} != {sorted(t)}")
            continue
        for c in s:
            if s[c] != t[c] or (s[c] is None) != (t[c] is None):
                out.append(f"{k}.{c}: source {s[c]!r} != target {t[c]!r}")
    return out


# ---------------------------------------------------------------------------------------------
# The test
# ---------------------------------------------------------------------------------------------


def capture_workload(env: MariaEnv, seed: int) -> None:
    env.sql("SET SESSION time_zone = '+05:30'")  # TIMESTAMPs written at +05:30 are UTC in Delta
    env.sql(ORDERS)
    env.sql(ITEMS)
    work = Workload(env, seed)
    work.seed(120)
    # BIGINT UNSIGNED as Decimal(20,0), so 2^64-1 stays 18446744073709551615 in Delta
    cap = env.capture({"bigint.unsigned.handling.mode": "precise"})
    try:
        wait_for(env.snapshot_completed, timeout=60, what="the end of the snapshot")
        work.run(150)

        def caught_up() -> bool:
            return all(captured_versions(env, t) == versions(source_table(env, t))
                       for t in KEYS)

        wait_for(caught_up, timeout=90, what="the capture to catch up")
    finally:
        cap.stop()


def scramble(env: MariaEnv, seed: int) -> Path:
    """A copy of both table topics with every record delivered 1-3 times, in a shuffled order,
    in small segments, as an unreliable transport would deliver them."""
    rng = random.Random(seed)
    root = env.tmp / "scrambled"
    with TopicLog(root, segment_bytes=200_000) as log:
        for table in KEYS:
            topic = env.topic(table)
            out = [r for r in reader.read(env.topics, topic) for _ in range(rng.randint(1, 3))]
            rng.shuffle(out)
            for i in range(0, len(out), 50):
                log.append({topic: [TopicRecord(r.key, r.value, r.timestamp)
                                    for r in out[i:i + 50]]})
    return root


@pytest.mark.parametrize("variant", ["as-captured", "duplicated+reordered"])
def test_delta_tables_equal_the_source(menv: MariaEnv, spark: Any, variant: str) -> None:
    seed = sum(map(ord, variant)) + int(os.environ.get("HEADWATER_TEST_SEED", "0"))
    capture_workload(menv, seed)
    topics = scramble(menv, seed) if variant != "as-captured" else menv.topics
    config = menv.config({
        "headwater.topics.dir": topics,
        "headwater.pipeline.mode": "scd1",
        "headwater.pipeline.delta.path": menv.tmp / "delta",
        "headwater.pipeline.checkpoint.dir": menv.tmp / "checkpoint",
        "headwater.pipeline.max.records.per.trigger": 97,
        "bigint.unsigned.handling.mode": "precise",
    })
    query = start(spark, load_pipeline_config(config), once=True)
    query.awaitTermination()
    assert query.exception() is None
    problems: list[str] = []
    for table in KEYS:
        source = source_table(menv, table)
        assert len(source) > 50, f"the workload left too few {table} to compare"
        problems += [f"{table} {p}" for p in differences(source, delta_table(menv, table))]
    assert not problems, "\n".join(problems[:40]) + f"\n({len(problems)} differences)"


def test_negative_time_is_written_as_the_source_prints_it() -> None:
    from headwater.pipeline.connect_types import field_type

    decode = field_type({"type": "int64", "name": "io.debezium.time.MicroTime"}).decode
    assert [decode(us) for us in (-1_000_000, -1, -3_020_399_000_000)] == [
        "-00:00:01", "-00:00:00.000001", "-838:59:59"]
