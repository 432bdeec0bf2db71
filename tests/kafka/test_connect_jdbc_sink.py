"""Debezium's JDBC sink, in a Kafka Connect worker with its default settings, consumes
Headwater's topics into a second PostgreSQL database: the proof that a Debezium user's
consumers work unchanged on our topics.

Headwater captures a PostgreSQL database into Kafka (JSON with schemas, headers as the worker's
default SimpleHeaderConverter reads them); `io.debezium.connector.jdbc.JdbcSinkConnector`
3.5.0.Final runs in a Kafka Connect 4.1.1 worker (headwater.testing.connect_worker) configured
as a Debezium user would: upsert, `primary.key.mode=record_key`, `delete.enabled=true`,
`truncate.enabled=true`, `schema.evolution=basic`.  Rows written before the capture starts
arrive as snapshot reads; then a random workload (seeded, printed on failure) inserts, updates,
changes primary keys (a delete and a create), deletes and truncates, in transactions of a few
statements, over a table of many types and a table with a composite key.  The sink's tables
must come to equal the source's (polled with a deadline).

The topics have one partition: a truncate event has no key, and Debezium documents that with
several partitions there is no order between it and the row events of the same table.

With the worker's default header converter, the workload changes no key of the composite-key
table: the SimpleHeaderConverter reads the `__debezium.oldkey`/`newkey` headers of such a change
(`{"a":5,"b":"x"}`) as a map whose values have no common schema, and the sink fails on it
(docs/compatibility.md, "Consumers"); Debezium's own connectors write the same headers.  The
second run configures the JsonConverter for headers on both sides, as a Debezium user would to
avoid that, and changes composite keys too.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from headwater.testing.connect_worker import ConnectWorker, ConnectWorkerError
from headwater.testing.kafka_cluster import KafkaCluster
from headwater.testing.localpg import LocalPostgres
from headwater.testing.timeouts import scaled
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, unique

pytestmark = [pytest.mark.integration]

SINK_CLASS = "io.debezium.connector.jdbc.JdbcSinkConnector"
_sinks = itertools.count()

SOURCE_DDL = [
    "CREATE TABLE items (id int PRIMARY KEY, name text, qty bigint, price numeric(10,2), "
    "ok boolean, day date, at timestamp(6), at_tz timestamptz, score double precision, "
    "data bytea, ref uuid, doc jsonb, note varchar(40) NOT NULL DEFAULT 'n')",
    "CREATE TABLE pairs (a int, b varchar(20), v text, n smallint, PRIMARY KEY (a, b))",
]
TABLES = {"items": "id", "pairs": "a, b"}


@pytest.fixture(scope="module")
def worker(kafka: KafkaCluster,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectWorker]:
    """One worker per module, with Connect's default settings."""
    w = ConnectWorker(kafka.bootstrap, plugins=["debezium-jdbc-sink"],
                      base_dir=tmp_path_factory.mktemp("connect")).start()
    print(f"Connect worker ready in {w.started_in:.1f}s")
    try:
        yield w
    finally:
        w.cleanup()


def sink_config(pg: LocalPostgres, db: str, prefix: str) -> dict[str, str]:
    """What a Debezium user writes for a PostgreSQL-to-PostgreSQL replica."""
    return {
        "connector.class": SINK_CLASS,
        "tasks.max": "1",
        # named topics: a regex subscription finds topics created after it only at the next
        # metadata refresh (metadata.max.age.ms, 5 minutes)
        "topics": ",".join(f"{prefix}.public.{t}" for t in TABLES),
        "connection.url": f"jdbc:postgresql://127.0.0.1:{pg.port}/{db}",
        "connection.username": pg.user,
        "connection.password": "unused",
        "insert.mode": "upsert",
        "primary.key.mode": "record_key",
        "delete.enabled": "true",
        "truncate.enabled": "true",
        "schema.evolution": "basic",
        "collection.name.format": "${source.table}",
    }


# ------------------------------------------------------------------------------- the workload


class Workload:
    """Random statements over `items` and `pairs`; keys are tracked to aim updates, key
    changes and deletes at rows that exist (the database stays the source of truth)."""

    def __init__(self, seed: int, composite_key_changes: bool) -> None:
        self.rng = random.Random(seed)
        self.composite_key_changes = composite_key_changes
        self.items: set[int] = set()
        self.pairs: set[tuple[int, str]] = set()
        self.next_id = 1
        self.kinds: Counter[str] = Counter()

    def _item_values(self) -> tuple[Any, ...]:
        r = self.rng
        base = datetime(2000, 1, 1) + timedelta(seconds=r.randrange(10**9),
                                                microseconds=r.randrange(10**6))
        return (
            r.choice([None, "", "plain", "ünïcødé ✓", "x" * r.randrange(1, 300)]),
            r.choice([None, r.randrange(-(2**62), 2**62)]),
            r.choice([None, f"{r.randrange(-10**7, 10**7)}.{r.randrange(100):02d}"]),
            r.choice([None, True, False]),
            r.choice([None, date(1970, 1, 1) + timedelta(days=r.randrange(-20000, 40000))]),
            r.choice([None, base]),
            r.choice([None, base.replace(tzinfo=UTC)]),
            r.choice([None, r.uniform(-1e12, 1e12), 0.0, 1.5]),
            r.choice([None, b"", bytes(r.randrange(256) for _ in range(r.randrange(1, 40)))]),
            r.choice([None, f"{r.getrandbits(128):032x}"]),
            r.choice([None, '{"a": 1}', f'{{"k": [{r.randrange(100)}, "v"], "n": null}}']),
        )

    def insert_item(self) -> tuple[str, tuple[Any, ...]]:
        key = self.next_id
        self.next_id += 1
        self.items.add(key)
        return ("INSERT INTO items (id, name, qty, price, ok, day, at, at_tz, score, data, ref,"
                " doc) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (key, *self._item_values()))

    def insert_pair(self) -> tuple[str, tuple[Any, ...]]:
        key = (self.rng.randrange(1000), self.rng.choice(["x", "y", "z", "é"]))
        self.pairs.add(key)
        return ("INSERT INTO pairs VALUES (%s, %s, %s, %s) ON CONFLICT (a, b) DO UPDATE SET "
                "v = excluded.v", (*key, self.rng.choice([None, "v", "w" * 50]),
                                   self.rng.randrange(-32768, 32767)))

    def statement(self) -> tuple[str, tuple[Any, ...]]:
        sql, params = self._statement()
        self.kinds[" ".join(sql.split()[:2])] += 1
        return sql, params

    def _statement(self) -> tuple[str, tuple[Any, ...]]:
        r = self.rng
        roll = r.random()
        if roll < 0.30 or not self.items:
            return self.insert_item() if r.random() < 0.7 or not self.pairs else \
                self.insert_pair()
        if roll < 0.35:
            return self.insert_pair()
        if roll < 0.62:
            key = r.choice(sorted(self.items))
            values = self._item_values()
            return ("UPDATE items SET name = %s, qty = %s, price = %s, ok = %s, day = %s, "
                    "at = %s, at_tz = %s, score = %s, data = %s, ref = %s, doc = %s, "
                    "note = 'u' WHERE id = %s", (*values, key))
        if roll < 0.72:  # a primary-key change: Debezium's delete + create
            old = r.choice(sorted(self.items))
            new = self.next_id
            self.next_id += 1
            self.items.discard(old)
            self.items.add(new)
            self.kinds["key change"] += 1
            return "UPDATE items SET id = %s WHERE id = %s", (new, old)
        if roll < 0.78 and self.pairs and self.composite_key_changes:
            a, b = r.choice(sorted(self.pairs))
            self.pairs.discard((a, b))
            nb = r.choice(["p", "q", "r"]) + str(r.randrange(10**6))
            self.pairs.add((a, nb))
            self.kinds["key change"] += 1
            return "UPDATE pairs SET b = %s, v = 'moved' WHERE a = %s AND b = %s", (nb, a, b)
        if roll < 0.97:
            key = r.choice(sorted(self.items))
            self.items.discard(key)
            return "DELETE FROM items WHERE id = %s", (key,)
        if r.random() < 0.5:
            self.items.clear()
            return "TRUNCATE items", ()
        self.pairs.clear()
        return "TRUNCATE pairs", ()


def run(conn: Any, work: Workload, transactions: int) -> None:
    conn.autocommit = False
    with conn.cursor() as cur:
        for _ in range(transactions):
            for _ in range(work.rng.randrange(1, 6)):
                cur.execute(*work.statement())
            conn.commit()
    conn.autocommit = True


# ---------------------------------------------------------------------------- the comparison


def rows(conn: Any, table: str) -> list[tuple[Any, ...]]:
    columns = ("id, name, qty, price, ok, day, at, at_tz, score, data, ref::text, "
               "doc::jsonb::text, note") if table == "items" else "a, b, v, n"
    with conn.cursor() as cur:
        cur.execute(f"SELECT {columns} FROM {table} ORDER BY {TABLES[table]}")
        return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                for row in cur.fetchall()]


def table_exists(conn: Any, table: str) -> bool:
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (f"public.{table}",))
        return bool(cur.fetchone()[0])


def first_difference(source: list[tuple[Any, ...]], sink: list[tuple[Any, ...]]) -> str:
    s, k = set(source), set(sink)
    return (f"{len(source)} source rows, {len(sink)} sink rows; only in the source: "
            f"{sorted(s - k, key=repr)[:3]}; only in the sink: {sorted(k - s, key=repr)[:3]}")


def wait_equal(worker: ConnectWorker, name: str, src: Any, sink: Any,
               timeout: float = 120.0) -> None:
    """Polls until every sink table equals its source table; a FAILED sink ends it at once."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        worker.raise_if_failed(name)
        pending = []
        for table in TABLES:
            source = rows(src, table)
            if not table_exists(sink, table):
                pending.append(f"{table}: no sink table yet")
                continue
            copied = rows(sink, table)
            if copied != source:
                pending.append(f"{table}: {first_difference(source, copied)}")
        if not pending:
            return
        if time.monotonic() > deadline:
            raise AssertionError("sink tables differ from the source after "
                                 f"{timeout}s:\n" + "\n".join(pending))
        time.sleep(0.5)


# -------------------------------------------------------------------------------------- test


JSON_HEADERS = {"header.converter": "org.apache.kafka.connect.json.JsonConverter"}


@pytest.mark.parametrize("headers", ["worker-defaults", "json-headers"])
def test_jdbc_sink_equals_source(env: Env, kafka: KafkaCluster, worker: ConnectWorker,
                                 headers: str) -> None:
    """`worker-defaults`: the sink with no converter setting at all (the must-show);
    `json-headers`: JsonConverter headers on both sides, composite keys changed too."""
    json_headers = headers == "json-headers"
    seed = random.randrange(2**32)
    print(f"workload seed {seed}")
    work = Workload(seed, composite_key_changes=json_headers)
    env.prefix = unique("sink")
    for stmt in SOURCE_DDL:
        env.sql(stmt)
    env.conn.autocommit = True
    with env.conn.cursor() as cur:  # snapshot rows
        for _ in range(40):
            cur.execute(*work.insert_item())
        for _ in range(10):
            cur.execute(*work.insert_pair())
    sink_db = f"hw_sink_{next(_sinks)}"
    env.pg.create_database(sink_db)
    sink = env.pg.connect(sink_db)
    name = f"jdbc-sink-{env.prefix}"
    capture = env.capture(kafka_props(kafka, **{
        "topic.creation.default.partitions": 1,
        "skipped.operations": "none",  # truncates are events too
        **(JSON_HEADERS if json_headers else {}),
    }))
    try:
        wait_for(lambda: capture.runtime.metrics.snapshot_completed, timeout=60,
                 what="Headwater's snapshot")
        worker.put_connector(name, {**sink_config(env.pg, sink_db, env.prefix),
                                    **(JSON_HEADERS if json_headers else {})})
        worker.wait_running(name)
        wait_equal(worker, name, env.conn, sink)  # the snapshot
        run(env.conn, work, 150)
        wait_equal(worker, name, env.conn, sink)
        run(env.conn, work, 150)  # a second round over the tables the sink created
        wait_equal(worker, name, env.conn, sink)
        assert capture.error is None, capture.error
        # the workload did reach every kind of change it is meant to carry
        assert {"TRUNCATE items", "TRUNCATE pairs", "DELETE FROM", "UPDATE items",
                "key change", "INSERT INTO"} <= set(work.kinds), work.kinds
        assert ("UPDATE pairs" in work.kinds) == json_headers, work.kinds
    finally:
        try:
            worker.delete_connector(name)
        except ConnectWorkerError as exc:
            print(f"could not delete {name}: {exc}")
        capture.stop()
        sink.close()
