"""The Kafka signal channel: a message keyed by topic.prefix starts an incremental snapshot
(PostgreSQL and MariaDB, read-only watermarks; SQL Server's emulation, signal table
watermarks); messages with another key, and a blocking
snapshot, are ignored; after a restart the signal does not run again (its offset travels in
the connector offset)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from headwater.testing.kafka_cluster import KafkaCluster
from headwater.testing.replay import events
from tests.integration.mysql.conftest import MariaEnv
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import unique

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def send(kafka: KafkaCluster, topic: str, key: str, value: dict[str, Any]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    producer.produce(topic, json.dumps(value).encode(), key.encode())
    assert producer.flush(30) == 0


def signal_props(kafka: KafkaCluster, topic: str) -> dict[str, Any]:
    return {"snapshot.mode": "no_data", "signal.enabled.channels": "kafka",
            "signal.kafka.topic": topic, "signal.kafka.bootstrap.servers": kafka.bootstrap,
            "signal.kafka.groupId": unique("sig-"), "signal.poll.interval.ms": 100,
            "read.only": "true", "incremental.snapshot.chunk.size": 7}


def offset_of(path: Any) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()).get("offset") or {})
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def reads(topics: Any, topic: str) -> list[int]:
    return [v["after"]["id"] for _, _, v in events(topics, topic)
            if v is not None and v["op"] == "r"]


def run_signals(kafka: KafkaCluster, start: Any, streaming: Any, topics: Any, topic: str,
                offsets: Any, prefix: str, collection: str, signal_topic: str,
                rows: int) -> None:
    kafka.create_topic(signal_topic, 1)
    capture = start()
    try:
        wait_for(streaming, timeout=60, what="streaming started")
        send(kafka, signal_topic, "someone-else", {"type": "execute-snapshot", "data": {
            "data-collections": [collection]}})
        send(kafka, signal_topic, prefix, {"type": "execute-snapshot", "data": {
            "data-collections": [collection], "type": "blocking"}})
        send(kafka, signal_topic, prefix, {"type": "execute-snapshot", "data": {
            "data-collections": [collection], "type": "INCREMENTAL"}})
        wait_for(lambda: len(reads(topics, topic)) >= rows, timeout=180,
                 what="incremental snapshot reads")
        wait_for(lambda: offset_of(offsets).get("signal_kafka_offset") == 3, timeout=30,
                 what="signal offset stored")
    finally:
        capture.stop()
    assert sorted(reads(topics, topic)) == list(range(1, rows + 1))
    capture = start()  # the signal is behind the stored offset: not run again
    try:
        time.sleep(3)
    finally:
        capture.stop()
    assert len(reads(topics, topic)) == rows


def test_kafka_signal_on_postgres(env: Env, kafka: KafkaCluster) -> None:
    env.prefix = unique("ks")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, v int)")
    env.sql("INSERT INTO t SELECT g, g FROM generate_series(1, 20) g")
    env.conn.commit()
    signal_topic = unique("sig-topic-")
    props = signal_props(kafka, signal_topic)
    run_signals(kafka, lambda: env.capture(props), lambda: env.sql(
        "SELECT active FROM pg_replication_slots WHERE slot_name = %s", (env.slot,)) == [(True,)],
        env.topics, f"{env.prefix}.public.t",
                env.offsets, env.prefix, "public.t", signal_topic, 20)


def test_kafka_signal_on_mariadb(menv: MariaEnv, kafka: KafkaCluster) -> None:
    menv.prefix = unique("kms")
    menv.sql("CREATE TABLE t (id int PRIMARY KEY, v int)")
    menv.sql("INSERT INTO t VALUES " + ",".join(f"({i}, {i})" for i in range(1, 21)))
    signal_topic = unique("sig-topic-")
    props = signal_props(kafka, signal_topic)
    run_signals(kafka, lambda: menv.capture(props), lambda: "file" in offset_of(menv.offsets),
                menv.topics, menv.topic("t"),
                menv.offsets, menv.prefix, f"{menv.db}.t", signal_topic, 20)


def test_kafka_signal_on_sqlserver_emulation(kafka: KafkaCluster, tmp_path: Path) -> None:
    """SQL Server (its CDC EMULATION): a Kafka signal starts an incremental snapshot whose
    watermarks are rows of the signal table, seen back through its change table (the source
    channel is not enabled: the table holds watermarks only)."""
    from headwater.model.record import Op, SnapshotMarker
    from headwater.testing.localpg import local_postgres
    from headwater.testing.sqlserver_emulation import dbapi
    from tests.sqlserver.conftest import enable_cdc, tsql
    from tests.sqlserver.test_emulated_capture import Capture, config

    with local_postgres() as pg:
        pg.create_database("kss")
        raw = pg.connect("kss")
        dbapi.install(raw)
        raw.close()
        db = {"server": "127.0.0.1", "port": pg.port, "user": pg.user, "database": "kss",
              "history": str(tmp_path / "history.jsonl")}
        tsql(db, "CREATE TABLE dbo.debezium_signal (id VARCHAR(42) NOT NULL PRIMARY KEY, "
                 "type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL)",
             "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, v INT NULL)",
             "INSERT INTO dbo.t VALUES " + ",".join(f"({k}, {k})" for k in range(1, 21)))
        enable_cdc(db, "dbo", "debezium_signal")
        enable_cdc(db, "dbo", "t")
        signal_topic = unique("sig-topic-")
        kafka.create_topic(signal_topic, 1)
        props = {**signal_props(kafka, signal_topic), "read.only": "false",
                 "signal.data.collection": "kss.dbo.debezium_signal"}
        capture = Capture(config(db, **{k: str(v) for k, v in props.items()}))
        capture.run()
        try:
            send(kafka, signal_topic, "server1", {"type": "execute-snapshot", "data": {
                "data-collections": ["kss.dbo.t"]}})
            wait_for(lambda: len([r for r in capture.records() if r.op is Op.READ]) >= 20,
                     timeout=60, what="incremental snapshot reads")
        finally:
            capture.stop()
    got = [r.after[0] for r in capture.records() if r.op is Op.READ and r.after is not None]
    assert got == list(range(1, 21))
    assert {r.snapshot for r in capture.records() if r.op is Op.READ} == {
        SnapshotMarker.INCREMENTAL}
    assert (capture.last_offset() or {}).get("signal_kafka_offset") == 1
