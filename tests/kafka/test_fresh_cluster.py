"""Capture against a Kafka cluster started seconds before it, with no topic created beforehand:
every start succeeds.

A KRaft cluster answers CreateTopics before its brokers' metadata knows the new topics; a
capture that produced (or read its offsets topic) right away failed in 2 of 3 starts on three
nodes (issue 26).  Each round here is a fresh cluster, so the first topics Headwater creates
(offsets, then the table topic) meet a cluster as new as it gets.  CI: ten fresh single-node
clusters; `--long`: ten fresh three-node clusters (replication factor 3), where the brokers
learn new topics one by one."""

from __future__ import annotations

import orjson
import pytest

from headwater.testing.kafka_cluster import KafkaCluster
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic, unique

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1200)]

ROUNDS = 10


def capture_once(env: Env, cluster: KafkaCluster, round_no: int) -> None:
    """Starts capture right after the cluster is up; the snapshot and a streamed insert must
    reach Kafka and the capture stop without an error."""
    env.prefix = unique("fresh")
    env.slot = f"hw_fresh_{env.db}_{round_no}"
    props = kafka_props(cluster, **{"headwater.topics.dir": env.tmp / f"unused{round_no}"})
    cap = env.capture(props)
    try:
        wait_for(lambda: cap.error is not None or cap.runtime.metrics.snapshot_completed,
                 timeout=60, what=f"round {round_no}: snapshot")
        assert cap.error is None, f"round {round_no}: capture failed: {cap.error!r}"
        env.sql("INSERT INTO t VALUES (%s, %s)", (1000 + round_no, round_no))
        env.conn.commit()
        topic = f"{env.prefix}.public.t"

        def arrived() -> bool:
            assert cap.error is None, f"round {round_no}: capture failed: {cap.error!r}"
            ids = {orjson.loads(r.key)["payload"]["id"]
                   for r in read_topic(cluster.bootstrap, topic) if r.key}
            return 1000 + round_no in ids and set(range(1, 11)) <= ids
        wait_for(arrived, timeout=60, what=f"round {round_no}: snapshot and insert in Kafka")
    finally:
        cap.stop()  # re-raises what the capture failed with
        slot = (env.slot,)
        wait_for(lambda: not env.sql("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s "
                                     "AND active", slot), what="the slot released")
        env.sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s", slot)
        env.conn.commit()


@pytest.mark.parametrize("nodes", [
    pytest.param(1, id="one-node"),
    pytest.param(3, id="three-nodes", marks=pytest.mark.long),
])
def test_capture_starts_on_a_fresh_cluster_every_time(env: Env, nodes: int) -> None:
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL)")
    env.sql("INSERT INTO t SELECT g, 0 FROM generate_series(1, 10) g")
    env.conn.commit()
    for round_no in range(ROUNDS):
        cluster = KafkaCluster(nodes=nodes)
        try:
            cluster.start()
            capture_once(env, cluster, round_no)
        finally:
            cluster.cleanup()
