"""PostgreSQL captured into Kafka (a real Kafka-protocol broker, tansu): every event arrives,
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
from headwater.testing.localkafka import LocalKafka
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]


OFFSET_KEY = b'["test-connector",{"server":"inv"}]'


def current_lsn(env: Env) -> int:
    hi, lo = env.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0].split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def stored_lsn(bootstrap: str, topic: str) -> int:
    recs = [r for r in read_topic(bootstrap, topic) if r.key == OFFSET_KEY]
    return int(orjson.loads(recs[-1].value)["lsn"]) if recs and recs[-1].value else 0


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
                                                              kafka: LocalKafka) -> None:
    keys = 60
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL)")
    env.sql(f"INSERT INTO t SELECT g, 0 FROM generate_series(1, {keys}) g")
    env.conn.commit()
    props = kafka_props(kafka)
    config = env.config(props)
    load = Load(env, keys)
    proc = start_capture(config)
    try:
        time.sleep(4)  # snapshot, then streaming
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
    assert {r.key for r in offsets} == {OFFSET_KEY}
    last = orjson.loads(offsets[-1].value)
    assert int(last["lsn"]) >= target
    assert offsets[-1].value == orjson.dumps(last), "not compact JSON as JsonConverter writes"
