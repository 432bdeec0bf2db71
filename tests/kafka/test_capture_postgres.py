"""PostgreSQL captured into Kafka (an Apache Kafka node): every event arrives,
in key order, in the partition Java's default partitioner picks, with the capture killed
(kill -9) and the broker killed and restarted under load; offsets in Connect's format."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import orjson
import pytest

from headwater.kafka.murmur2 import partition_for
from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic, unique
from tests.record_json import json_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def offset_key(env: Env) -> bytes:
    return b'["test-connector",{"server":"%s"}]' % env.prefix.encode()


def current_lsn(env: Env) -> int:
    hi, lo = env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0].split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def stored_lsn(bootstrap: str, topic: str) -> int:
    """The LSN of the last offset the capture stored in the offsets topic (0 before one has an
    LSN: a first snapshot's start is stored as its `snapshot_started` mark alone)."""
    recs = [r for r in read_topic(bootstrap, topic) if r.key and r.key.startswith(b'["test-')]
    return int(orjson.loads(recs[-1].value).get("lsn", 0)) if recs and recs[-1].value else 0


class Load(threading.Thread):
    """Updates random rows, one version at a time, until stopped; every committed version is
    remembered (the source of truth for "every event arrives")."""

    def __init__(self, env: Env, keys: int) -> None:
        super().__init__(daemon=True)
        self.conn = env.pg.connect(env.db)
        self.keys = keys
        self.version = dict.fromkeys(range(1, keys + 1), 0)
        self.committed: set[tuple[int, int]] = set()
        self.halt = threading.Event()
        self.rng = random.Random(7)

    def run(self) -> None:
        with self.conn.cursor() as cur:
            while not self.halt.is_set():
                ids = self.rng.sample(range(1, self.keys + 1), 3)
                for i in ids:
                    self.version[i] += 1
                    cur.execute("UPDATE t SET ver = %s WHERE id = %s", (self.version[i], i))
                self.conn.commit()
                self.committed.update((i, self.version[i]) for i in ids)
                time.sleep(0.003)
        self.conn.close()


def start_capture(config: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def test_capture_into_kafka_survives_kills_and_broker_restart(env: Env,
                                                              kafka: KafkaCluster) -> None:
    keys = 60
    env.prefix = unique("inv")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL)")
    env.sql(f"INSERT INTO t SELECT g, 0 FROM generate_series(1, {keys}) g")
    env.conn.commit()
    props = kafka_props(kafka)
    config = env.config(props)
    load = Load(env, keys)
    proc = start_capture(config)
    try:
        # The snapshot's offset is stored before the load begins: a capture killed earlier
        # would snapshot again and rightly skip the versions in between.
        wait_for(lambda: stored_lsn(kafka.bootstrap, props["offset.storage.topic"]) > 0,
                 timeout=120, what="the snapshot's offset stored")
        load.start()
        time.sleep(3)
        os.kill(proc.pid, signal.SIGKILL)  # the capture dies mid-stream
        proc.wait()
        proc = start_capture(config)
        time.sleep(4)
        kafka.restart(kill=True)  # the broker dies and comes back under load
        time.sleep(4)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc = start_capture(config)
        time.sleep(3)
        load.halt.set()
        load.join()
        target = current_lsn(env)
        wait_for(lambda: stored_lsn(kafka.bootstrap, props["offset.storage.topic"]) >= target,
                 timeout=120, what="capture caught up")
    finally:
        load.halt.set()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()[-3000:]

    records = read_topic(kafka.bootstrap, f"{env.prefix}.public.t")
    seen: set[tuple[int, int]] = set()
    last_new: dict[int, int] = {}
    for rec in records:
        assert rec.key is not None
        assert rec.partition == partition_for(rec.key, 3), "not Java's default partitioning"
        if rec.value is None:
            continue
        key = orjson.loads(rec.key)["payload"]["id"]
        after = orjson.loads(rec.value)["payload"]["after"]
        version = after["ver"]
        if (key, version) not in seen:  # a first delivery: versions of a key only go up
            assert version > last_new.get(key, -1), f"key {key}: {version} after {last_new[key]}"
            last_new[key] = version
            seen.add((key, version))
    missing = load.committed - seen
    assert not missing, f"{len(missing)} changes never arrived, e.g. {sorted(missing)[:5]}"
    assert len({r.partition for r in records}) == 3

    # The offsets topic holds Connect's key and value bytes.
    offsets = read_topic(kafka.bootstrap, props["offset.storage.topic"])
    assert offsets, "no offsets stored"
    assert {r.key for r in offsets} == {offset_key(env)}
    last = json_of(offsets[-1].value)
    assert int(last["lsn"]) >= target
    assert offsets[-1].value == orjson.dumps(last), "not compact JSON as JsonConverter writes"


def delta_rows(env: Env) -> dict[int, int]:
    from headwater.pipeline.delta_target import read_table

    rows = read_table(env.tmp / "delta" / "public" / "t").to_pylist()
    assert len({r["id"] for r in rows}) == len(rows), "duplicate keys in the target"
    return {r["id"]: r["ver"] for r in rows}


def run_pipeline_once(spark: Any, config: Any) -> None:
    from headwater.pipeline.config import load_pipeline_config
    from headwater.pipeline.runner import close_query, start

    query = start(spark, load_pipeline_config(config), once=True)
    try:
        query.awaitTermination()
    finally:
        close_query(query)
    assert query.exception() is None


@pytest.mark.parametrize("columnar", ["1", "0"])
def test_pipeline_from_kafka_equals_source(env: Env, kafka: KafkaCluster, spark: Any,
                                           columnar: str, monkeypatch: Any) -> None:
    """Capture into Kafka, then Kafka -> Delta in small batches (several per partition, both
    decode paths), then more changes and deletes and a second run from the checkpoint."""
    monkeypatch.setenv("HEADWATER_PIPELINE_COLUMNAR", columnar)
    env.prefix = unique("inv")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL)")
    env.sql("INSERT INTO t SELECT g, 0 FROM generate_series(1, 200) g")
    env.conn.commit()
    props = kafka_props(kafka, **{
        "headwater.pipeline.delta.path": env.tmp / "delta",
        "headwater.pipeline.checkpoint.dir": env.tmp / "checkpoint",
        "headwater.pipeline.max.records.per.trigger": 97,
    })
    cap = env.capture(props)
    store = props["offset.storage.topic"]
    try:
        wait_for(lambda: cap.runtime.metrics.snapshot_completed, what="snapshot")
        env.sql("UPDATE t SET ver = ver + 1 WHERE id % 3 = 0")
        env.sql("DELETE FROM t WHERE id % 7 = 0")
        env.conn.commit()
        target = current_lsn(env)
        wait_for(lambda: stored_lsn(kafka.bootstrap, store) >= target, timeout=60,
                 what="capture caught up")
        config = env.config(props)
        run_pipeline_once(spark, config)
        source = {r[0]: r[1] for r in env.sql("SELECT id, ver FROM t")}
        assert delta_rows(env) == source
        env.sql("UPDATE t SET ver = ver + 10 WHERE id % 5 = 0")
        env.sql("DELETE FROM t WHERE id % 11 = 0")
        env.sql("INSERT INTO t SELECT g, 1 FROM generate_series(1000, 1050) g")
        env.conn.commit()
        target = current_lsn(env)
        wait_for(lambda: stored_lsn(kafka.bootstrap, store) >= target, timeout=60,
                 what="capture caught up")
    finally:
        cap.stop()
    run_pipeline_once(spark, config)
    source = {r[0]: r[1] for r in env.sql("SELECT id, ver FROM t")}
    assert delta_rows(env) == source
