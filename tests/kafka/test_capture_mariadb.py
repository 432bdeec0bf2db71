"""MariaDB captured into Kafka with the capture killed (kill -9) twice under load: every
committed change arrives, new changes of a key in order, in the Java partitioner's partition;
then Kafka -> Delta equals the source."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from typing import Any

import orjson
import pytest

from headwater.kafka.murmur2 import partition_for
from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.mysql.conftest import MariaEnv, wait_for
from tests.kafka.conftest import kafka_props, read_topic, stored_offset, unique
from tests.kafka.test_capture_postgres import run_pipeline_once, start_capture

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class Load(threading.Thread):
    def __init__(self, env: MariaEnv, keys: int) -> None:
        super().__init__(daemon=True)
        self.conn = env.server.connect(env.db, autocommit=False)
        self.keys = keys
        self.version = dict.fromkeys(range(1, keys + 1), 0)
        self.committed: set[tuple[int, int]] = set()
        self.halt = threading.Event()
        self.rng = random.Random(5)

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


def test_mariadb_into_kafka_with_kills_then_delta(menv: MariaEnv, kafka: KafkaCluster,
                                                  spark: Any) -> None:
    keys = 50
    menv.prefix = unique("maria")
    menv.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL)")
    menv.sql("INSERT INTO t (id, ver) VALUES " + ",".join(f"({i}, 0)" for i in range(1, keys + 1)))
    props = kafka_props(kafka, **{
        "headwater.pipeline.delta.path": menv.tmp / "delta",
        "headwater.pipeline.checkpoint.dir": menv.tmp / "checkpoint",
        "headwater.pipeline.max.records.per.trigger": 200,
    })
    config = menv.config(props)
    load = Load(menv, keys)
    topic = menv.topic("t")
    proc = start_capture(config)
    try:
        # The snapshot's offset is stored before the load begins: a capture killed earlier
        # would snapshot again and rightly skip the versions in between.
        # (not the `snapshot_started` mark, stored before the snapshot's first READ)
        wait_for(lambda: "snapshot_started" not in (
            stored_offset(kafka.bootstrap, props["offset.storage.topic"])
            or {"snapshot_started": None}), timeout=120, what="the snapshot's offset stored")
        load.start()
        for _ in range(2):
            time.sleep(3)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc = start_capture(config)
        time.sleep(2)
        load.halt.set()
        load.join()

        def arrived() -> bool:
            got = {(orjson.loads(r.key)["payload"]["id"],
                    orjson.loads(r.value)["payload"]["after"]["ver"])
                   for r in read_topic(kafka.bootstrap, topic) if r.key and r.value}
            return load.committed <= got

        wait_for(arrived, timeout=120, what="every change in Kafka")
    finally:
        load.halt.set()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()[-3000:]
    last_new: dict[int, int] = {}
    seen: set[tuple[int, int]] = set()
    for rec in read_topic(kafka.bootstrap, topic):
        assert rec.key is not None and rec.value is not None
        assert rec.partition == partition_for(rec.key, 3)
        key = orjson.loads(rec.key)["payload"]["id"]
        version = orjson.loads(rec.value)["payload"]["after"]["ver"]
        if (key, version) not in seen:
            assert version > last_new.get(key, -1)
            last_new[key] = version
            seen.add((key, version))
    run_pipeline_once(spark, config)
    from headwater.pipeline.delta_target import read_table

    rows = read_table(menv.tmp / "delta" / menv.db / "t").to_pylist()
    assert {r["id"]: r["ver"] for r in rows} == dict(menv.sql("SELECT id, ver FROM t"))
