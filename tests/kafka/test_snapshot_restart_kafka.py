"""An initial snapshot into Kafka (`headwater.topics.store=kafka`, three partitions) killed
part-way while rows are deleted: the next run snapshots again and supersedes the first
attempt's READs of the deleted rows with deletes (engine/supersede.py over
kafka/ranges.py), so replaying the topic gives the source table, with no phantom rows.
Before the Kafka store could read its topics back, those READs stayed (the fault harness's
postgres@kafka and mariadb@kafka capture-kill9-snapshot trials: 348 and 126 phantom rows)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

import orjson
import pytest

from headwater.kafka.consume import end_offsets, partition_counts
from tests.integration.postgres.conftest import Env, wait_for
from tests.kafka.conftest import kafka_props, read_topic, stored_offset, unique

pytestmark = pytest.mark.integration

ROWS = 6000


def _capture(config: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "run", str(config), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _replay(bootstrap: str, topic: str) -> tuple[dict[int, int], list[dict[str, Any]]]:
    """The topic replayed (id -> ver) and its delete events."""
    table: dict[int, int] = {}
    deletes = []
    for rec in read_topic(bootstrap, topic):  # a key's records are all in one partition
        if rec.value is None:
            continue
        key = orjson.loads(rec.key or b"null")["payload"]["id"]
        value = orjson.loads(rec.value)["payload"]
        if value["op"] == "d":
            table.pop(key, None)
            deletes.append(value)
        else:
            table[key] = value["after"]["ver"]
    return table, deletes


def test_killed_snapshot_into_kafka_leaves_no_phantom_rows(env: Env, kafka: Any) -> None:
    env.prefix = unique("sup")
    env.sql("CREATE TABLE t (id int PRIMARY KEY, ver int NOT NULL)")
    env.sql(f"INSERT INTO t SELECT g, 0 FROM generate_series(1, {ROWS}) g")
    env.conn.commit()
    props = kafka_props(kafka)
    offsets, topic = props["offset.storage.topic"], f"{env.prefix}.public.t"

    def in_topic() -> int:
        return _records(kafka.bootstrap, topic)

    # Small batches and fetches: the snapshot is slow enough to be killed part-way.
    proc = _capture(env.config({**props, "max.batch.size": 16, "max.queue.size": 32,
                                "snapshot.fetch.size": 16}))
    try:
        wait_for(lambda: in_topic() >= 500, timeout=120, interval=0.02,
                 what="the first 500 READ events in Kafka")
    finally:
        # killed first: a capture quick enough finished the 6,000 rows while the rows below
        # were being deleted (a fresh-clone run, 2026-11-30)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(60)
    # rows the first attempt has read (the snapshot reads in id order here), and some it has
    # not; deleted after its consistent point either way, so streamed by the second attempt
    doomed = list(range(1, 400, 7)) + list(range(5000, 5100, 9))
    env.sql(f"DELETE FROM t WHERE id IN ({', '.join(map(str, doomed))})")
    env.conn.commit()
    first = stored_offset(kafka.bootstrap, offsets) or {}
    assert not first.get("snapshot_completed") and in_topic() < ROWS, (
        "the snapshot completed before the kill: not killed part-way")

    proc = _capture(env.config(props))
    try:
        wait_for(lambda: (stored_offset(kafka.bootstrap, offsets) or {}).get(
            "snapshot_completed"), timeout=180, what="the second snapshot to complete")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert "snapshot_started" not in (stored_offset(kafka.bootstrap, offsets) or {})

    source = dict(env.sql("SELECT id, ver FROM t"))
    replayed, deletes = _replay(kafka.bootstrap, topic)
    phantom = sorted(replayed.keys() - source.keys())
    assert not phantom, f"{len(phantom)} phantom rows, e.g. {phantom[:10]}"
    assert replayed == source
    # the superseded READs got deletes marked as snapshot events, one per deleted row the
    # first attempt had read
    read_first = {d["before"]["id"] for d in deletes if d["source"]["snapshot"] == "true"}
    assert read_first and read_first <= set(doomed), sorted(read_first)[:10]
    assert set(range(1, 400, 7)) <= read_first


def _records(bootstrap: str, topic: str) -> int:
    """The records of a topic (its partitions' high watermarks; 0 before it exists)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "headwater-test"})
    try:
        count = partition_counts(consumer, [topic], timeout=10).get(topic, 0)
        return sum(end_offsets(consumer, [(topic, p) for p in range(count)]).values())
    finally:
        consumer.close()
